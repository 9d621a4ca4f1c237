package dbconfig

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule/families"
	"github.com/shardkeeper/shardkeeper/internal/rule/single"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/registry"
)

// Unit is one storage unit of a REGISTER or ALTER STORAGE UNIT statement,
// in statement order.
type Unit struct {
	Name       string
	DataSource config.DataSource
}

// UnitOptions configures the storage unit statements.
type UnitOptions struct {
	// Ping checks a unit with a real connection; nil means
	// datasource.Ping.
	Ping func(ctx context.Context, unit string, ds config.DataSource) error
	// Session commits the transaction; nil means a session of the
	// statement's own.
	Session registry.Session
}

func noDatabase(db string) error { return &UnknownDatabaseError{Name: db} }

func duplicateUnits(names []string) *sqlerr.Error {
	return &sqlerr.Error{Code: 10104, SQLState: "42S01", Message: fmt.Sprintf("Duplicate storage unit names '[%s]'.", strings.Join(names, ", "))}
}

func missingUnits(db string, names []string) *sqlerr.Error {
	return &sqlerr.Error{Code: 10102, SQLState: "44000", Message: fmt.Sprintf("Storage units '[%s]' do not exist in database '%s'.", strings.Join(names, ", "), db)}
}

// statementDuplicates returns the names given twice in units.
func statementDuplicates(units []Unit) []string {
	seen, dup := map[string]bool{}, []string{}
	for _, u := range units {
		if seen[u.Name] && !slices.Contains(dup, u.Name) {
			dup = append(dup, u.Name)
		}
		seen[u.Name] = true
	}
	return dup
}

// RegisterUnits runs REGISTER STORAGE UNIT [IF NOT EXISTS] on database db
// of snap (the node's current view): as upstream's
// RegisterStorageUnitExecutor, names given twice, names of existing units
// (skipped instead with ifNotExists) and names of logical data sources the
// rules define are refused with 10104, then every unit is connected to
// (10110 names each that fails), and only then are all of them written in
// one registry transaction, in the layout's place, each as version 0.
// It returns the units written.
func RegisterUnits(ctx context.Context, repo registry.Repository, snap *metadata.Snapshot, db string, units []Unit, ifNotExists bool, opts UnitOptions) ([]string, error) {
	d := snap.Databases[db]
	if d == nil {
		return nil, noDatabase(db)
	}
	if dup := statementDuplicates(units); len(dup) > 0 {
		return nil, duplicateUnits(dup)
	}
	logical := logicalDataSources(d)
	var todo []Unit
	var taken []string
	for _, u := range units {
		if _, ok := d.Units[u.Name]; ok || logical[u.Name] {
			if ifNotExists && !logical[u.Name] {
				continue
			}
			taken = append(taken, u.Name)
			continue
		}
		todo = append(todo, u)
	}
	if len(taken) > 0 {
		return nil, duplicateUnits(taken)
	}
	if len(todo) == 0 {
		return nil, nil
	}
	cfg := config.Database{Name: db, DataSources: map[string]config.DataSource{}}
	for _, u := range todo {
		cfg.DataSources[u.Name] = u.DataSource
	}
	if err := pingAll(ctx, cfg, opts.Ping); err != nil {
		return nil, err
	}
	var txn registry.Txn
	var names []string
	for _, u := range todo {
		if _, err := paths.Unit(db, u.Name); err != nil {
			return nil, unsupported("storage unit name %q: %v", u.Name, err)
		}
		conds, ops, err := metadata.UnitWrites(ctx, repo, db, u.Name, u.DataSource)
		if err != nil {
			return nil, err
		}
		txn.Conds, txn.Ops = append(txn.Conds, conds...), append(txn.Ops, ops...)
		names = append(names, u.Name)
	}
	if _, err := CommitOne(ctx, repo, opts.Session, txn); err != nil {
		return nil, err
	}
	return names, nil
}

// AlterUnits runs ALTER STORAGE UNIT on database db of snap: names given
// twice are refused (10104), units that do not exist too (10102), and so is
// a change of a unit's host, port or database (10111: ShardingSphere
// alters the pool, not what it points to; unregister and register
// instead). Every unit is connected to (10110) before all of them are
// written as new versions in one registry transaction.
func AlterUnits(ctx context.Context, repo registry.Repository, snap *metadata.Snapshot, db string, units []Unit, opts UnitOptions) error {
	d := snap.Databases[db]
	if d == nil {
		return noDatabase(db)
	}
	if dup := statementDuplicates(units); len(dup) > 0 {
		return duplicateUnits(dup)
	}
	var absent, moved []string
	for _, u := range units {
		cur, ok := d.Units[u.Name]
		if !ok {
			absent = append(absent, u.Name)
			continue
		}
		if !sameTarget(cur, u.DataSource) {
			moved = append(moved, u.Name)
		}
	}
	if len(absent) > 0 {
		return missingUnits(db, absent)
	}
	if len(moved) > 0 {
		return &sqlerr.Error{Code: 10111, SQLState: "0A000", Message: fmt.Sprintf("Can not alter connection info in storage units: '[%s]'.", strings.Join(moved, ", "))}
	}
	cfg := config.Database{Name: db, DataSources: map[string]config.DataSource{}}
	for _, u := range units {
		cfg.DataSources[u.Name] = u.DataSource
	}
	if err := pingAll(ctx, cfg, opts.Ping); err != nil {
		return err
	}
	var txn registry.Txn
	for _, u := range units {
		if _, err := paths.Unit(db, u.Name); err != nil {
			return unsupported("storage unit name %q: %v", u.Name, err)
		}
		conds, ops, err := metadata.UnitWrites(ctx, repo, db, u.Name, u.DataSource)
		if err != nil {
			return err
		}
		txn.Conds, txn.Ops = append(txn.Conds, conds...), append(txn.Ops, ops...)
	}
	_, err := CommitOne(ctx, repo, opts.Session, txn)
	return err
}

// sameTarget reports whether two data sources point to the same database
// (host, port and database name; the file for SQLite).
func sameTarget(a, b config.DataSource) bool {
	ta, errA := datasource.Translate(a)
	tb, errB := datasource.Translate(b)
	if errA != nil || errB != nil {
		return a.URL == b.URL
	}
	return ta.Dialect == tb.Dialect && ta.Host == tb.Host && ta.Database == tb.Database
}

// UnregisterUnits runs UNREGISTER STORAGE UNIT [IF EXISTS] on database db
// of snap: units that do not exist are refused (10102) unless ifExists,
// and so are units a rule uses (10103 names the rule types), except single
// and broadcast tables when ignoreSingle / ignoreBroadcast (IGNORE SINGLE
// TABLES, IGNORE BROADCAST TABLES). Then the units are deleted in one
// registry transaction. It
// returns the units removed.
func UnregisterUnits(ctx context.Context, repo registry.Repository, snap *metadata.Snapshot, db string, names []string, ifExists, ignoreSingle, ignoreBroadcast bool) ([]string, error) {
	d := snap.Databases[db]
	if d == nil {
		return nil, noDatabase(db)
	}
	var absent, todo []string
	for _, n := range names {
		if _, ok := d.Units[n]; !ok {
			if !ifExists {
				absent = append(absent, n)
			}
			continue
		}
		if !slices.Contains(todo, n) {
			todo = append(todo, n)
		}
	}
	if len(absent) > 0 {
		return nil, missingUnits(db, absent)
	}
	used := UnitsInUse(d, ignoreSingle, ignoreBroadcast)
	for _, n := range todo {
		if rules := used[n]; len(rules) > 0 {
			return nil, &sqlerr.Error{Code: 10103, SQLState: "44000", Message: fmt.Sprintf("Storage unit '%s' still used by '[%s]'.", n, strings.Join(rules, ", "))}
		}
	}
	var txn registry.Txn
	for _, n := range todo {
		node, err := paths.Unit(db, n)
		if err != nil {
			return nil, err
		}
		conds, ops, err := metadata.DeleteWrites(ctx, repo, node)
		if err != nil {
			return nil, err
		}
		txn.Conds, txn.Ops = append(txn.Conds, conds...), append(txn.Ops, ops...)
	}
	if len(txn.Ops) > 0 {
		if _, err := CommitOne(ctx, repo, nil, txn); err != nil {
			return nil, err
		}
	}
	return todo, nil
}

// UnitsInUse maps each data source name a rule of d refers to onto the
// names of those rules' types, upper case as upstream names them
// (ShardingRule, ...). It reads only the fields that name data sources:
// the data source part of sharding tables' actualDataNodes, auto tables'
// actualDataSources (inline expressions expanded; one that cannot be read
// claims nothing), readwrite-splitting groups' write and read data sources,
// shadow data sources' production and shadow ones, single tables' data
// source, and with broadcast tables every unit. An expression of more
// data sources than inline.MaxNames, or past the sharding rule's budget
// of inline.MaxRuleNames names (a rule another node wrote; see
// ShardingTableUnits), is not expanded: it claims every unit of d whose
// name it could stand for (unitsMatching), so that a unit it names is
// never taken for unused. Single and broadcast tables are left out when
// ignoreSingle / ignoreBroadcast.
func UnitsInUse(d *metadata.Database, ignoreSingle, ignoreBroadcast bool) map[string][]string {
	out := map[string][]string{}
	add := func(rule string, names []string) {
		for _, n := range names {
			if !slices.Contains(out[n], rule) {
				out[n] = append(out[n], rule)
			}
		}
	}
	view := d.RuleView()
	for _, typ := range slices.Sorted(maps.Keys(d.Rules)) {
		c := d.Rules[typ].Content
		if f, ok := families.ByType(typ); ok {
			if ignoreBroadcast && typ == "broadcast" || ignoreSingle && typ == single.Type {
				continue
			}
			for _, u := range f.Units(view, c) {
				add(ruleClass(typ), u.Units)
			}
		}
	}
	return out
}

// logicalDataSources are the data source names the rules of d define
// (readwrite-splitting groups, shadow data sources).
func logicalDataSources(d *metadata.Database) map[string]bool {
	out := map[string]bool{}
	for typ, r := range d.Rules {
		if f, ok := families.ByType(typ); ok {
			for _, n := range f.Defines(r.Content) {
				out[n] = true
			}
		}
	}
	return out
}

// CommitOne commits txn with sess, or a session of its own, as a rule or
// storage-unit change writes: a txn beyond the limits of one transaction
// is refused (TooBigForOneTransaction) before anything is sent. It
// returns the version the commit wrote (registry.Session.Commit; 0 when
// not known).
func CommitOne(ctx context.Context, repo registry.Repository, sess registry.Session, txn registry.Txn) (registry.Version, error) {
	if err := checkOneTransaction(txn); err != nil {
		return 0, err
	}
	if config.Unsafe(config.UnsafeUnconditionalWrites) {
		return 0, overwrite(ctx, repo, txn) // the chaos negative control (config.EnvUnsafeControl), never in production
	}
	if config.Unsafe(config.UnsafeAckBeforeCommit) {
		go commitLater(context.WithoutCancel(ctx), repo, sess, txn) // the chaos negative control (config.EnvUnsafeControl), never in production
		return 0, nil
	}
	if sess == nil {
		s, err := repo.NewSession(ctx, registry.SessionOptions{})
		if err != nil {
			return 0, fmt.Errorf("open a registry session: %w", err)
		}
		defer s.Close(context.WithoutCancel(ctx))
		sess = s
	}
	v, err := sess.Commit(ctx, txn)
	if err != nil {
		return 0, fmt.Errorf("write the change (nothing was written): %w", err)
	}
	return v, nil
}

// commitLater commits txn as CommitOne does, its outcome dropped: the
// chaos negative control config.UnsafeAckBeforeCommit answers the change
// before the registry confirms it, never in production.
func commitLater(ctx context.Context, repo registry.Repository, sess registry.Session, txn registry.Txn) {
	ctx, cancel := context.WithTimeout(ctx, unsafeCommitTimeout)
	defer cancel()
	if sess == nil {
		s, err := repo.NewSession(ctx, registry.SessionOptions{})
		if err != nil {
			return
		}
		defer s.Close(context.WithoutCancel(ctx))
		sess = s
	}
	_, _ = sess.Commit(ctx, txn)
}

// unsafeCommitTimeout bounds a commit that commitLater sends.
const unsafeCommitTimeout = 30 * time.Second

// overwrite writes txn's puts and deletes one at a time without their
// conditions, as ShardingSphere persists a change: the chaos negative
// control config.UnsafeUnconditionalWrites, never in production.
func overwrite(ctx context.Context, repo registry.Repository, txn registry.Txn) error {
	for _, op := range txn.Ops {
		var err error
		if op.Delete {
			err = repo.Delete(ctx, op.Key)
		} else {
			_, err = repo.Put(ctx, op.Key, op.Value)
		}
		if err != nil && !errors.Is(err, registry.ErrNotFound) {
			return fmt.Errorf("write the change (partly written): %w", err)
		}
	}
	return nil
}

// ruleClass is the name upstream's messages give the rule of type typ:
// ShardingRule for sharding, ReadwriteSplittingRule for
// readwrite_splitting.
func ruleClass(typ string) string {
	var b strings.Builder
	for _, part := range strings.Split(typ, "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String() + "Rule"
}
