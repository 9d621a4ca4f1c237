package catalog

import (
	"errors"
	"fmt"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"regexp"
	"strconv"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/datasource"
)

// PostgreSQL's pg_catalog and information_schema. Tables have OIDs from
// firstOID on, in name order within the current database; a primary key
// index has its table's OID plus indexOIDOffset. They are stable while the
// database's tables are.

const (
	firstOID       = 16384
	indexOIDOffset = 1 << 20
	publicOID      = 2200
	catalogOID     = 11
	infoSchemaOID  = 13000
	// PostgreSQLShowTransactionIsolation is PostgreSQL's default level.
	pgIsolation = "read committed"
)

// IsPostgreSQL reports whether q is a catalog query of the PostgreSQL
// port: a SELECT reading pg_catalog, a pg_ relation or information_schema,
// or SHOW TRANSACTION ISOLATION LEVEL.
func IsPostgreSQL(q string) bool {
	if len(q) > MaxQueryBytes {
		return false
	}
	words := firstWords(q, 4)
	if len(words) == 0 {
		return false
	}
	switch words[0] {
	case "SELECT":
		return pgFrom.MatchString(q)
	case "SHOW":
		return len(words) == 4 && words[1] == "TRANSACTION" && words[2] == "ISOLATION" && words[3] == "LEVEL"
	}
	return false
}

// pgFrom finds a FROM of a pg_catalog or information_schema relation, or
// of an unqualified pg_ relation.
var pgFrom = regexp.MustCompile(`(?i)\bfrom\s+(?:"?(?:pg_catalog|information_schema)"?\s*\.|pg_[a-z_]+)`)

// psql's meta-commands' queries, recognised by what they read.
var (
	relnamePattern = regexp.MustCompile(`(?i)c\.relname\s+OPERATOR\(pg_catalog\.~\)\s+'((?:[^']|'')*)'`)
	nspnamePattern = regexp.MustCompile(`(?i)n\.nspname\s+OPERATOR\(pg_catalog\.~\)\s+'((?:[^']|'')*)'`)
	oidEquals      = regexp.MustCompile(`(?i)(?:c\.oid|a\.attrelid|pol\.polrelid|stxrelid|pc\.oid|i\.inhrelid|i\.inhparent|pr\.prrelid)\s*=\s*'(\d+)'`)
	relkindList    = regexp.MustCompile(`(?i)c\.relkind\s+IN\s+\(([^)]*)\)`)
)

// AnswerPostgreSQL answers catalog query q (IsPostgreSQL's) over v. An
// unsupported query is an *sqlerr.Error with PostgreSQL's SQL state.
func AnswerPostgreSQL(v *View, q string) (*Result, error) {
	if len(q) > MaxQueryBytes {
		return nil, &sqlerr.Error{Code: 1153, SQLState: "54000", Message: fmt.Sprintf("catalog query longer than %d bytes", MaxQueryBytes)}
	}
	if w := firstWords(q, 2); len(w) == 2 && w[0] == "SHOW" {
		return &Result{Columns: cols("transaction_isolation"), Rows: [][]*string{row(pgIsolation)}}, nil
	}
	norm := strings.ToLower(strings.Join(strings.Fields(q), " "))
	if res, ok, err := psqlShape(v, q, norm); ok {
		return res, err
	}
	if res, ok := jdbcShape(v, q, norm); ok { // jdbc.go
		return res, nil
	}
	sq, err := parseSelect(q)
	if err != nil {
		return nil, unsupportedPostgreSQL(clip(q) + " (" + err.Error() + ")")
	}
	if sq.relation == "" { // SELECT expressions without FROM
		res, err := run(sq, &relation{rows: [][]*string{{}}}, v)
		var se *sqlerr.Error
		if errors.As(err, &se) {
			return nil, se
		}
		if err != nil {
			return nil, &sqlerr.Error{Code: 1305, SQLState: "42883", Message: err.Error()}
		}
		return res, nil
	}
	var rels []*relation
	for _, src := range sq.sources() {
		rel, ok := pgRelation(v, strings.ToLower(src.schema), strings.ToLower(src.relation))
		if !ok {
			return nil, &sqlerr.Error{Code: 1146, SQLState: "42P01", Message: fmt.Sprintf("relation \"%s\" does not exist", qualified(src.schema, src.relation))}
		}
		rels = append(rels, rel)
	}
	rel := rels[0]
	if len(rels) > 1 {
		var err error
		if rel, err = join(sq, rels, v); err != nil {
			return nil, &sqlerr.Error{Code: 1104, SQLState: "54000", Message: err.Error()}
		}
	}
	res, err := run(sq, rel, v)
	if err != nil {
		return nil, &sqlerr.Error{Code: 1054, SQLState: "42703", Message: err.Error()}
	}
	return res, nil
}

func qualified(schema, name string) string {
	if schema == "" {
		return name
	}
	return schema + "." + name
}

// current is the session's database in v, nil when none.
func (v *View) current() *Database {
	for i := range v.Databases {
		if v.Databases[i].Name == v.Current {
			return &v.Databases[i]
		}
	}
	return nil
}

// byOID returns the current database's table with oid.
func (v *View) byOID(oid string) (Table, bool) {
	n, err := strconv.Atoi(oid)
	d := v.current()
	if err != nil || d == nil || n < firstOID || n-firstOID >= len(d.Tables) {
		return Table{}, false
	}
	return d.Tables[n-firstOID], true
}

func pgBool(b bool) string {
	if b {
		return "t"
	}
	return "f"
}

// unquote reads a SQL string literal's body (” is ').
func unquote(s string) string { return strings.ReplaceAll(s, "''", "'") }

// matcher compiles a psql name pattern (a POSIX regular expression psql
// made); nil pattern matches everything.
func matcher(m []string) (*regexp.Regexp, error) {
	if m == nil {
		return nil, nil
	}
	p := unquote(m[1])
	if len(p) > 1024 {
		return nil, &sqlerr.Error{Code: 1235, SQLState: "54000", Message: "name pattern longer than 1024 bytes"}
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, &sqlerr.Error{Code: 1235, SQLState: "2201B", Message: fmt.Sprintf("invalid regular expression: %v", err)}
	}
	return re, nil
}

// psqlShape answers psql's meta-command queries; ok is false for other
// queries.
func psqlShape(v *View, q, norm string) (*Result, bool, error) {
	switch {
	case strings.Contains(norm, "from pg_catalog.pg_database d") && strings.Contains(norm, `as "name"`):
		res := &Result{Columns: cols("Name", "Owner", "Encoding", "Collate", "Ctype")}
		icu := strings.Contains(norm, "daticulocale")
		if icu {
			res.Columns = append(res.Columns, cols("ICU Locale", "Locale Provider")...)
		}
		res.Columns = append(res.Columns, cols("Access privileges")...)
		for _, d := range v.Databases {
			r := row(d.Name, v.User, "UTF8", "C.UTF-8", "C.UTF-8")
			if icu {
				r = append(r, nil, str("libc"))
			}
			res.Rows = append(res.Rows, append(r, nil))
		}
		return res, true, nil

	case strings.Contains(norm, "from pg_catalog.pg_class c left join pg_catalog.pg_namespace n on n.oid = c.relnamespace") &&
		strings.Contains(norm, `as "schema"`):
		kinds := map[string]bool{}
		if m := relkindList.FindStringSubmatch(q); m != nil {
			for _, k := range strings.Split(m[1], ",") {
				kinds[strings.Trim(strings.TrimSpace(k), "'")] = true
			}
		}
		names, err := matcher(relnamePattern.FindStringSubmatch(q))
		if err != nil {
			return nil, true, err
		}
		schemas, err := matcher(nspnamePattern.FindStringSubmatch(q))
		if err != nil {
			return nil, true, err
		}
		res := &Result{Columns: cols("Schema", "Name", "Type", "Owner"), Rows: [][]*string{}}
		if d := v.current(); d != nil && (schemas == nil || schemas.MatchString("public")) {
			for _, t := range d.Tables {
				kind, typ := "r", "table"
				if t.View {
					kind, typ = "v", "view"
				}
				if kinds[kind] && (names == nil || names.MatchString(t.Name)) {
					res.Rows = append(res.Rows, row("public", t.Name, typ, v.User))
				}
			}
		}
		return res, true, nil

	case strings.HasPrefix(norm, "select c.oid, n.nspname, c.relname from pg_catalog.pg_class c"):
		names, err := matcher(relnamePattern.FindStringSubmatch(q))
		if err != nil {
			return nil, true, err
		}
		schemas, err := matcher(nspnamePattern.FindStringSubmatch(q))
		if err != nil {
			return nil, true, err
		}
		res := &Result{Columns: cols("oid", "nspname", "relname"), Rows: [][]*string{}}
		if d := v.current(); d != nil && (schemas == nil || schemas.MatchString("public")) {
			for i, t := range d.Tables {
				if names == nil || names.MatchString(t.Name) {
					res.Rows = append(res.Rows, row(strconv.Itoa(firstOID+i), "public", t.Name))
				}
			}
		}
		return res, true, nil

	case strings.HasPrefix(norm, "select c.relchecks, c.relkind, c.relhasindex"):
		m := oidEquals.FindStringSubmatch(q)
		res := &Result{Columns: cols("relchecks", "relkind", "relhasindex", "relhasrules", "relhastriggers", "relrowsecurity",
			"relforcerowsecurity", "relhasoids", "relispartition", "?column?", "reltablespace", "reloftype", "relpersistence",
			"relreplident", "amname"), Rows: [][]*string{}}
		if m != nil {
			if t, ok := v.byOID(m[1]); ok {
				kind, am := "r", str("heap")
				if t.View {
					kind, am = "v", nil
				}
				res.Rows = append(res.Rows, row("0", kind, pgBool(len(indexes(t)) > 0), "f", "f", "f", "f", "f", "f", "", "0", "", "p", "d", am))
			}
		}
		return res, true, nil

	case strings.Contains(norm, "from pg_catalog.pg_attribute a") && strings.Contains(norm, "a.attnum > 0"):
		if strings.Contains(norm, "attstorage") {
			return nil, true, unsupportedPostgreSQL(`\d+ (the catalog answers \d)`)
		}
		res := &Result{Columns: cols("attname", "format_type", "pg_get_expr", "attnotnull", "attcollation", "attidentity", "attgenerated"), Rows: [][]*string{}}
		if m := oidEquals.FindStringSubmatch(q); m != nil {
			if t, ok := v.byOID(m[1]); ok {
				for _, c := range t.Columns {
					res.Rows = append(res.Rows, row(c.Name, pgType(c), nil, pgBool(!c.Nullable), nil, "", ""))
				}
			}
		}
		return res, true, nil

	case strings.Contains(norm, "from pg_catalog.pg_class c, pg_catalog.pg_class c2, pg_catalog.pg_index i"):
		res := &Result{Columns: cols("relname", "indisprimary", "indisunique", "indisclustered", "indisvalid", "pg_get_indexdef",
			"pg_get_constraintdef", "contype", "condeferrable", "condeferred", "indisreplident", "reltablespace"), Rows: [][]*string{}}
		if m := oidEquals.FindStringSubmatch(q); m != nil {
			if t, ok := v.byOID(m[1]); ok {
				for _, ix := range indexes(t) {
					name, primary := ix.Name, ix.Name == "PRIMARY"
					if primary {
						name = t.Name + "_pkey"
					}
					cols := strings.Join(ix.Columns, ", ")
					unique, condef, contype := "", (*string)(nil), (*string)(nil)
					if ix.Unique {
						unique = "UNIQUE "
					}
					switch {
					case primary:
						condef, contype = str("PRIMARY KEY ("+cols+")"), str("p")
					case ix.Unique:
						condef, contype = str("UNIQUE ("+cols+")"), str("u")
					}
					def := fmt.Sprintf("CREATE %sINDEX %s ON public.%s USING btree (%s)", unique, name, t.Name, cols)
					res.Rows = append(res.Rows, row(name, pgBool(primary), pgBool(ix.Unique), "f", "t", def, condef, contype, "f", "f", "f", "0"))
				}
			}
		}
		return res, true, nil

	case strings.Contains(norm, "from pg_catalog.pg_policy pol"),
		strings.Contains(norm, "from pg_catalog.pg_statistic_ext"),
		strings.Contains(norm, "from pg_catalog.pg_publication p"),
		strings.Contains(norm, "pg_catalog.pg_inherits i"),
		strings.Contains(norm, "from pg_catalog.pg_trigger t"),
		strings.Contains(norm, "from pg_catalog.pg_rewrite r"),
		strings.Contains(norm, "from pg_catalog.pg_constraint r"):
		// Nothing of the kind: no policies, statistics objects,
		// publications, inheritance, triggers, rules or foreign keys.
		return &Result{Columns: cols("?column?"), Rows: [][]*string{}}, true, nil

	case strings.Contains(norm, "from pg_catalog.pg_roles r") && strings.Contains(norm, "r.rolname, r.rolsuper"):
		res := &Result{Columns: cols("rolname", "rolsuper", "rolinherit", "rolcreaterole", "rolcreatedb", "rolcanlogin",
			"rolconnlimit", "rolvaliduntil", "memberof", "rolreplication", "rolbypassrls"), Rows: [][]*string{}}
		names, err := pgRoleFilter(q)
		if err != nil {
			return nil, true, err
		}
		for _, u := range v.users() {
			if names == nil || names.MatchString(u) {
				res.Rows = append(res.Rows, row(u, "f", "t", "f", "f", "t", "-1", nil, "{}", "f", "f"))
			}
		}
		return res, true, nil
	}
	return nil, false, nil
}

var rolnamePattern = regexp.MustCompile(`(?i)r\.rolname\s+OPERATOR\(pg_catalog\.~\)\s+'((?:[^']|'')*)'`)

func pgRoleFilter(q string) (*regexp.Regexp, error) {
	return matcher(rolnamePattern.FindStringSubmatch(q))
}

// users are the authority rule's users, or the session's user alone.
func (v *View) users() []string {
	if len(v.Users) > 0 {
		return v.Users
	}
	return []string{v.User}
}

// pgType is a column's type as PostgreSQL's format_type names it.
func pgType(c datasource.Column) string {
	name := strings.ToLower(c.TypeName)
	length := ""
	if i := strings.IndexByte(name, '('); i > 0 {
		length = name[i:]
		name = name[:i]
	}
	switch c.DataType {
	case -5:
		return "bigint"
	case 4:
		return "integer"
	case 5, -6:
		return "smallint"
	case 12, -9:
		return "character varying" + length
	case 1, -15:
		return "character" + length
	case 2, 3:
		return "numeric" + length
	case 8:
		return "double precision"
	case 6, 7:
		return "real"
	case 16, -7:
		return "boolean"
	case 91:
		return "date"
	case 92:
		return "time without time zone"
	case 93:
		return "timestamp without time zone"
	case -1, 2005:
		return "text"
	case -2, -3, -4, 2004:
		return "bytea"
	}
	if name == "" {
		return "text"
	}
	return name + length
}

// pgRelation is a pg_catalog or information_schema relation in
// PostgreSQL's columns.
func pgRelation(v *View, schema, name string) (*relation, bool) {
	d := v.current()
	var tables []Table
	if d != nil {
		tables = d.Tables
	}
	switch {
	case schema == "information_schema":
		switch name {
		case "schemata":
			r := &relation{cols: cols("catalog_name", "schema_name", "schema_owner", "default_character_set_catalog",
				"default_character_set_schema", "default_character_set_name", "sql_path")}
			if d != nil {
				r.rows = append(r.rows, row(d.Name, "public", v.User, nil, nil, nil, nil))
			}
			return r, true
		case "tables":
			r := &relation{cols: cols("table_catalog", "table_schema", "table_name", "table_type", "self_referencing_column_name",
				"reference_generation", "user_defined_type_catalog", "user_defined_type_schema", "user_defined_type_name",
				"is_insertable_into", "is_typed", "commit_action")}
			for _, t := range tables {
				typ := "BASE TABLE"
				if t.View {
					typ = "VIEW"
				}
				r.rows = append(r.rows, row(d.Name, "public", t.Name, typ, nil, nil, nil, nil, nil, "YES", "NO", nil))
			}
			return r, true
		case "columns":
			r := &relation{cols: cols("table_catalog", "table_schema", "table_name", "column_name", "#ordinal_position",
				"column_default", "is_nullable", "data_type", "#character_maximum_length", "udt_name")}
			for _, t := range tables {
				for i, c := range t.Columns {
					typ := pgType(c)
					base, _, _ := strings.Cut(typ, "(")
					r.rows = append(r.rows, row(d.Name, "public", t.Name, c.Name, i+1, nil, yesNo(c.Nullable), base, nil, base))
				}
			}
			return r, true
		}
	case schema == "pg_catalog" || schema == "":
		switch name {
		case "pg_database":
			r := &relation{cols: cols("oid", "datname", "datdba", "encoding", "datcollate", "datctype", "datistemplate", "datallowconn", "datconnlimit", "datacl")}
			for i, db := range v.Databases {
				r.rows = append(r.rows, row(strconv.Itoa(1+i), db.Name, "10", "6", "C.UTF-8", "C.UTF-8", "f", "t", "-1", nil))
			}
			return r, true
		case "pg_namespace":
			return &relation{cols: cols("oid", "nspname", "nspowner", "nspacl"), rows: [][]*string{
				row(strconv.Itoa(catalogOID), "pg_catalog", "10", nil),
				row(strconv.Itoa(publicOID), "public", "10", nil),
				row(strconv.Itoa(infoSchemaOID), "information_schema", "10", nil),
			}}, true
		case "pg_class":
			r := &relation{cols: cols("oid", "relname", "relnamespace", "relkind", "relowner", "relhasindex", "relpersistence")}
			for i, t := range tables {
				kind := "r"
				if t.View {
					kind = "v"
				}
				r.rows = append(r.rows, row(strconv.Itoa(firstOID+i), t.Name, strconv.Itoa(publicOID), kind, "10", pgBool(len(indexes(t)) > 0), "p"))
			}
			return r, true
		case "pg_tables", "pg_views":
			view := name == "pg_views"
			r := &relation{cols: cols("schemaname", "tablename", "tableowner", "tablespace", "hasindexes", "hasrules", "hastriggers", "rowsecurity")}
			if view {
				r.cols = cols("schemaname", "viewname", "viewowner", "definition")
			}
			for _, t := range tables {
				switch {
				case view && t.View:
					r.rows = append(r.rows, row("public", t.Name, v.User, ""))
				case !view && !t.View:
					r.rows = append(r.rows, row("public", t.Name, v.User, nil, pgBool(len(indexes(t)) > 0), "f", "f", "f"))
				}
			}
			return r, true
		case "pg_roles", "pg_user":
			r := &relation{cols: cols("rolname", "rolsuper", "rolinherit", "rolcreaterole", "rolcreatedb", "rolcanlogin", "rolconnlimit", "oid")}
			if name == "pg_user" {
				r.cols = cols("usename", "usesysid", "usecreatedb", "usesuper")
			}
			for i, u := range v.users() {
				if name == "pg_user" {
					r.rows = append(r.rows, row(u, strconv.Itoa(10+i), "f", "f"))
				} else {
					r.rows = append(r.rows, row(u, "f", "t", "f", "f", "t", "-1", strconv.Itoa(10+i)))
				}
			}
			return r, true
		case "pg_settings":
			return pgSettingsRelation(v), true // pgrel.go
		case "pg_type":
			return pgTypeRelation(), true
		case "pg_attribute":
			return pgAttributeRelation(tables), true
		case "pg_index":
			return pgIndexRelation(tables), true
		case "pg_description":
			return &relation{cols: cols("objoid", "classoid", "objsubid", "description")}, true
		case "pg_am":
			return &relation{cols: cols("oid", "amname", "amtype"), rows: [][]*string{row("2", "heap", "t"), row("403", "btree", "i")}}, true
		case "pg_extension", "pg_proc", "pg_trigger", "pg_inherits", "pg_event_trigger", "pg_foreign_table", "pg_sequence":
			return &relation{cols: cols("oid")}, true
		}
	}
	return nil, false
}
