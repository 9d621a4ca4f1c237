package dbconfig

import (
	"log/slog"
	"sync"

	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule/sharding"
)

// BeyondBounds describes how the sharding rule of d passes the bounds on
// the names a rule's expressions may stand for (inline.MaxNames per
// expression, inline.MaxRuleNames per rule), "" when it does not or d has
// none. Such a rule was written by another node (an upstream node has no
// bound): statements that add names to it are refused. It counts without
// building names, in time linear in the rule's size.
func BeyondBounds(d *metadata.Database) string {
	return sharding.BeyondBounds(d.Rules[sharding.Type].Content)
}

// WarnBeyondBounds logs a warning to log for each database of store whose
// sharding rule passes the name bounds (BeyondBounds): now, and whenever
// one comes to pass them, once until it is back within them. The
// warning says that statements adding names to the rule are refused and
// that its units count as in use. cancel stops it. Safe for concurrent
// use with the store's Run.
//
// It counts each database's rule once, then, at each change the store
// applies, recounts only the tables the change names (sharding.Tally):
// a change costs what it changes, not the rule's size.
func WarnBeyondBounds(store *metadata.Store, log *slog.Logger) (cancel func()) {
	w := &boundsWarner{log: log, dbs: map[string]*dbBounds{}}
	cancel = store.Subscribe(w.follow)
	w.load(store.Current())
	return cancel
}

// boundsWarner is WarnBeyondBounds' state: a tally of each database's
// sharding rule as of snapshot seq.
type boundsWarner struct {
	log *slog.Logger

	mu  sync.Mutex
	seq uint64 // the latest snapshot counted
	dbs map[string]*dbBounds
}

type dbBounds struct {
	tally   sharding.Tally
	content map[string]any // the sharding rule counted (shared with its snapshot, not modified)
	warned  bool
}

// load counts every database of snap.
func (w *boundsWarner) load(snap *metadata.Snapshot) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if snap.Seq < w.seq {
		return // a later snapshot was counted meanwhile (follow, from its own)
	}
	w.seq = snap.Seq
	for name, d := range snap.Databases {
		w.recount(name, d, nil)
	}
}

// follow recounts what changes changed in snap: the tables they name, or
// a database's whole rule when a change may have replaced more than a
// table (a new database, a rule or a whole field gone).
func (w *boundsWarner) follow(snap *metadata.Snapshot, changes []metadata.Change) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if snap.Seq <= w.seq {
		return // load counted it
	}
	w.seq = snap.Seq
	tables := map[string]map[[2]string]bool{} // by database: the tables to recount; nil: the whole rule
	for _, c := range changes {
		if c.Database == "" {
			continue
		}
		switch c.Kind {
		case paths.KindDatabase:
		case paths.KindRuleType, paths.KindRuleItem:
			if c.RuleType != sharding.Type {
				continue
			}
		default:
			continue // a unit, a schema, a table's metadata, a state: not the rule
		}
		known, seen := tables[c.Database]
		switch {
		case c.Kind != paths.KindRuleItem || c.ItemName == "" || w.dbs[c.Database] == nil:
			tables[c.Database] = nil
		case !seen:
			tables[c.Database] = map[[2]string]bool{{c.Field, c.ItemName}: true}
		case known != nil:
			known[[2]string{c.Field, c.ItemName}] = true
		}
	}
	for db, named := range tables {
		w.recount(db, snap.Databases[db], named)
	}
}

// recount recounts tables (section and table) of database name as d
// holds it (d nil: the database is gone), or with tables nil its whole
// rule, and logs the warning when the rule came to pass the bounds. w.mu
// is held.
func (w *boundsWarner) recount(name string, d *metadata.Database, tables map[[2]string]bool) {
	if d == nil {
		delete(w.dbs, name)
		return
	}
	b := w.dbs[name]
	if b == nil {
		b = &dbBounds{}
		w.dbs[name] = b
	}
	content := d.Rules[sharding.Type].Content
	if tables == nil {
		b.tally = sharding.TallyOf(content)
	}
	for t := range tables {
		b.tally = b.tally.Table(b.content, content, t[0], t[1])
	}
	b.content = content
	switch reason := b.tally.Reason(); {
	case reason == "":
		b.warned = false
	case !b.warned:
		b.warned = true
		w.log.Warn("the sharding rule of a database is beyond the bounds on the names a rule may stand for (written by another node?): "+
			"statements that add names to it are refused, its storage units count as in use; DROP tables of it to shrink it",
			"database", name, "bounds", reason)
	}
}
