package metadata

import (
	"context"
	"errors"
	"fmt"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// Sentinel errors of the writers.
var (
	ErrNoDatabase = errors.New("no such database")
	ErrUnitExists = errors.New("storage unit already exists")
	ErrNoUnit     = errors.New("no such storage unit")
)

// The writers below change the registry only; every node (this one
// included) applies the change through its watches. Each returns once the
// change is persisted. ctx bounds the registry calls.

// SetProps merges changes into the registry's props and persists the result
// as a new /props version. Values are checked against the known property
// types first. Every other key is written back as read, with its YAML type
// (an unknown "foo: 3" stays an int, a list stays a list). A concurrent
// SetProps is never lost: the write is a compare-and-set on
// active_version, retried on conflict.
func SetProps(ctx context.Context, repo registry.Repository, changes map[string]string) error {
	_, err := MergeProps(ctx, repo, changes)
	return err
}

// MergeProps is SetProps that also returns the /props version it wrote,
// which nodes that apply it report (see Snapshot.PropsVersion). When the
// new version is active but older versions could not be deleted, it
// returns that version and a *CleanupError: the change is made.
func MergeProps(ctx context.Context, repo registry.Repository, changes map[string]string) (version int, err error) {
	for k, v := range changes {
		if _, err := config.CheckProp(k, v); err != nil {
			return 0, fmt.Errorf("props.%s: %w", k, err)
		}
	}
	return casVersioned(ctx, repo, paths.PropsRoot, func(old []byte) ([]byte, error) {
		if old != nil {
			if _, err := decodeProps(old); err != nil {
				return nil, fmt.Errorf("current /props: %w", err)
			}
		}
		return mergeProps(old, changes)
	})
}

// AlterProps replaces the registry's props with props (a new /props
// version).
func AlterProps(ctx context.Context, repo registry.Repository, props config.Props) error {
	for k, v := range props {
		if _, err := config.CheckProp(k, v); err != nil {
			return fmt.Errorf("props.%s: %w", k, err)
		}
	}
	_, err := putVersioned(ctx, repo, paths.PropsRoot, encodeProps(props))
	return err
}

// AlterGlobalRule replaces the global rule of r.Type (a new /rules/{type}
// version).
func AlterGlobalRule(ctx context.Context, repo registry.Repository, r config.Rule) error {
	if !config.IsGlobalRuleType(r.Type) {
		return fmt.Errorf("%q is not a global rule type", r.Type)
	}
	node, err := paths.GlobalRule(r.Type)
	if err != nil {
		return err
	}
	_, err = putVersioned(ctx, repo, node, encodeRuleContent(r.Content))
	return err
}

func requireDatabase(ctx context.Context, repo registry.Repository, db string) error {
	dbs, err := repo.Children(ctx, paths.MetadataRoot)
	if err != nil {
		return err
	}
	for _, d := range dbs {
		if d == db {
			return nil
		}
	}
	return fmt.Errorf("database %s: %w", db, ErrNoDatabase)
}

func unitExists(ctx context.Context, repo registry.Repository, node string) (bool, error) {
	_, err := repo.Get(ctx, paths.ActiveVersion(node))
	if errors.Is(err, registry.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// RegisterUnit adds the storage unit name to database db. It returns
// ErrNoDatabase or ErrUnitExists. It does not connect to the data source:
// check it with datasource.Ping first, as ShardingSphere's REGISTER STORAGE
// UNIT does.
func RegisterUnit(ctx context.Context, repo registry.Repository, db, name string, ds config.DataSource) error {
	node, err := paths.Unit(db, name)
	if err != nil {
		return err
	}
	if err := requireDatabase(ctx, repo, db); err != nil {
		return err
	}
	if ok, err := unitExists(ctx, repo, node); err != nil {
		return err
	} else if ok {
		return fmt.Errorf("unit %s.%s: %w", db, name, ErrUnitExists)
	}
	_, err = putVersioned(ctx, repo, node, encodeUnit(ds))
	return err
}

// AlterUnit replaces the properties of an existing storage unit. It returns
// ErrNoUnit when it does not exist.
func AlterUnit(ctx context.Context, repo registry.Repository, db, name string, ds config.DataSource) error {
	node, err := paths.Unit(db, name)
	if err != nil {
		return err
	}
	if ok, err := unitExists(ctx, repo, node); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("unit %s.%s: %w", db, name, ErrNoUnit)
	}
	_, err = putVersioned(ctx, repo, node, encodeUnit(ds))
	return err
}

// DropUnit removes a storage unit. It returns ErrNoUnit when it does not
// exist.
func DropUnit(ctx context.Context, repo registry.Repository, db, name string) error {
	node, err := paths.Unit(db, name)
	if err != nil {
		return err
	}
	if ok, err := unitExists(ctx, repo, node); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("unit %s.%s: %w", db, name, ErrNoUnit)
	}
	return repo.Delete(ctx, node)
}

// AlterRuleItem sets one item of a database rule: the unique item
// /metadata/{db}/rules/{ruleType}/{item} when name is "", else the named
// item .../{item}/{name}, placed as layout places it. value is the item's
// decoded value (a map for a table rule or an algorithm, a string, a list,
// ...), encoded as ShardingSphere does. A copy of the item in another
// layout's place is deleted. It returns ErrNoDatabase.
func AlterRuleItem(ctx context.Context, repo registry.Repository, layout paths.Layout, db, ruleType, item, name string, value any) error {
	node, err := layout.RuleItem(db, ruleType, item, name)
	if err != nil {
		return err
	}
	if err := requireDatabase(ctx, repo, db); err != nil {
		return err
	}
	var content []byte
	if name == "" {
		b, ok := uniqueValue(value)
		if !ok {
			return DropRuleItem(ctx, repo, db, ruleType, item, name)
		}
		content = b
	} else if s, ok := value.(string); ok && has(keyListFields, ruleType, camel(item)) {
		content = []byte(s)
	} else {
		content = marshal(value)
	}
	// The other layout's copy goes first, so that its deletion never
	// follows (and hides) the new value.
	all, err := paths.RuleItemPlacements(db, ruleType, item, name)
	if err != nil {
		return err
	}
	for _, other := range all {
		if other != node {
			if err := repo.Delete(ctx, other); err != nil {
				return err
			}
		}
	}
	_, err = putVersioned(ctx, repo, node, content)
	return err
}

// DropRuleItem removes one rule item (see AlterRuleItem for the naming)
// from wherever any layout places it. Removing a missing item is not an
// error.
func DropRuleItem(ctx context.Context, repo registry.Repository, db, ruleType, item, name string) error {
	all, err := paths.RuleItemPlacements(db, ruleType, item, name)
	if err != nil {
		return err
	}
	for _, node := range all {
		if err := repo.Delete(ctx, node); err != nil {
			return err
		}
	}
	return nil
}

// CreateDatabase persists a new logical database (units and rules) in the
// layout of the target release (see PersistDatabase). It returns
// registry.ErrExists (wrapped) when the database exists.
func CreateDatabase(ctx context.Context, repo registry.Repository, layout paths.Layout, db config.Database) error {
	key, err := paths.Database(db.Name)
	if err != nil {
		return err
	}
	if _, err := repo.Create(ctx, key, nil); err != nil {
		return fmt.Errorf("create database %s: %w", db.Name, err)
	}
	return PersistDatabase(ctx, repo, layout, db)
}

// DropDatabase deletes database db with everything under it. It returns
// ErrNoDatabase when it does not exist.
func DropDatabase(ctx context.Context, repo registry.Repository, db string) error {
	key, err := paths.Database(db)
	if err != nil {
		return err
	}
	if err := requireDatabase(ctx, repo, db); err != nil {
		return err
	}
	return repo.Delete(ctx, key)
}
