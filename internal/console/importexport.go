package console

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/dbconfig"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/redact"
)

// EXPORT / IMPORT DATABASE CONFIGURATION and EXPORT / IMPORT METADATA
// (internal/dbconfig). Imports are all or nothing. Imports, EXPORT
// METADATA and files need an admin user (privilege.go); file paths name
// files of Deps.FileDir only (docs/security.md).

func (e *Engine) exportDatabaseConfiguration(_ context.Context, s *Session, st *distsql.ExportDatabaseConfiguration) (*Result, error) {
	db := st.Database
	if db == "" {
		var err error
		if db, err = sessionDatabase(s); err != nil {
			return nil, err
		}
	}
	data, err := dbconfig.Export(e.d.Metadata.Current(), db)
	if err != nil {
		return nil, opError(s, err)
	}
	out := string(data)
	if st.File != "" {
		if err := e.writeFile(s, st.File, data); err != nil {
			return nil, err
		}
		out = fmt.Sprintf("Successfully exported to: '%s'", st.File)
	}
	return &Result{Columns: textColumns("result"), Rows: [][]*string{{str(out)}}}, nil
}

func (e *Engine) importDatabaseConfiguration(ctx context.Context, s *Session, st *distsql.ImportDatabaseConfiguration) (*Result, error) {
	data, err := e.readFile(ctx, s, st.File)
	if err != nil {
		return nil, err
	}
	res, err := dbconfig.Import(ctx, e.d.Repo, st.File, data, e.importOptions("IMPORT DATABASE CONFIGURATION FROM FILE "+quoteString(st.File)))
	if err != nil {
		return nil, opError(s, err)
	}
	e.awaitDatabases(ctx, res.Database)
	return &Result{}, nil
}

func (e *Engine) exportMetadata(_ context.Context, s *Session, st *distsql.ExportMetadata) (*Result, error) {
	data, err := dbconfig.ExportMetadata(e.d.Metadata.Current())
	if err != nil {
		return nil, opError(s, err)
	}
	info := base64.StdEncoding.EncodeToString(data)
	if st.File != "" {
		if err := e.writeFile(s, st.File, data); err != nil {
			return nil, err
		}
		info = fmt.Sprintf("Successfully exported to：'%s'", st.File) // upstream's full-width colon
	}
	// create_time as upstream's LocalDateTime.now() prints it.
	now := time.Now().Format("2006-01-02T15:04:05.000")
	return &Result{Columns: textColumns("id", "create_time", "cluster_info"), Rows: [][]*string{{str(e.d.Node.InstanceID()), str(now), str(info)}}}, nil
}

func (e *Engine) importMetadata(ctx context.Context, s *Session, st *distsql.ImportMetadata) (*Result, error) {
	var data []byte
	var err error
	if st.File != "" {
		data, err = e.readFile(ctx, s, st.File)
	} else {
		data, err = dbconfig.DecodeMetadata(st.Value)
	}
	if err != nil {
		return nil, opError(s, err)
	}
	statement := "IMPORT METADATA '" + redact.Mask + "'"
	if st.File != "" {
		statement = "IMPORT METADATA FROM FILE " + quoteString(st.File)
	}
	names, err := dbconfig.ImportMetadata(ctx, e.d.Repo, data, e.importOptions(statement))
	if err != nil {
		return nil, opError(s, err)
	}
	e.awaitDatabases(ctx, names...)
	return &Result{}, nil
}

// importOptions are the options of an import run as statement (which the
// import's mark shows while it runs, or forever if it dies).
func (e *Engine) importOptions(statement string) dbconfig.Options {
	introspect := e.d.Introspect
	if introspect == nil {
		introspect = datasource.Introspect
	}
	instance := ""
	if e.d.Node != nil {
		instance = e.d.Node.InstanceID()
	}
	return dbconfig.Options{Layout: e.layoutNow(e.d.Layout), Ping: e.ping, Introspect: introspect, Statement: statement, Instance: instance}
}

// quoteString is s as a SQL string literal.
func quoteString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// ping checks a unit before it is written: a SQLite unit is refused unless
// Deps.AllowSQLite (its URL names a file the node would create with its
// own rights), then Deps.Ping connects.
func (e *Engine) ping(ctx context.Context, unit string, ds config.DataSource) error {
	if err := e.sqliteAllowed(ds); err != nil {
		return err
	}
	return e.connect(ctx, unit, ds)
}

// sqliteAllowed refuses a SQLite unit unless Deps.AllowSQLite.
func (e *Engine) sqliteAllowed(ds config.DataSource) error {
	if t, err := datasource.Translate(ds); err == nil && t.Dialect == datasource.SQLite && !e.d.AllowSQLite {
		return fmt.Errorf("SQLite storage units are off on this node (serve --allow-sqlite-units enables them)")
	}
	return nil
}

// connect opens unit with Deps.Ping (datasource.Ping when nil).
func (e *Engine) connect(ctx context.Context, unit string, ds config.DataSource) error {
	if e.d.Ping != nil {
		return e.d.Ping(ctx, unit, ds)
	}
	return datasource.Ping(ctx, unit, ds)
}

// awaitDatabases waits (at most 3 s) until this node's view has the
// databases.
func (e *Engine) awaitDatabases(ctx context.Context, names ...string) {
	e.await(ctx, func(s *metadata.Snapshot) bool {
		for _, n := range names {
			if s.Databases[n] == nil {
				return false
			}
		}
		return true
	})
}

func (e *Engine) readFile(ctx context.Context, s *Session, path string) ([]byte, error) {
	data, err := e.d.FileDir.ReadFile(ctx, path)
	return data, opError(s, err)
}

func (e *Engine) writeFile(s *Session, path string, data []byte) error {
	return opError(s, e.d.FileDir.WriteFile(path, data))
}
