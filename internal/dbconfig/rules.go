package dbconfig

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/registry"
)

// RuleOptions configures ChangeRule.
type RuleOptions struct {
	// Layout places the rule items (the target ShardingSphere release).
	Layout paths.Layout
	// Session commits the transaction; nil means a session of the
	// change's own.
	Session registry.Session
	// Base, when not nil, is the rule's content the caller's change was
	// made from (its node's view of the rule, a Snapshot's content: nil
	// or empty for no rule). When the registry holds another content,
	// ChangeRule writes nothing and returns a *StaleRuleError, so that a
	// change computed from a view behind the registry never undoes
	// another node's.
	Base *map[string]any
}

// StaleRuleError is ChangeRule's answer when the registry's rule is not
// RuleOptions.Base: nothing was written. Current is the rule's content in
// the registry, as a node's Snapshot holds it once it caught up. It wraps
// registry.ErrBadVersion.
type StaleRuleError struct {
	Database, Type string
	Current        map[string]any
}

func (e *StaleRuleError) Error() string {
	return fmt.Sprintf("the %s rule of database %s in the registry is not the one the change was made from", e.Type, e.Database)
}

func (e *StaleRuleError) Unwrap() error { return registry.ErrBadVersion }

// SameContent reports whether two rule contents, as Snapshots hold them,
// are the same rule (nil and empty alike: no rule).
func SameContent(a, b map[string]any) bool {
	return len(a) == 0 && len(b) == 0 || reflect.DeepEqual(a, b)
}

// RuleChange is what ChangeRule wrote.
type RuleChange struct {
	// Changed is false when the rule was left as it was (nothing written).
	Changed bool
	// Digest is metadata.RulesDigest of the database's rules the registry
	// holds after the change, which nodes acknowledge once they applied
	// it (distvar.WaitRules).
	Digest string
}

// ChangeRule changes database rule ruleType of database db, the way every
// rule statement does: it reads the database's units and rules from the
// registry (metadata.ReadDatabase; ErrNoDatabase is an
// *UnknownDatabaseError), lets change compute the next content from a copy
// of the rule (an empty map when the database has no such rule; change's
// error, an *sqlerr.Error, is returned as is), checks the database's rules
// with the result (every data source named is a storage unit or a logical
// data source, every algorithm named is defined and of a known type:
// upstream's codes; every item name fits a registry node, else 10200), and
// only then writes the items that differ as upstream persists them for
// opts.Layout, in one registry transaction conditioned on what it read
// (metadata.RuleWritesFrom): nothing is written when a check fails. An
// empty result removes the rule. With opts.Base, a registry rule other than
// the base is refused first (*StaleRuleError). ctx bounds the reads and the
// commit.
func ChangeRule(ctx context.Context, repo registry.Repository, db, ruleType string, change func(content map[string]any) (map[string]any, error), opts RuleOptions) (RuleChange, error) {
	d, kvs, err := metadata.ReadDatabase(ctx, repo, db)
	if errors.Is(err, metadata.ErrNoDatabase) {
		return RuleChange{}, noDatabase(db)
	}
	if err != nil {
		return RuleChange{}, fmt.Errorf("read database %s: %w", db, err)
	}
	rules := d.Rules
	old := rules[ruleType]
	old.Type = ruleType
	if opts.Base != nil && !SameContent(old.Content, *opts.Base) {
		return RuleChange{}, &StaleRuleError{Database: db, Type: ruleType, Current: old.Content}
	}
	cur := config.CloneContent(old.Content)
	if cur == nil {
		cur = map[string]any{}
	}
	next, err := change(cur)
	if err != nil {
		return RuleChange{}, err
	}
	nextRule := config.Rule{Type: ruleType, Content: next}
	// The database as it would be, for the checks.
	cfg := config.Database{Name: db, DataSources: d.Units}
	for typ, r := range rules {
		if typ != ruleType {
			cfg.Rules = append(cfg.Rules, r)
		}
	}
	if len(next) > 0 {
		cfg.Rules = append(cfg.Rules, nextRule)
	}
	if errs := checkRules(cfg); len(errs) > 0 {
		return RuleChange{}, errs[0]
	}
	if len(next) > 0 {
		if _, err := metadata.RuleAsWritten(opts.Layout, nextRule); err != nil {
			return RuleChange{}, InvalidRule(ruleType, "", err.Error())
		}
		if err := checkItemNames(db, nextRule); err != nil {
			return RuleChange{}, err
		}
	} else {
		nextRule.Content = nil
	}
	conds, ops, err := metadata.RuleWritesFrom(opts.Layout, db, kvs, old, nextRule)
	if err != nil {
		return RuleChange{}, err
	}
	if len(ops) == 0 {
		return RuleChange{Digest: metadata.RulesDigest(rules)}, nil
	}
	if err := commitOne(ctx, repo, opts.Session, registry.Txn{Conds: conds, Ops: ops}); err != nil {
		return RuleChange{}, err
	}
	// The rules the registry holds now: those read, with the
	// transaction's writes (its conditions held, so nothing it wrote or
	// deleted changed in between).
	after := metadata.DecodeRules(db, metadata.AfterOps(kvs, ops))
	return RuleChange{Changed: true, Digest: metadata.RulesDigest(after)}, nil
}

// ChangeGlobalRule replaces global rule r.Type with r (as upstream persists
// it: a new version of /rules/{type}) in one registry transaction
// conditioned on every global rule it read, and returns the digest of the
// global rules the registry holds after it (metadata.GlobalRulesDigest),
// which nodes acknowledge under distvar.GlobalRules once they applied it.
// When another global rule changed between the read and the commit it
// reads again (at most globalRuleAttempts times in all); when r.Type itself
// changed, nothing is written and the error wraps registry.ErrBadVersion
// (or ErrExists), since r was made from what it replaced. ctx bounds the
// reads and the commit.
func ChangeGlobalRule(ctx context.Context, repo registry.Repository, r config.Rule, opts RuleOptions) (RuleChange, error) {
	node, err := paths.GlobalRule(r.Type)
	if err != nil {
		return RuleChange{}, err
	}
	for attempt := 1; ; attempt++ {
		_, kvs, err := metadata.ReadGlobalRules(ctx, repo)
		if err != nil {
			return RuleChange{}, fmt.Errorf("read the global rules: %w", err)
		}
		conds, ops, err := metadata.GlobalRuleWritesFrom(kvs, r)
		if err != nil {
			return RuleChange{}, err
		}
		err = commitOne(ctx, repo, opts.Session, registry.Txn{Conds: conds, Ops: ops})
		if err == nil {
			after := metadata.DecodeGlobalRules(metadata.AfterOps(kvs, ops))
			return RuleChange{Changed: true, Digest: metadata.GlobalRulesDigest(after)}, nil
		}
		var oe *registry.OpError
		if attempt < globalRuleAttempts && errors.As(err, &oe) && !registry.IsUnder(oe.Key, node) &&
			(errors.Is(err, registry.ErrBadVersion) || errors.Is(err, registry.ErrExists) || errors.Is(err, registry.ErrNotFound)) {
			continue // another global rule changed: r still applies
		}
		return RuleChange{}, err
	}
}

// globalRuleAttempts bounds how often ChangeGlobalRule reads and commits
// again while other global rules keep changing.
const globalRuleAttempts = 5

// checkItemNames refuses a named item whose name cannot be a registry
// node (a '/', ".", ...), with upstream's InvalidRuleConfigurationException.
func checkItemNames(db string, r config.Rule) error {
	for field, v := range r.Content {
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		for name := range m {
			if strings.Contains(name, "/") {
				return InvalidRule(r.Type, name, "the name may not contain '/'")
			}
			if _, err := paths.RuleItem(db, r.Type, field, name); err != nil {
				return InvalidRule(r.Type, name, err.Error())
			}
		}
	}
	return nil
}

// InvalidRule is upstream's InvalidRuleConfigurationException (10200,
// 44000): rule name of type ruleType is refused for msg.
func InvalidRule(ruleType, name, msg string) *sqlerr.Error {
	return &sqlerr.Error{Code: 10200, SQLState: "44000", Message: fmt.Sprintf("Invalid '%s' rule '%s', error message is: %s", ruleType, name, msg)}
}

// ExpandInline returns every value a comma-separated list of inline
// expressions stands for (ds_${0..1}.t_${['a','b']}, $->{...}), and false
// when a part is not a range or a list expression this package can
// evaluate.
func ExpandInline(expr string) ([]string, bool) {
	var out []string
	for _, part := range splitTop(expr) {
		vals := expand(strings.TrimSpace(part))
		if vals == nil {
			return nil, false
		}
		out = append(out, vals...)
	}
	return out, true
}
