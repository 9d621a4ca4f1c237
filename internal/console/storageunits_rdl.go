package console

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/dbconfig"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/rule/single"
	"github.com/shardkeeper/shardkeeper/internal/rules"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

// REGISTER, ALTER and UNREGISTER STORAGE UNIT on the session's database
// (internal/dbconfig): every check and connection before anything is
// written, upstream's codes.

func (e *Engine) registerStorageUnit(ctx context.Context, s *Session, st *distsql.RegisterStorageUnit) (*Result, error) {
	db, err := sessionDatabase(s)
	if err != nil {
		return nil, err
	}
	units, err := unitsOf(s, st.Units)
	if err != nil {
		return nil, err
	}
	names, err := dbconfig.RegisterUnits(ctx, e.d.Repo, e.d.Metadata.Current(), db, units, st.IfNotExists, dbconfig.UnitOptions{Ping: e.pingFor(s)})
	if err != nil {
		return nil, opError(s, err)
	}
	e.awaitUnits(ctx, db, names, true)
	return &Result{Affected: uint64(len(names))}, nil
}

func (e *Engine) alterStorageUnit(ctx context.Context, s *Session, st *distsql.AlterStorageUnit) (*Result, error) {
	db, err := sessionDatabase(s)
	if err != nil {
		return nil, err
	}
	units, err := unitsOf(s, st.Units)
	if err != nil {
		return nil, err
	}
	if err := dbconfig.AlterUnits(ctx, e.d.Repo, e.d.Metadata.Current(), db, units, dbconfig.UnitOptions{Ping: e.pingFor(s)}); err != nil {
		return nil, opError(s, err)
	}
	return &Result{Affected: uint64(len(units))}, nil
}

func (e *Engine) unregisterStorageUnit(ctx context.Context, s *Session, st *distsql.UnregisterStorageUnit) (*Result, error) {
	db, err := sessionDatabase(s)
	if err != nil {
		return nil, err
	}
	names, err := dbconfig.UnregisterUnits(ctx, e.d.Repo, e.d.Metadata.Current(), db, st.Names, st.IfExists, st.IgnoreSingleTables, st.IgnoreBroadcastTables)
	if err != nil {
		return nil, opError(s, err)
	}
	if err := e.dropDefaultSingleUnit(ctx, db, names); err != nil {
		return nil, opError(s, err)
	}
	e.awaitUnits(ctx, db, names, false)
	return &Result{Affected: uint64(len(names))}, nil
}

// dropDefaultSingleUnit makes the single rule's default unit of db RANDOM
// again when it is one of the units UNREGISTER removed and no unit of that
// name exists now, so that the default never names a missing unit. It is
// a rule change of its own after the unregistration's commit; a change of
// the default meanwhile (to another unit) is kept.
func (e *Engine) dropDefaultSingleUnit(ctx context.Context, db string, removed []string) error {
	def := rule.Text(e.d.Metadata.Current().Databases[db].Rules[single.Type].Content["defaultDataSource"])
	if !slices.Contains(removed, def) {
		return nil
	}
	opts := e.ruleOptions()
	_, err := rules.ChangeRule(ctx, e.d.Repo, db, single.Type, func(read metadata.RuleRead, c map[string]any, _ *rule.Edits) (map[string]any, error) {
		u := rule.Text(c["defaultDataSource"])
		if _, exists := read.DB.Units[u]; slices.Contains(removed, u) && !exists {
			delete(c, "defaultDataSource")
		}
		return c, nil
	}, rules.ChangeOptions{Layout: opts.Layout, Session: opts.Session, Cache: opts.Cache})
	return err
}

// probeSlack is how much later than a unit's connection timeout a
// non-admin's failed check answers: more than a check against a silent
// port overshoots its timeout by, so that it too answers at that moment.
const probeSlack = 250 * time.Millisecond

// pingFor is the unit check of session s's REGISTER and ALTER STORAGE
// UNIT. An admin gets e.ping: the driver's message, at once. Any other
// user's failed connection says only that the unit could not connect, and
// answers no sooner than the unit's connection timeout plus probeSlack
// after the check began, so that a refused port, a silent one, an unknown
// host and a wrong password look alike and the statement is no port
// scanner (docs/threat-model.md). The cause goes to the node's log.
func (e *Engine) pingFor(s *Session) func(context.Context, string, config.DataSource) error {
	if e.grant(s).admin {
		return e.ping
	}
	return func(ctx context.Context, unit string, ds config.DataSource) error {
		if err := e.sqliteAllowed(ds); err != nil {
			return err
		}
		timeout := ds.ConnectionTimeout
		if timeout <= 0 {
			timeout = config.DefaultConnectionTimeout
		}
		answerAt := time.Now().Add(timeout + probeSlack)
		err := e.connect(ctx, unit, ds)
		if err == nil {
			return nil
		}
		e.log.Warn("console: a storage unit could not connect; the user, not an admin, is told no cause",
			"user", s.User, "host", s.Host, "unit", unit, "err", err)
		wait := time.NewTimer(time.Until(answerAt))
		defer wait.Stop()
		select {
		case <-wait.C:
		case <-ctx.Done():
			return ctx.Err()
		}
		return fmt.Errorf("could not connect within %v (the node's log has the cause; an admin user is shown it)", timeout)
	}
}

// sessionDatabase is the session's current database, which the RDL
// statements work on: upstream's NoDatabaseSelectedException without USE.
func sessionDatabase(s *Session) (string, error) {
	if s.Database == "" {
		return "", noDatabaseSelected()
	}
	return s.Database, nil
}

// unitsOf turns the statement's unit definitions into data sources: the
// URL form as given, the HOST/PORT/DB form as a JDBC URL of the session's
// protocol (as upstream builds it from the front end's database type),
// PROPERTIES as pool properties over the defaults.
func unitsOf(s *Session, defs []distsql.StorageUnit) ([]dbconfig.Unit, error) {
	out := make([]dbconfig.Unit, 0, len(defs))
	for _, d := range defs {
		url := d.URL
		if url == "" {
			scheme := "mysql"
			if s.Protocol == "PostgreSQL" {
				scheme = "postgresql"
			}
			url = fmt.Sprintf("jdbc:%s://%s/%s", scheme, joinHostPort(d.Host, d.Port), d.DB)
		}
		m := config.NewDataSource(url, d.User, d.Password).Map()
		for _, p := range d.Properties {
			m[p.Key] = rule.PropertyValue(p.Value)
		}
		data, err := yaml.Marshal(m)
		if err != nil {
			return nil, err
		}
		ds, err := config.ParseDataSource("statement", d.Name, data)
		if err != nil {
			return nil, &sqlerr.Error{Code: 10100, SQLState: "HY000", Message: fmt.Sprintf("Can not register storage units '%s': %v", d.Name, err)}
		}
		out = append(out, dbconfig.Unit{Name: d.Name, DataSource: ds})
	}
	return out, nil
}

func joinHostPort(host string, port int) string {
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		host = "[" + host + "]"
	}
	return host + ":" + strconv.Itoa(port)
}

// awaitUnits waits (at most 3 s) until this node's view has (or, with
// present false, no longer has) the units, so that the session's next
// SHOW STORAGE UNITS shows the change.
func (e *Engine) awaitUnits(ctx context.Context, db string, names []string, present bool) {
	if len(names) == 0 {
		return
	}
	e.await(ctx, func(s *metadata.Snapshot) bool {
		d := s.Databases[db]
		for _, n := range names {
			ok := false
			if d != nil {
				_, ok = d.Units[n]
			}
			if ok != present {
				return false
			}
		}
		return true
	})
}
