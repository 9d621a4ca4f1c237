package console

import (
	"context"
	"errors"
	"fmt"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"strconv"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/redact"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/registry"
)

// SHOW of the global rules (AUTHORITY, TRANSACTION, SQL_PARSER, GLOBAL
// CLOCK, SQL_FEDERATION, SQL_TRANSLATOR) with upstream's columns and defaults (the rule
// ShardingSphere builds when /rules has none; their ALTER runs through
// internal/rules, applyRule), and CREATE / DROP DATABASE as the Proxy
// answers them.

// globalRule is the content of global rule typ, nil when the registry has
// none.
func (e *Engine) globalRule(typ string) map[string]any {
	return e.d.Metadata.Current().GlobalRules[typ].Content
}

// cacheText renders a cache option as upstream's executors do:
// "initialCapacity: 128, maximumSize: 1024".
func cacheText(v any, capacity, size int) string {
	m := rule.Map(v)
	c, s := rule.Text(m["initialCapacity"]), rule.Text(m["maximumSize"])
	if c == "" {
		c = strconv.Itoa(capacity)
	}
	if s == "" {
		s = strconv.Itoa(size)
	}
	return fmt.Sprintf("initialCapacity: %s, maximumSize: %s", c, s)
}

func textOr(v any, def string) string {
	if s := rule.Text(v); s != "" {
		return s
	}
	return def
}

// showGlobalRule shows global rule st.Type. Every user may read the global
// rules; to a non-admin their secrets (a transaction provider's
// recoveryStorePassword, a clock's password, ...) read redact.Mask, as
// wherever else a secret is shown.
func (e *Engine) showGlobalRule(_ context.Context, s *Session, st *distsql.ShowGlobalRule) (*Result, error) {
	c := e.globalRule(st.Type)
	if !e.grant(s).admin {
		c = redact.Map(c)
	}
	row := func(cols []string, values ...string) (*Result, error) {
		r := make([]*string, len(values))
		for i, v := range values {
			r[i] = str(v)
		}
		return &Result{Columns: textColumns(cols...), Rows: [][]*string{r}}, nil
	}
	switch st.Type {
	case "authority":
		var users []string
		for _, u := range asAnyList(c["users"]) {
			name := rule.Text(rule.Map(u)["user"])
			if !strings.Contains(name, "@") {
				name += "@%"
			}
			users = append(users, name)
		}
		priv := rule.Map(c["privilege"])
		return row([]string{"users", "provider", "props"}, strings.Join(users, "; "), textOr(priv["type"], "ALL_PERMITTED"), rule.PropsText(priv["props"]))
	case "transaction":
		return row([]string{"default_type", "provider_type", "props"}, textOr(c["defaultType"], "LOCAL"), rule.Text(c["providerType"]), rule.PropsText(c["props"]))
	case "sql_parser":
		return row([]string{"parse_tree_cache", "sql_statement_cache"}, cacheText(c["parseTreeCache"], 128, 1024), cacheText(c["sqlStatementCache"], 2000, 65535))
	case "global_clock":
		return row([]string{"type", "provider", "enabled", "props"}, textOr(c["type"], "TSO"), textOr(c["provider"], "local"), textOr(c["enabled"], "false"), rule.PropsText(c["props"]))
	case "sql_federation":
		return row([]string{"sql_federation_enabled", "all_query_use_sql_federation", "execution_plan_cache"},
			textOr(c["sqlFederationEnabled"], "false"), textOr(c["allQueryUseSQLFederation"], "false"), cacheText(c["executionPlanCache"], 2000, 65535))
	case "sql_translator":
		return row([]string{"type", "props", "use_original_sql_when_translating_failed"},
			textOr(c["type"], "NATIVE"), rule.PropsText(c["props"]), textOr(c["useOriginalSQLWhenTranslatingFailed"], "true"))
	}
	return nil, unsupported("SHOW " + strings.ToUpper(st.Type) + " RULE")
}

func asAnyList(v any) []any {
	l, _ := v.([]any)
	return l
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
