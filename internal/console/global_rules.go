package console

import (
	"context"
	"errors"
	"fmt"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/redact"
	"github.com/shardkeeper/shardkeeper/internal/rule/families"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/registry"
)

// SHOW of the global rules (internal/rule/global; their ALTER runs
// through internal/rules, applyRule), and CREATE / DROP DATABASE as the
// Proxy answers them.

// showGlobalRule answers st when it is a global rule's query
// (families.ShowGlobal), with that rule's columns; ok is false when it is
// not. Every user may read the global rules; to a non-admin their secrets
// (a transaction provider's recoveryStorePassword, a clock's password,
// ...) read redact.Mask, as wherever else a secret is shown.
func (e *Engine) showGlobalRule(s *Session, st distsql.Statement) (res *Result, ok bool) {
	rows, ok := families.ShowGlobal(st, func(typ string) map[string]any {
		c := e.d.Metadata.Current().GlobalRules[typ].Content
		if !e.grant(s).admin {
			c = redact.Map(c)
		}
		return c
	})
	if !ok {
		return nil, false
	}
	res = &Result{Columns: textColumns(rows.Columns...), Rows: make([][]*string, 0, len(rows.Rows))}
	for _, r := range rows.Rows {
		res.Rows = append(res.Rows, strs(r...))
	}
	return res, true
}

// createDatabase adds an empty logical database as the Proxy's CREATE
// DATABASE does: /metadata/{db} and the database listener coordinator's
// announcement (CREATE) in one transaction of the node's session
// (metadata.Coordinator).
func (e *Engine) createDatabase(ctx context.Context, s *Session, st *distsql.CreateDatabase) (*Result, error) {
	if e.d.Metadata.Current().Databases[st.Name] != nil {
		if st.IfNotExists {
			return &Result{}, nil
		}
		return nil, databaseExists(s, st.Name)
	}
	db := config.Database{Name: st.Name}
	if _, err := metadata.DatabaseWrites(e.layoutNow(e.d.Layout), db); err != nil { // a name the registry or the layout refuses
		return nil, &sqlerr.Error{Code: 30000, SQLState: "HY000", Message: fmt.Sprintf("Can not create database '%s': %v", st.Name, err)}
	}
	c, err := e.coordinator()
	if err != nil {
		return nil, err
	}
	if err := c.CreateDatabase(ctx, db); err != nil {
		if errors.Is(err, registry.ErrExists) {
			return nil, databaseExists(s, st.Name)
		}
		return nil, err
	}
	e.awaitDatabases(ctx, st.Name)
	return &Result{Affected: 1}, nil
}

// dropDatabase deletes a logical database with everything under it, as the
// Proxy's DROP DATABASE does, announcing DROP first (metadata.Coordinator).
func (e *Engine) dropDatabase(ctx context.Context, s *Session, st *distsql.DropDatabase) (*Result, error) {
	if e.d.Metadata.Current().Databases[st.Name] == nil {
		if st.IfExists {
			return &Result{}, nil
		}
		return nil, databaseMissing(s, st.Name)
	}
	c, err := e.coordinator()
	if err != nil {
		return nil, err
	}
	if err := c.DropDatabase(ctx, st.Name); err != nil {
		if errors.Is(err, metadata.ErrNoDatabase) {
			return nil, databaseMissing(s, st.Name)
		}
		return nil, err
	}
	if s.Database == st.Name {
		s.Database = ""
	}
	e.await(ctx, func(snap *metadata.Snapshot) bool { return snap.Databases[st.Name] == nil })
	return &Result{Affected: 1}, nil
}

// coordinator is the database announcer on the node's session, or 17010
// when the node holds no session now.
func (e *Engine) coordinator() (metadata.Coordinator, error) {
	sess := e.d.Node.Session()
	if sess == nil {
		return metadata.Coordinator{}, &sqlerr.Error{Code: 17010, SQLState: "HY000", Message: "Cluster persist repository error, reason is: the node holds no registry session now; nothing was written."}
	}
	return metadata.Coordinator{Repo: e.d.Repo, Session: sess, Layout: e.layoutNow(e.d.Layout)}, nil
}
