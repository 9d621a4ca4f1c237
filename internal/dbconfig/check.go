package dbconfig

import (
	"context"
	"maps"
	"slices"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/rule/families"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

// checkRules checks db's rules as ShardingSphere's import checkers do
// before anything is written: every data source a rule names is a storage
// unit of db (or a readwrite-splitting or shadow data source the rules
// define), every algorithm a strategy or column names is defined, every
// algorithm's type exists, and every mask and encrypt algorithm's props are
// ones its upstream init accepts. It returns every problem, each an
// *sqlerr.Error; or, once ctx is done (the statement killed or its client
// gone), ctx's error, the check stopping there.
func checkRules(ctx context.Context, db config.Database) ([]*sqlerr.Error, error) {
	return CheckChange(ctx, db, RuleChange{})
}

// RuleChange is the change of one rule CheckChange checks.
type RuleChange struct {
	// Type is the changed rule's type; "" checks every rule as new (an
	// import).
	Type string
	// Before is the rule's content before the change (nil for a new rule).
	Before map[string]any
	// BeforeNames, when set, is how many names Before's expressions stand
	// for (rule.Database.BeforeNames), as the caller keeps count of them;
	// nil: the check counts them where it needs them.
	BeforeNames *int
	// BeforeUses, when set, counts Before's references by name
	// (rule.Database.BeforeUses), as the caller keeps count of them; nil:
	// the check scans where it needs them.
	BeforeUses func(section, name string) int
	// Diff, when set, is what differs between Before and the rule after
	// the change (metadata.DiffOf); nil: the check compares them itself.
	Diff *metadata.Diff
}

// CheckChange is what a rule change checks (as an import checks every
// rule, upstream's codes): the rules of db after ch, a change of the rule
// of type ch.Type of db, each by its family (Family.Check) with
// rule.Database's Changing, Before, BeforeNames, BeforeUses and Changed
// set from ch. A family that bounds what its rule's
// expressions stand for (the sharding rule's names: inline.MaxNames per
// expression, inline.MaxRuleNames per rule) holds the bounds for what the
// change adds: the rules it leaves as they are, and the tables of the
// changed rule it leaves as they are, are not refused for passing them,
// since another node may have written them so (an upstream node has no
// bound); a change of another rule goes on, and a change that does not
// add names (a DROP) may shrink such a rule. With ch.Type "" every rule
// is checked as new. Once ctx is done it stops, between rules and inside
// a family's check, and returns ctx's error.
func CheckChange(ctx context.Context, db config.Database, ch RuleChange) ([]*sqlerr.Error, error) {
	d := familyDatabase(db)
	d.Changing, d.Before, d.BeforeNames, d.BeforeUses = ch.Type, ch.Before, ch.BeforeNames, ch.BeforeUses
	if ch.Diff != nil {
		d.Changed = ch.Diff.Changed
	}
	var errs []*sqlerr.Error
	for _, r := range db.Rules {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := rule.CheckProps(r.Type, propsToCheck(r, ch)); err != nil {
			errs = append(errs, err)
			continue
		}
		if f, ok := families.ByType(r.Type); ok {
			found, err := f.Check(ctx, d, r.Content)
			if err != nil {
				return nil, err
			}
			errs = append(errs, found...)
		}
	}
	return errs, nil
}

// propsToCheck is what of rule r CheckChange bounds the props of (see
// rule.CheckProps): with ch.Type "" (an import) all of it; the entries of
// the changed rule that differ from ch.Before (ch.Diff, or
// metadata.DiffOf) and its other fields; nothing of a rule the change
// left alone, whose props were bounded when they were written (or an
// upstream node wrote them).
func propsToCheck(r config.Rule, ch RuleChange) map[string]any {
	switch {
	case ch.Type == "":
		return r.Content
	case r.Type != ch.Type:
		return nil
	}
	diff := ch.Diff
	if diff == nil {
		diff = metadata.DiffOf(r.Type, ch.Before, r.Content)
	}
	if diff != nil {
		return diff.SparseNext
	}
	return r.Content
}

// familyDatabase is db as the rule families' checks read it.
func familyDatabase(db config.Database) rule.Database {
	contents := make(map[string]map[string]any, len(db.Rules))
	for _, r := range db.Rules {
		contents[r.Type] = r.Content
	}
	return families.Database(db.Name, slices.Sorted(maps.Keys(db.DataSources)), contents)
}
