package datasource

// Schema is what a catalog says about one schema: its tables and views.
type Schema struct {
	Name   string
	Tables map[string]Table
	Views  map[string]View
}

// Table is one table's columns (in ordinal order), indexes and foreign
// keys.
type Table struct {
	Name        string
	Columns     []Column
	Indexes     []Index
	Constraints []Constraint
}

// Column is one column. DataType is the java.sql.Types code ShardingSphere
// stores (4 = INTEGER, 12 = VARCHAR, ...); TypeName the database's own type
// name ("varchar(32)", "int unsigned", "TEXT"), or the JDBC name of DataType
// ("VARCHAR") when the registry copy came from a node that kept no other.
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

// Constraint is one foreign key: its name and the table it references
// (ShardingSphere keeps no more of a constraint).
type Constraint struct {
	Name            string
	ReferencedTable string
}

// View is one view and its definition.
type View struct {
	Name       string
	Definition string
}
