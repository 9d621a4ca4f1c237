package config

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"

	"gopkg.in/yaml.v3"
)

// Config is a node's whole local configuration: the mode, the logical
// databases, global rules, props and labels. It is read by Load (a conf
// directory) or LoadFile (one embedded-library file) and not modified
// afterwards.
type Config struct {
	Mode        Mode
	Databases   []Database            // sorted by name, names unique
	GlobalRules []Rule                // sorted by type ("authority", "transaction", ...)
	Props       Props                 // only the keys that were set
	Labels      []string              // ShardingSphere 5.5.x compute node labels
	DataSources map[string]DataSource // global.yaml dataSources (kept, not persisted)
}

// Database returns the database named name.
func (c *Config) Database(name string) (Database, bool) {
	for _, d := range c.Databases {
		if d.Name == name {
			return d, true
		}
	}
	return Database{}, false
}

// GlobalRule returns the global rule of the given type.
func (c *Config) GlobalRule(typ string) (Rule, bool) {
	for _, r := range c.GlobalRules {
		if r.Type == typ {
			return r, true
		}
	}
	return Rule{}, false
}

var (
	databaseFile       = regexp.MustCompile(`^database-.+\.yaml$`)
	deprecatedDatabase = regexp.MustCompile(`^config-.+\.yaml$`)
)

// Load reads a ShardingSphere-Proxy style conf directory: global.yaml
// (fallback server.yaml) for mode, global rules, props and labels, and every
// database-*.yaml (fallback config-*.yaml when there is none) for the
// logical databases. Every problem in every file is reported at once, each
// as "file:line: field: what is wrong"; duplicate and missing database
// names use ShardingSphere's messages. Each file is read as ReadFile does
// (a regular file of at most MaxFileSize bytes); ctx bounds the whole load.
func Load(ctx context.Context, dir string) (*Config, error) {
	globalPath, err := FindGlobalFile(dir)
	if err != nil {
		return nil, err
	}
	data, err := ReadFile(ctx, globalPath, MaxFileSize)
	if err != nil {
		return nil, err
	}
	var errs []error
	cfg, err := ParseGlobal(globalPath, data)
	if err != nil {
		errs = append(errs, err)
	}
	if cfg == nil {
		cfg = &Config{Mode: DefaultMode(), Props: Props{}}
	}
	files, err := databaseFiles(dir)
	if err != nil {
		return nil, err
	}
	var dbs []Database
	for _, f := range files {
		data, err := ReadFile(ctx, f, MaxFileSize)
		if ctx.Err() != nil {
			return nil, err
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		db, err := ParseDatabase(f, data)
		if err != nil {
			errs = append(errs, err)
		}
		if db != nil && db.Name != "" {
			dbs = append(dbs, *db)
		}
	}
	cfg.Databases, err = uniqueDatabases(dbs)
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return cfg, nil
}

func databaseFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var current, deprecated []string
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		switch {
		case databaseFile.MatchString(e.Name()):
			current = append(current, filepath.Join(dir, e.Name()))
		case deprecatedDatabase.MatchString(e.Name()):
			deprecated = append(deprecated, filepath.Join(dir, e.Name()))
		}
	}
	if len(current) == 0 {
		current = deprecated
	}
	sort.Strings(current)
	return current, nil
}

func uniqueDatabases(dbs []Database) ([]Database, error) {
	var errs []error
	seen := map[string]bool{}
	out := dbs[:0]
	for _, d := range dbs {
		if seen[d.Name] {
			errs = append(errs, fmt.Errorf("%s: Database name `%s` must unique at all database configurations.", d.File, d.Name))
			continue
		}
		seen[d.Name] = true
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, errors.Join(errs...)
}

// ParseGlobal reads a global.yaml (or server.yaml) document: mode (see
// ParseMode), authority, transaction, sqlParser, sqlFederation,
// sqlTranslator, globalClock, rules (global rule tags), props, labels,
// dataSources, and logging (accepted, ignored). The result has no
// databases. Every problem is reported at once.
func ParseGlobal(file string, data []byte) (*Config, error) {
	mode, modeErr := ParseMode(file, data)
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	cfg := &Config{Mode: mode, Props: Props{}}
	p := problems{file: file}
	if modeErr != nil {
		p.errs = append(p.errs, modeErr)
	}
	root := documentRoot(&doc)
	if root == nil || root.Tag == "!!null" {
		return cfg, p.err()
	}
	if root.Kind != yaml.MappingNode {
		if modeErr == nil {
			p.add(root, "document", "must be a mapping")
		}
		return cfg, p.err()
	}
	parseGlobalKeys(&p, cfg, root, false, func(k *yaml.Node) bool {
		return false
	})
	return cfg, p.err()
}

// parseGlobalKeys reads the global keys of root into cfg. other is called
// for keys that are not global ones; it returns false for unknown keys.
func parseGlobalKeys(p *problems, cfg *Config, root *yaml.Node, embedded bool, other func(k *yaml.Node) bool) {
	globals := map[string]Rule{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if typ, ok := globalRuleKeys[k.Value]; ok {
			if v.Tag == "!!null" {
				continue
			}
			if r, ok := decodeRule(p, k.Value, typ, v); ok {
				globals[typ] = r
			}
			continue
		}
		switch k.Value {
		case "mode", "logging":
		case "props":
			cfg.Props = parseProps(p, v)
		case "labels":
			cfg.Labels = parseLabels(p, v)
		case "dataSources":
			cfg.DataSources = parseDataSources(p, v)
		case "rules":
			db, glob := parseRules(p, v, true)
			if len(db) > 0 && !embedded {
				p.add(v, "rules", "database rules (such as !"+db[0].Type+") belong in a database-*.yaml file")
			}
			for _, r := range glob {
				if _, dup := globals[r.Type]; dup {
					p.add(v, "rules", fmt.Sprintf("global rule %s is configured twice", r.Type))
					continue
				}
				globals[r.Type] = r
			}
		default:
			if !other(k) {
				p.add(k, k.Value, "unknown field")
			}
		}
	}
	for _, r := range globals {
		cfg.GlobalRules = append(cfg.GlobalRules, r)
	}
	sort.Slice(cfg.GlobalRules, func(i, j int) bool { return cfg.GlobalRules[i].Type < cfg.GlobalRules[j].Type })
}

func parseProps(p *problems, n *yaml.Node) Props {
	props := Props{}
	if n.Tag == "!!null" {
		return props
	}
	if n.Kind != yaml.MappingNode {
		p.add(n, "props", "must be a mapping of property names to values")
		return props
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		field := "props." + k.Value
		if v.Kind != yaml.ScalarNode {
			// A property ShardingSphere does not define may hold a list
			// or map (Properties keeps any value): kept as flow YAML.
			if _, known := LookupProp(k.Value); !known && (v.Kind == yaml.SequenceNode || v.Kind == yaml.MappingNode) {
				if text, err := flowText(v); err == nil {
					props[k.Value] = text
					continue
				}
			}
			p.add(v, field, "must be a scalar value")
			continue
		}
		val := v.Value
		if v.Tag == "!!null" {
			val = ""
		}
		canon, err := CheckProp(k.Value, val)
		if err != nil {
			p.add(v, field, err.Error())
			continue
		}
		props[k.Value] = canon
	}
	return props
}

func parseLabels(p *problems, n *yaml.Node) []string {
	if n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.add(n, "labels", "must be a list of strings")
		return nil
	}
	var out []string
	for _, l := range n.Content {
		if l.Kind != yaml.ScalarNode || l.Value == "" {
			p.add(l, "labels", "each label must be a non-empty string")
			continue
		}
		out = append(out, l.Value)
	}
	return out
}

// LoadFile reads one embedded-library (ShardingSphere-JDBC style) YAML
// file: databaseName (required), dataSources, rules (database and global
// rule tags), mode, props and the global rule keys. The result has exactly
// one database. The file is read as ReadFile does (a regular file of at
// most MaxFileSize bytes); ctx bounds the read.
func LoadFile(ctx context.Context, path string) (*Config, error) {
	data, err := ReadFile(ctx, path, MaxFileSize)
	if err != nil {
		return nil, err
	}
	return ParseFile(path, data)
}

// ParseFile is LoadFile on data already read; file names it in errors.
func ParseFile(file string, data []byte) (*Config, error) {
	mode, modeErr := ParseMode(file, data)
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	p := problems{file: file}
	if modeErr != nil {
		p.errs = append(p.errs, modeErr)
	}
	cfg := &Config{Mode: mode, Props: Props{}}
	root := documentRoot(&doc)
	if root == nil || root.Kind != yaml.MappingNode {
		n := root
		if n == nil {
			n = &doc
		}
		p.add(n, "document", "must be a mapping with databaseName, dataSources, rules, mode and props")
		return nil, p.err()
	}
	db := Database{File: file, DataSources: map[string]DataSource{}}
	parseGlobalKeys(&p, cfg, root, true, func(k *yaml.Node) bool {
		return k.Value == "databaseName" || k.Value == "schemaName"
	})
	if n := mapValue(root, "databaseName"); n != nil {
		db.Name = n.Value
	} else if n := mapValue(root, "schemaName"); n != nil {
		db.Name = n.Value
	}
	checkDatabaseName(&p, root, db.Name)
	// The database's own dataSources and rules: parseGlobalKeys put the data
	// sources in cfg.DataSources and kept only the global rules.
	db.DataSources, cfg.DataSources = cfg.DataSources, nil
	if db.DataSources == nil {
		db.DataSources = map[string]DataSource{}
	}
	if n := mapValue(root, "rules"); n != nil {
		sub := problems{file: file} // already reported by parseGlobalKeys
		db.Rules, _ = parseRules(&sub, n, true)
		db.KeyGenerators = parseKeyGenerators(&p, n)
	}
	cfg.Databases = []Database{db}
	if err := p.err(); err != nil {
		return nil, err
	}
	return cfg, nil
}
