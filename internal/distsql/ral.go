package distsql

import "strings"

// Upstream's RAL and RQL statements about tables, storage nodes and
// plugins (5.5 grammar): REFRESH TABLE
// METADATA, SHOW TABLE METADATA, EXPORT STORAGE NODES, CONVERT YAML
// CONFIGURATION, ALTER COMPUTE NODE ... SET, SHOW PLUGINS OF and the
// SHOW ... ALGORITHM PLUGINS | IMPLEMENTATIONS forms.

// RefreshTableMetadata is REFRESH TABLE METADATA [table] [FROM STORAGE
// UNIT unit [SCHEMA schema]] on the session's database; empty fields are
// left out.
type RefreshTableMetadata struct{ Table, Unit, Schema string }

// ShowTableMetadata is SHOW TABLE METADATA t [, t ...] [FROM db].
type ShowTableMetadata struct {
	Tables   []string
	Database string
}

// ExportStorageNodes is EXPORT STORAGE NODES [FROM db] [TO FILE 'path']:
// every database's storage units without FROM.
type ExportStorageNodes struct{ Database, File string }

// ConvertYamlConfiguration is CONVERT YAML CONFIGURATION FROM FILE 'path'.
type ConvertYamlConfiguration struct{ File string }

// AlterComputeNode is ALTER COMPUTE NODE 'id' SET name = value [, value
// ...]; Name is upper case.
type AlterComputeNode struct {
	InstanceID, Name string
	Values           []string
}

// ShowPlugins is SHOW PLUGINS OF 'spi', SHOW IMPLEMENTATIONS OF spi or
// SHOW family ALGORITHM PLUGINS | IMPLEMENTATIONS: SPI is the service
// interface as written ("ShardingAlgorithm", "org.apache...
// ShardingAlgorithm") or, for the last form, the family's words joined by
// a space ("SHARDING", "LOAD BALANCE") with Family set.
type ShowPlugins struct {
	SPI    string
	Family bool
}

// Scope implements Statement: the session's database.
func (RefreshTableMetadata) Scope() Scope { return sessionDatabase }

// Scope implements Statement.
func (st ShowTableMetadata) Scope() Scope { return named(st.Database) }

// Scope implements Statement: without FROM it reads every database's
// units; TO FILE writes the node's files.
func (st ExportStorageNodes) Scope() Scope {
	switch {
	case st.File != "":
		return Scope{Database: st.Database, Cluster: "EXPORT ... TO FILE"}
	case st.Database == "":
		return cluster("EXPORT STORAGE NODES")
	}
	return named(st.Database)
}

// Scope implements Statement: it reads the node's files.
func (ConvertYamlConfiguration) Scope() Scope { return cluster("CONVERT YAML CONFIGURATION") }

// Scope implements Statement: a compute node's settings.
func (AlterComputeNode) Scope() Scope { return cluster("ALTER COMPUTE NODE") }

// Scope implements Statement.
func (ShowPlugins) Scope() Scope { return local }

// algorithmFamilies are the words before ALGORITHM in SHOW ... ALGORITHM
// PLUGINS | IMPLEMENTATIONS. KEY GENERATE keeps its own statement.
var algorithmFamilies = [][]string{{"SHARDING"}, {"ENCRYPT"}, {"MASK"}, {"SHADOW"}, {"LOAD", "BALANCE"}, {"READ", "QUERY", "LOAD", "BALANCE"}}

// ral reads one of this file's statements when the tokens start one; ok
// is false (nothing consumed) otherwise.
func (p *parser) ral() (Statement, bool) {
	switch {
	case p.keywords("REFRESH", "TABLE", "METADATA"):
		st := &RefreshTableMetadata{}
		if t := p.peek(); t.Kind != EOF && !p.isSymbol(";") && !isKeyword(t, "FROM") {
			st.Table = p.identifier("table name")
		}
		if p.keyword("FROM") {
			p.expect("STORAGE", "UNIT")
			st.Unit = p.identifier("storage unit name")
			if p.keyword("SCHEMA") {
				st.Schema = p.identifier("schema name")
			}
		}
		return st, true
	case p.keywords("SHOW", "TABLE", "METADATA"):
		st := &ShowTableMetadata{Tables: p.names("table name")}
		st.Database = p.fromDatabase()
		return st, true
	case p.keywords("EXPORT", "STORAGE", "NODES"):
		st := &ExportStorageNodes{Database: p.fromDatabase()}
		if p.keywords("TO", "FILE") {
			st.File = p.str("file path")
		}
		return st, true
	case p.keywords("CONVERT", "YAML", "CONFIGURATION"):
		p.expect("FROM", "FILE")
		return &ConvertYamlConfiguration{File: p.str("file path")}, true
	case p.keywords("ALTER", "COMPUTE", "NODE"):
		st := &AlterComputeNode{InstanceID: p.identOrString("instance id")}
		p.expect("SET")
		st.Name = strings.ToUpper(p.identOrString("variable name"))
		p.expectSymbol("=")
		for {
			st.Values = append(st.Values, p.literal("variable value").Text)
			if !p.symbol(",") {
				return st, true
			}
		}
	case p.keywords("SHOW", "PLUGINS", "OF"), p.keywords("SHOW", "IMPLEMENTATIONS", "OF"):
		return &ShowPlugins{SPI: p.identOrString("service provider interface")}, true
	}
	if !isKeyword(p.peek(), "SHOW") {
		return nil, false
	}
	for _, f := range algorithmFamilies {
		words := append(append([]string{"SHOW"}, f...), "ALGORITHM")
		for i, w := range words {
			if !isKeyword(p.peekAt(i), w) {
				words = nil
				break
			}
		}
		if words == nil {
			continue
		}
		if last := p.peekAt(len(words)); isKeyword(last, "PLUGINS") || isKeyword(last, "IMPLEMENTATIONS") {
			p.i += len(words) + 1
			return &ShowPlugins{SPI: strings.Join(f, " "), Family: true}, true
		}
	}
	return nil, false
}
