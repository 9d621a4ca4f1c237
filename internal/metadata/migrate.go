package metadata

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// A migration rewrites a live tree's rule items from the layouts they are
// in to one target layout, without changing the configuration they hold:
// each database's rules are decoded (every layout is read), written as
// the target's release writes them, and the items that differ are added,
// changed (a new version, then active_version) or removed, in one
// registry transaction per database conditioned on every key it read.
// So each node sees a database either wholly in its old layout or wholly
// in the new one.

// Key changes of a migration.
const (
	MigrationAdd    = "add"
	MigrationChange = "change"
	MigrationRemove = "remove"
)

// MigrationStep is one rule item a migration adds, changes or removes.
type MigrationStep struct {
	Action string // MigrationAdd, MigrationChange or MigrationRemove
	Node   string // the item's versioned node
}

// DatabaseMigration is what migrating one database writes.
type DatabaseMigration struct {
	Database string
	// From is the release before 5.5 whose layout the database was read
	// in (Legacy54, Legacy53), "" for a 5.5.x one.
	From  string
	Steps []MigrationStep
	to    paths.Layout
	conds []registry.Cond
	ops   []registry.Op
}

// MigrationError is the refusal of a migration that would lose
// something: a rule the target release cannot express, or an item no
// release writes for the rule as read (a corrupt one, or one of an
// unknown shape), which the migration would otherwise drop; or (Limit)
// of a database whose one transaction the registry does not take.
type MigrationError struct {
	Database string
	To       paths.Layout
	Reason   string
	// Limit is true when the database's one transaction passes the
	// registry's limit (registry.ErrTooLarge): nothing of it was
	// written, the databases migrated before it stay migrated.
	Limit bool
}

func (e *MigrationError) Error() string {
	if e.Limit {
		return fmt.Sprintf("database %s cannot migrate to the %s layout at once: %s; nothing of it was written", e.Database, e.To, e.Reason)
	}
	return fmt.Sprintf("database %s cannot migrate to the %s layout without loss: %s; nothing was written", e.Database, e.To, e.Reason)
}

// PlanMigration reads every database's rules and returns, per database,
// what migrating them to layout to writes (a database already in that
// layout has no steps). It writes nothing. It fails with a
// *MigrationError when a database's rules cannot move without loss.
// ctx bounds the reads.
func PlanMigration(ctx context.Context, repo registry.Repository, to paths.Layout) ([]DatabaseMigration, error) {
	dbs, err := repo.Children(ctx, paths.MetadataRoot)
	if err != nil {
		return nil, fmt.Errorf("list databases: %w", err)
	}
	slices.Sort(dbs)
	var out []DatabaseMigration
	for _, db := range dbs {
		all, err := readAll(ctx, repo, db)
		if err != nil {
			return nil, fmt.Errorf("read database %s: %w", db, err)
		}
		l, ok, err := readLegacy53(db, all)
		if err != nil {
			return nil, &MigrationError{Database: db, To: to, Reason: err.Error()}
		}
		if ok {
			m, err := planLegacy53(to, l)
			if err != nil {
				return nil, err
			}
			m.From = Legacy53
			out = append(out, m)
			continue
		}
		d, kvs, err := ReadDatabase(ctx, repo, db)
		if errors.Is(err, ErrNoDatabase) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read database %s: %w", db, err)
		}
		aliases := aliases54(db, kvs)
		if aliases != nil {
			units := d.Units
			d = decode(db, renamedKVs(db, kvs))
			if d == nil {
				d = &Database{Name: db, Rules: map[string]config.Rule{}}
			}
			d.Units = units
		}
		m, err := planDatabase(to, d, kvs, aliases)
		if err != nil {
			return nil, err
		}
		if aliases != nil {
			m.From = Legacy54
		}
		out = append(out, m)
	}
	g, ok, err := planGlobal53(ctx, repo, to)
	if err != nil {
		return nil, err
	}
	if ok {
		out = append(out, g)
	}
	return out, nil
}

// planDatabase is PlanMigration of database d, read from kvs; aliases
// maps each item node of kvs that a 5.4.x release named to its 5.5 node
// (aliases54), nil for a 5.5.x tree.
func planDatabase(to paths.Layout, d *Database, kvs []registry.KV, aliases map[string]string) (DatabaseMigration, error) {
	m := DatabaseMigration{Database: d.Name, to: to}
	refuse := func(format string, args ...any) (DatabaseMigration, error) {
		return m, &MigrationError{Database: d.Name, To: to, Reason: fmt.Sprintf(format, args...)}
	}
	target := map[string][]byte{}
	// written holds every item some layout writes for the rules as read:
	// only such an item may be replaced or removed.
	written := map[string][][]byte{}
	for _, typ := range sortedKeys(d.Rules) {
		r := d.Rules[typ]
		if err := expressible(to, r); err != nil {
			return refuse("rule %s: %v", typ, err)
		}
		items, err := placedItemsOf(to, d.Name, r)
		if err != nil {
			return refuse("rule %s: %v", typ, err)
		}
		for k, v := range items {
			target[k] = v
		}
		for _, l := range paths.Layouts {
			items, err := placedItemsOf(l, d.Name, r)
			if err != nil {
				continue
			}
			for k, v := range items {
				written[k] = append(written[k], v)
			}
		}
	}
	stored := activeValues(kvs)
	ours := func(node string) bool {
		as := node
		if a, ok := aliases[node]; ok {
			as = a
		}
		return slices.ContainsFunc(written[as], func(v []byte) bool { return sameYAML(v, stored[node]) })
	}
	read := make(map[string]registry.KV, len(kvs))
	for _, kv := range kvs {
		read[kv.Key] = kv
	}
	for _, node := range sortedKeys(stored) {
		if _, ok := target[node]; ok && sameYAML(stored[node], target[node]) {
			continue
		}
		if !ours(node) {
			return refuse("item %s holds what no release writes for the rule as read (fix or remove it first)", node)
		}
		if _, ok := target[node]; ok {
			continue // changed below
		}
		c, o := deleteFrom(read, node)
		m.conds, m.ops = append(m.conds, c...), append(m.ops, o...)
		m.Steps = append(m.Steps, MigrationStep{Action: MigrationRemove, Node: node})
	}
	for _, node := range sortedKeys(target) {
		action := MigrationAdd
		if v, ok := stored[node]; ok {
			if sameYAML(v, target[node]) {
				continue
			}
			action = MigrationChange
		} else if _, ok := read[paths.ActiveVersion(node)]; ok {
			// An active_version naming no version: the item is unreadable.
			return refuse("item %s has an active_version without its version (fix or remove it first)", node)
		}
		c, o := replaceFrom(read, node, target[node])
		m.conds, m.ops = append(m.conds, c...), append(m.ops, o...)
		m.Steps = append(m.Steps, MigrationStep{Action: action, Node: node})
	}
	return m, nil
}

// expressible returns an error naming what of r the release of layout to
// cannot hold: what its swap would drop (a sharding cache on 5.5.4) or
// refuse (a key generate strategy it cannot place).
func expressible(to paths.Layout, r config.Rule) error {
	w, err := RuleAsWritten(to, r)
	if err != nil {
		return err
	}
	for _, f := range sortedKeys(r.Content) {
		if _, ok := w.Content[f]; ok || r.Content[f] == nil {
			continue
		}
		if f == "keyGenerateStrategies" && r.Type == "sharding" {
			continue // moved into the tables' keyGenerateStrategy
		}
		return fmt.Errorf("%s (item %s) cannot be expressed in ShardingSphere %s; remove it first", f, snake(f), to)
	}
	return nil
}

// Migrate writes plan, one registry transaction per database through
// sess, and returns the databases it migrated. A database whose keys
// changed since the plan was read fails the migration with the
// registry's condition error (registry.ErrBadVersion, ErrExists or
// ErrNotFound): the databases before it are migrated, it and those after
// are not; plan again and migrate again. A database whose transaction
// passes the registry's limit (etcd's --max-txn-ops, ZooKeeper's
// jute.maxbuffer: registry.ErrTooLarge) fails it with a *MigrationError
// whose Limit is set, naming the limit to raise: it is not split, since
// nodes would then see the database in a mix of layouts. ctx bounds the
// commits.
func Migrate(ctx context.Context, sess registry.Session, plan []DatabaseMigration) ([]string, error) {
	var done []string
	for _, m := range plan {
		if len(m.ops) == 0 {
			continue
		}
		if _, err := sess.Commit(ctx, registry.Txn{Conds: m.conds, Ops: m.ops}); err != nil {
			if errors.Is(err, registry.ErrTooLarge) {
				return done, &MigrationError{Database: m.Database, To: m.to, Limit: true, Reason: fmt.Sprintf(
					"its migration is one registry transaction of %d conditions and %d writes (so that every node sees the database either in its old layout or in the new one), more than the registry takes in one (%v). "+
						"Raise the server's limit and migrate again: etcd's --max-txn-ops (128 by default) to at least %d, or ZooKeeper's jute.maxbuffer",
					len(m.conds), len(m.ops), err, max(len(m.conds), len(m.ops)))}
			}
			return done, fmt.Errorf("migrate database %s: %w", m.Database, err)
		}
		done = append(done, m.Database)
	}
	return done, nil
}

// MigrationLockWait bounds how long MigrateTree waits for the cluster
// lock (a LOCK CLUSTER, another migration).
const MigrationLockWait = 10 * time.Second

// MigrateTree migrates every database of the registry to layout to,
// holding the cluster lock (in both of its places: the 5.5.3 and later
// exclusive operation and the 5.5.0-5.5.2 global lock, so that no LOCK or
// UNLOCK CLUSTER of any release and no other migration runs meanwhile)
// through a session of its own, then records to at
// paths.RegistryLayout, which running nodes without layoutVersion follow.
// With dryRun it takes no lock and writes nothing. It returns the plan and the databases migrated. A plan that
// would lose something fails with a *MigrationError before any write.
// ctx bounds it.
func MigrateTree(ctx context.Context, repo registry.Repository, to paths.Layout, dryRun bool) ([]DatabaseMigration, []string, error) {
	if dryRun {
		plan, err := PlanMigration(ctx, repo, to)
		return plan, nil, err
	}
	sess, err := repo.NewSession(ctx, registry.SessionOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("open a registry session for the migration: %w", err)
	}
	defer sess.Close(context.WithoutCancel(ctx))
	for _, key := range []string{paths.Layout553.ClusterLock(), paths.Layout552.ClusterLock()} {
		lctx, cancel := context.WithTimeout(ctx, MigrationLockWait)
		lock, err := sess.Lock(lctx, key)
		cancel()
		if err != nil {
			return nil, nil, fmt.Errorf("take the cluster lock %s (waited at most %v; a LOCK CLUSTER or another migration holds it): %w", key, MigrationLockWait, err)
		}
		defer func() { _ = lock.Unlock(context.WithoutCancel(ctx)) }()
	}
	plan, err := PlanMigration(ctx, repo, to)
	if err != nil {
		return nil, nil, err
	}
	done, err := Migrate(ctx, sess, plan)
	if err != nil {
		return plan, done, err
	}
	// Nodes without layoutVersion follow the record (daemon).
	if _, err := repo.Put(ctx, paths.RegistryLayout, []byte(to.String())); err != nil {
		return plan, done, fmt.Errorf("record the tree's layout at %s (every database is migrated): %w", paths.RegistryLayout, err)
	}
	return plan, done, nil
}
