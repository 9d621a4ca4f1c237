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
	_, err = putVersioned(ctx, repo, node, encodeGlobalRule(r))
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
	// The item alone as a rule, given the fields the target writes.
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
	items, err := ruleItems(layout, config.Rule{Type: ruleType, Content: single})
	if err != nil {
		return err
	}
	// The target may move part of the value to another item (a 5.5.4
	// table's keyGenerateStrategy becomes a key generate strategy item):
	// those are written after the item itself.
	var content []byte
	var moved []ruleItem
	for _, it := range items {
		if it.Item == item && it.Name == name {
			content = it.Value
		} else {
			moved = append(moved, it)
		}
	}
	if content == nil {
		return DropRuleItem(ctx, repo, db, ruleType, item, name)
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
	if _, err = putVersioned(ctx, repo, node, content); err != nil {
		return err
	}
	for _, it := range moved {
		other, err := layout.RuleItem(db, ruleType, it.Item, it.Name)
		if err != nil {
			return err
		}
		if _, err := putVersioned(ctx, repo, other, it.Value); err != nil {
			return err
		}
	}
	return nil
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
	if err := layout.CheckDatabaseName(db.Name); err != nil {
		return err
	}
	if _, err := repo.Create(ctx, key, nil); err != nil {
		return fmt.Errorf("create database %s: %w", db.Name, err)
	}
	return PersistDatabase(ctx, repo, layout, db)
}

// DropDatabase deletes database db with everything under it, its
// statistics (see dropStatistics) and the mark of an import that left it
// half-written (paths.Import). It returns ErrNoDatabase when it does not
// exist.
func DropDatabase(ctx context.Context, repo registry.Repository, db string) error {
	key, err := paths.Database(db)
	if err != nil {
		return err
	}
	if err := requireDatabase(ctx, repo, db); err != nil {
		return err
	}
	if err := repo.Delete(ctx, key); err != nil {
		return err
	}
	return errors.Join(dropStatistics(ctx, repo, db), dropImportMark(ctx, repo, db))
}

// dropStatistics deletes /statistics/databases/{db} with everything under
// it, the statistics ShardingSphere's Proxy collected for a database that
// is dropped: upstream leaves them behind (apache/shardingsphere#32407), and
// a database created again under the name would show them.
func dropStatistics(ctx context.Context, repo registry.Repository, db string) error {
	key, err := paths.StatisticsDatabase(db)
	if err != nil {
		return err
	}
	if err := repo.Delete(ctx, key); err != nil {
		return fmt.Errorf("database %s is dropped, its statistics %s are not: %w", db, key, err)
	}
	return nil
}

// dropImportMark deletes the import mark of db, if any.
func dropImportMark(ctx context.Context, repo registry.Repository, db string) error {
	mark, err := paths.Import(db)
	if err != nil {
		return err
	}
	return repo.Delete(ctx, mark)
}
