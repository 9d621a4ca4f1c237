package dbconfig

import (
	"log/slog"
	"sync"

	"github.com/shardkeeper/shardkeeper/internal/metadata"
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
func WarnBeyondBounds(store *metadata.Store, log *slog.Logger) (cancel func()) {
	var mu sync.Mutex
	warned := map[string]bool{}
	check := func(snap *metadata.Snapshot, db string) {
		reason := ""
		if d := snap.Databases[db]; d != nil {
			reason = BeyondBounds(d)
		}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case reason == "":
			delete(warned, db)
		case !warned[db]:
			warned[db] = true
			log.Warn("the sharding rule of a database is beyond the bounds on the names a rule may stand for (written by another node?): "+
				"statements that add names to it are refused, its storage units count as in use; DROP tables of it to shrink it",
				"database", db, "bounds", reason)
		}
	}
	cancel = store.Subscribe(func(snap *metadata.Snapshot, changes []metadata.Change) {
		seen := map[string]bool{}
		for _, c := range changes {
			if c.Database != "" && !seen[c.Database] {
				seen[c.Database] = true
				check(snap, c.Database)
			}
		}
	})
	snap := store.Current()
	for db := range snap.Databases {
		check(snap, db)
	}
	return cancel
}
