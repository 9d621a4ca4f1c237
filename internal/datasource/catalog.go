package datasource

import (
	"context"
	"fmt"
	"regexp"
	"strings"
)

// Catalog reads the schemas, tables (columns in ordinal order, primary key,
// nullability, generated columns), secondary indexes (unique constraints
// among them), foreign keys and views of an open unit. Primary key indexes are not listed as indexes (the key is on the
// columns). PostgreSQL: every non-system schema of the connected database;
// MySQL/MariaDB: the connected database; SQLite: "main".
func Catalog(ctx context.Context, db *DB) ([]Schema, error) {
	var out []Schema
	var err error
	switch db.Target.Dialect {
	case PostgreSQL:
		out, err = postgresCatalog(ctx, db)
	case MySQL:
		out, err = mysqlCatalog(ctx, db)
	case SQLite:
		out, err = sqliteCatalog(ctx, db)
	default:
		err = fmt.Errorf("no catalog reader for %s", db.Target.Dialect)
	}
	if err != nil {
		return nil, fmt.Errorf("data source unit %s (%s at %s): read catalog: %w", db.Unit, db.Target.Dialect, db.Target.Host, err)
	}
	return out, nil
}

type builder struct {
	schemas map[string]*Schema
	order   []string
}

func (b *builder) schema(name string) *Schema {
	if b.schemas == nil {
		b.schemas = map[string]*Schema{}
	}
	s := b.schemas[name]
	if s == nil {
		s = &Schema{Name: name, Tables: map[string]Table{}, Views: map[string]View{}}
		b.schemas[name] = s
		b.order = append(b.order, name)
	}
	return s
}

func (b *builder) result() []Schema {
	out := make([]Schema, 0, len(b.order))
	for _, n := range b.order {
		out = append(out, *b.schemas[n])
	}
	return out
}

// update applies fn to table schema.table if it is known.
func (b *builder) update(schema, table string, fn func(*Table)) {
	s := b.schemas[schema]
	if s == nil {
		return
	}
	t, ok := s.Tables[table]
	if !ok {
		return
	}
	fn(&t)
	s.Tables[table] = t
}

// addIndexColumn appends a column to index idx of a table, creating it.
func addIndexColumn(t *Table, idx string, unique bool, col string) {
	for i := range t.Indexes {
		if t.Indexes[i].Name == idx {
			t.Indexes[i].Columns = append(t.Indexes[i].Columns, col)
			return
		}
	}
	t.Indexes = append(t.Indexes, Index{Name: idx, Columns: []string{col}, Unique: unique})
}

func postgresCatalog(ctx context.Context, db *DB) ([]Schema, error) {
	var b builder
	rows, err := db.QueryContext(ctx, `SELECT nspname FROM pg_namespace
		WHERE nspname NOT IN ('pg_catalog', 'information_schema') AND nspname NOT LIKE 'pg\_toast%' AND nspname NOT LIKE 'pg\_temp\_%'
		ORDER BY nspname`)
	if err != nil {
		return nil, err
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return nil, err
		}
		names = append(names, n)
		b.schema(n)
	}
	if err := closeRows(rows); err != nil {
		return nil, err
	}
	if err := scanAll(ctx, db, `SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition AND n.nspname = ANY($1)`, []any{names}, func(scan func(...any) error) error {
		var s, t string
		if err := scan(&s, &t); err != nil {
			return err
		}
		b.schema(s).Tables[t] = Table{Name: t}
		return nil
	}); err != nil {
		return nil, err
	}
	if err := scanAll(ctx, db, `SELECT n.nspname, c.relname, a.attname, format_type(a.atttypid, a.atttypmod), t.typname, NOT a.attnotnull,
			(a.attidentity <> '' OR COALESCE(pg_get_expr(d.adbin, d.adrelid), '') LIKE 'nextval(%'),
			COALESCE((SELECT true FROM pg_index x WHERE x.indrelid = c.oid AND x.indisprimary AND a.attnum = ANY(x.indkey)), false)
		FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		JOIN pg_type t ON t.oid = a.atttypid LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
		WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition AND a.attnum > 0 AND NOT a.attisdropped AND n.nspname = ANY($1)
		ORDER BY n.nspname, c.relname, a.attnum`, []any{names}, func(scan func(...any) error) error {
		var s, t string
		var c Column
		var base string
		if err := scan(&s, &t, &c.Name, &c.TypeName, &base, &c.Nullable, &c.Generated, &c.PrimaryKey); err != nil {
			return err
		}
		c.DataType = jdbcType(base)
		b.update(s, t, func(tb *Table) { tb.Columns = append(tb.Columns, c) })
		return nil
	}); err != nil {
		return nil, err
	}
	if err := scanAll(ctx, db, `SELECT n.nspname, t.relname, i.relname, ix.indisunique, a.attname
		FROM pg_index ix JOIN pg_class t ON t.oid = ix.indrelid JOIN pg_class i ON i.oid = ix.indexrelid
		JOIN pg_namespace n ON n.oid = t.relnamespace
		JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = ANY(ix.indkey)
		WHERE NOT ix.indisprimary AND n.nspname = ANY($1)
		ORDER BY n.nspname, t.relname, i.relname, array_position(ix.indkey::int2[], a.attnum)`, []any{names}, func(scan func(...any) error) error {
		var s, t, idx, col string
		var unique bool
		if err := scan(&s, &t, &idx, &unique, &col); err != nil {
			return err
		}
		b.update(s, t, func(tb *Table) { addIndexColumn(tb, idx, unique, col) })
		return nil
	}); err != nil {
		return nil, err
	}
	if err := scanAll(ctx, db, `SELECT n.nspname, c.relname, con.conname, r.relname
		FROM pg_constraint con JOIN pg_class c ON c.oid = con.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		JOIN pg_class r ON r.oid = con.confrelid
		WHERE con.contype = 'f' AND n.nspname = ANY($1)
		ORDER BY n.nspname, c.relname, con.conname`, []any{names}, func(scan func(...any) error) error {
		var s, t string
		var c Constraint
		if err := scan(&s, &t, &c.Name, &c.ReferencedTable); err != nil {
			return err
		}
		b.update(s, t, func(tb *Table) { tb.Constraints = append(tb.Constraints, c) })
		return nil
	}); err != nil {
		return nil, err
	}
	if err := scanAll(ctx, db, `SELECT schemaname, viewname, COALESCE(definition, '') FROM pg_views WHERE schemaname = ANY($1)`, []any{names}, func(scan func(...any) error) error {
		var s string
		var v View
		if err := scan(&s, &v.Name, &v.Definition); err != nil {
			return err
		}
		v.Definition = strings.TrimSpace(v.Definition)
		b.schema(s).Views[v.Name] = v
		return nil
	}); err != nil {
		return nil, err
	}
	return b.result(), nil
}

func mysqlCatalog(ctx context.Context, db *DB) ([]Schema, error) {
	var b builder
	var name string
	if err := db.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&name); err != nil {
		return nil, err
	}
	s := b.schema(name)
	if err := scanAll(ctx, db, `SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_TYPE = 'BASE TABLE'`, nil, func(scan func(...any) error) error {
		var t string
		if err := scan(&t); err != nil {
			return err
		}
		s.Tables[t] = Table{Name: t}
		return nil
	}); err != nil {
		return nil, err
	}
	if err := scanAll(ctx, db, `SELECT TABLE_NAME, COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, COLUMN_KEY, EXTRA
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME, ORDINAL_POSITION`, nil, func(scan func(...any) error) error {
		var t, base, nullable, key, extra string
		var c Column
		if err := scan(&t, &c.Name, &base, &c.TypeName, &nullable, &key, &extra); err != nil {
			return err
		}
		c.Nullable = nullable == "YES"
		c.PrimaryKey = key == "PRI"
		c.Generated = strings.Contains(strings.ToLower(extra), "auto_increment")
		c.Unsigned = strings.Contains(strings.ToLower(c.TypeName), "unsigned")
		c.DataType = jdbcType(base)
		b.update(name, t, func(tb *Table) { tb.Columns = append(tb.Columns, c) })
		return nil
	}); err != nil {
		return nil, err
	}
	if err := scanAll(ctx, db, `SELECT TABLE_NAME, INDEX_NAME, NON_UNIQUE, COLUMN_NAME FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = DATABASE() AND INDEX_NAME <> 'PRIMARY' ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX`, nil, func(scan func(...any) error) error {
		var t, idx, col string
		var nonUnique int
		if err := scan(&t, &idx, &nonUnique, &col); err != nil {
			return err
		}
		b.update(name, t, func(tb *Table) { addIndexColumn(tb, idx, nonUnique == 0, col) })
		return nil
	}); err != nil {
		return nil, err
	}
	if err := scanAll(ctx, db, `SELECT TABLE_NAME, CONSTRAINT_NAME, REFERENCED_TABLE_NAME FROM information_schema.REFERENTIAL_CONSTRAINTS
		WHERE CONSTRAINT_SCHEMA = DATABASE() ORDER BY TABLE_NAME, CONSTRAINT_NAME`, nil, func(scan func(...any) error) error {
		var t string
		var c Constraint
		if err := scan(&t, &c.Name, &c.ReferencedTable); err != nil {
			return err
		}
		b.update(name, t, func(tb *Table) { tb.Constraints = append(tb.Constraints, c) })
		return nil
	}); err != nil {
		return nil, err
	}
	if err := scanAll(ctx, db, `SELECT TABLE_NAME, VIEW_DEFINITION FROM information_schema.VIEWS WHERE TABLE_SCHEMA = DATABASE()`, nil, func(scan func(...any) error) error {
		var v View
		if err := scan(&v.Name, &v.Definition); err != nil {
			return err
		}
		s.Views[v.Name] = v
		return nil
	}); err != nil {
		return nil, err
	}
	return b.result(), nil
}

var autoincrement = regexp.MustCompile(`(?i)\bautoincrement\b`)

func sqliteCatalog(ctx context.Context, db *DB) ([]Schema, error) {
	var b builder
	s := b.schema("main")
	type obj struct{ name, typ, sql string }
	var objs []obj
	if err := scanAll(ctx, db, `SELECT name, type, COALESCE(sql, '') FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`, nil, func(scan func(...any) error) error {
		var o obj
		if err := scan(&o.name, &o.typ, &o.sql); err != nil {
			return err
		}
		objs = append(objs, o)
		return nil
	}); err != nil {
		return nil, err
	}
	for _, o := range objs {
		if o.typ == "view" {
			s.Views[o.name] = View{Name: o.name, Definition: o.sql}
			continue
		}
		t := Table{Name: o.name}
		pkCols := 0
		if err := scanAll(ctx, db, `SELECT name, type, "notnull", pk FROM pragma_table_info(?)`, []any{o.name}, func(scan func(...any) error) error {
			var c Column
			var notnull, pk int
			if err := scan(&c.Name, &c.TypeName, &notnull, &pk); err != nil {
				return err
			}
			c.PrimaryKey = pk > 0
			c.Nullable = notnull == 0 && pk == 0
			if pk > 0 {
				pkCols++
			}
			c.DataType = jdbcType(c.TypeName)
			t.Columns = append(t.Columns, c)
			return nil
		}); err != nil {
			return nil, err
		}
		for i := range t.Columns {
			c := &t.Columns[i]
			// A lone INTEGER PRIMARY KEY is the rowid: generated.
			c.Generated = c.PrimaryKey && pkCols == 1 && (strings.EqualFold(c.TypeName, "INTEGER") || autoincrement.MatchString(o.sql))
		}
		type idx struct {
			name   string
			unique bool
		}
		var idxs []idx
		if err := scanAll(ctx, db, `SELECT name, "unique" FROM pragma_index_list(?) WHERE origin <> 'pk' ORDER BY name`, []any{o.name}, func(scan func(...any) error) error {
			var x idx
			var u int
			if err := scan(&x.name, &u); err != nil {
				return err
			}
			x.unique = u != 0
			idxs = append(idxs, x)
			return nil
		}); err != nil {
			return nil, err
		}
		for _, x := range idxs {
			if err := scanAll(ctx, db, `SELECT COALESCE(name, '') FROM pragma_index_info(?) ORDER BY seqno`, []any{x.name}, func(scan func(...any) error) error {
				var col string
				if err := scan(&col); err != nil {
					return err
				}
				addIndexColumn(&t, x.name, x.unique, col)
				return nil
			}); err != nil {
				return nil, err
			}
		}
		// SQLite keeps no names for foreign keys: each is named after its
		// table and its position in the table's list.
		if err := scanAll(ctx, db, `SELECT DISTINCT id, "table" FROM pragma_foreign_key_list(?) ORDER BY id`, []any{o.name}, func(scan func(...any) error) error {
			var id int
			var c Constraint
			if err := scan(&id, &c.ReferencedTable); err != nil {
				return err
			}
			c.Name = fmt.Sprintf("fk_%s_%d", o.name, id)
			t.Constraints = append(t.Constraints, c)
			return nil
		}); err != nil {
			return nil, err
		}
		s.Tables[o.name] = t
	}
	return b.result(), nil
}

func scanAll(ctx context.Context, db *DB, query string, args []any, fn func(scan func(...any) error) error) error {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	for rows.Next() {
		if err := fn(rows.Scan); err != nil {
			rows.Close()
			return err
		}
	}
	return closeRows(rows)
}

func closeRows(rows interface {
	Err() error
	Close() error
}) error {
	if err := rows.Err(); err != nil {
		rows.Close()
		return err
	}
	return rows.Close()
}

// jdbcType maps a database type name to its java.sql.Types code, as
// ShardingSphere stores it in column metadata.
func jdbcType(name string) int {
	n := strings.ToLower(strings.TrimSpace(name))
	if i := strings.IndexAny(n, "( "); i > 0 {
		n = n[:i]
	}
	switch n {
	case "bit":
		return -7
	case "tinyint":
		return -6
	case "smallint", "int2", "smallserial":
		return 5
	case "int", "integer", "int4", "mediumint", "serial":
		return 4
	case "bigint", "int8", "bigserial":
		return -5
	case "float", "float8", "double":
		return 8
	case "real", "float4":
		return 7
	case "numeric":
		return 2
	case "decimal":
		return 3
	case "char", "bpchar", "character", "nchar":
		return 1
	case "varchar", "character varying", "nvarchar", "name":
		return 12
	case "text", "tinytext", "mediumtext", "longtext", "json", "jsonb", "clob":
		return -1
	case "date":
		return 91
	case "time", "timetz":
		return 92
	case "timestamp", "timestamptz", "datetime":
		return 93
	case "binary":
		return -2
	case "varbinary":
		return -3
	case "bytea", "blob", "tinyblob", "mediumblob", "longblob":
		return -4
	case "bool", "boolean":
		return 16
	}
	return 1111 // OTHER
}

// jdbcTypeNames are the java.sql.Types names by code.
var jdbcTypeNames = map[int]string{
	-16: "LONGNVARCHAR", -15: "NCHAR", -9: "NVARCHAR", -8: "ROWID", -7: "BIT", -6: "TINYINT", -5: "BIGINT",
	-4: "LONGVARBINARY", -3: "VARBINARY", -2: "BINARY", -1: "LONGVARCHAR", 0: "NULL", 1: "CHAR", 2: "NUMERIC",
	3: "DECIMAL", 4: "INTEGER", 5: "SMALLINT", 6: "FLOAT", 7: "REAL", 8: "DOUBLE", 12: "VARCHAR", 16: "BOOLEAN",
	70: "DATALINK", 91: "DATE", 92: "TIME", 93: "TIMESTAMP", 1111: "OTHER", 2000: "JAVA_OBJECT", 2001: "DISTINCT",
	2002: "STRUCT", 2003: "ARRAY", 2004: "BLOB", 2005: "CLOB", 2006: "REF", 2009: "SQLXML", 2011: "NCLOB",
	2012: "REF_CURSOR", 2013: "TIME_WITH_TIMEZONE", 2014: "TIMESTAMP_WITH_TIMEZONE",
}

// JDBCTypeName returns the java.sql.Types name of a type code ("VARCHAR"
// for 12), or "" for a code java.sql.Types does not define.
func JDBCTypeName(code int) string { return jdbcTypeNames[code] }
