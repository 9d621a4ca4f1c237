package console

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/netip"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/authority"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/dbconfig"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
)

// EXPORT / IMPORT DATABASE CONFIGURATION and EXPORT / IMPORT METADATA
// (internal/dbconfig). Imports are all or nothing; file paths are on the
// node's host and refused unless the session is from loopback or its user
// is configured in the authority rule (docs/threat-model.md).

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
	data, err := e.readFile(s, st.File)
	if err != nil {
		return nil, err
	}
	res, err := dbconfig.Import(ctx, e.d.Repo, st.File, data, e.importOptions())
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
		data, err = e.readFile(s, st.File)
	} else {
		data, err = dbconfig.DecodeMetadata(st.Value)
	}
	if err != nil {
		return nil, opError(s, err)
	}
	names, err := dbconfig.ImportMetadata(ctx, e.d.Repo, data, e.importOptions())
	if err != nil {
		return nil, opError(s, err)
	}
	e.awaitDatabases(ctx, names...)
	return &Result{}, nil
}

func (e *Engine) importOptions() dbconfig.Options {
	introspect := e.d.Introspect
	if introspect == nil {
		introspect = datasource.Introspect
	}
	return dbconfig.Options{Layout: e.d.Layout, Ping: e.d.Ping, Introspect: introspect}
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

// fileAccess says whether session s may name files on the node's host:
// from loopback, or as a user of the authority rule.
func (e *Engine) fileAccess(s *Session) error {
	configured := false
	if r, ok := e.d.Metadata.Current().GlobalRules["authority"]; ok {
		if users, err := authority.FromRules(r); err == nil && !users.Empty() {
			if addr, err := netip.ParseAddr(s.Host); err == nil {
				_, configured = users.Lookup(s.User, addr)
			}
		}
	}
	return opError(s, dbconfig.CheckFileAccess(s.Host, configured))
}

func (e *Engine) readFile(s *Session, path string) ([]byte, error) {
	if err := e.fileAccess(s); err != nil {
		return nil, err
	}
	data, err := dbconfig.ReadFile(path)
	return data, opError(s, err)
}

func (e *Engine) writeFile(s *Session, path string, data []byte) error {
	if err := e.fileAccess(s); err != nil {
		return err
	}
	return opError(s, dbconfig.WriteFile(path, data))
}
