// Package rules runs the rule statements of DistSQL (the sharding,
// broadcast, mask and encrypt rules' CREATE, ALTER and DROP) as cluster
// changes, for the console, the HTTP API and the CLI alike: Apply computes
// the next rule from the registry's current one, checks it (upstream's
// codes), writes the changed items in one registry transaction
// (dbconfig.ChangeRule), and waits until every online shardkeeper node has
// applied the new rules, as SET DIST VARIABLE waits (distvar.WaitRules).
// Change and ChangeGlobal do the same for the console's other rule
// statements (readwrite-splitting, single tables, the global rules).
package rules

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/dbconfig"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/distvar"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// ErrNotRuleStatement is returned by Apply for a statement that is not a
// rule statement of this package.
var ErrNotRuleStatement = errors.New("not a rule statement")

// Statements says which statements Apply runs, for the messages of front
// ends that refuse another one.
const Statements = "CREATE, ALTER and DROP of the sharding, broadcast, mask and encrypt rules"

// change computes a rule's next content from a copy of its current one
// (see dbconfig.ChangeRule); db names the database, for messages.
type change func(db string, c map[string]any) (map[string]any, error)

// Options configures Apply.
type Options struct {
	// Layout places the rule items (the target ShardingSphere release).
	Layout paths.Layout
	// Session commits the change; nil means a session of its own.
	Session registry.Session
	// Timeout bounds the wait for the nodes (not the write); zero means
	// distvar.DefaultTimeout.
	Timeout time.Duration
	// Base, for Change, is the rule content the change was made from (see
	// dbconfig.RuleOptions.Base); nil means none.
	Base *map[string]any
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
	// metadata.GlobalRulesDigest), what the nodes acknowledge.
	Digest string
	// Changed is false when the statement left the rule as it was (IF
	// EXISTS, IF NOT EXISTS): nothing was written or waited for.
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
	_, c := changeOf(st)
	return c != nil
}

func changeOf(st distsql.Statement) (string, change) {
	switch st := st.(type) {
	case *distsql.CreateShardingTableRule:
		return createShardingTableRule(st.Rules, st.IfNotExists, false)
	case *distsql.AlterShardingTableRule:
		return createShardingTableRule(st.Rules, false, true)
	case *distsql.DropShardingTableRule:
		return dropShardingTableRule(st)
	case *distsql.CreateShardingTableReferenceRule:
		return tableReferenceRule(st.Rules, st.IfNotExists, false)
	case *distsql.AlterShardingTableReferenceRule:
		return tableReferenceRule(st.Rules, false, true)
	case *distsql.DropShardingTableReferenceRule:
		return dropTableReferenceRule(st)
	case *distsql.CreateDefaultShardingStrategy:
		return defaultShardingStrategy(st)
	case *distsql.DropDefaultShardingStrategy:
		return dropDefaultShardingStrategy(st)
	case *distsql.DropShardingAlgorithm:
		return dropNamed("shardingAlgorithms", "sharding", st.Names, st.IfExists)
	case *distsql.DropShardingKeyGenerator:
		return dropNamed("keyGenerators", "key generator", st.Names, st.IfExists)
	case *distsql.CreateShardingKeyGenerateStrategy:
		return keyGenerateStrategy(st)
	case *distsql.DropShardingKeyGenerateStrategy:
		return dropKeyGenerateStrategy(st)
	case *distsql.CreateBroadcastTableRule:
		return broadcastTableRule(st.Tables, true, st.IfNotExists)
	case *distsql.DropBroadcastTableRule:
		return broadcastTableRule(st.Tables, false, st.IfExists)
	case *distsql.CreateMaskRule:
		return maskRule.define(maskDefinitions(st.Rules), st.IfNotExists, false)
	case *distsql.AlterMaskRule:
		return maskRule.define(maskDefinitions(st.Rules), false, true)
	case *distsql.DropMaskRule:
		return maskRule.drop(st.Tables, st.IfExists)
	case *distsql.CreateEncryptRule:
		return encryptRule.define(encryptDefinitions(st.Rules), st.IfNotExists, false)
	case *distsql.AlterEncryptRule:
		return encryptRule.define(encryptDefinitions(st.Rules), false, true)
	case *distsql.DropEncryptRule:
		return encryptRule.drop(st.Tables, st.IfExists)
	}
	return "", nil
}

// Apply runs rule statement st on database db (see the package doc). A
// refusal is an *sqlerr.Error with upstream's code, an unknown database a
// *dbconfig.UnknownDatabaseError, both before anything is written; any
// other statement is ErrNotRuleStatement. A timeout of the wait is not an
// error: the nodes are in Outcome.Pending. ctx bounds everything; when it
// ends during the wait, Apply returns the Outcome so far and ctx's error.
func Apply(ctx context.Context, repo registry.Repository, db string, st distsql.Statement, opts Options) (Outcome, error) {
	ruleType, c := changeOf(st)
	if c == nil {
		return Outcome{}, fmt.Errorf("%T: %w", st, ErrNotRuleStatement)
	}
	return Change(ctx, repo, db, ruleType, func(content map[string]any) (map[string]any, error) { return c(db, content) }, opts)
}

// Change is Apply for any change of database db's rule ruleType: change
// computes the next content from a copy of the registry's (see
// dbconfig.ChangeRule, which checks and writes it; with opts.Base, a
// registry rule other than the base is a *dbconfig.StaleRuleError and
// nothing is written), then Change waits for the nodes as Apply does.
func Change(ctx context.Context, repo registry.Repository, db, ruleType string, change func(content map[string]any) (map[string]any, error), opts Options) (Outcome, error) {
	out := Outcome{RuleType: ruleType}
	rc, err := dbconfig.ChangeRule(ctx, repo, db, ruleType, change,
		dbconfig.RuleOptions{Layout: opts.Layout, Session: opts.Session, Base: opts.Base})
	if err != nil || !rc.Changed {
		return out, err
	}
	out.Changed, out.Digest = true, rc.Digest
	return out, wait(ctx, repo, db, rc.Digest, opts, &out)
}

// ChangeGlobal replaces global rule r.Type with r (dbconfig.ChangeGlobalRule)
// and waits until every online node applied the global rules the registry
// holds, as Apply waits.
func ChangeGlobal(ctx context.Context, repo registry.Repository, r config.Rule, opts Options) (Outcome, error) {
	out := Outcome{RuleType: r.Type, Global: true}
	rc, err := dbconfig.ChangeGlobalRule(ctx, repo, r, dbconfig.RuleOptions{Session: opts.Session})
	if err != nil || !rc.Changed {
		return out, err
	}
	out.Changed, out.Digest = true, rc.Digest
	return out, wait(ctx, repo, distvar.GlobalRules, rc.Digest, opts, &out)
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
