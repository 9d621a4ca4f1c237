package metadata

import (
	"context"
	"errors"
	"fmt"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// ErrNoDatabase is returned for a logical database that does not exist.
var ErrNoDatabase = errors.New("no such database")

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

// Coordinator creates and drops logical databases as ShardingSphere's
// cluster mode does (ClusterMetaDataManagerPersistService with
// ClusterDatabaseListenerPersistCoordinator): besides the database's
// nodes it announces the change on the database listener coordinator, an
// ephemeral node of Session,
// /states/database_listener_coordinator/{db} = CREATE or DROP
// (/states/listener_assisted/{db} = CREATE_DATABASE or DROP_DATABASE in
// Layout552), so that ShardingSphere nodes start or stop following the
// database. Every shardkeeper node follows announcements too (see Store).
// The announcement is deleted once the change is written; ShardingSphere
// nodes also delete it after handling it, and it goes with Session.
type Coordinator struct {
	Repo    registry.Repository
	Session registry.Session
	Layout  paths.Layout
}

// CreateDatabase persists db (its units and rules; no schemas; see
// PersistDatabase) after creating /metadata/{db}, announcing CREATE after /metadata/{db} exists. It
// returns registry.ErrExists (wrapped) when the database exists. ctx
// bounds the registry calls.
func (c Coordinator) CreateDatabase(ctx context.Context, db config.Database) error {
	key, err := paths.Database(db.Name)
	if err != nil {
		return err
	}
	announce, err := c.Layout.DatabaseListener(db.Name)
	if err != nil {
		return err
	}
	if err := c.Layout.CheckDatabaseName(db.Name); err != nil {
		return err
	}
	if _, err := c.Repo.Create(ctx, key, nil); err != nil {
		return fmt.Errorf("create database %s: %w", db.Name, err)
	}
	if err := c.Session.PutEphemeral(ctx, announce, []byte(c.Layout.ListenerValue(true))); err != nil {
		return fmt.Errorf("announce database %s: %w", db.Name, err)
	}
	err = PersistDatabase(ctx, c.Repo, c.Layout, db)
	return errors.Join(err, c.Repo.Delete(context.WithoutCancel(ctx), announce))
}

// DropDatabase announces DROP, deletes database db (DeleteDatabase) while
// the announcement stands, then deletes the announcement. It returns
// ErrNoDatabase when the database does not exist. ctx bounds the registry
// calls.
func (c Coordinator) DropDatabase(ctx context.Context, db string) error {
	if _, err := paths.Database(db); err != nil {
		return err
	}
	announce, err := c.Layout.DatabaseListener(db)
	if err != nil {
		return err
	}
	if err := requireDatabase(ctx, c.Repo, db); err != nil {
		return err
	}
	if err := c.Session.PutEphemeral(ctx, announce, []byte(c.Layout.ListenerValue(false))); err != nil {
		return fmt.Errorf("announce the drop of database %s: %w", db, err)
	}
	err = DeleteDatabase(ctx, c.Repo, db)
	return errors.Join(err, c.Repo.Delete(context.WithoutCancel(ctx), announce))
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
