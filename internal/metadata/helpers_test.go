package metadata

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// The helpers below change the registry as the tests need, each through
// the write side (the *Writes functions) committed as one transaction.

var (
	ErrUnitExists = errors.New("storage unit already exists")
	ErrNoUnit     = errors.New("no such storage unit")
)

func unitExists(ctx context.Context, repo registry.Repository, db, name string) (bool, error) {
	node, err := paths.Unit(db, name)
	if err != nil {
		return false, err
	}
	_, err = repo.Get(ctx, paths.ActiveVersion(node))
	if errors.Is(err, registry.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// RegisterUnit adds storage unit name to database db. It returns
// ErrNoDatabase or ErrUnitExists.
func RegisterUnit(ctx context.Context, repo registry.Repository, db, name string, ds config.DataSource) error {
	if err := requireDatabase(ctx, repo, db); err != nil {
		return err
	}
	if ok, err := unitExists(ctx, repo, db, name); err != nil {
		return err
	} else if ok {
		return fmt.Errorf("unit %s.%s: %w", db, name, ErrUnitExists)
	}
	conds, ops, err := UnitWrites(ctx, repo, db, name, ds)
	if err != nil {
		return err
	}
	return Commit(ctx, repo, conds, ops)
}

// AlterUnit replaces an existing storage unit. It returns ErrNoUnit.
func AlterUnit(ctx context.Context, repo registry.Repository, db, name string, ds config.DataSource) error {
	if ok, err := unitExists(ctx, repo, db, name); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("unit %s.%s: %w", db, name, ErrNoUnit)
	}
	conds, ops, err := UnitWrites(ctx, repo, db, name, ds)
	if err != nil {
		return err
	}
	return Commit(ctx, repo, conds, ops)
}

// DropUnit removes a storage unit. It returns ErrNoUnit.
func DropUnit(ctx context.Context, repo registry.Repository, db, name string) error {
	if ok, err := unitExists(ctx, repo, db, name); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("unit %s.%s: %w", db, name, ErrNoUnit)
	}
	node, err := paths.Unit(db, name)
	if err != nil {
		return err
	}
	conds, ops, err := DeleteWrites(ctx, repo, node)
	if err != nil {
		return err
	}
	return Commit(ctx, repo, conds, ops)
}

// AlterRuleItem sets one item of a database rule: the unique item
// /metadata/{db}/rules/{ruleType}/{item} when name is "", else the named
// item .../{item}/{name}, placed as layout places it, through RuleWrites.
// value is the item's decoded value. It returns ErrNoDatabase.
func AlterRuleItem(ctx context.Context, repo registry.Repository, layout paths.Layout, db, ruleType, item, name string, value any) error {
	if _, err := layout.RuleItem(db, ruleType, item, name); err != nil {
		return err
	}
	if err := requireDatabase(ctx, repo, db); err != nil {
		return err
	}
	f := camel(item)
	single := map[string]any{f: value}
	switch {
	case has(keyListFields, ruleType, f):
		s := strings.TrimSpace(fmt.Sprint(value))
		if !strings.Contains(s, ":") {
			s = name + ":" + s
		}
		single[f] = []any{s}
	case name != "":
		single[f] = map[string]any{name: value}
	}
	next := config.Rule{Type: ruleType, Content: single}
	items, err := ruleItems(layout, next)
	if err != nil {
		return err
	}
	found := false
	for _, it := range items {
		found = found || it.Item == item && it.Name == name
	}
	if !found {
		return DropRuleItem(ctx, repo, db, ruleType, item, name)
	}
	conds, ops, err := RuleWrites(ctx, repo, layout, db, config.Rule{}, next)
	if err != nil {
		return err
	}
	return Commit(ctx, repo, conds, ops)
}

// DropRuleItem removes one rule item from wherever any layout places it.
// Removing a missing item is not an error.
func DropRuleItem(ctx context.Context, repo registry.Repository, db, ruleType, item, name string) error {
	all, err := paths.RuleItemPlacements(db, ruleType, item, name)
	if err != nil {
		return err
	}
	var conds []registry.Cond
	var ops []registry.Op
	for _, node := range all {
		c, o, err := DeleteWrites(ctx, repo, node)
		if err != nil {
			return err
		}
		conds, ops = append(conds, c...), append(ops, o...)
	}
	return Commit(ctx, repo, conds, ops)
}

// AlterProps replaces the registry's props with props (a new version).
func AlterProps(ctx context.Context, repo registry.Repository, props config.Props) error {
	conds, ops, err := GlobalWrites(ctx, repo, nil, props)
	if err != nil {
		return err
	}
	return Commit(ctx, repo, conds, ops)
}

// Commit, CreateDatabase and AlterGlobalRule are package metadatatest's,
// which the tests of package metadata cannot import (metadatatest imports
// metadata): hooks_test.go, in package metadata_test, sets them before
// the tests run.
var (
	// Commit commits conds and ops in one registry transaction, on a
	// session of its own; nothing when ops is empty.
	Commit func(ctx context.Context, repo registry.Repository, conds []registry.Cond, ops []registry.Op) error
	// CreateDatabase writes a new logical database (units and rules) in
	// layout's places in one transaction. It returns registry.ErrExists
	// (wrapped) when the database exists.
	CreateDatabase func(ctx context.Context, repo registry.Repository, layout paths.Layout, db config.Database) error
	// AlterGlobalRule replaces the global rule of r.Type (a new version).
	AlterGlobalRule func(ctx context.Context, repo registry.Repository, r config.Rule) error
)

// DropDatabase deletes database db with everything under it. It returns
// ErrNoDatabase.
func DropDatabase(ctx context.Context, repo registry.Repository, db string) error {
	key, err := paths.Database(db)
	if err != nil {
		return err
	}
	if err := requireDatabase(ctx, repo, db); err != nil {
		return err
	}
	conds, ops, err := DeleteWrites(ctx, repo, key)
	if err != nil {
		return err
	}
	return Commit(ctx, repo, conds, ops)
}
