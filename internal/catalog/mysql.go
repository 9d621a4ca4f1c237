package catalog

import (
	"errors"
	"fmt"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/datasource"
)

// MySQL's information_schema and SHOW forms, in MySQL 5.7's columns (the
// version a shardkeeper node announces).

// IsMySQL reports whether q is a catalog query of the MySQL port: a SELECT
// reading information_schema (or mysql. / performance_schema.) or one of
// the SHOW forms MySQLShowForms lists. It does no more than look at the
// first words and is cheap.
func IsMySQL(q string) bool {
	if len(q) > MaxQueryBytes {
		return false
	}
	words := firstWords(q, 4)
	if len(words) == 0 {
		return false
	}
	switch words[0] {
	case "SELECT":
		return mysqlFrom.MatchString(q)
	case "SHOW":
		_, ok := mysqlShow(words[1:])
		return ok
	}
	return false
}

// mysqlFrom finds a FROM of an information_schema, performance_schema or
// mysql relation.
var mysqlFrom = regexp.MustCompile("(?i)\\bfrom\\s+`?(?:information_schema|performance_schema|mysql)`?\\s*\\.")

// firstWords returns q's first n words (letters and underscores), upper
// case, skipping comments.
func firstWords(q string, n int) []string {
	var out []string
	i := 0
	for i < len(q) && len(out) < n {
		c := q[i]
		switch {
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				return out
			}
			i += end + 4
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			for i < len(q) && q[i] != '\n' {
				i++
			}
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(q) && (q[j] == '_' || q[j] >= 'a' && q[j] <= 'z' || q[j] >= 'A' && q[j] <= 'Z' || q[j] >= '0' && q[j] <= '9') {
				j++
			}
			out = append(out, strings.ToUpper(q[i:j]))
			i = j
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '(':
			i++
		default:
			return out
		}
	}
	return out
}

// MySQLShowForms are the SHOW statements the catalog answers on the MySQL
// port (with LIKE or WHERE where MySQL takes them).
var MySQLShowForms = []string{
	"SHOW [STORAGE] ENGINES", "SHOW CHARSET", "SHOW CHARACTER SET", "SHOW COLLATION", "SHOW [SESSION|GLOBAL] STATUS",
	"SHOW GRANTS [FOR user]", "SHOW PLUGINS", "SHOW TABLE STATUS [FROM db]", "SHOW CREATE DATABASE db", "SHOW CREATE TABLE t",
	"SHOW [FULL] COLUMNS|FIELDS FROM t [FROM db]", "SHOW INDEX|INDEXES|KEYS FROM t [FROM db]", "SHOW ENGINE INNODB STATUS",
	"SHOW [SESSION|GLOBAL] VARIABLES WHERE ...", "SHOW PROCEDURE|FUNCTION STATUS", "SHOW TRIGGERS", "SHOW EVENTS",
	"SHOW PRIVILEGES", "SHOW OPEN TABLES", "SHOW MASTER|BINARY LOGS", "SHOW SLAVE|REPLICA STATUS", "SHOW MASTER STATUS",
}

// mysqlShow names the catalog's relation for SHOW words..., ok false when
// the catalog does not answer it.
func mysqlShow(words []string) (string, bool) {
	if len(words) == 0 {
		return "", false
	}
	w := words
	if w[0] == "SESSION" || w[0] == "GLOBAL" || w[0] == "LOCAL" {
		w = w[1:]
		if len(w) == 0 {
			return "", false
		}
		if w[0] == "VARIABLES" {
			return "variables", len(words) > 2 && words[2] == "WHERE"
		}
	}
	at := func(i int) string {
		if i < len(w) {
			return w[i]
		}
		return ""
	}
	switch w[0] {
	case "ENGINES":
		return "engines", true
	case "STORAGE":
		return "engines", at(1) == "ENGINES"
	case "CHARSET":
		return "charset", true
	case "CHARACTER":
		return "charset", at(1) == "SET"
	case "COLLATION":
		return "collation", true
	case "STATUS":
		return "status", at(1) != "FROM" // SHOW STATUS FROM READWRITE_SPLITTING is DistSQL
	case "GRANTS":
		return "grants", true
	case "PLUGINS":
		return "plugins", at(1) != "OF" // SHOW PLUGINS OF is DistSQL
	case "TABLE":
		return "table status", at(1) == "STATUS"
	case "CREATE":
		switch at(1) {
		case "DATABASE", "SCHEMA":
			return "create database", true
		case "TABLE":
			return "create table", true
		}
	case "COLUMNS", "FIELDS":
		return "columns", true
	case "FULL":
		return "columns", at(1) == "COLUMNS" || at(1) == "FIELDS"
	case "INDEX", "INDEXES", "KEYS":
		return "keys", true
	case "EXTENDED":
		return "keys", at(1) == "INDEX" || at(1) == "INDEXES" || at(1) == "KEYS"
	case "ENGINE":
		return "engine status", at(1) == "INNODB" && at(2) == "STATUS"
	case "VARIABLES":
		return "variables", at(1) == "WHERE"
	case "PROCEDURE", "FUNCTION":
		return "routines", at(1) == "STATUS"
	case "TRIGGERS":
		return "triggers", true
	case "EVENTS":
		return "events", true
	case "PRIVILEGES":
		return "privileges", true
	case "OPEN":
		return "open tables", at(1) == "TABLES"
	case "MASTER", "BINARY":
		if at(1) == "STATUS" {
			return "master status", true
		}
		return "binary logs", at(1) == "LOGS"
	case "SLAVE", "REPLICA":
		return "replica status", at(1) == "STATUS" || at(1) == "HOSTS"
	}
	return "", false
}

func cols(names ...string) []Column {
	out := make([]Column, len(names))
	for i, n := range names {
		typ := Text
		if strings.HasPrefix(n, "#") {
			n, typ = n[1:], Int
		}
		out[i] = Column{Name: n, Type: typ}
	}
	return out
}

func row(values ...any) []*string {
	out := make([]*string, len(values))
	for i, v := range values {
		switch v := v.(type) {
		case string:
			out[i] = str(v)
		case int:
			out[i] = str(strconv.Itoa(v))
		case *string:
			out[i] = v
		}
	}
	return out
}

const (
	defaultCharset   = "utf8mb4"
	defaultCollation = "utf8mb4_general_ci"
)

var engines = [][]*string{
	row("InnoDB", "DEFAULT", "Supports transactions, row-level locking, and foreign keys", "YES", "YES", "YES"),
	row("MEMORY", "YES", "Hash based, stored in memory, useful for temporary tables", "NO", "NO", "NO"),
	row("MyISAM", "YES", "MyISAM storage engine", "NO", "NO", "NO"),
}

var charsets = [][]*string{
	row("ascii", "US ASCII", "ascii_general_ci", 1),
	row("binary", "Binary pseudo charset", "binary", 1),
	row("latin1", "cp1252 West European", "latin1_swedish_ci", 1),
	row("utf8", "UTF-8 Unicode", "utf8_general_ci", 3),
	row("utf8mb4", "UTF-8 Unicode", "utf8mb4_general_ci", 4),
}

var collations = [][]*string{
	row("ascii_general_ci", "ascii", 11, "Yes", "Yes", 1),
	row("binary", "binary", 63, "Yes", "Yes", 1),
	row("latin1_swedish_ci", "latin1", 8, "Yes", "Yes", 1),
	row("utf8_general_ci", "utf8", 33, "Yes", "Yes", 1),
	row("utf8_bin", "utf8", 83, "", "Yes", 1),
	row("utf8mb4_general_ci", "utf8mb4", 45, "Yes", "Yes", 1),
	row("utf8mb4_bin", "utf8mb4", 46, "", "Yes", 1),
	row("utf8mb4_unicode_ci", "utf8mb4", 224, "", "Yes", 8),
}

var plugins = [][]*string{
	row("mysql_native_password", "ACTIVE", "AUTHENTICATION", nil, "GPL"),
	row("caching_sha2_password", "ACTIVE", "AUTHENTICATION", nil, "GPL"),
	row("InnoDB", "ACTIVE", "STORAGE ENGINE", nil, "GPL"),
}

// dataType is a column's MySQL DATA_TYPE (lower case, no length) and
// COLUMN_TYPE ("varchar(32)", "int unsigned").
// sizes are a column's CHARACTER_MAXIMUM_LENGTH, CHARACTER_OCTET_LENGTH
// (utf8mb4: four bytes a character), NUMERIC_PRECISION and NUMERIC_SCALE
// from its data type and full type, as MySQL fills them (nil: NULL).
func sizes(data, full string) (chars, octets, precision, scale any) {
	var n []int
	if _, args, ok := strings.Cut(full, "("); ok {
		args, _, _ = strings.Cut(args, ")")
		for _, a := range strings.Split(args, ",") {
			if x, err := strconv.Atoi(strings.TrimSpace(a)); err == nil {
				n = append(n, x)
			}
		}
	}
	digits := map[string]int{"tinyint": 3, "smallint": 5, "mediumint": 7, "int": 10, "integer": 10, "bigint": 19}
	switch {
	case digits[data] > 0:
		p := digits[data]
		if data == "bigint" && strings.Contains(full, "unsigned") {
			p = 20
		}
		return nil, nil, p, 0
	case data == "decimal" || data == "numeric":
		p, sc := 10, 0
		if len(n) > 0 {
			p = n[0]
		}
		if len(n) > 1 {
			sc = n[1]
		}
		return nil, nil, p, sc
	case data == "float":
		return nil, nil, 12, nil
	case data == "double" || data == "real":
		return nil, nil, 22, nil
	case (data == "char" || data == "varchar" || data == "binary" || data == "varbinary") && len(n) > 0:
		if data == "binary" || data == "varbinary" {
			return n[0], n[0], nil, nil
		}
		return n[0], 4 * n[0], nil, nil
	case data == "text":
		return 65535, 65535, nil, nil
	}
	return nil, nil, nil, nil
}

func dataType(c datasource.Column) (data, full string) {
	full = strings.ToLower(c.TypeName)
	if full == "" {
		full = "varchar(255)"
	}
	if c.Unsigned && !strings.Contains(full, "unsigned") {
		full += " unsigned"
	}
	data = full
	if i := strings.IndexAny(data, "( "); i > 0 {
		data = data[:i]
	}
	return data, full
}

func yesNo(b bool) string {
	if b {
		return "YES"
	}
	return "NO"
}

// indexes are t's indexes, with a PRIMARY index of its primary key
// columns when its persisted indexes name none.
func indexes(t Table) []datasource.Index {
	var pk []string
	for _, c := range t.Columns {
		if c.PrimaryKey {
			pk = append(pk, c.Name)
		}
	}
	out := slices.Clone(t.Indexes)
	if len(pk) > 0 && !slices.ContainsFunc(out, func(i datasource.Index) bool { return strings.EqualFold(i.Name, "PRIMARY") }) {
		out = append([]datasource.Index{{Name: "PRIMARY", Columns: pk, Unique: true}}, out...)
	}
	return out
}

// mysqlRelation is information_schema.name (upper case) for v.
func mysqlRelation(v *View, name string) (*relation, bool) {
	switch name {
	case "SCHEMATA":
		r := &relation{cols: cols("CATALOG_NAME", "SCHEMA_NAME", "DEFAULT_CHARACTER_SET_NAME", "DEFAULT_COLLATION_NAME", "SQL_PATH")}
		r.rows = append(r.rows, row("def", "information_schema", "utf8", "utf8_general_ci", nil))
		for _, d := range v.Databases {
			r.rows = append(r.rows, row("def", d.Name, defaultCharset, defaultCollation, nil))
		}
		return r, true
	case "TABLES":
		r := &relation{cols: cols("TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME", "TABLE_TYPE", "ENGINE", "#VERSION", "ROW_FORMAT",
			"#TABLE_ROWS", "#AVG_ROW_LENGTH", "#DATA_LENGTH", "#MAX_DATA_LENGTH", "#INDEX_LENGTH", "#DATA_FREE", "#AUTO_INCREMENT",
			"CREATE_TIME", "UPDATE_TIME", "CHECK_TIME", "TABLE_COLLATION", "#CHECKSUM", "CREATE_OPTIONS", "TABLE_COMMENT")}
		for _, d := range v.Databases {
			for _, t := range d.Tables {
				if t.View {
					r.rows = append(r.rows, row("def", d.Name, t.Name, "VIEW", nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, "VIEW"))
					continue
				}
				r.rows = append(r.rows, row("def", d.Name, t.Name, "BASE TABLE", "InnoDB", 10, "Dynamic", 0, 0, 0, 0, 0, 0, nil, nil, nil, nil, defaultCollation, nil, "", ""))
			}
		}
		return r, true
	case "VIEWS":
		r := &relation{cols: cols("TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME", "VIEW_DEFINITION", "CHECK_OPTION", "IS_UPDATABLE",
			"DEFINER", "SECURITY_TYPE", "CHARACTER_SET_CLIENT", "COLLATION_CONNECTION")}
		for _, d := range v.Databases {
			for _, t := range d.Tables {
				if t.View {
					r.rows = append(r.rows, row("def", d.Name, t.Name, "", "NONE", "NO", "", "DEFINER", defaultCharset, defaultCollation))
				}
			}
		}
		return r, true
	case "COLUMNS":
		r := &relation{cols: cols("TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME", "COLUMN_NAME", "#ORDINAL_POSITION", "COLUMN_DEFAULT",
			"IS_NULLABLE", "DATA_TYPE", "#CHARACTER_MAXIMUM_LENGTH", "#CHARACTER_OCTET_LENGTH", "#NUMERIC_PRECISION", "#NUMERIC_SCALE",
			"#DATETIME_PRECISION", "CHARACTER_SET_NAME", "COLLATION_NAME", "COLUMN_TYPE", "COLUMN_KEY", "EXTRA", "PRIVILEGES",
			"COLUMN_COMMENT", "GENERATION_EXPRESSION")}
		for _, d := range v.Databases {
			for _, t := range d.Tables {
				for i, c := range t.Columns {
					data, full := dataType(c)
					key, extra := "", ""
					if c.PrimaryKey {
						key = "PRI"
					}
					if c.Generated {
						extra = "auto_increment"
					}
					chars, octets, precision, scale := sizes(data, full)
					r.rows = append(r.rows, row("def", d.Name, t.Name, c.Name, i+1, nil, yesNo(c.Nullable), data, chars, octets, precision, scale, nil,
						nil, nil, full, key, extra, "select,insert,update,references", "", ""))
				}
			}
		}
		return r, true
	case "STATISTICS":
		r := &relation{cols: cols("TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME", "#NON_UNIQUE", "INDEX_SCHEMA", "INDEX_NAME",
			"#SEQ_IN_INDEX", "COLUMN_NAME", "COLLATION", "#CARDINALITY", "#SUB_PART", "PACKED", "NULLABLE", "INDEX_TYPE", "COMMENT", "INDEX_COMMENT")}
		for _, d := range v.Databases {
			for _, t := range d.Tables {
				for _, ix := range indexes(t) {
					for i, c := range ix.Columns {
						r.rows = append(r.rows, row("def", d.Name, t.Name, nonUnique(ix), d.Name, ix.Name, i+1, c, "A", 0, nil, nil, "", "BTREE", "", ""))
					}
				}
			}
		}
		return r, true
	case "KEY_COLUMN_USAGE", "TABLE_CONSTRAINTS":
		usage := name == "KEY_COLUMN_USAGE"
		r := &relation{cols: cols("CONSTRAINT_CATALOG", "CONSTRAINT_SCHEMA", "CONSTRAINT_NAME", "TABLE_SCHEMA", "TABLE_NAME", "CONSTRAINT_TYPE")}
		if usage {
			r.cols = cols("CONSTRAINT_CATALOG", "CONSTRAINT_SCHEMA", "CONSTRAINT_NAME", "TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME",
				"COLUMN_NAME", "#ORDINAL_POSITION", "#POSITION_IN_UNIQUE_CONSTRAINT", "REFERENCED_TABLE_SCHEMA", "REFERENCED_TABLE_NAME", "REFERENCED_COLUMN_NAME")
		}
		for _, d := range v.Databases {
			for _, t := range d.Tables {
				for _, ix := range indexes(t) {
					if !ix.Unique {
						continue
					}
					typ := "UNIQUE"
					if ix.Name == "PRIMARY" {
						typ = "PRIMARY KEY"
					}
					if !usage {
						r.rows = append(r.rows, row("def", d.Name, ix.Name, d.Name, t.Name, typ))
						continue
					}
					for i, c := range ix.Columns {
						r.rows = append(r.rows, row("def", d.Name, ix.Name, "def", d.Name, t.Name, c, i+1, nil, nil, nil, nil))
					}
				}
			}
		}
		return r, true
	case "ENGINES":
		return &relation{cols: cols("ENGINE", "SUPPORT", "COMMENT", "TRANSACTIONS", "XA", "SAVEPOINTS"), rows: engines}, true
	case "CHARACTER_SETS":
		r := &relation{cols: cols("CHARACTER_SET_NAME", "DEFAULT_COLLATE_NAME", "DESCRIPTION", "#MAXLEN")}
		for _, c := range charsets {
			r.rows = append(r.rows, []*string{c[0], c[2], c[1], c[3]})
		}
		return r, true
	case "COLLATIONS":
		return &relation{cols: cols("COLLATION_NAME", "CHARACTER_SET_NAME", "#ID", "IS_DEFAULT", "IS_COMPILED", "#SORTLEN"), rows: collations}, true
	case "COLLATION_CHARACTER_SET_APPLICABILITY":
		r := &relation{cols: cols("COLLATION_NAME", "CHARACTER_SET_NAME")}
		for _, c := range collations {
			r.rows = append(r.rows, []*string{c[0], c[1]})
		}
		return r, true
	case "PLUGINS":
		r := &relation{cols: cols("PLUGIN_NAME", "PLUGIN_VERSION", "PLUGIN_STATUS", "PLUGIN_TYPE", "PLUGIN_TYPE_VERSION", "PLUGIN_LIBRARY",
			"PLUGIN_LIBRARY_VERSION", "PLUGIN_AUTHOR", "PLUGIN_DESCRIPTION", "PLUGIN_LICENSE", "LOAD_OPTION")}
		for _, p := range plugins {
			r.rows = append(r.rows, []*string{p[0], str("1.0"), p[1], p[2], str("1.0"), nil, nil, str("shardkeeper"), p[0], p[4], str("FORCE")})
		}
		return r, true
	case "ROUTINES":
		return &relation{cols: cols("SPECIFIC_NAME", "ROUTINE_CATALOG", "ROUTINE_SCHEMA", "ROUTINE_NAME", "ROUTINE_TYPE", "DATA_TYPE",
			"DTD_IDENTIFIER", "ROUTINE_BODY", "ROUTINE_DEFINITION", "EXTERNAL_NAME", "EXTERNAL_LANGUAGE", "PARAMETER_STYLE",
			"IS_DETERMINISTIC", "SQL_DATA_ACCESS", "SQL_PATH", "SECURITY_TYPE", "CREATED", "LAST_ALTERED", "SQL_MODE",
			"ROUTINE_COMMENT", "DEFINER", "CHARACTER_SET_CLIENT", "COLLATION_CONNECTION", "DATABASE_COLLATION")}, true
	case "PARAMETERS":
		return &relation{cols: cols("SPECIFIC_CATALOG", "SPECIFIC_SCHEMA", "SPECIFIC_NAME", "#ORDINAL_POSITION", "PARAMETER_MODE",
			"PARAMETER_NAME", "DATA_TYPE", "DTD_IDENTIFIER", "ROUTINE_TYPE")}, true
	case "TRIGGERS":
		return &relation{cols: cols("TRIGGER_CATALOG", "TRIGGER_SCHEMA", "TRIGGER_NAME", "EVENT_MANIPULATION", "EVENT_OBJECT_CATALOG",
			"EVENT_OBJECT_SCHEMA", "EVENT_OBJECT_TABLE", "#ACTION_ORDER", "ACTION_CONDITION", "ACTION_STATEMENT", "ACTION_ORIENTATION",
			"ACTION_TIMING", "CREATED", "SQL_MODE", "DEFINER")}, true
	case "EVENTS":
		return &relation{cols: cols("EVENT_CATALOG", "EVENT_SCHEMA", "EVENT_NAME", "DEFINER", "TIME_ZONE", "EVENT_BODY",
			"EVENT_DEFINITION", "EVENT_TYPE", "EXECUTE_AT", "INTERVAL_VALUE", "INTERVAL_FIELD", "STATUS")}, true
	case "PARTITIONS":
		r := &relation{cols: cols("TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME", "PARTITION_NAME", "SUBPARTITION_NAME",
			"#PARTITION_ORDINAL_POSITION", "PARTITION_METHOD", "PARTITION_EXPRESSION", "#TABLE_ROWS", "PARTITION_COMMENT")}
		for _, d := range v.Databases {
			for _, t := range d.Tables {
				if !t.View {
					r.rows = append(r.rows, row("def", d.Name, t.Name, nil, nil, nil, nil, nil, 0, ""))
				}
			}
		}
		return r, true
	case "REFERENTIAL_CONSTRAINTS":
		return &relation{cols: cols("CONSTRAINT_CATALOG", "CONSTRAINT_SCHEMA", "CONSTRAINT_NAME", "UNIQUE_CONSTRAINT_CATALOG",
			"UNIQUE_CONSTRAINT_SCHEMA", "UNIQUE_CONSTRAINT_NAME", "MATCH_OPTION", "UPDATE_RULE", "DELETE_RULE", "TABLE_NAME", "REFERENCED_TABLE_NAME")}, true
	case "USER_PRIVILEGES", "SCHEMA_PRIVILEGES":
		r := &relation{cols: cols("GRANTEE", "TABLE_CATALOG", "TABLE_SCHEMA", "PRIVILEGE_TYPE", "IS_GRANTABLE")}
		if name == "USER_PRIVILEGES" {
			r.cols = cols("GRANTEE", "TABLE_CATALOG", "PRIVILEGE_TYPE", "IS_GRANTABLE")
			r.rows = append(r.rows, row(grantee(v), "def", "USAGE", "NO"))
			return r, true
		}
		for _, d := range v.Databases {
			r.rows = append(r.rows, row(grantee(v), "def", d.Name, "ALL PRIVILEGES", "NO"))
		}
		return r, true
	case "TABLE_PRIVILEGES", "COLUMN_PRIVILEGES":
		return &relation{cols: cols("GRANTEE", "TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME", "PRIVILEGE_TYPE", "IS_GRANTABLE")}, true
	case "PROCESSLIST":
		return &relation{cols: cols("#ID", "USER", "HOST", "DB", "COMMAND", "#TIME", "STATE", "INFO")}, true
	case "GLOBAL_STATUS", "SESSION_STATUS":
		r := &relation{cols: cols("VARIABLE_NAME", "VARIABLE_VALUE")}
		for _, s := range status {
			r.rows = append(r.rows, row(strings.ToUpper(s[0]), s[1]))
		}
		return r, true
	case "INNODB_TRX", "INNODB_LOCKS", "INNODB_LOCK_WAITS", "FILES", "TABLESPACES":
		return &relation{cols: cols("ID")}, true
	}
	return nil, false
}

func nonUnique(ix datasource.Index) int {
	if ix.Unique {
		return 0
	}
	return 1
}

func grantee(v *View) string { return fmt.Sprintf("'%s'@'%s'", v.User, grantHost(v)) }

func grantHost(v *View) string {
	if v.Host == "" {
		return "%"
	}
	return v.Host
}

// status are the rows of SHOW STATUS: a node keeps no server counters;
// what the tools read exists, empty or zero.
var status = [][2]string{
	{"Aborted_clients", "0"}, {"Aborted_connects", "0"}, {"Bytes_received", "0"}, {"Bytes_sent", "0"},
	{"Connections", "0"}, {"Questions", "0"}, {"Slow_queries", "0"}, {"Ssl_cipher", ""}, {"Ssl_version", ""},
	{"Threads_connected", "1"}, {"Threads_running", "1"}, {"Uptime", "0"},
}

// AnswerMySQL answers catalog query q (IsMySQL's) over v; variables are the
// session's SHOW VARIABLES rows, for SHOW VARIABLES WHERE. An unsupported
// query is an *sqlerr.Error in MySQL's codes.
func AnswerMySQL(v *View, q string, variables [][2]string) (*Result, error) {
	if len(q) > MaxQueryBytes {
		return nil, &sqlerr.Error{Code: 1153, SQLState: "08S01", Message: fmt.Sprintf("catalog query longer than %d bytes", MaxQueryBytes)}
	}
	words := firstWords(q, 2)
	if len(words) > 0 && words[0] == "SHOW" {
		return showMySQL(v, q, variables)
	}
	sq, err := parseSelect(q)
	if err != nil {
		return nil, unsupportedMySQL(clip(q) + " (" + err.Error() + ")")
	}
	if sq.relation == "" || sq.schema == "" && strings.EqualFold(sq.relation, "DUAL") { // SELECT expressions without a relation
		res, err := run(sq, &relation{rows: [][]*string{{}}}, v)
		if err != nil {
			var ce *sqlerr.Error
			if errors.As(err, &ce) {
				return nil, ce
			}
			return nil, &sqlerr.Error{Code: 1305, SQLState: "42000", Message: err.Error()}
		}
		return res, nil
	}
	var rels []*relation
	for _, src := range sq.sources() {
		if !strings.EqualFold(src.schema, "INFORMATION_SCHEMA") {
			return nil, unsupportedMySQL(clip(q))
		}
		rel, ok := mysqlRelation(v, strings.ToUpper(src.relation))
		if !ok {
			return nil, &sqlerr.Error{Code: 1109, SQLState: "42S02", Message: fmt.Sprintf("Unknown table '%s' in information_schema", src.relation)}
		}
		rels = append(rels, rel)
	}
	rel := rels[0]
	if len(rels) > 1 {
		var err error
		if rel, err = join(sq, rels, v); err != nil {
			return nil, &sqlerr.Error{Code: 1104, SQLState: "42000", Message: err.Error()}
		}
	}
	res, err := run(sq, rel, v)
	if err != nil {
		return nil, &sqlerr.Error{Code: 1054, SQLState: "42S22", Message: err.Error()}
	}
	return res, nil
}

// clip is q for a message: at most 100 bytes on one line.
func clip(q string) string {
	q = strings.Join(strings.Fields(q), " ")
	if len(q) > 100 {
		q = q[:100] + "..."
	}
	return q
}
