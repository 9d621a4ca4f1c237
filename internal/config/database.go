package config

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/shardkeeper/shardkeeper/internal/redact"
	"github.com/shardkeeper/shardkeeper/registry"
)

// Database is one logical database: a database-*.yaml file, or the
// databaseName of an embedded (JDBC-style) file.
type Database struct {
	Name        string
	File        string                // where it was read, for messages; "" when built in code
	DataSources map[string]DataSource // storage units by name
	Rules       []Rule                // database rules, in file order
	// KeyGenerators are the SNOWFLAKE key generators of the sharding rule,
	// by name (see Config.Snowflake).
	KeyGenerators []KeyGenerator
}

// Rule returns the rule of the given type ("sharding", ...) and whether it
// is present.
func (d Database) Rule(typ string) (Rule, bool) {
	for _, r := range d.Rules {
		if r.Type == typ {
			return r, true
		}
	}
	return Rule{}, false
}

// Pool defaults, those of ShardingSphere's example configuration and
// HikariCP.
const (
	DefaultConnectionTimeout = 30 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
	DefaultMaxLifetime       = 30 * time.Minute
	DefaultMaxPoolSize       = 50
	DefaultMinPoolSize       = 1
	DefaultDataSourceClass   = "com.zaxxer.hikari.HikariDataSource"
)

// DataSource is one storage unit's connection and pool properties, with
// ShardingSphere's names (url, username, password,
// connectionTimeoutMilliseconds, ...). HikariCP's synonyms (jdbcUrl,
// maximumPoolSize, minimumIdle, connectionTimeout, idleTimeout, maxLifetime)
// are accepted when reading.
type DataSource struct {
	URL                 string // jdbc:mysql://host:3306/db?..., jdbc:postgresql://..., jdbc:sqlite:path
	Username            string
	Password            string // never printed: see String
	DataSourceClassName string
	DriverClassName     string
	ConnectionTimeout   time.Duration
	IdleTimeout         time.Duration
	MaxLifetime         time.Duration
	MaxPoolSize         int
	MinPoolSize         int
	ReadOnly            bool
	CustomPoolProps     map[string]string
	// Extra holds every top-level property that is not one of the fields
	// above as it was read (scalars with their YAML type, maps such as
	// HikariCP's dataSourceProperties, lists), so that a unit
	// ShardingSphere wrote is written back without loss, in its place.
	// Scalar ones are in CustomPoolProps too, as text; a CustomPoolProps
	// value that no longer matches its Extra entry wins.
	Extra map[string]any
}

// NewDataSource returns a DataSource for url with the default pool props.
func NewDataSource(url, username, password string) DataSource {
	return DataSource{
		URL: url, Username: username, Password: password,
		DataSourceClassName: DefaultDataSourceClass,
		ConnectionTimeout:   DefaultConnectionTimeout,
		IdleTimeout:         DefaultIdleTimeout,
		MaxLifetime:         DefaultMaxLifetime,
		MaxPoolSize:         DefaultMaxPoolSize,
		MinPoolSize:         DefaultMinPoolSize,
	}
}

// String describes the data source with its secrets masked (see package
// redact): the password, the secrets of its URL and of its custom pool
// props are never shown.
func (d DataSource) String() string {
	pw := ""
	if d.Password != "" {
		pw = " password=" + redact.Mask
	}
	s := fmt.Sprintf("url=%s username=%s%s maxPoolSize=%d", redact.URL(d.URL), d.Username, pw, d.MaxPoolSize)
	for _, k := range slices.Sorted(maps.Keys(d.CustomPoolProps)) {
		v := d.CustomPoolProps[k]
		if redact.SecretName(k) && v != "" {
			v = redact.Mask
		}
		s += " " + k + "=" + redact.URL(v)
	}
	return s
}

// GoString is String, so that %#v masks the secrets too.
func (d DataSource) GoString() string { return "config.DataSource{" + d.String() + "}" }

// Equal reports whether two data sources have the same properties.
func (d DataSource) Equal(o DataSource) bool {
	return d.URL == o.URL && d.Username == o.Username && d.Password == o.Password &&
		d.DataSourceClassName == o.DataSourceClassName && d.DriverClassName == o.DriverClassName &&
		d.ConnectionTimeout == o.ConnectionTimeout && d.IdleTimeout == o.IdleTimeout &&
		d.MaxLifetime == o.MaxLifetime && d.MaxPoolSize == o.MaxPoolSize && d.MinPoolSize == o.MinPoolSize &&
		d.ReadOnly == o.ReadOnly && maps.Equal(d.CustomPoolProps, o.CustomPoolProps) &&
		reflect.DeepEqual(d.extra(), o.extra())
}

// extra is Extra without the scalars CustomPoolProps carries.
func (d DataSource) extra() map[string]any {
	out := map[string]any{}
	for k, v := range d.Extra {
		if _, ok := d.CustomPoolProps[k]; !ok {
			out[k] = v
		}
	}
	return out
}

// Map returns the data source as the YAML map ShardingSphere stores in a
// unit's version node (standard property names, milliseconds).
func (d DataSource) Map() map[string]any {
	m := map[string]any{
		"dataSourceClassName":           d.DataSourceClassName,
		"url":                           d.URL,
		"username":                      d.Username,
		"password":                      d.Password,
		"connectionTimeoutMilliseconds": d.ConnectionTimeout.Milliseconds(),
		"idleTimeoutMilliseconds":       d.IdleTimeout.Milliseconds(),
		"maxLifetimeMilliseconds":       d.MaxLifetime.Milliseconds(),
		"maxPoolSize":                   d.MaxPoolSize,
		"minPoolSize":                   d.MinPoolSize,
	}
	if d.DriverClassName != "" {
		m["driverClassName"] = d.DriverClassName
	}
	if d.ReadOnly {
		m["readOnly"] = true
	}
	custom := map[string]string{}
	for k, v := range d.CustomPoolProps {
		if _, ok := d.Extra[k]; !ok {
			custom[k] = v
		}
	}
	for k, e := range d.Extra {
		v, isCustom := d.CustomPoolProps[k]
		switch {
		case !isCustom:
			m[k] = e
		case scalarText(e) == v:
			m[k] = e
		default:
			m[k] = v
		}
	}
	if len(custom) > 0 {
		m["customPoolProps"] = custom
	}
	return m
}

// scalarText is a decoded YAML scalar as ParseDataSource keeps it in
// CustomPoolProps.
func scalarText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case map[string]any, []any:
		return "\x00" // never equal to a scalar's text
	}
	return fmt.Sprint(v)
}

// ParseDataSource reads a unit's pool properties from YAML (a
// database-*.yaml dataSources entry or a registry unit version); file and
// field name the source in errors. Every problem is reported.
func ParseDataSource(file, field string, data []byte) (DataSource, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return DataSource{}, fmt.Errorf("%s: %s: %w", file, field, err)
	}
	p := problems{file: file}
	root := documentRoot(&doc)
	if root == nil {
		p.add(&doc, field, "empty data source")
		return DataSource{}, p.err()
	}
	ds := parseDataSource(&p, field, root)
	return ds, p.err()
}

// standardPoolProps are the property names parseDataSource maps to
// DataSource's fields.
var standardPoolProps = map[string]bool{
	"url": true, "jdbcUrl": true, "username": true, "user": true, "password": true,
	"dataSourceClassName": true, "driverClassName": true, "connectionTimeoutMilliseconds": true,
	"connectionTimeout": true, "idleTimeoutMilliseconds": true, "idleTimeout": true,
	"maxLifetimeMilliseconds": true, "maxLifetime": true, "maxPoolSize": true, "maximumPoolSize": true,
	"minPoolSize": true, "minimumIdle": true, "readOnly": true,
}

// keepExtra records property k's value as read in ds.Extra.
func keepExtra(ds *DataSource, k string, v *yaml.Node) {
	var x any
	if v.Tag != "!!null" && v.Decode(&x) != nil {
		return
	}
	if ds.Extra == nil {
		ds.Extra = map[string]any{}
	}
	ds.Extra[k] = x
}

func parseDataSource(p *problems, field string, n *yaml.Node) DataSource {
	ds := NewDataSource("", "", "")
	if n.Kind != yaml.MappingNode {
		p.add(n, field, "must be a mapping of pool properties (url, username, password, ...)")
		return ds
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		f := field + "." + k.Value
		if v.Kind != yaml.ScalarNode && k.Value != "customPoolProps" {
			if standardPoolProps[k.Value] {
				p.add(v, f, "must be a scalar value")
				continue
			}
			var x any
			if err := v.Decode(&x); err != nil {
				p.add(v, f, err.Error())
				continue
			}
			if ds.Extra == nil {
				ds.Extra = map[string]any{}
			}
			ds.Extra[k.Value] = x
			continue
		}
		val := v.Value
		if v.Tag == "!!null" {
			val = ""
		}
		switch k.Value {
		case "url", "jdbcUrl":
			ds.URL = val
		case "username", "user":
			ds.Username = val
		case "password":
			ds.Password = val
		case "dataSourceClassName":
			ds.DataSourceClassName = val
		case "driverClassName":
			ds.DriverClassName = val
		case "connectionTimeoutMilliseconds", "connectionTimeout":
			ds.ConnectionTimeout = p.millis(v, f, 0)
		case "idleTimeoutMilliseconds", "idleTimeout":
			ds.IdleTimeout = p.millis(v, f, 0)
		case "maxLifetimeMilliseconds", "maxLifetime":
			ds.MaxLifetime = p.millis(v, f, 0)
		case "maxPoolSize", "maximumPoolSize":
			ds.MaxPoolSize = p.integer(v, f, 1, 100000)
		case "minPoolSize", "minimumIdle":
			ds.MinPoolSize = p.integer(v, f, 0, 100000)
		case "readOnly":
			b, err := strconv.ParseBool(val)
			if err != nil {
				p.add(v, f, fmt.Sprintf("%q is not a boolean", val))
			}
			ds.ReadOnly = b
		case "customPoolProps":
			if v.Kind != yaml.MappingNode {
				p.add(v, f, "must be a mapping")
				continue
			}
			if ds.CustomPoolProps == nil {
				ds.CustomPoolProps = map[string]string{}
			}
			for j := 0; j+1 < len(v.Content); j += 2 {
				ds.CustomPoolProps[v.Content[j].Value] = v.Content[j+1].Value
			}
		default:
			// Other HikariCP or driver properties are kept, as
			// ShardingSphere passes them to the pool.
			if ds.CustomPoolProps == nil {
				ds.CustomPoolProps = map[string]string{}
			}
			ds.CustomPoolProps[k.Value] = val
			keepExtra(&ds, k.Value, v)
		}
	}
	if ds.URL == "" {
		p.add(n, field+".url", "required (e.g. jdbc:mysql://127.0.0.1:3306/db)")
	}
	if ds.MinPoolSize > ds.MaxPoolSize {
		p.add(n, field+".minPoolSize", fmt.Sprintf("%d is larger than maxPoolSize %d", ds.MinPoolSize, ds.MaxPoolSize))
	}
	return ds
}

// Rule is one rule configuration, kept as structured YAML: Type is the
// registry's rule type ("sharding" for !SHARDING, "readwrite_splitting" for
// !READWRITE_SPLITTING, ...), Content the rule's fields by their YAML
// (lowerCamel) names, decoded into maps, lists and scalars.
type Rule struct {
	Type    string
	Content map[string]any
}

// CloneContent returns a deep copy of rule content m: its maps and lists
// are copied, its scalars (immutable) shared. It returns an empty map for
// nil, which a caller may write into.
func CloneContent(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneValue(v)
	}
	return out
}

// CopyFields returns a copy of rule content m for a change to work on
// cheaply: m's map and list fields are copied one level (a field's map of
// tables, its list of binding tables), their entries shared with m. A
// change of the copy must replace an entry it changes (a table, an
// algorithm), never modify one in place: m, which others read, would
// change with it. It costs O(entries) pointer copies, not a deep copy of
// every entry (CloneContent). It returns an empty map for nil.
func CopyFields(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		switch x := v.(type) {
		case map[string]any:
			out[k] = maps.Clone(x)
		case []any:
			out[k] = slices.Clone(x)
		default:
			out[k] = v
		}
	}
	return out
}

func cloneValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return CloneContent(x)
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = cloneValue(e)
		}
		return l
	}
	return v
}

// Database rule tags and the registry rule types they map to.
var databaseRuleTags = map[string]string{
	"!SHARDING":            "sharding",
	"!READWRITE_SPLITTING": "readwrite_splitting",
	"!ENCRYPT":             "encrypt",
	"!MASK":                "mask",
	"!SHADOW":              "shadow",
	"!BROADCAST":           "broadcast",
	"!SINGLE":              "single",
}

// Global rule tags (in a `rules:` list of global.yaml or an embedded file)
// and the global.yaml keys that hold the same rules.
var (
	globalRuleTags = map[string]string{
		"!AUTHORITY":      "authority",
		"!TRANSACTION":    "transaction",
		"!SQL_PARSER":     "sql_parser",
		"!SQL_FEDERATION": "sql_federation",
		"!SQL_TRANSLATOR": "sql_translator",
		"!GLOBAL_CLOCK":   "global_clock",
	}
	globalRuleKeys = map[string]string{
		"authority":     "authority",
		"transaction":   "transaction",
		"sqlParser":     "sql_parser",
		"sqlFederation": "sql_federation",
		"sqlTranslator": "sql_translator",
		"globalClock":   "global_clock",
	}
)

// IsGlobalRuleType reports whether typ is a global rule type (stored under
// /rules rather than under a database).
func IsGlobalRuleType(typ string) bool {
	for _, t := range globalRuleTags {
		if t == typ {
			return true
		}
	}
	return false
}

// GlobalRuleTypes returns every global rule type, sorted.
func GlobalRuleTypes() []string {
	return slices.Sorted(maps.Values(globalRuleTags))
}

// IsDatabaseRuleType reports whether typ is a known database rule type.
func IsDatabaseRuleType(typ string) bool {
	for _, t := range databaseRuleTags {
		if t == typ {
			return true
		}
	}
	return false
}

func tagNames(m map[string]string) string {
	return strings.Join(slices.Sorted(maps.Keys(m)), ", ")
}

// parseRules reads a `rules:` list. Database rules go to the first result,
// global rule tags (allowed when global is true) to the second.
func parseRules(p *problems, n *yaml.Node, global bool) (db, glob []Rule) {
	if n.Tag == "!!null" {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		p.add(n, "rules", "must be a list of tagged rules (- !SHARDING ...)")
		return nil, nil
	}
	seen := map[string]bool{}
	for _, item := range n.Content {
		typ, isDB := databaseRuleTags[item.Tag]
		gtyp, isGlobal := globalRuleTags[item.Tag]
		switch {
		case isDB:
		case isGlobal && global:
			typ = gtyp
		case isGlobal:
			p.add(item, "rules", fmt.Sprintf("%s is a global rule; put it in global.yaml", item.Tag))
			continue
		default:
			p.add(item, "rules", fmt.Sprintf("unknown rule tag %q (use one of %s)", item.Tag, tagNames(databaseRuleTags)))
			continue
		}
		if seen[typ] {
			p.add(item, "rules", fmt.Sprintf("duplicate rule %s: each rule type may appear once", item.Tag))
			continue
		}
		seen[typ] = true
		r, ok := decodeRule(p, "rules."+item.Tag, typ, item)
		if !ok {
			continue
		}
		if isDB {
			db = append(db, r)
		} else {
			glob = append(glob, r)
		}
	}
	return db, glob
}

func decodeRule(p *problems, field, typ string, n *yaml.Node) (Rule, bool) {
	r := Rule{Type: typ, Content: map[string]any{}}
	if n.Kind == yaml.ScalarNode && (n.Value == "" || n.Tag == "!!null") {
		return r, true
	}
	if n.Kind != yaml.MappingNode {
		p.add(n, field, "must be a mapping of rule fields")
		return r, false
	}
	// Decode a copy without the tag, so yaml.v3 does not choke on it.
	c := *n
	c.Tag = "!!map"
	if err := c.Decode(&r.Content); err != nil {
		p.add(n, field, err.Error())
		return r, false
	}
	if typ == "authority" && !checkAuthority(p, field, n) {
		return r, false
	}
	return r, true
}

// Privilege types of the authority rule's `privilege.type` (upstream's
// privilege providers; ALL_PRIVILEGES_PERMITTED is 5.1's name of
// ALL_PERMITTED, the default).
const (
	AllPermitted      = "ALL_PERMITTED"
	DatabasePermitted = "DATABASE_PERMITTED"
)

// UserDatabaseMappings is DATABASE_PERMITTED's property.
const UserDatabaseMappings = "user-database-mappings"

// CheckPrivilege checks an authority rule's `privilege.type` and, for
// DATABASE_PERMITTED, its user-database-mappings ("" when absent): nil
// for a type shardkeeper implements with usable properties, else an error
// saying what to write. Types are compared case-insensitively, as
// upstream loads them. A type that is not implemented is an error rather
// than ignored: ignoring it would give every user every database.
func CheckPrivilege(typ, mappings string) error {
	switch strings.ToUpper(typ) {
	case AllPermitted, "ALL_PRIVILEGES_PERMITTED":
		return nil
	case DatabasePermitted:
		if strings.TrimSpace(mappings) == "" {
			return fmt.Errorf("%s needs props: {%s: \"name@host=database, ...\"}", DatabasePermitted, UserDatabaseMappings)
		}
		for _, item := range strings.Split(mappings, ",") {
			item = strings.TrimSpace(item)
			grantee, db, ok := strings.Cut(item, "=")
			name, host, at := strings.Cut(grantee, "@")
			if !ok || !at || name == "" || host == "" || db == "" || strings.Contains(db, "=") {
				return fmt.Errorf("%s item %q: want name@host=database", UserDatabaseMappings, item)
			}
		}
		return nil
	}
	return fmt.Errorf("privilege type %q is not implemented (use %s or %s)", typ, AllPermitted, DatabasePermitted)
}

// checkAuthority reports, at its line, an authority rule's privilege that
// CheckPrivilege refuses and a user's admin that is not a boolean.
func checkAuthority(p *problems, field string, n *yaml.Node) bool {
	ok := true
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "privilege", "provider":
			if v.Kind != yaml.MappingNode {
				p.add(v, field+"."+k.Value, "must be a mapping {type: "+AllPermitted+"}")
				ok = false
				continue
			}
			var typ *yaml.Node
			mappings := ""
			for j := 0; j+1 < len(v.Content); j += 2 {
				switch v.Content[j].Value {
				case "type":
					typ = v.Content[j+1]
				case "props":
					props := v.Content[j+1]
					for m := 0; m+1 < len(props.Content); m += 2 {
						if props.Content[m].Value == UserDatabaseMappings {
							mappings = props.Content[m+1].Value
						}
					}
				}
			}
			at, value := v, ""
			if typ != nil {
				at, value = typ, typ.Value
			}
			if err := CheckPrivilege(value, mappings); err != nil {
				p.add(at, field+"."+k.Value+".type", err.Error())
				ok = false
			}
		case "users":
			for _, u := range v.Content {
				for j := 0; j+1 < len(u.Content); j += 2 {
					if a := u.Content[j+1]; u.Content[j].Value == "admin" && a.Tag != "!!bool" {
						p.add(a, field+".users.admin", fmt.Sprintf("%q must be true or false", a.Value))
						ok = false
					}
				}
			}
		}
	}
	return ok
}

// ParseDatabase reads one database-*.yaml file. The database name is
// required and must be a usable path segment. A file whose databaseName,
// dataSources and rules are all empty yields (nil, nil): ShardingSphere
// ignores such files.
func ParseDatabase(file string, data []byte) (*Database, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	root := documentRoot(&doc)
	if root == nil || root.Tag == "!!null" {
		return nil, nil
	}
	p := problems{file: file}
	if root.Kind != yaml.MappingNode {
		p.add(root, "document", "must be a mapping with databaseName, dataSources and rules")
		return nil, p.err()
	}
	db := &Database{File: file, DataSources: map[string]DataSource{}}
	empty := true
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if v.Tag != "!!null" {
			empty = false
		}
		switch k.Value {
		case "databaseName", "schemaName":
			db.Name = v.Value
		case "dataSources":
			db.DataSources = parseDataSources(&p, v)
		case "rules":
			db.Rules, _ = parseRules(&p, v, false)
			db.KeyGenerators = parseKeyGenerators(&p, v)
		default:
			p.add(k, k.Value, "unknown field (a database file has databaseName, dataSources and rules)")
		}
	}
	if empty {
		return nil, nil
	}
	checkDatabaseName(&p, root, db.Name)
	return db, p.err()
}

func checkDatabaseName(p *problems, root *yaml.Node, name string) {
	if name == "" {
		p.errs = append(p.errs, fmt.Errorf("Property `databaseName` in file `%s` is required.", p.file))
		return
	}
	if err := registry.ValidateName(name); err != nil {
		n := mapValue(root, "databaseName")
		if n == nil {
			n = root
		}
		p.add(n, "databaseName", err.Error())
	}
}

func parseDataSources(p *problems, n *yaml.Node) map[string]DataSource {
	out := map[string]DataSource{}
	if n.Tag == "!!null" {
		return out
	}
	if n.Kind != yaml.MappingNode {
		p.add(n, "dataSources", "must be a mapping of unit name to pool properties")
		return out
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		field := "dataSources." + k.Value
		if err := registry.ValidateName(k.Value); err != nil {
			p.add(k, field, err.Error())
			continue
		}
		if _, dup := out[k.Value]; dup {
			p.add(k, field, "duplicate data source name")
			continue
		}
		out[k.Value] = parseDataSource(p, field, v)
	}
	return out
}
