// Package global holds the global rules (authority, transaction,
// sql_parser, global_clock, sql_federation, sql_translator): the rules of
// the cluster rather than of a database. Each is a rule.Global: SHOW <rule>
// RULE with upstream's columns and defaults (the rule ShardingSphere
// builds when the registry has none), ALTER <rule> RULE (...) with its
// settings checked and merged into the current rule (settings not given
// keep their value, as upstream's converters build the rule from the
// current one), and the upstream swap's defaults. The six share one
// statement form, so they live in one package, one value each.
package global

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

// The global rules, in the order SHOW and ALTER try them.
var (
	Authority     rule.Global = &global{typ: "authority", words: []string{"AUTHORITY"}, show: showAuthority, upstream: upstreamAuthority}
	Transaction   rule.Global = &global{typ: "transaction", words: []string{"TRANSACTION"}, settings: []string{"DEFAULT", "TYPE"}, alter: alterTransaction, show: showTransaction}
	SQLParser     rule.Global = &global{typ: "sql_parser", words: []string{"SQL_PARSER"}, settings: []string{"SQL_STATEMENT_CACHE.INITIAL_CAPACITY", "SQL_STATEMENT_CACHE.MAXIMUM_SIZE", "PARSE_TREE_CACHE.INITIAL_CAPACITY", "PARSE_TREE_CACHE.MAXIMUM_SIZE"}, alter: alterSQLParser, show: showSQLParser, upstream: upstreamSQLParser}
	GlobalClock   rule.Global = &global{typ: "global_clock", words: []string{"GLOBAL", "CLOCK"}, settings: []string{"TYPE", "PROVIDER", "ENABLED"}, alter: alterGlobalClock, show: showGlobalClock, upstream: upstreamGlobalClock}
	SQLFederation rule.Global = &global{typ: "sql_federation", words: []string{"SQL_FEDERATION"}, settings: []string{"SQL_FEDERATION_ENABLED", "ALL_QUERY_USE_SQL_FEDERATION", "EXECUTION_PLAN_CACHE.INITIAL_CAPACITY", "EXECUTION_PLAN_CACHE.MAXIMUM_SIZE"}, alter: alterSQLFederation, show: showSQLFederation, upstream: upstreamSQLFederation}
	SQLTranslator rule.Global = &global{typ: "sql_translator", words: []string{"SQL_TRANSLATOR"}, settings: []string{"TYPE", "USE_ORIGINAL_SQL_WHEN_TRANSLATING_FAILED"}, alter: alterSQLTranslator, show: showSQLTranslator, upstream: upstreamSQLTranslator}
)

// ShowRule is SHOW <rule> RULE: Type is the rule's registry name
// (authority, transaction, sql_parser, global_clock, sql_federation,
// sql_translator).
type ShowRule struct{ Type string }

// Scope implements distsql.Statement: the global rules are shown to every
// user, their secrets masked to a non-admin.
func (ShowRule) Scope() distsql.Scope { return distsql.Local }

// AlterRule is ALTER <rule> RULE (...): Type as in ShowRule, the
// statement's settings as distsql.Settings reads them.
type AlterRule struct {
	Type string
	distsql.Settings
}

// Scope implements distsql.Statement: a global rule acts on every
// database.
func (st AlterRule) Scope() distsql.Scope {
	return distsql.Cluster("ALTER " + strings.ReplaceAll(strings.ToUpper(st.Type), "GLOBAL_CLOCK", "GLOBAL CLOCK") + " RULE")
}

// global is one global rule; alter is nil for a rule upstream cannot
// ALTER, upstream nil for one its swapper writes as it is.
type global struct {
	typ      string
	words    []string // what names the rule in SHOW and ALTER
	settings []string // the settings ALTER takes
	alter    func(st *AlterRule, c map[string]any) (map[string]any, error)
	show     func(c map[string]any) rule.Rows
	upstream func(c map[string]any)
}

func (g *global) Type() string { return g.typ }

func (g *global) Statements() string {
	if g.alter == nil {
		return ""
	}
	return "ALTER " + strings.Join(g.words, " ") + " RULE"
}

func (g *global) Read(p *distsql.Parser) (distsql.Statement, bool) {
	switch {
	case p.Keywords(append(append([]string{"SHOW"}, g.words...), "RULE")...):
		return &ShowRule{Type: g.typ}, true
	case g.alter != nil && p.Keywords(append(append([]string{"ALTER"}, g.words...), "RULE")...):
		return &AlterRule{Type: g.typ, Settings: p.Settings()}, true
	}
	return nil, false
}

func (g *global) Change(st distsql.Statement) rule.GlobalChange {
	a, ok := st.(*AlterRule)
	if !ok || a.Type != g.typ || g.alter == nil {
		return nil
	}
	return func(c map[string]any) (map[string]any, error) {
		for name := range a.Values {
			if !slices.Contains(g.settings, name) {
				return nil, &sqlerr.Error{Code: 12000, SQLState: "42000", Message: fmt.Sprintf("You have an error in your SQL syntax: ALTER %s RULE has no setting %s", strings.ToUpper(a.Type), name)}
			}
		}
		return g.alter(a, c)
	}
}

func (g *global) Show(st distsql.Statement, c map[string]any) (rule.Rows, bool) {
	if s, ok := st.(*ShowRule); !ok || s.Type != g.typ {
		return rule.Rows{}, false
	}
	return g.show(c), true
}

func (g *global) Upstream(c map[string]any) {
	if g.upstream != nil {
		g.upstream(c)
	}
}

// row is a query's one row under cols.
func row(cols []string, values ...string) rule.Rows {
	return rule.Rows{Columns: cols, Rows: [][]string{values}}
}

// textOr is v as text, def when v has none.
func textOr(v any, def string) string {
	if s := rule.Text(v); s != "" {
		return s
	}
	return def
}

// cacheText renders a cache option as upstream's executors do:
// "initialCapacity: 128, maximumSize: 1024".
func cacheText(v any, capacity, size int) string {
	m := rule.Map(v)
	return fmt.Sprintf("initialCapacity: %s, maximumSize: %s", textOr(m["initialCapacity"], strconv.Itoa(capacity)), textOr(m["maximumSize"], strconv.Itoa(size)))
}

// setDefault sets m[k] to v when m has no non-null value for k.
func setDefault(m map[string]any, k string, v any) {
	if m[k] == nil {
		m[k] = v
	}
}

// upstreamCache fills cache field f of c with upstream's defaults.
func upstreamCache(c map[string]any, f string, capacity, size int) {
	m, ok := c[f].(map[string]any)
	if !ok {
		m = map[string]any{}
		c[f] = m
	}
	setDefault(m, "initialCapacity", capacity)
	setDefault(m, "maximumSize", size)
}

// invalid refuses a setting of st as upstream's rule checker does.
func invalid(st *AlterRule, msg string) error { return rule.InvalidRule(st.Type, st.Type, msg) }

// props is st's PROPERTIES as content.
func props(st *AlterRule) map[string]any {
	m := map[string]any{}
	for _, p := range st.Properties {
		m[p.Key] = rule.PropertyValue(p.Value)
	}
	return m
}

// setBool sets field of c to setting name of st when st has it, TRUE or
// FALSE.
func setBool(st *AlterRule, c map[string]any, name, field string) error {
	v, ok := st.Values[name]
	if !ok {
		return nil
	}
	if v.Kind != distsql.BoolValue && !(v.Kind == distsql.StringValue && (strings.EqualFold(v.Text, "true") || strings.EqualFold(v.Text, "false"))) {
		return invalid(st, fmt.Sprintf("%s must be TRUE or FALSE, not '%s'", name, v.Text))
	}
	c[field] = strings.EqualFold(v.Text, "true")
	return nil
}

// setCache merges the settings prefix.INITIAL_CAPACITY and
// prefix.MAXIMUM_SIZE of st into cache field of c.
func setCache(st *AlterRule, c map[string]any, field, prefix string) error {
	m := maps.Clone(rule.Map(c[field]))
	if m == nil {
		m = map[string]any{}
	}
	for _, s := range []struct{ setting, key string }{{".INITIAL_CAPACITY", "initialCapacity"}, {".MAXIMUM_SIZE", "maximumSize"}} {
		v, ok := st.Values[prefix+s.setting]
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v.Text, 10, 32)
		if v.Kind != distsql.IntValue || err != nil || n <= 0 {
			return invalid(st, fmt.Sprintf("%s%s must be a positive integer, not '%s'", prefix, s.setting, v.Text))
		}
		m[s.key] = int(n)
	}
	c[field] = m
	return nil
}

// setSPI sets field of c to setting TYPE of st when st has it, spelled as
// in known, one of the types upstream ships for spi.
func setSPI(st *AlterRule, c map[string]any, field, spi string, known []string) error {
	v, ok := st.Values["TYPE"]
	if !ok {
		return nil
	}
	i := slices.IndexFunc(known, func(k string) bool { return strings.EqualFold(k, v.Text) })
	if i < 0 {
		return rule.ServiceNotFound(spi, v.Text)
	}
	c[field] = known[i]
	return nil
}

func showAuthority(c map[string]any) rule.Rows {
	var users []string
	for _, u := range rule.Values(c["users"]) {
		name := rule.Text(rule.Map(u)["user"])
		if !strings.Contains(name, "@") {
			name += "@%"
		}
		users = append(users, name)
	}
	priv := rule.Map(c["privilege"])
	return row([]string{"users", "provider", "props"}, strings.Join(users, "; "), textOr(priv["type"], "ALL_PERMITTED"), rule.PropsText(priv["props"]))
}

func upstreamAuthority(c map[string]any) {
	if users, ok := c["users"].([]any); ok {
		for _, u := range users {
			if um, ok := u.(map[string]any); ok {
				// Grantee: a user without a host is user@%.
				if s, ok := um["user"].(string); ok && !strings.Contains(s, "@") {
					um["user"] = s + "@%"
				}
				setDefault(um, "admin", false)
			}
		}
	}
	if _, ok := c["privilege"]; !ok {
		c["privilege"] = map[string]any{"type": "ALL_PERMITTED"}
	}
}

// transactionProviders are the providers upstream ships per transaction
// type.
var transactionProviders = map[string][]string{"LOCAL": nil, "XA": {"Atomikos", "Narayana"}, "BASE": {"Seata"}}

func alterTransaction(st *AlterRule, _ map[string]any) (map[string]any, error) {
	def, ok := st.Values["DEFAULT"]
	if !ok {
		return nil, invalid(st, "DEFAULT is required")
	}
	typ := strings.ToUpper(def.Text)
	allowed, known := transactionProviders[typ]
	if !known {
		return nil, invalid(st, fmt.Sprintf("unknown transaction type '%s' (LOCAL, XA or BASE)", def.Text))
	}
	c := map[string]any{"defaultType": typ}
	if p, ok := st.Values["TYPE"]; ok && p.Text != "" {
		if err := setSPI(st, c, "providerType", "org.apache.shardingsphere.transaction.spi.ShardingSphereDistributedTransactionManager", allowed); err != nil {
			return nil, err
		}
	} else if typ != "LOCAL" {
		return nil, invalid(st, fmt.Sprintf("transaction type %s needs a provider: TYPE(NAME='%s')", typ, allowed[0]))
	}
	c["props"] = props(st)
	return c, nil
}

func showTransaction(c map[string]any) rule.Rows {
	return row([]string{"default_type", "provider_type", "props"}, textOr(c["defaultType"], "LOCAL"), rule.Text(c["providerType"]), rule.PropsText(c["props"]))
}

func alterSQLParser(st *AlterRule, c map[string]any) (map[string]any, error) {
	if err := setCache(st, c, "sqlStatementCache", "SQL_STATEMENT_CACHE"); err != nil {
		return nil, err
	}
	if err := setCache(st, c, "parseTreeCache", "PARSE_TREE_CACHE"); err != nil {
		return nil, err
	}
	return c, nil
}

func showSQLParser(c map[string]any) rule.Rows {
	return row([]string{"parse_tree_cache", "sql_statement_cache"}, cacheText(c["parseTreeCache"], 128, 1024), cacheText(c["sqlStatementCache"], 2000, 65535))
}

func upstreamSQLParser(c map[string]any) {
	upstreamCache(c, "parseTreeCache", 128, 1024)
	upstreamCache(c, "sqlStatementCache", 2000, 65535)
}

func alterGlobalClock(st *AlterRule, c map[string]any) (map[string]any, error) {
	if err := setSPI(st, c, "type", "org.apache.shardingsphere.globalclock.spi.GlobalClockProvider", []string{"TSO"}); err != nil {
		return nil, err
	}
	if v, ok := st.Values["PROVIDER"]; ok {
		c["provider"] = v.Text
	}
	if err := setBool(st, c, "ENABLED", "enabled"); err != nil {
		return nil, err
	}
	if st.HasProperties {
		c["props"] = props(st)
	}
	return c, nil
}

func showGlobalClock(c map[string]any) rule.Rows {
	return row([]string{"type", "provider", "enabled", "props"}, textOr(c["type"], "TSO"), textOr(c["provider"], "local"), textOr(c["enabled"], "false"), rule.PropsText(c["props"]))
}

func upstreamGlobalClock(c map[string]any) { setDefault(c, "enabled", false) }

func alterSQLFederation(st *AlterRule, c map[string]any) (map[string]any, error) {
	if err := setBool(st, c, "SQL_FEDERATION_ENABLED", "sqlFederationEnabled"); err != nil {
		return nil, err
	}
	if err := setBool(st, c, "ALL_QUERY_USE_SQL_FEDERATION", "allQueryUseSQLFederation"); err != nil {
		return nil, err
	}
	if err := setCache(st, c, "executionPlanCache", "EXECUTION_PLAN_CACHE"); err != nil {
		return nil, err
	}
	return c, nil
}

func showSQLFederation(c map[string]any) rule.Rows {
	return row([]string{"sql_federation_enabled", "all_query_use_sql_federation", "execution_plan_cache"},
		textOr(c["sqlFederationEnabled"], "false"), textOr(c["allQueryUseSQLFederation"], "false"), cacheText(c["executionPlanCache"], 2000, 65535))
}

func upstreamSQLFederation(c map[string]any) {
	setDefault(c, "sqlFederationEnabled", false)
	setDefault(c, "allQueryUseSQLFederation", false)
	upstreamCache(c, "executionPlanCache", 2000, 65535)
}

// sqlTranslators are the SQL translator types upstream ships.
var sqlTranslators = []string{"NATIVE", "JOOQ"}

func alterSQLTranslator(st *AlterRule, c map[string]any) (map[string]any, error) {
	if err := setSPI(st, c, "type", "org.apache.shardingsphere.sqltranslator.spi.SQLTranslator", sqlTranslators); err != nil {
		return nil, err
	}
	if st.HasProperties {
		c["props"] = props(st)
	}
	if err := setBool(st, c, "USE_ORIGINAL_SQL_WHEN_TRANSLATING_FAILED", "useOriginalSQLWhenTranslatingFailed"); err != nil {
		return nil, err
	}
	return c, nil
}

func showSQLTranslator(c map[string]any) rule.Rows {
	return row([]string{"type", "props", "use_original_sql_when_translating_failed"},
		textOr(c["type"], "NATIVE"), rule.PropsText(c["props"]), textOr(c["useOriginalSQLWhenTranslatingFailed"], "true"))
}

func upstreamSQLTranslator(c map[string]any) {
	setDefault(c, "useOriginalSQLWhenTranslatingFailed", true)
}
