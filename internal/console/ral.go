package console

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/catalog"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/dbconfig"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/rule/encrypt"
	"github.com/shardkeeper/shardkeeper/internal/rule/mask"
	"github.com/shardkeeper/shardkeeper/internal/rule/sharding"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

// Upstream's statements about tables, storage nodes and plugins
// (distsql/ral.go): REFRESH TABLE METADATA,
// SHOW TABLE METADATA, EXPORT STORAGE NODES, CONVERT YAML CONFIGURATION,
// ALTER COMPUTE NODE ... SET, and the plugin lists.

// refreshTableMetadata is REFRESH TABLE METADATA [t [FROM STORAGE UNIT u
// [SCHEMA s]]]: the session's database is refreshed as REFRESH DATABASE
// METADATA refreshes it (every table whose registry copy differs from its
// unit's, which includes t); a named unit must exist (10102).
func (e *Engine) refreshTableMetadata(ctx context.Context, s *Session, st *distsql.RefreshTableMetadata) (*Result, error) {
	db, err := e.database(s, "")
	if err != nil {
		return nil, err
	}
	if _, ok := db.Units[st.Unit]; st.Unit != "" && !ok {
		return nil, unitsMissing(db.Name, st.Unit)
	}
	return e.refreshDatabaseMetadata(ctx, s, &distsql.RefreshDatabaseMetadata{Database: db.Name})
}

// tableColumn and tableIndex are a column's and an index's metadata as
// ShardingSphere's YAML (and SHOW TABLE METADATA's value) spells them.
type tableColumn struct {
	Name          string `json:"name"`
	DataType      int    `json:"dataType"`
	PrimaryKey    bool   `json:"primaryKey"`
	Generated     bool   `json:"generated"`
	CaseSensitive bool   `json:"caseSensitive"`
	Visible       bool   `json:"visible"`
	Unsigned      bool   `json:"unsigned"`
	Nullable      bool   `json:"nullable"`
}

type tableIndex struct {
	Name    string   `json:"name"`
	Columns []string `json:"columns"`
	Unique  bool     `json:"unique"`
}

// showTableMetadata is SHOW TABLE METADATA t [, t ...] [FROM db]: a row
// per column and per index of each table (database_name, table_name,
// type COLUMN or INDEX, name, value as JSON). A table is a persisted
// table (a physical one, t_order_0) or a logic table (t_order, with its
// first actual table's columns); a name that is neither has no rows, as
// upstream.
func (e *Engine) showTableMetadata(_ context.Context, s *Session, st *distsql.ShowTableMetadata) (*Result, error) {
	db, err := e.database(s, st.Database)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: textColumns("database_name", "table_name", "type", "name", "value"), Rows: [][]*string{}}
	logic := logicTables(db)
	for _, name := range st.Tables {
		t, ok := persistedTable(db, name)
		if !ok {
			i := slices.IndexFunc(logic, func(l catalog.Table) bool { return strings.EqualFold(l.Name, name) })
			if i < 0 {
				continue
			}
			t.Name, t.Columns, t.Indexes = logic[i].Name, logic[i].Columns, logic[i].Indexes
		}
		for _, c := range t.Columns {
			v, _ := json.Marshal(tableColumn{Name: c.Name, DataType: c.DataType, PrimaryKey: c.PrimaryKey, Generated: c.Generated,
				Visible: true, Unsigned: c.Unsigned, Nullable: c.Nullable})
			res.Rows = append(res.Rows, strs(db.Name, t.Name, "COLUMN", c.Name, string(v)))
		}
		for _, ix := range t.Indexes {
			v, _ := json.Marshal(tableIndex{Name: ix.Name, Columns: ix.Columns, Unique: ix.Unique})
			res.Rows = append(res.Rows, strs(db.Name, t.Name, "INDEX", ix.Name, string(v)))
		}
	}
	return res, nil
}

// persistedTable is the table name of db's persisted metadata, in any
// schema, found in any case.
func persistedTable(db *metadata.Database, name string) (datasource.Table, bool) {
	for _, sn := range slices.Sorted(maps.Keys(db.Schemas)) {
		for n, t := range db.Schemas[sn].Tables {
			if strings.EqualFold(n, name) {
				if t.Name == "" {
					t.Name = n
				}
				return t, true
			}
		}
	}
	return datasource.Table{}, false
}

// storageNode is one storage unit's node as EXPORT STORAGE NODES shows it;
// the password is left out.
type storageNode struct {
	IP       string `json:"ip"`
	Port     string `json:"port"`
	Database string `json:"database"`
	Username string `json:"username"`
}

// exportStorageNodes is EXPORT STORAGE NODES [FROM db] [TO FILE 'path']:
// id, create_time and storage_nodes, the JSON of each database's storage
// nodes (units with the same host, port and database are one node), or
// where TO FILE wrote it.
func (e *Engine) exportStorageNodes(_ context.Context, s *Session, st *distsql.ExportStorageNodes) (*Result, error) {
	snap := e.d.Metadata.Current()
	names := e.databases()
	if st.Database != "" {
		if _, err := e.database(s, st.Database); err != nil {
			return nil, err
		}
		names = []string{st.Database}
	}
	nodes := map[string][]storageNode{}
	for _, n := range names {
		db := snap.Databases[n]
		list := []storageNode{}
		for _, u := range slices.Sorted(maps.Keys(db.Units)) {
			ds := db.Units[u]
			_, host, port, name, _ := parseJDBC(ds.URL)
			node := storageNode{IP: host, Port: port, Database: name, Username: ds.Username}
			if !slices.Contains(list, node) {
				list = append(list, node)
			}
		}
		nodes[n] = list
	}
	data, err := json.Marshal(map[string]any{"storage_nodes": nodes})
	if err != nil {
		return nil, err
	}
	out := string(data)
	if st.File != "" {
		if err := e.writeFile(s, st.File, data); err != nil {
			return nil, err
		}
		out = fmt.Sprintf("Successfully exported to：'%s'", st.File) // upstream's full-width colon
	}
	now := time.Now().Format("2006-01-02T15:04:05.000")
	return &Result{Columns: textColumns("id", "create_time", "storage_nodes"), Rows: [][]*string{strs(e.d.Node.InstanceID(), now, out)}}, nil
}

// convertYamlConfiguration is CONVERT YAML CONFIGURATION FROM FILE 'path':
// the DistSQL of a database configuration file of the node's conf dir
// (dbconfig.Convert), in one row of one column, distsql. Only an admin
// runs it (its scope is cluster-wide): the output holds the units'
// passwords, as the file does.
func (e *Engine) convertYamlConfiguration(ctx context.Context, s *Session, st *distsql.ConvertYamlConfiguration) (*Result, error) {
	if e.d.ConfDir == nil {
		return nil, unsupported("CONVERT YAML CONFIGURATION reads files of the node's conf dir (serve --conf), and this node runs without one")
	}
	data, err := e.d.ConfDir.ReadFile(ctx, st.File)
	if err != nil {
		return nil, opError(s, err)
	}
	out, err := dbconfig.Convert(st.File, data)
	if err != nil {
		return nil, opError(s, err)
	}
	return &Result{Columns: textColumns("distsql"), Rows: [][]*string{strs(out)}}, nil
}

// alterComputeNode is ALTER COMPUTE NODE 'id' SET XA_RECOVERY_NODES = ...:
// XA recovery belongs to a node that runs XA transactions, which a
// shardkeeper node does not; any other variable is upstream's 12010.
func (e *Engine) alterComputeNode(_ context.Context, _ *Session, st *distsql.AlterComputeNode) (*Result, error) {
	if st.Name != "XA_RECOVERY_NODES" {
		return nil, unsupportedVariable(st.Name)
	}
	return nil, unsupported("ALTER COMPUTE NODE ... SET XA_RECOVERY_NODES: this shardkeeper node runs no XA transactions; run it on a ShardingSphere-Proxy")
}

// plugins are the algorithm types shardkeeper accepts, by service
// provider interface (its simple name, upper case) and by the family
// words of SHOW family ALGORITHM PLUGINS.
func plugins() map[string][]string {
	algs := sharding.AlgorithmTypes
	loadBalance := []string{"RANDOM", "ROUND_ROBIN", "WEIGHT"}
	return map[string][]string{
		"SHARDINGALGORITHM": algs, "SHARDING": algs,
		"KEYGENERATEALGORITHM": sharding.KeyGeneratorTypes, "KEY GENERATE": sharding.KeyGeneratorTypes,
		"SHARDINGAUDITALGORITHM": sharding.AuditorTypes,
		"ENCRYPTALGORITHM":       slices.Sorted(maps.Keys(encrypt.Algorithms)), "ENCRYPT": slices.Sorted(maps.Keys(encrypt.Algorithms)),
		"MASKALGORITHM": slices.Sorted(maps.Keys(mask.Algorithms)), "MASK": slices.Sorted(maps.Keys(mask.Algorithms)),
		"SHADOWALGORITHM": {"REGEX_MATCH", "SQL_HINT", "VALUE_MATCH"}, "SHADOW": {"REGEX_MATCH", "SQL_HINT", "VALUE_MATCH"},
		"READQUERYLOADBALANCEALGORITHM": loadBalance, "LOAD BALANCE": loadBalance, "READ QUERY LOAD BALANCE": loadBalance,
	}
}

// showPlugins is SHOW PLUGINS OF 'spi', SHOW IMPLEMENTATIONS OF spi and
// SHOW family ALGORITHM PLUGINS | IMPLEMENTATIONS: type, type_aliases,
// description of each algorithm type shardkeeper accepts. An SPI it does
// not know is refused, naming the ones it knows.
func (e *Engine) showPlugins(_ context.Context, _ *Session, st *distsql.ShowPlugins) (*Result, error) {
	key := strings.ToUpper(st.SPI)
	if !st.Family {
		key = key[strings.LastIndexByte(key, '.')+1:]
	}
	all := plugins()
	types, ok := all[key]
	if !ok {
		var known []string
		for k := range all {
			if !strings.Contains(k, " ") && strings.HasSuffix(k, "ALGORITHM") {
				known = append(known, k)
			}
		}
		slices.Sort(known)
		return nil, unsupported(fmt.Sprintf("plugins of '%s': shardkeeper lists the algorithms of %s", st.SPI, strings.Join(known, ", ")))
	}
	res := &Result{Columns: textColumns("type", "type_aliases", "description"), Rows: [][]*string{}}
	for _, t := range types {
		res.Rows = append(res.Rows, strs(t, "", ""))
	}
	return res, nil
}

// unitsMissing is upstream's MissingRequiredStorageUnitsException (10102,
// 44000) for unit of database db.
func unitsMissing(db, unit string) *sqlerr.Error {
	return &sqlerr.Error{Code: 10102, SQLState: "44000", Message: fmt.Sprintf("Storage units '[%s]' do not exist in database '%s'.", unit, db)}
}
