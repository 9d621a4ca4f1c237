package datasource

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"

	_ "github.com/go-sql-driver/mysql" // driver "mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"
	_ "modernc.org/sqlite"             // driver "sqlite"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/redact"
)

// DB is an open storage unit: a connection pool sized by the unit's pool
// props. Close it when done.
type DB struct {
	*sql.DB
	Unit   string
	Target Target
}

// Open translates ds (see Translate), opens a pool honouring maxPoolSize,
// idleTimeoutMilliseconds and maxLifetimeMilliseconds
// (database/sql has no minimum idle count: minPoolSize only bounds the idle
// pool from below when it is larger than maxPoolSize, which validation
// refuses), and checks the connection within connectionTimeoutMilliseconds
// (or ctx, when it ends first). Errors name the unit and host and never the
// password.
func Open(ctx context.Context, unit string, ds config.DataSource) (*DB, error) {
	t, err := Translate(ds)
	if err != nil {
		return nil, fmt.Errorf("data source unit %s: %w", unit, err)
	}
	db, err := sql.Open(t.Driver, t.DSN)
	if err != nil {
		return nil, unitError(unit, t, ds, err)
	}
	if ds.MaxPoolSize > 0 {
		db.SetMaxOpenConns(ds.MaxPoolSize)
		db.SetMaxIdleConns(ds.MaxPoolSize)
	}
	if ds.IdleTimeout > 0 {
		db.SetConnMaxIdleTime(ds.IdleTimeout)
	}
	if ds.MaxLifetime > 0 {
		db.SetConnMaxLifetime(ds.MaxLifetime)
	}
	timeout := ds.ConnectionTimeout
	if timeout <= 0 {
		timeout = config.DefaultConnectionTimeout
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		_ = db.Close()
		return nil, unitError(unit, t, ds, err)
	}
	return &DB{DB: db, Unit: unit, Target: t}, nil
}

// Ping opens ds and closes it again: the check ShardingSphere makes before
// registering a storage unit.
func Ping(ctx context.Context, unit string, ds config.DataSource) error {
	db, err := Open(ctx, unit, ds)
	if err != nil {
		return err
	}
	return db.Close()
}

// unitError describes a driver error of unit with its secrets masked
// (redact.Known): the password given as a field or in the URL never
// appears, wherever the driver put it.
func unitError(unit string, t Target, ds config.DataSource, err error) error {
	return fmt.Errorf("data source unit %s (%s at %s, database %q, user %q): %s", unit, t.Dialect, t.Host, t.Database, ds.Username,
		redact.Known(err.Error(), passwords(ds)...))
}

// passwords returns the passwords of ds, as a field and in its URL (user
// information and secret parameters).
func passwords(ds config.DataSource) []string {
	pws := []string{ds.Password}
	if u, err := url.Parse(strings.TrimPrefix(ds.URL, "jdbc:")); err == nil {
		if p, ok := u.User.Password(); ok {
			pws = append(pws, p)
		}
		for k, vs := range u.Query() {
			if redact.SecretName(k) {
				pws = append(pws, vs...)
			}
		}
	}
	return pws
}

// Introspect opens every storage unit of db, reads its catalog and closes it
// again. Dialects without schemas (MySQL, MariaDB, SQLite) report one
// schema named after the logical database, as ShardingSphere does;
// PostgreSQL reports its schemas (except the system ones). A table in
// several units is taken from the first unit by name. It is a
// metadata.Introspector. Errors name the unit and host.
func Introspect(ctx context.Context, db config.Database) ([]Schema, error) {
	units := make([]string, 0, len(db.DataSources))
	for u := range db.DataSources {
		units = append(units, u)
	}
	sort.Strings(units)
	merged := map[string]*Schema{}
	var order []string
	var errs []error
	for _, u := range units {
		conn, err := Open(ctx, u, db.DataSources[u])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		schemas, err := Catalog(ctx, conn)
		_ = conn.Close()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, s := range schemas {
			name := s.Name
			if conn.Target.Dialect != PostgreSQL {
				name = db.Name
			}
			m := merged[name]
			if m == nil {
				m = &Schema{Name: name, Tables: map[string]Table{}, Views: map[string]View{}}
				merged[name] = m
				order = append(order, name)
			}
			for n, t := range s.Tables {
				if _, ok := m.Tables[n]; !ok {
					m.Tables[n] = t
				}
			}
			for n, v := range s.Views {
				if _, ok := m.Views[n]; !ok {
					m.Views[n] = v
				}
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	sort.Strings(order)
	out := make([]Schema, 0, len(order))
	for _, n := range order {
		out = append(out, *merged[n])
	}
	return out, nil
}
