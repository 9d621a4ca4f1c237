package dbconfig

import (
	"context"
	"errors"
	"fmt"
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
// empty result removes the rule. ctx bounds the reads and the commit.
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
	cur := config.CloneContent(old.Content)
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
			return RuleChange{}, invalidRule(ruleType, "", err.Error())
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
				return invalidRule(r.Type, name, "the name may not contain '/'")
			}
			if _, err := paths.RuleItem(db, r.Type, field, name); err != nil {
				return invalidRule(r.Type, name, err.Error())
			}
		}
	}
	return nil
}

// invalidRule is upstream's InvalidRuleConfigurationException (10200, 44000).
func invalidRule(ruleType, name, msg string) *sqlerr.Error {
	return &sqlerr.Error{Code: 10200, SQLState: "44000", Message: fmt.Sprintf("Invalid '%s' rule '%s', error message is: %s", ruleType, name, msg)}
}

// InvalidRule is InvalidRuleConfigurationException (10200, 44000): rule
// name of type ruleType is refused for msg.
func InvalidRule(ruleType, name, msg string) *sqlerr.Error { return invalidRule(ruleType, name, msg) }

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
