package catalog

import (
	"slices"
	"strconv"
	"strings"
)

// The pg_catalog relations and functions pgAdmin's and DBeaver's connect
// and browse queries read beyond psql's: pg_settings with the settings a
// client asks for, pg_type with the built-in types the tables' columns
// use, pg_attribute and pg_index of the current database's tables, an
// empty pg_description, and current_setting, pg_encoding_to_char,
// format_type and the other functions of call.

// pgSettings are the settings pg_settings and current_setting answer, in
// name order, with their values when the session has none.
var pgSettings = [][2]string{
	{"application_name", ""}, {"bytea_output", "hex"}, {"client_encoding", "UTF8"}, {"client_min_messages", "notice"},
	{"datestyle", "ISO, MDY"}, {"default_transaction_read_only", "off"}, {"in_hot_standby", "off"}, {"integer_datetimes", "on"},
	{"intervalstyle", "postgres"}, {"is_superuser", "on"}, {"lc_collate", "C.UTF-8"}, {"lc_ctype", "C.UTF-8"},
	{"max_identifier_length", "63"}, {"max_index_keys", "32"}, {"search_path", `"$user", public`}, {"server_encoding", "UTF8"},
	{"server_version", "14.0"}, {"server_version_num", "140000"}, {"standard_conforming_strings", "on"}, {"timezone", "UTC"},
	{"transaction_isolation", pgIsolation},
}

// pgSetting is setting name (any case) as the session sees it.
func (v *View) pgSetting(name string) (string, bool) {
	name = strings.ToLower(name)
	for _, s := range pgSettings {
		if s[0] != name {
			continue
		}
		if name != "transaction_isolation" && v.Variable != nil {
			if val, ok := v.Variable(name); ok {
				return val, true
			}
		}
		return s[1], true
	}
	return "", false
}

func pgSettingsRelation(v *View) *relation {
	r := &relation{cols: cols("name", "setting", "unit", "category", "short_desc", "context", "vartype", "source")}
	for _, s := range pgSettings {
		val, _ := v.pgSetting(s[0])
		r.rows = append(r.rows, row(s[0], val, nil, "", "", "user", "string", "default"))
	}
	return r
}

// pgBuiltinType is a built-in type of pg_type: oid, typname, the SQL name
// format_type gives and the columns' types are written in, and the fixed
// length in bytes (-1 when variable).
type pgBuiltinType struct {
	oid     int
	name    string
	sqlName string
	length  int
}

// pgTypes are the built-in types pg_type lists.
var pgTypes = []pgBuiltinType{
	{16, "bool", "boolean", 1}, {17, "bytea", "bytea", -1}, {19, "name", "name", 64}, {20, "int8", "bigint", 8},
	{21, "int2", "smallint", 2}, {23, "int4", "integer", 4}, {25, "text", "text", -1}, {26, "oid", "oid", 4},
	{700, "float4", "real", 4}, {701, "float8", "double precision", 8}, {1042, "bpchar", "character", -1},
	{1043, "varchar", "character varying", -1}, {1082, "date", "date", 4}, {1083, "time", "time without time zone", 8},
	{1114, "timestamp", "timestamp without time zone", 8}, {1184, "timestamptz", "timestamp with time zone", 8},
	{1700, "numeric", "numeric", -1},
}

func pgTypeRelation() *relation {
	r := &relation{cols: cols("oid", "typname", "typnamespace", "typowner", "typlen", "typbyval", "typtype", "typcategory",
		"typrelid", "typelem", "typarray", "typbasetype", "typtypmod", "typnotnull", "typndims", "typcollation")}
	for _, t := range pgTypes {
		byval := pgBool(t.length > 0 && t.length <= 8)
		r.rows = append(r.rows, row(t.oid, t.name, catalogOID, 10, t.length, byval, "b", "U", 0, 0, 0, 0, -1, "f", 0, 0))
	}
	return r
}

// formatType is format_type(oid, typmod): the type's SQL name.
func formatType(oid, typmod string) *string {
	n, _ := strconv.Atoi(oid)
	mod, _ := strconv.Atoi(typmod)
	i := slices.IndexFunc(pgTypes, func(t pgBuiltinType) bool { return t.oid == n })
	if i < 0 {
		return str("???")
	}
	name := pgTypes[i].sqlName
	switch {
	case (n == 1042 || n == 1043) && mod > 4:
		name += "(" + strconv.Itoa(mod-4) + ")"
	case n == 1700 && mod > 4:
		name += "(" + strconv.Itoa((mod-4)>>16) + "," + strconv.Itoa((mod-4)&0xffff) + ")"
	}
	return &name
}

// pgAttributeRelation is pg_attribute of the current database's tables
// (OIDs as pg_class numbers them).
func pgAttributeRelation(tables []Table) *relation {
	r := &relation{cols: cols("attrelid", "attname", "atttypid", "attlen", "attnum", "atttypmod", "attnotnull", "atthasdef",
		"attisdropped", "attidentity", "attgenerated", "attcollation", "attndims")}
	for i, t := range tables {
		for j, c := range t.Columns {
			oid, typmod, length := pgTypeOID(c)
			r.rows = append(r.rows, row(firstOID+i, c.Name, oid, length, j+1, typmod, pgBool(!c.Nullable), "f", "f", "", "", 0, 0))
		}
	}
	return r
}

// pgIndexRelation is pg_index of the current database's tables' indexes,
// indkey holding the columns' attnums separated by spaces.
func pgIndexRelation(tables []Table) *relation {
	r := &relation{cols: cols("indexrelid", "indrelid", "indnatts", "indisunique", "indisprimary", "indisclustered", "indisvalid", "indkey")}
	for i, t := range tables {
		for k, ix := range indexes(t) {
			var keys []string
			for _, name := range ix.Columns {
				for j, c := range t.Columns {
					if strings.EqualFold(c.Name, name) {
						keys = append(keys, strconv.Itoa(j+1))
					}
				}
			}
			oid := firstOID + i + indexOIDOffset + k
			r.rows = append(r.rows, row(oid, firstOID+i, len(ix.Columns), pgBool(ix.Unique), pgBool(ix.Name == "PRIMARY"), "f", "t", strings.Join(keys, " ")))
		}
	}
	return r
}
