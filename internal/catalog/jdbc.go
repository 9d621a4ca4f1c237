package catalog

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/datasource"
)

// The PostgreSQL JDBC driver's DatabaseMetaData queries (pgjdbc 42.x:
// getSchemas, getTables, getColumns, getPrimaryKeys), recognised by their
// shape like psql's: they read pg_catalog through array subscripts, CASE
// and window functions the evaluator does not have. Each is answered with
// the columns the driver reads; the name patterns it sends (LIKE for
// schemas, tables and columns, = for a primary key's table) filter the
// rows.

var (
	nspLike     = regexp.MustCompile(`(?i)\bn\.nspname\s+LIKE\s+E?'((?:[^']|'')*)'`)
	schemaLike  = regexp.MustCompile(`(?i)\bnspname\s+LIKE\s+E?'((?:[^']|'')*)'`)
	relLike     = regexp.MustCompile(`(?i)\bc\.relname\s+LIKE\s+E?'((?:[^']|'')*)'`)
	attLike     = regexp.MustCompile(`(?i)\battname\s+LIKE\s+E?'((?:[^']|'')*)'`)
	nspEquals   = regexp.MustCompile(`(?i)\bn\.nspname\s*=\s*E?'((?:[^']|'')*)'`)
	ctRelEquals = regexp.MustCompile(`(?i)\bct\.relname\s*=\s*E?'((?:[^']|'')*)'`)
)

// like returns whether s matches the pattern re found in q (a missing
// pattern matches everything).
func like(re *regexp.Regexp, q, s string) bool {
	m := re.FindStringSubmatch(q)
	return m == nil || Like(unquote(m[1]), s)
}

// equals returns whether s is the name re found in q (a missing name
// matches everything).
func equals(re *regexp.Regexp, q, s string) bool {
	m := re.FindStringSubmatch(q)
	return m == nil || unquote(m[1]) == s
}

// jdbcShape answers pgjdbc's DatabaseMetaData queries; ok is false for
// other queries.
func jdbcShape(v *View, q, norm string) (*Result, bool) {
	d := v.current()
	var tables []Table
	if d != nil {
		tables = d.Tables
	}
	switch {
	case strings.HasPrefix(norm, "select nspname as table_schem, null as table_catalog from pg_catalog.pg_namespace"):
		res := &Result{Columns: cols("table_schem", "table_catalog"), Rows: [][]*string{}}
		for _, n := range []string{"information_schema", "pg_catalog", "public"} {
			if like(schemaLike, q, n) {
				res.Rows = append(res.Rows, row(n, nil))
			}
		}
		return res, true

	case strings.HasPrefix(norm, "select null as table_cat, n.nspname as table_schem, c.relname as table_name, case n.nspname ~ '^pg_'"):
		res := &Result{Columns: cols("table_cat", "table_schem", "table_name", "table_type", "remarks", "type_cat", "type_schem",
			"type_name", "self_referencing_col_name", "ref_generation"), Rows: [][]*string{}}
		wantTables := strings.Contains(norm, "c.relkind in ('r','p') and n.nspname !~ '^pg_'") ||
			strings.Contains(norm, "c.relkind = 'r' and n.nspname !~ '^pg_'")
		wantViews := strings.Contains(norm, "c.relkind = 'v' and n.nspname <> 'pg_catalog'")
		if !like(nspLike, q, "public") {
			return res, true
		}
		for _, view := range []bool{false, true} { // ORDER BY TABLE_TYPE: TABLE before VIEW
			for _, t := range tables {
				if t.View != view || view && !wantViews || !view && !wantTables || !like(relLike, q, t.Name) {
					continue
				}
				typ := "TABLE"
				if view {
					typ = "VIEW"
				}
				res.Rows = append(res.Rows, row(nil, "public", t.Name, typ, nil, "", "", "", "", ""))
			}
		}
		return res, true

	case strings.HasPrefix(norm, "select * from (select n.nspname,c.relname,a.attname,a.atttypid"):
		res := &Result{Columns: cols("nspname", "relname", "attname", "#atttypid", "attnotnull", "#atttypmod", "#attlen", "#typtypmod",
			"#attnum", "attidentity", "attgenerated", "adsrc", "description", "#typbasetype", "typtype"), Rows: [][]*string{}}
		if !like(nspLike, q, "public") {
			return res, true
		}
		for _, t := range tables {
			if !like(relLike, q, t.Name) {
				continue
			}
			for i, c := range t.Columns {
				if !like(attLike, q, c.Name) {
					continue
				}
				oid, typmod, length := pgTypeOID(c)
				res.Rows = append(res.Rows, row("public", t.Name, c.Name, oid, pgBool(!c.Nullable), typmod, length, -1, i+1, nil, nil, nil, nil, 0, "b"))
			}
		}
		return res, true

	case strings.HasPrefix(norm, "select result.table_cat, result.table_schem, result.table_name, result.column_name, result.key_seq, result.pk_name from"):
		res := &Result{Columns: cols("table_cat", "table_schem", "table_name", "column_name", "#key_seq", "pk_name"), Rows: [][]*string{}}
		if !equals(nspEquals, q, "public") {
			return res, true
		}
		for _, t := range tables {
			if !equals(ctRelEquals, q, t.Name) {
				continue
			}
			for _, ix := range indexes(t) {
				if ix.Name != "PRIMARY" {
					continue
				}
				for i, c := range ix.Columns {
					res.Rows = append(res.Rows, row(nil, "public", t.Name, c, i+1, t.Name+"_pkey"))
				}
			}
		}
		return res, true
	}
	return nil, false
}

// pgTypeOID is a column's PostgreSQL type: its pg_type OID, its type
// modifier (a length plus 4, a numeric's precision and scale, else -1) and
// its fixed length in bytes (-1 when variable), as pg_attribute holds them.
func pgTypeOID(c datasource.Column) (oid, typmod, length int) {
	name, args, _ := strings.Cut(pgType(c), "(")
	var n []int
	for _, a := range strings.Split(strings.TrimSuffix(args, ")"), ",") {
		if x, err := strconv.Atoi(strings.TrimSpace(a)); err == nil {
			n = append(n, x)
		}
	}
	typmod = -1
	switch name {
	case "character varying", "character":
		if len(n) > 0 {
			typmod = n[0] + 4
		}
	case "numeric":
		if len(n) > 0 {
			scale := 0
			if len(n) > 1 {
				scale = n[1]
			}
			typmod = n[0]<<16 | scale + 4
		}
	}
	i := slices.IndexFunc(pgTypes, func(t pgBuiltinType) bool { return t.sqlName == name })
	if i < 0 {
		return 25, -1, -1 // text
	}
	return pgTypes[i].oid, typmod, pgTypes[i].length
}
