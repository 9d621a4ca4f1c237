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

// ErrNoDatabase is returned for a logical database that does not exist.
var ErrNoDatabase = errors.New("no such database")

// requireDatabase returns ErrNoDatabase, wrapped, when database db is not
// one of /metadata's children. The database's own node (/metadata/{db},
// which upstream and DatabaseWrites write) answers in one read; only
// where it is absent (a database whose keys lie below it alone, as an
// etcd writer may leave them) are the children listed, which on etcd
// walks every key below /metadata.
func requireDatabase(ctx context.Context, repo registry.Repository, db string) error {
	key, err := paths.Database(db)
	if err != nil {
		return err
	}
	if _, err := repo.Get(ctx, key); err == nil {
		return nil
	} else if !errors.Is(err, registry.ErrNotFound) {
		return err
	}
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

// ListenerHold is how long a database announcement stands before it is
// deleted: as long as ShardingSphere's own writer keeps its announcement
// (ClusterMetaDataManagerPersistService deletes it, in a finally block,
// only after waiting for its own reload, an unconditional 3 s sleep).
// A ShardingSphere node on ZooKeeper follows the announcements with a
// CuratorCache, which learns of a new znode from a watch and then reads
// its data: an announcement deleted before that read is never seen, and
// the node never adds or drops the database. On etcd the value comes with
// the event, but the node then reads the database. 3 s covers the
// watch's delivery, the read and a short reconnection of every node, as
// upstream's own announcements do.
const ListenerHold = 3 * time.Second

// Coordinator announces logical databases to the other nodes as
// ShardingSphere's cluster mode does (ClusterMetaDataManagerPersistService
// with ClusterDatabaseListenerPersistCoordinator): the database listener
// coordinator's ephemeral node of Session,
// /states/database_listener_coordinator/{db} = CREATE or DROP
// (/states/listener_assisted/{db} = CREATE_DATABASE or DROP_DATABASE in
// Layout552), makes ShardingSphere nodes start or stop following the
// database. Every shardkeeper node follows announcements too (see Store).
// CREATE and DROP DATABASE (the consoles, the HTTP API, the CLI) and
// IMPORT announce through Announce and nothing else.
type Coordinator struct {
	Repo    registry.Repository
	Session registry.Session
	Layout  paths.Layout
	// Hold is how long an announcement stands; zero means ListenerHold.
	// Only tests set it.
	Hold time.Duration
}

// Announcement is what Announce announces.
type Announcement struct {
	// Databases are the databases announced, each with its own node.
	Databases []string
	// Create announces CREATE, else DROP.
	Create bool
	// With is the last transaction of the write that creates the
	// databases (every other key of them already committed), committed
	// together with the announcements. Empty for a DROP.
	With registry.Txn
	// WhileAnnounced, when not nil, runs after the hold while the
	// announcements still stand: a DROP deletes the database there, so
	// that a node that follows it again when the announcement goes finds
	// it gone.
	WhileAnnounced func(ctx context.Context) error
}

// Announce is the one database announcement: in one transaction of
// c.Session it commits a.With and, for each database, its announcement as
// an ephemeral key that must not exist yet; the announcements stand for
// c.Hold (ListenerHold), then a.WhileAnnounced runs, then they are
// deleted (they also go with the session).
//
// Why the database's keys come with or before its CREATE: a
// ShardingSphere node handles CREATE by loading the database from the
// registry and then watching /metadata/{db} with a CuratorCache started
// afterInitialized, which reports no event for the nodes that already
// exist when it starts. A key written after the announcement could land
// after the load but before the cache's start, and that node would never
// see it. With every key committed before or with the announcement, the
// load reads the whole database, and each later change is an event.
//
// The error of the commit (registry.ErrExists, wrapped, when a key or an
// announcement exists) means nothing was written; it is returned at once.
// Otherwise the error is WhileAnnounced's. ctx bounds the commit and the
// hold (a cancelled ctx ends the hold early); the announcements are
// deleted even then.
func (c Coordinator) Announce(ctx context.Context, a Announcement) error {
	txn := registry.Txn{Conds: slices.Clone(a.With.Conds), Ops: slices.Clone(a.With.Ops)}
	value := []byte(c.Layout.ListenerValue(a.Create))
	keys := make([]string, 0, len(a.Databases))
	for _, db := range a.Databases {
		key, err := c.Layout.DatabaseListener(db)
		if err != nil {
			return err
		}
		keys = append(keys, key)
		txn.Conds = append(txn.Conds, registry.Cond{Key: key})
		txn.Ops = append(txn.Ops, registry.Op{Key: key, Value: value, Ephemeral: true})
	}
	if _, err := c.Session.Commit(ctx, txn); err != nil {
		return err
	}
	hold := c.Hold
	if hold <= 0 {
		hold = ListenerHold
	}
	t := time.NewTimer(hold)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
	}
	var err error
	if a.WhileAnnounced != nil {
		err = a.WhileAnnounced(ctx)
	}
	for _, key := range keys {
		_ = c.Repo.Delete(context.WithoutCancel(ctx), key)
	}
	return err
}

// CreateDatabase creates db (its node, units and rules: DatabaseWrites)
// and announces CREATE in the same transaction (Announce). It returns
// registry.ErrExists (wrapped) when the database exists. ctx bounds the
// registry calls.
func (c Coordinator) CreateDatabase(ctx context.Context, db config.Database) error {
	kvs, err := DatabaseWrites(c.Layout, db)
	if err != nil {
		return err
	}
	var txn registry.Txn
	for _, kv := range kvs {
		txn.Conds = append(txn.Conds, registry.Cond{Key: kv.Key})
		txn.Ops = append(txn.Ops, registry.Op{Key: kv.Key, Value: kv.Value})
	}
	if err := c.Announce(ctx, Announcement{Databases: []string{db.Name}, Create: true, With: txn}); err != nil {
		return fmt.Errorf("create database %s: %w", db.Name, err)
	}
	return nil
}

// DropDatabase announces DROP (Announce) and deletes database db
// (DeleteDatabase) while the announcement stands. It returns
// ErrNoDatabase when the database does not exist. ctx bounds the
// registry calls.
func (c Coordinator) DropDatabase(ctx context.Context, db string) error {
	if _, err := paths.Database(db); err != nil {
		return err
	}
	if err := requireDatabase(ctx, c.Repo, db); err != nil {
		return err
	}
	return c.Announce(ctx, Announcement{Databases: []string{db}, WhileAnnounced: func(ctx context.Context) error {
		return DeleteDatabase(ctx, c.Repo, db)
	}})
}

// DeleteDatabase deletes database db with everything under it, its
// statistics (see dropStatistics) and the mark of an import that left it
// half-written (paths.Import). It announces nothing: run it while a DROP
// announcement of db stands (Coordinator.DropDatabase), so that a node
// that follows db again when the announcement goes finds it gone. ctx
// bounds the registry calls.
func DeleteDatabase(ctx context.Context, repo registry.Repository, db string) error {
	key, err := paths.Database(db)
	if err != nil {
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
