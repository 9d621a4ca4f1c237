package console

import (
	"context"
	"errors"
	"fmt"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/dbconfig"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/rules"
)

// The readwrite-splitting, single-table and global rule statements write
// through internal/rules, as the sharding statements do (applyRule): the
// rule's new content is checked and written in one registry transaction
// (dbconfig.ChangeRule, dbconfig.ChangeGlobalRule), then the statement
// waits until every online shardkeeper node acknowledges the rules the
// registry holds (distvar.WaitRules), naming in warnings the nodes that
// did not.

// ruleOptions are the options of a rule change made by this engine.
func (e *Engine) ruleOptions() rules.Options {
	opts := rules.Options{Layout: e.d.Layout, Timeout: e.d.SetVariableTimeout}
	if e.d.Node != nil {
		opts.Session = e.d.Node.Session()
	}
	return opts
}

// commitDatabaseRule makes r the whole rule of its type in database d,
// the view the statement checked and built r from. An r without content
// removes the rule. When the registry's rule is no longer d's, nothing is
// written and it returns the *dbconfig.StaleRuleError (see retryStale).
func (e *Engine) commitDatabaseRule(ctx context.Context, s *Session, d *metadata.Database, r config.Rule) (*Result, error) {
	opts := e.ruleOptions()
	base := d.Rules[r.Type].Content
	opts.Base = &base
	out, err := rules.Change(ctx, e.d.Repo, d.Name, r.Type, func(map[string]any) (map[string]any, error) { return r.Content, nil }, opts)
	var stale *dbconfig.StaleRuleError
	if errors.As(err, &stale) {
		return nil, err
	}
	if err != nil {
		return nil, opError(s, err)
	}
	e.awaitRules(ctx, d.Name, out)
	return &Result{Warnings: out.Warnings(d.Name)}, nil
}

// awaitRules waits until this node's view holds the rules a change wrote
// (out.Digest; at most awaitTimeout), so that the session's next
// statement reads them even where this node publishes no acknowledgement
// that the change waited for.
func (e *Engine) awaitRules(ctx context.Context, db string, out rules.Outcome) {
	if !out.Changed {
		return
	}
	e.await(ctx, func(snap *metadata.Snapshot) bool {
		if out.Global {
			return metadata.GlobalRulesDigest(snap.GlobalRules) == out.Digest
		}
		var have map[string]config.Rule
		if d := snap.Databases[db]; d != nil {
			have = d.Rules
		}
		return metadata.RulesDigest(have) == out.Digest
	})
}

// commitGlobalRule replaces the global rule r.Type with r.
func (e *Engine) commitGlobalRule(ctx context.Context, s *Session, r config.Rule) (*Result, error) {
	out, err := rules.ChangeGlobal(ctx, e.d.Repo, r, e.ruleOptions())
	if err != nil {
		return nil, opError(s, err)
	}
	e.awaitRules(ctx, "", out)
	return &Result{Warnings: out.Warnings("")}, nil
}

// maxStaleTries bounds how often retryStale runs a statement.
const maxStaleTries = 3

// retryStale runs a statement that changes a database rule from this
// node's view, and runs it again when the registry no longer holds the
// rule of that view (another node changed it, or this node's view is
// behind), once this node's view shows the registry's rule; after
// maxStaleTries it answers 17010 and nothing was written from a stale view.
func (e *Engine) retryStale(ctx context.Context, run func() (*Result, error)) (*Result, error) {
	for try := 1; ; try++ {
		res, err := run()
		var stale *dbconfig.StaleRuleError
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
			return dbconfig.SameContent(have, stale.Current)
		})
	}
}
