// Package rules runs the rule statements of DistSQL as cluster changes,
// for the console, the HTTP API and the CLI alike: the changes of the rule
// families (families.Of: the sharding, readwrite-splitting, broadcast,
// mask, encrypt, shadow and single rules) and ALTER of the global rules
// (families.GlobalOf). Apply computes the next rule from the registry's current one,
// checks it (upstream's codes), writes it in one registry transaction
// (ChangeRule, ChangeGlobalRule), and waits until every
// online shardkeeper node has applied the new rules, as SET DIST VARIABLE
// waits (distvar.WaitRules); a statement that IF EXISTS or IF NOT EXISTS
// left a no-op waits the same way for the rules it was decided on.
package rules

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/distvar"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/rule/families"
	"github.com/shardkeeper/shardkeeper/registry"
)

// ErrNotRuleStatement is returned by Apply for a statement that is not a
// rule statement of this package.
var ErrNotRuleStatement = errors.New("not a rule statement")

// Statements says which statements Apply runs, for the messages of front
// ends that refuse another one; the rule families' are their own
// (families.Statements).
func Statements() string {
	return families.Statements() + " (database rules), " +
		"and " + families.GlobalStatements() + " (global rules)"
}

// Options configures Apply.
type Options struct {
	// Layout places the rule items (the target ShardingSphere release).
	Layout paths.Layout
	// Session commits the change; nil means a session of its own.
	Session registry.Session
	// Timeout bounds the wait for the nodes (not the write); zero means
	// distvar.DefaultTimeout.
	Timeout time.Duration
	// Introspect reads the tables of a database's units, for LOAD and
	// UNLOAD SINGLE TABLE (see SingleTables); nil means
	// datasource.Introspect, which connects to the units from this process.
	Introspect Introspector
	// Cache, when set, keeps the databases the changes read decoded, so
	// that a change decodes only the rule items that changed since the
	// last (see metadata.RuleCache); nil decodes every item each time.
	Cache *metadata.RuleCache
}

// Outcome is what Apply did.
type Outcome struct {
	// RuleType is the rule the statement changes ("sharding", "broadcast",
	// "readwrite_splitting", ..., or a global rule's type).
	RuleType string
	// Global is true for a global rule.
	Global bool
	// Digest is the digest of the rules the registry holds after the
	// change (metadata.RulesDigest of the database's rules, or
	// metadata.GlobalRulesDigest), what the nodes acknowledge. When the
	// statement wrote nothing (a no-op, or a refusal decided from the
	// rules read) it is the digest of the rules it was decided on, which
	// a front end waits for its node's view to hold before it answers.
	Digest string
	// HasDigest is false when the statement failed before it read the
	// rules: Digest means nothing then.
	HasDigest bool
	// Changed is false when the statement left the rule as it was (IF
	// EXISTS, IF NOT EXISTS): nothing was written, and Apply waited, as
	// for a change, until every online node acknowledged the rules the
	// no-op was decided on (Digest), or named them in Pending.
	Changed bool
	// Applied, Pending and Unacknowledging are the online nodes that
	// confirmed the new rules, did not within the timeout, and publish no
	// acknowledgement (ShardingSphere nodes), as distvar.Outcome has them.
	Applied, Pending, Unacknowledging []string
}

// Warnings are what a front end tells the user about the nodes that did
// not confirm.
func (o Outcome) Warnings(db string) []string {
	var w []string
	what := fmt.Sprintf("the %s rule of %s", o.RuleType, db)
	if o.Global {
		what = fmt.Sprintf("the global %s rule", o.RuleType)
	}
	if len(o.Pending) > 0 {
		w = append(w, fmt.Sprintf("%s is in the registry, but %d node(s) did not confirm applying it in time: %s",
			what, len(o.Pending), strings.Join(o.Pending, ", ")))
	}
	if len(o.Unacknowledging) > 0 {
		w = append(w, fmt.Sprintf("%d node(s) apply the %s rule without acknowledging (ShardingSphere nodes, or shardkeeper nodes still starting): %s",
			len(o.Unacknowledging), o.RuleType, strings.Join(o.Unacknowledging, ", ")))
	}
	return w
}

// Is reports whether st is a statement Apply runs.
func Is(st distsql.Statement) bool {
	if _, c := families.Of(st); c != nil {
		return true
	}
	return IsGlobal(st)
}

// IsGlobal reports whether st is a global rule statement Apply runs (one
// that changes no database's rule).
func IsGlobal(st distsql.Statement) bool {
	_, c := families.GlobalOf(st)
	return c != nil
}

// Apply runs rule statement st on database db (see the package doc); for a
// global rule statement (IsGlobal) db is ignored. A refusal is an
// *sqlerr.Error with upstream's code, an unknown database a
// *dbconfig.UnknownDatabaseError, both before anything is written; any
// other statement is ErrNotRuleStatement. A timeout of the wait is not an
// error: the nodes are in Outcome.Pending. ctx bounds everything; when it
// ends during the wait, Apply returns the Outcome so far and ctx's error.
func Apply(ctx context.Context, repo registry.Repository, db string, st distsql.Statement, opts Options) (Outcome, error) {
	if g, c := families.GlobalOf(st); c != nil {
		out := Outcome{RuleType: g.Type(), Global: true}
		rc, err := ChangeGlobalRule(ctx, repo, g.Type(), c, ChangeOptions{Session: opts.Session})
		return out, finish(ctx, repo, distvar.GlobalRules, rc, err, opts, &out)
	}
	f, c := families.Of(st)
	if c == nil {
		return Outcome{}, fmt.Errorf("%T: %w", st, ErrNotRuleStatement)
	}
	out := Outcome{RuleType: f.Type()}
	rc, err := ChangeRule(ctx, repo, db, f.Type(), func(read metadata.RuleRead, cur map[string]any, edits *rule.Edits) (map[string]any, error) {
		d := View(read.DB, opts.Introspect)
		d.ShardingNotPlain, d.BeforeUses, d.Edits = read.ShardingNotPlain(), read.ShardingUses(), edits
		return c(ctx, d, cur)
	}, ChangeOptions{Layout: opts.Layout, Session: opts.Session, Cache: opts.Cache})
	return out, finish(ctx, repo, db, rc, err, opts, &out)
}

// finish records what a change wrote, or the digest of the rules a no-op
// or a refusal was decided on, in out and, unless it was refused, waits
// for the nodes to acknowledge it under db (wait). A no-op (IF EXISTS, IF
// NOT EXISTS) waits like a change: it answers that the item is there (or
// gone), which may be a change another node committed and is still
// waiting for; answered at once, it would be acknowledged while an online
// node still shows the rule without that change.
func finish(ctx context.Context, repo registry.Repository, db string, rc Written, err error, opts Options, out *Outcome) error {
	out.Digest, out.HasDigest = rc.Digest, rc.HasDigest
	if err != nil || !rc.HasDigest {
		return err
	}
	out.Changed = rc.Changed
	return wait(ctx, repo, db, rc.Digest, opts, out)
}

// wait waits until every online node acknowledges digest for db
// (distvar.WaitRules), at most opts.Timeout, filling out's node lists.
func wait(ctx context.Context, repo registry.Repository, db, digest string, opts Options, out *Outcome) error {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = distvar.DefaultTimeout
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var w distvar.Outcome
	err := distvar.WaitRules(wctx, repo, db, digest, &w)
	out.Applied, out.Pending, out.Unacknowledging = w.Applied, w.Pending, w.Unacknowledging
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		err = nil
	}
	return err
}
