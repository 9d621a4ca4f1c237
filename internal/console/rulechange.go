package console

import (
	"context"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/rules"
)

// The rule statements (rules.Is: the sharding, broadcast and
// readwrite-splitting rules' CREATE, ALTER and DROP, LOAD / UNLOAD SINGLE
// TABLE, SET DEFAULT SINGLE TABLE STORAGE UNIT, ALTER of the global rules)
// run through internal/rules, as the HTTP API and the CLI run them: the
// next rule is computed from the registry's, checked and written in one
// registry transaction, and the statement returns once every online
// shardkeeper node applied it, or after Deps.SetVariableTimeout with the
// nodes that did not named in warnings.

// applyRule runs rule statement st on the session's database, or on the
// database the statement names (DROP READWRITE_SPLITTING RULE ... FROM db);
// a global rule statement needs none.
func (e *Engine) applyRule(ctx context.Context, s *Session, st distsql.Statement) (*Result, error) {
	sc := st.Scope()
	db := sc.Database // FROM db
	if db == "" && sc.Session {
		var err error
		if db, err = sessionDatabase(s); err != nil {
			return nil, err
		}
	}
	out, err := rules.Apply(ctx, e.d.Repo, db, st, e.ruleOptions())
	e.awaitRules(ctx, db, out)
	if err != nil {
		return nil, opError(s, err)
	}
	return &Result{Warnings: out.Warnings(db)}, nil
}

// ruleOptions are the options of a rule change made by this engine.
func (e *Engine) ruleOptions() rules.Options {
	opts := rules.Options{Layout: e.layoutNow(e.d.Layout), Timeout: e.d.SetVariableTimeout, Introspect: e.d.Introspect, Cache: e.rules}
	if e.d.Node != nil {
		opts.Session = e.d.Node.Session()
	}
	return opts
}

// awaitRules waits until this node's view holds the rules a change wrote,
// or those a refusal or a no-op was decided on (out.Digest; at most
// awaitTimeout), so that the session's next statement reads them even
// where this node publishes no acknowledgement that the change waited
// for, and does not contradict a refusal decided from a registry the view
// had not caught up with: a refusal is answered from a state the registry
// held after the statement started, which this node's view then shows.
func (e *Engine) awaitRules(ctx context.Context, db string, out rules.Outcome) {
	if !out.HasDigest || (out.Changed && config.Unsafe(config.UnsafeAckBeforeCommit)) {
		return // the chaos negative control (config.EnvUnsafeControl) answers a change before any node's view, never in production
	}
	e.await(ctx, func(snap *metadata.Snapshot) bool {
		if out.Global {
			return metadata.GlobalRulesDigest(snap.GlobalRules) == out.Digest
		}
		return snap.Databases[db].RulesDigest() == out.Digest
	})
}
