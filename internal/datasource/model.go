package datasource

// Schema is what a catalog says about one schema: its tables and views.
type Schema struct {
	Name   string
	Tables map[string]Table
	Views  map[string]View
}

// Table is one table's columns (in ordinal order) and indexes.
type Table struct {
	Name    string
	Columns []Column
	Indexes []Index
}

// Column is one column. DataType is the java.sql.Types code ShardingSphere
// stores (4 = INTEGER, 12 = VARCHAR, ...); TypeName the database's own type
// name ("varchar(32)", "int unsigned", "TEXT").
type Column struct {
	Name       string
	DataType   int
	TypeName   string
	PrimaryKey bool
	Nullable   bool
	Generated  bool // auto-increment, identity or serial
	Unsigned   bool
}

// Index is one index with its columns in key order.
type Index struct {
	Name    string
	Columns []string
	Unique  bool
}

// View is one view and its definition.
type View struct {
	Name       string
	Definition string
}
