// Package statistics reads the statistics ShardingSphere nodes collect into
// the registry, /statistics/databases/{db}/schemas/{schema}/tables/{table}
// /{uniqueKey} with YAML YamlRowStatistics values (uniqueKey and rows), as
// StatisticsPersistService and TableRowDataPersistService write them. A
// shardkeeper node only reads them: it collects none (ShardingSphere's
// Proxy collects them, on ZooKeeper only).
package statistics

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// DefaultMaxRows bounds the rows Load returns when maxRows is 0.
const DefaultMaxRows = 10000

// MaxBytes bounds the bytes of keys and values one Load reads: a
// co-tenant's 150 rows of 1 MB cost a node gigabytes when every request
// read the whole subtree.
const MaxBytes = 8 << 20

// Row is one YamlRowStatistics: its unique key and column values.
type Row struct {
	UniqueKey string `json:"uniqueKey"`
	Rows      []any  `json:"rows"`
}

// Table is the rows of one table.
type Table struct {
	Name string `json:"name"`
	Rows []Row  `json:"rows"`
}

// Schema is the tables of one schema.
type Schema struct {
	Name   string  `json:"name"`
	Tables []Table `json:"tables"`
}

// Database is the schemas of one database.
type Database struct {
	Name    string   `json:"name"`
	Schemas []Schema `json:"schemas"`
}

// Statistics is what Load read, sorted by name at every level.
type Statistics struct {
	Databases []Database `json:"databases"`
	// Truncated says rows were left out past the limit.
	Truncated bool `json:"truncated,omitempty"`
	// Problems name the values that could not be read (each skipped).
	Problems []string `json:"problems,omitempty"`
}

// Load reads the statistics of database db (every database when db is "")
// from repo in one bounded listing (registry.ListLimited), keeping at most
// maxRows rows (DefaultMaxRows when 0) and reading at most MaxBytes of
// keys and values, and twice maxRows keys: Truncated says more exist. A
// value that is not a YamlRowStatistics, or a key outside the layout, is
// reported in Problems and skipped. It returns registry.ErrBadKey for a
// db that cannot be a path segment. ctx bounds the reads.
func Load(ctx context.Context, repo registry.Repository, db string, maxRows int) (*Statistics, error) {
	if maxRows <= 0 {
		maxRows = DefaultMaxRows
	}
	prefix := paths.StatisticsRoot
	if db != "" {
		p, err := paths.StatisticsDatabase(db)
		if err != nil {
			return nil, err
		}
		prefix = p
	}
	kvs, truncated, err := registry.ListLimited(ctx, repo, prefix, registry.Limits{Rows: 2*maxRows + 64, Bytes: MaxBytes})
	if err != nil {
		return nil, err
	}
	if db != "" {
		if _, err := repo.Get(ctx, prefix); err == nil {
			kvs = append(kvs, registry.KV{Key: prefix})
		}
	}
	st := build(kvs, maxRows)
	st.Truncated = st.Truncated || truncated
	return st, nil
}

// build assembles the tree from the listed keys.
func build(kvs []registry.KV, maxRows int) *Statistics {
	out := &Statistics{Databases: []Database{}}
	dbs := map[string]map[string]map[string][]Row{}
	rows := 0
	for _, kv := range kvs {
		k, ok := paths.ParseStatistics(kv.Key)
		if !ok {
			if kv.Key != paths.StatisticsRoot && registry.IsUnder(kv.Key, paths.StatisticsRoot) && !container(kv.Key) {
				out.Problems = append(out.Problems, kv.Key+": not a database, schema, table or row of the statistics layout (skipped)")
			}
			continue
		}
		schemas := dbs[k.Database]
		if schemas == nil {
			schemas = map[string]map[string][]Row{}
			dbs[k.Database] = schemas
		}
		if k.Schema == "" {
			continue
		}
		tables := schemas[k.Schema]
		if tables == nil {
			tables = map[string][]Row{}
			schemas[k.Schema] = tables
		}
		if k.Table == "" {
			continue
		}
		if _, ok := tables[k.Table]; !ok {
			tables[k.Table] = []Row{}
		}
		if k.Row == "" {
			continue
		}
		r, err := DecodeRow(kv.Value)
		if err != nil {
			out.Problems = append(out.Problems, fmt.Sprintf("%s: %v (skipped)", kv.Key, err))
			continue
		}
		if rows == maxRows {
			out.Truncated = true
			continue
		}
		rows++
		tables[k.Table] = append(tables[k.Table], r)
	}
	for _, dn := range slices.Sorted(maps.Keys(dbs)) {
		d := Database{Name: dn, Schemas: []Schema{}}
		for _, sn := range slices.Sorted(maps.Keys(dbs[dn])) {
			s := Schema{Name: sn, Tables: []Table{}}
			for _, tn := range slices.Sorted(maps.Keys(dbs[dn][sn])) {
				rs := dbs[dn][sn][tn]
				slices.SortFunc(rs, func(a, b Row) int { return cmp.Compare(a.UniqueKey, b.UniqueKey) })
				s.Tables = append(s.Tables, Table{Name: tn, Rows: rs})
			}
			d.Schemas = append(d.Schemas, s)
		}
		out.Databases = append(out.Databases, d)
	}
	return out
}

// DecodeRow parses a row node's value as ShardingSphere loads it: a YAML
// map with only uniqueKey and rows (a list). Nested maps get string keys
// and NaN or infinite numbers become text, so that the row encodes as
// JSON.
func DecodeRow(b []byte) (Row, error) {
	var v struct {
		UniqueKey string `yaml:"uniqueKey"`
		Rows      []any  `yaml:"rows"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&v); err != nil {
		return Row{}, fmt.Errorf("not a YamlRowStatistics (uniqueKey, rows): %w", err)
	}
	if v.Rows == nil {
		v.Rows = []any{}
	}
	for i, e := range v.Rows {
		v.Rows[i] = stringKeys(e)
	}
	return Row{UniqueKey: v.UniqueKey, Rows: v.Rows}, nil
}

func stringKeys(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = stringKeys(e)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = stringKeys(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = stringKeys(e)
		}
		return x
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return strconv.FormatFloat(x, 'g', -1, 64) // JSON has no NaN or infinity
		}
	}
	return v
}

// container says whether key is a database's "schemas" or a schema's
// "tables" node, which ZooKeeper (and ShardingSphere's etcd writes) create
// as empty parents.
func container(key string) bool {
	i := strings.LastIndexByte(key, '/')
	parent, name := key[:i], key[i+1:]
	k, ok := paths.ParseStatistics(parent)
	return ok && k.Table == "" && ((name == "schemas" && k.Schema == "") || (name == "tables" && k.Schema != ""))
}
