package dbconfig

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/shardkeeper/shardkeeper/internal/inline"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/rule"
)

// BeyondBounds describes how the sharding rule of d passes the bounds on
// the names a rule's expressions may stand for (inline.MaxNames per
// expression, inline.MaxRuleNames per rule), "" when it does not or d has
// none. Such a rule was written by another node (an upstream node has no
// bound): statements that add names to it are refused. It counts without
// building names, in time linear in the rule's size.
func BeyondBounds(d *metadata.Database) string {
	total, over := 0, 0
	eachExpression(d.Rules["sharding"].Content, func(_, _, expr string) {
		n, err := namesOf(expr)
		if errors.Is(err, inline.ErrTooMany) {
			over++
		}
		total += n
	})
	switch {
	case over > 0:
		return fmt.Sprintf("%d of its tables' expressions stand for more than %d names each, the most one expression may", over, inline.MaxNames)
	case total > inline.MaxRuleNames:
		return fmt.Sprintf("its tables' expressions stand for %d names, more than the %d one rule may", total, inline.MaxRuleNames)
	}
	return ""
}

// eachExpression calls f with each expression of sharding rule content c
// that names data sources: section "tables" and a table's
// actualDataNodes, or "autoTables" and its actualDataSources.
func eachExpression(c map[string]any, f func(section, table, expr string)) {
	for _, s := range []struct{ section, field string }{{"tables", "actualDataNodes"}, {"autoTables", "actualDataSources"}} {
		for table, t := range rule.Map(c[s.section]) {
			if expr, _ := rule.Map(t)[s.field].(string); expr != "" {
				f(s.section, table, expr)
			}
		}
	}
}

// namesOf is the number of names expr stands for, counted before any is
// built (inline.Count); beyond inline.MaxNames it is inline.MaxNames+1
// with inline.ErrTooMany, wrapped.
func namesOf(expr string) (int, error) {
	n, err := inline.Count(expr, inline.MaxNames)
	if errors.Is(err, inline.ErrTooMany) {
		return inline.MaxNames + 1, err
	}
	return n, err
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
