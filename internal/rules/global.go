package rules

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

// ALTER TRANSACTION, SQL_PARSER, GLOBAL CLOCK, SQL_FEDERATION and
// SQL_TRANSLATOR RULE:
// the statement's settings are checked and merged into the global rule
// (settings not given keep their value, as upstream's converters build the
// rule from the current one).

// globalChangeOf is the change of a global rule statement.
func globalChangeOf(st distsql.Statement) (string, globalChange) {
	if st, ok := st.(*distsql.AlterGlobalRule); ok {
		return st.Type, alterGlobalRule(st)
	}
	return "", nil
}

// alterSettings are the settings each ALTER ... RULE takes.
var alterSettings = map[string][]string{
	"transaction":    {"DEFAULT", "TYPE"},
	"sql_parser":     {"SQL_STATEMENT_CACHE.INITIAL_CAPACITY", "SQL_STATEMENT_CACHE.MAXIMUM_SIZE", "PARSE_TREE_CACHE.INITIAL_CAPACITY", "PARSE_TREE_CACHE.MAXIMUM_SIZE"},
	"global_clock":   {"TYPE", "PROVIDER", "ENABLED"},
	"sql_federation": {"SQL_FEDERATION_ENABLED", "ALL_QUERY_USE_SQL_FEDERATION", "EXECUTION_PLAN_CACHE.INITIAL_CAPACITY", "EXECUTION_PLAN_CACHE.MAXIMUM_SIZE"},
	"sql_translator": {"TYPE", "USE_ORIGINAL_SQL_WHEN_TRANSLATING_FAILED"},
}

// sqlTranslators are the SQL translator types upstream ships.
var sqlTranslators = []string{"NATIVE", "JOOQ"}

// noSPI is upstream's ServiceProviderNotFoundException as the Proxy
// answers it (30000, HY000).
func noSPI(spi, typ string) *sqlerr.Error {
	return &sqlerr.Error{Code: 30000, SQLState: "HY000", Message: fmt.Sprintf("SPI-00001: No implementation class load from SPI '%s' with type '%s'.", spi, typ)}
}

func alterGlobalRule(st *distsql.AlterGlobalRule) globalChange {
	return func(c map[string]any) (map[string]any, error) {
		for name := range st.Settings {
			if !slices.Contains(alterSettings[st.Type], name) {
				return nil, &sqlerr.Error{Code: 12000, SQLState: "42000", Message: fmt.Sprintf("You have an error in your SQL syntax: ALTER %s RULE has no setting %s", strings.ToUpper(st.Type), name)}
			}
		}
		invalid := func(msg string) error { return rule.InvalidRule(st.Type, st.Type, msg) }
		props := func() map[string]any {
			m := map[string]any{}
			for _, p := range st.Properties {
				m[p.Key] = rule.PropertyValue(p.Value)
			}
			return m
		}
		boolean := func(name string) (bool, error) {
			v := st.Settings[name]
			if v.Kind != distsql.BoolValue && !(v.Kind == distsql.StringValue && (strings.EqualFold(v.Text, "true") || strings.EqualFold(v.Text, "false"))) {
				return false, invalid(fmt.Sprintf("%s must be TRUE or FALSE, not '%s'", name, v.Text))
			}
			return strings.EqualFold(v.Text, "true"), nil
		}
		cache := func(field, prefix string) error {
			m := maps.Clone(rule.Map(c[field]))
			if m == nil {
				m = map[string]any{}
			}
			for setting, key := range map[string]string{".INITIAL_CAPACITY": "initialCapacity", ".MAXIMUM_SIZE": "maximumSize"} {
				v, ok := st.Settings[prefix+setting]
				if !ok {
					continue
				}
				n, err := strconv.ParseInt(v.Text, 10, 32)
				if v.Kind != distsql.IntValue || err != nil || n <= 0 {
					return invalid(fmt.Sprintf("%s%s must be a positive integer, not '%s'", prefix, setting, v.Text))
				}
				m[key] = int(n)
			}
			c[field] = m
			return nil
		}
		switch st.Type {
		case "transaction":
			def, ok := st.Settings["DEFAULT"]
			if !ok {
				return nil, invalid("DEFAULT is required")
			}
			typ := strings.ToUpper(def.Text)
			providers := map[string][]string{"LOCAL": nil, "XA": {"Atomikos", "Narayana"}, "BASE": {"Seata"}}
			allowed, known := providers[typ]
			if !known {
				return nil, invalid(fmt.Sprintf("unknown transaction type '%s' (LOCAL, XA or BASE)", def.Text))
			}
			c = map[string]any{"defaultType": typ}
			if p, ok := st.Settings["TYPE"]; ok && p.Text != "" {
				i := slices.IndexFunc(allowed, func(a string) bool { return strings.EqualFold(a, p.Text) })
				if i < 0 {
					return nil, noSPI("org.apache.shardingsphere.transaction.spi.ShardingSphereDistributedTransactionManager", p.Text)
				}
				c["providerType"] = allowed[i]
			} else if typ != "LOCAL" {
				return nil, invalid(fmt.Sprintf("transaction type %s needs a provider: TYPE(NAME='%s')", typ, allowed[0]))
			}
			c["props"] = props()
		case "sql_parser":
			if err := cache("sqlStatementCache", "SQL_STATEMENT_CACHE"); err != nil {
				return nil, err
			}
			if err := cache("parseTreeCache", "PARSE_TREE_CACHE"); err != nil {
				return nil, err
			}
		case "global_clock":
			if v, ok := st.Settings["TYPE"]; ok {
				if !strings.EqualFold(v.Text, "TSO") {
					return nil, noSPI("org.apache.shardingsphere.globalclock.spi.GlobalClockProvider", v.Text)
				}
				c["type"] = "TSO"
			}
			if v, ok := st.Settings["PROVIDER"]; ok {
				c["provider"] = v.Text
			}
			if _, ok := st.Settings["ENABLED"]; ok {
				b, err := boolean("ENABLED")
				if err != nil {
					return nil, err
				}
				c["enabled"] = b
			}
			if st.HasProperties {
				c["props"] = props()
			}
		case "sql_federation":
			for setting, field := range map[string]string{"SQL_FEDERATION_ENABLED": "sqlFederationEnabled", "ALL_QUERY_USE_SQL_FEDERATION": "allQueryUseSQLFederation"} {
				if _, ok := st.Settings[setting]; ok {
					b, err := boolean(setting)
					if err != nil {
						return nil, err
					}
					c[field] = b
				}
			}
			if err := cache("executionPlanCache", "EXECUTION_PLAN_CACHE"); err != nil {
				return nil, err
			}
		case "sql_translator":
			if v, ok := st.Settings["TYPE"]; ok {
				i := slices.IndexFunc(sqlTranslators, func(t string) bool { return strings.EqualFold(t, v.Text) })
				if i < 0 {
					return nil, noSPI("org.apache.shardingsphere.sqltranslator.spi.SQLTranslator", v.Text)
				}
				c["type"] = sqlTranslators[i]
			}
			if st.HasProperties {
				c["props"] = props()
			}
			if _, ok := st.Settings["USE_ORIGINAL_SQL_WHEN_TRANSLATING_FAILED"]; ok {
				b, err := boolean("USE_ORIGINAL_SQL_WHEN_TRANSLATING_FAILED")
				if err != nil {
					return nil, err
				}
				c["useOriginalSQLWhenTranslatingFailed"] = b
			}
		default:
			return nil, &sqlerr.Error{Code: 30001, SQLState: "0A000", Message: fmt.Sprintf("Unsupported SQL operation: ALTER %s RULE.", strings.ToUpper(st.Type))}
		}
		return c, nil
	}
}
