package console

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/distvar"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/registry"
)

// The one place a rule statement writes: the rule's new content goes to
// the registry in one transaction (metadata.RuleWrites for a database
// rule, metadata.GlobalWrites for a global rule), then the statement waits
// until every online shardkeeper node shows the same rules as this node
// (distvar's acknowledgements, as SET DIST VARIABLE waits), naming in
// warnings the nodes that did not.

// commitDatabaseRule makes r the whole rule of its type in database d,
// the view the statement checked and built r from. An r without content
// removes the rule. When the registry's rule is no longer d's, it returns
// the *metadata.StaleRuleError (see retryStale).
func (e *Engine) commitDatabaseRule(ctx context.Context, s *Session, d *metadata.Database, r config.Rule) (*Result, error) {
	db := d.Name
	conds, ops, err := metadata.RuleWrites(ctx, e.d.Repo, e.d.Layout, db, d.Rules[r.Type].Content, r)
	var stale *metadata.StaleRuleError
	if errors.As(err, &stale) {
		return nil, err
	}
	if err != nil {
		return nil, opError(s, err)
	}
	want, err := metadata.AppliedRuleContent(e.d.Layout, r)
	if err != nil {
		return nil, opError(s, err)
	}
	applied := func(snap *metadata.Snapshot) bool {
		var have map[string]any
		if d := snap.Databases[db]; d != nil {
			have = d.Rules[r.Type].Content
		}
		return reflect.DeepEqual(have, want) || len(have) == 0 && len(want) == 0
	}
	current := func(snap *metadata.Snapshot) string { return distvar.RulesFingerprint(snap.Databases[db]) }
	return e.commitRuleTxn(ctx, db, r.Type+" rule of database "+db, conds, ops, applied, current)
}

// commitGlobalRule replaces the global rule r.Type with r.
func (e *Engine) commitGlobalRule(ctx context.Context, s *Session, r config.Rule) (*Result, error) {
	conds, ops, err := metadata.GlobalWrites(ctx, e.d.Repo, []config.Rule{r}, nil)
	if err != nil {
		return nil, opError(s, err)
	}
	want, err := metadata.AppliedGlobalRuleContent(r)
	if err != nil {
		return nil, opError(s, err)
	}
	applied := func(snap *metadata.Snapshot) bool { return reflect.DeepEqual(snap.GlobalRules[r.Type].Content, want) }
	return e.commitRuleTxn(ctx, distvar.GlobalRules, "global rule "+r.Type, conds, ops, applied, distvar.GlobalRulesFingerprint)
}

// maxStaleTries bounds how often retryStale runs a statement.
const maxStaleTries = 3

// retryStale runs a statement that changes a database rule, and runs it
// again when it was made from a view of the rule that the registry no
// longer holds (another node changed it, or this node's view is behind),
// once this node's view shows the registry's rule; after maxStaleTries it
// answers 17010 and nothing was written from a stale view.
func (e *Engine) retryStale(ctx context.Context, run func() (*Result, error)) (*Result, error) {
	for try := 1; ; try++ {
		res, err := run()
		var stale *metadata.StaleRuleError
		if !errors.As(err, &stale) {
			return res, err
		}
		if try == maxStaleTries {
			return nil, &Error{Code: 17010, SQLState: "HY000", Message: fmt.Sprintf("Cluster persist repository error, reason is: %v; other nodes keep changing it, nothing was written, run the statement again.", err)}
		}
		e.await(ctx, func(snap *metadata.Snapshot) bool {
			var have map[string]any
			if d := snap.Databases[stale.Database]; d != nil {
				have = d.Rules[stale.Type].Content
			}
			return reflect.DeepEqual(have, stale.Current) || len(have) == 0 && len(stale.Current) == 0
		})
	}
}

// commitRuleTxn commits one transaction in the node's session, waits until
// this node's view has applied all of it, then until every acknowledging
// node shows what this node shows (current).
func (e *Engine) commitRuleTxn(ctx context.Context, db, what string, conds []registry.Cond, ops []registry.Op, applied func(*metadata.Snapshot) bool, current func(*metadata.Snapshot) string) (*Result, error) {
	if len(ops) == 0 {
		return &Result{}, nil // nothing changes
	}
	sess := e.d.Node.Session()
	if sess == nil {
		return nil, &Error{Code: 17010, SQLState: "HY000", Message: "Cluster persist repository error, reason is: the node holds no registry session now; nothing was written."}
	}
	if _, err := sess.Commit(ctx, registry.Txn{Conds: conds, Ops: ops}); err != nil {
		if errors.Is(err, registry.ErrBadVersion) || errors.Is(err, registry.ErrExists) || errors.Is(err, registry.ErrNotFound) {
			return nil, &Error{Code: 17010, SQLState: "HY000", Message: fmt.Sprintf("Cluster persist repository error, reason is: the %s changed meanwhile; nothing was written, run the statement again.", what)}
		}
		return nil, err
	}
	e.await(ctx, applied)
	timeout := e.d.SetVariableTimeout
	if timeout <= 0 {
		timeout = distvar.DefaultTimeout
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var out distvar.Outcome
	err := distvar.WaitRules(wctx, e.d.Repo, db, func() string { return current(e.d.Metadata.Current()) }, &out)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return &Result{Warnings: []string{fmt.Sprintf("the %s is in the registry, but waiting for the nodes failed: %v", what, err)}}, nil
	}
	res := &Result{}
	if len(out.Pending) > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the %s is in the registry, but %d node(s) did not confirm applying it in time: %s",
			what, len(out.Pending), strings.Join(out.Pending, ", ")))
	}
	if len(out.Unacknowledging) > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d node(s) apply the %s without acknowledging (ShardingSphere nodes, or shardkeeper nodes still starting): %s",
			len(out.Unacknowledging), what, strings.Join(out.Unacknowledging, ", ")))
	}
	return res, nil
}
