package distsql

import "reflect"

// Statement is one parsed statement: one of the types below. A statement
// with FROM db (or IN db) keeps db in a string field named Database, ""
// when the statement leaves it out (see NamedDatabase).
type Statement interface{ statement() }

// NamedDatabase is the database st names in its Database field ("" when
// the statement leaves it out), and whether st has such a field.
func NamedDatabase(st Statement) (string, bool) {
	v := reflect.ValueOf(st)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return "", false
	}
	f := v.FieldByName("Database")
	if !f.IsValid() || f.Kind() != reflect.String {
		return "", false
	}
	return f.String(), true
}

// Value is a literal as upstream's grammar has it: a string, an integer
// (possibly negative), TRUE or FALSE; for client statements also a bare
// word (SET NAMES utf8mb4, SET autocommit = ON).
type Value struct {
	Kind ValueKind
	// Text is the value as text: the string without quotes, the digits
	// with their sign, "true"/"false", the word as typed.
	Text string
}

// ValueKind is a Value's kind.
type ValueKind int

// The kinds of a Value.
const (
	StringValue ValueKind = iota
	IntValue
	BoolValue
	WordValue
	NullValue
)

// Property is one key = value of a PROPERTIES(...) list.
type Property struct {
	Key   string
	Value Value
}

// Cluster administration (RAL).

// ShowComputeNodes is SHOW COMPUTE NODES.
type ShowComputeNodes struct{}

// ShowComputeNodeInfo is SHOW COMPUTE NODE INFO.
type ShowComputeNodeInfo struct{}

// ShowComputeNodeMode is SHOW COMPUTE NODE MODE.
type ShowComputeNodeMode struct{}

// EnableComputeNode is ENABLE COMPUTE NODE instanceId.
type EnableComputeNode struct{ InstanceID string }

// DisableComputeNode is DISABLE COMPUTE NODE instanceId.
type DisableComputeNode struct{ InstanceID string }

// LabelComputeNode is LABEL COMPUTE NODE id WITH l1[, l2...] (adds labels)
// or, with Relabel, RELABEL ... (replaces them).
type LabelComputeNode struct {
	InstanceID string
	Labels     []string
	Relabel    bool
}

// UnlabelComputeNode is UNLABEL COMPUTE NODE id [WITH l1[, l2...]]: no
// Labels removes every label.
type UnlabelComputeNode struct {
	InstanceID string
	Labels     []string
}

// ShowDistVariables is SHOW [TEMP] DIST VARIABLES [LIKE 'pattern'].
type ShowDistVariables struct {
	Temp bool
	// Like is the pattern (% and _ wildcards); nil lists every variable.
	Like *string
}

// ShowDistVariable is SHOW DIST VARIABLE WHERE NAME = name.
type ShowDistVariable struct{ Name string }

// SetDistVariable is SET DIST VARIABLE name = value.
type SetDistVariable struct {
	Name  string
	Value Value
}

// LockCluster is LOCK CLUSTER WITH strategy [TIMEOUT ms]. Strategy is
// upper case (WRITE or READ_WRITE), written either bare (LOCK CLUSTER WITH
// WRITE) or as LOCK_STRATEGY(TYPE(NAME='WRITE')).
type LockCluster struct {
	Strategy string
	// TimeoutMillis is 0 when TIMEOUT is not given (upstream's default
	// is 3000 ms).
	TimeoutMillis int64
}

// UnlockCluster is UNLOCK CLUSTER [TIMEOUT ms].
type UnlockCluster struct{ TimeoutMillis int64 }

// RefreshDatabaseMetadata is [FORCE] REFRESH DATABASE METADATA [db].
type RefreshDatabaseMetadata struct {
	Force    bool
	Database string // "" for every database
}

// ExportDatabaseConfiguration is EXPORT DATABASE CONFIGURATION [FROM db]
// [TO FILE 'path'].
type ExportDatabaseConfiguration struct {
	Database string // "" for the session's database
	File     string // "" to return the YAML as a result
}

// ImportDatabaseConfiguration is IMPORT DATABASE CONFIGURATION FROM FILE
// 'path'.
type ImportDatabaseConfiguration struct{ File string }

// ExportMetadata is EXPORT METADATA [TO FILE 'path'].
type ExportMetadata struct{ File string }

// ImportMetadata is IMPORT METADATA 'base64' or IMPORT METADATA FROM FILE
// 'path': exactly one of Value and File is set.
type ImportMetadata struct {
	Value string
	File  string
}

// ShowKeyGenerateAlgorithmPlugins is SHOW KEY GENERATE ALGORITHM PLUGINS.
type ShowKeyGenerateAlgorithmPlugins struct{}

// ShowProcesslist is SHOW [FULL] PROCESSLIST.
type ShowProcesslist struct{ Full bool }

// Kill is KILL [CONNECTION | QUERY] processId.
type Kill struct {
	ProcessID string
	Query     bool
}

// ShowNextKeys is SHOW NEXT KEYS [COUNT n], shardkeeper's own statement:
// n keys from the node's generator.
type ShowNextKeys struct {
	// Count is n; 1 when COUNT is not given.
	Count int64
}

// Storage units (RDL/RQL).

// ShowStorageUnits is SHOW STORAGE UNITS [FROM db] [LIKE 'pattern']
// [WHERE USAGE_COUNT = n].
type ShowStorageUnits struct {
	Database string
	Like     *string
	// UsageCount is n of WHERE USAGE_COUNT = n; nil without WHERE.
	UsageCount *int64
}

// StorageUnit is one unit definition of REGISTER / ALTER STORAGE UNIT:
// name(HOST=..., PORT=..., DB=... | URL=..., USER=... [, PASSWORD=...]
// [, PROPERTIES(...)]).
type StorageUnit struct {
	Name string
	// Host, Port and DB are set for the simple form, URL for the URL form.
	Host     string
	Port     int
	DB       string
	URL      string
	User     string
	Password string
	// HasPassword tells PASSWORD='' from no PASSWORD.
	HasPassword bool
	Properties  []Property
}

// RegisterStorageUnit is REGISTER STORAGE UNIT [IF NOT EXISTS] unit[, unit...].
type RegisterStorageUnit struct {
	IfNotExists bool
	Units       []StorageUnit
}

// AlterStorageUnit is ALTER STORAGE UNIT unit[, unit...].
type AlterStorageUnit struct{ Units []StorageUnit }

// UnregisterStorageUnit is UNREGISTER STORAGE UNIT [IF EXISTS] name[, name...]
// [IGNORE SINGLE TABLES | IGNORE BROADCAST TABLES | IGNORE SINGLE, BROADCAST
// TABLES].
type UnregisterStorageUnit struct {
	IfExists              bool
	Names                 []string
	IgnoreSingleTables    bool
	IgnoreBroadcastTables bool
}

// Sharding rules (RQL).

// ShowShardingTableRules is SHOW SHARDING TABLE RULES [FROM db] or SHOW
// SHARDING TABLE RULE t [FROM db].
type ShowShardingTableRules struct {
	Table    string // "" for every table
	Database string
}

// ShowShardingAlgorithms is SHOW SHARDING ALGORITHMS [FROM db].
type ShowShardingAlgorithms struct{ Database string }

// ShowShardingKeyGenerators is SHOW SHARDING KEY GENERATORS [FROM db].
type ShowShardingKeyGenerators struct{ Database string }

// What MySQL and PostgreSQL clients send on connect.

// Select is a SELECT of constants, variables and function calls without
// FROM (SELECT @@version_comment LIMIT 1, SELECT DATABASE(), SELECT 1).
type Select struct {
	Items []SelectItem
	// Limit is n of LIMIT n; -1 without LIMIT.
	Limit int64
}

// SelectItem is one expression of a Select.
type SelectItem struct {
	Expr Expr
	// Alias is AS name; "" without one.
	Alias string
	// Text is the expression as typed, the column name when there is no
	// alias (as MySQL names it).
	Text string
}

// Expr is an expression of a Select: one of Literal, Variable, Call.
type Expr interface{ expr() }

// Literal is a constant.
type Literal struct{ Value Value }

// Variable is @@[scope.]name (System) or @name.
type Variable struct {
	Name   string // lower case, without the scope
	Scope  string // "", "session", "global" or "local"
	System bool
}

// Call is a function call: name(args). Name is lower case, qualified
// names (pg_catalog.version) keep their last part.
type Call struct {
	Name string
	Args []Expr
}

// SetVariables is a SET of session variables other than SET DIST VARIABLE:
// SET NAMES x [COLLATE y], SET [SESSION|GLOBAL] name = value[, ...],
// SET name TO value, SET CHARACTER SET x.
type SetVariables struct{ Assignments []Assignment }

// Assignment is one name = value of a SetVariables. NAMES and CHARACTER
// SET appear as Name "names" and "character_set"; Collate is NAMES'
// COLLATE.
type Assignment struct {
	Scope   string // "", "session", "global", "local"
	Name    string // lower case
	Value   Value
	Collate string
}

// ShowDatabases is SHOW DATABASES / SHOW SCHEMAS [LIKE 'pattern'].
type ShowDatabases struct{ Like *string }

// ShowTables is SHOW [FULL] TABLES [FROM db] [LIKE 'pattern'].
type ShowTables struct {
	Full     bool
	Database string
	Like     *string
}

// ShowVariables is SHOW [SESSION|GLOBAL] VARIABLES [LIKE 'pattern'], or a
// PostgreSQL SHOW name (Name set).
type ShowVariables struct {
	Like *string
	Name string
}

// ShowWarnings is SHOW WARNINGS.
type ShowWarnings struct{}

// Use is USE db.
type Use struct{ Database string }

// Transaction is BEGIN, START TRANSACTION, COMMIT or ROLLBACK: Verb is
// "begin", "commit" or "rollback". Statements are not transactional here;
// a transaction statement is accepted so that drivers work.
type Transaction struct{ Verb string }

// Empty is a statement with nothing in it but comments and semicolons.
type Empty struct{}

func (ShowComputeNodes) statement()                {}
func (ShowComputeNodeInfo) statement()             {}
func (ShowComputeNodeMode) statement()             {}
func (EnableComputeNode) statement()               {}
func (DisableComputeNode) statement()              {}
func (LabelComputeNode) statement()                {}
func (UnlabelComputeNode) statement()              {}
func (ShowDistVariables) statement()               {}
func (ShowDistVariable) statement()                {}
func (SetDistVariable) statement()                 {}
func (LockCluster) statement()                     {}
func (UnlockCluster) statement()                   {}
func (RefreshDatabaseMetadata) statement()         {}
func (ExportDatabaseConfiguration) statement()     {}
func (ImportDatabaseConfiguration) statement()     {}
func (ExportMetadata) statement()                  {}
func (ImportMetadata) statement()                  {}
func (ShowKeyGenerateAlgorithmPlugins) statement() {}
func (ShowProcesslist) statement()                 {}
func (Kill) statement()                            {}
func (ShowNextKeys) statement()                    {}
func (ShowStorageUnits) statement()                {}
func (RegisterStorageUnit) statement()             {}
func (AlterStorageUnit) statement()                {}
func (UnregisterStorageUnit) statement()           {}
func (ShowShardingTableRules) statement()          {}
func (ShowShardingAlgorithms) statement()          {}
func (ShowShardingKeyGenerators) statement()       {}
func (Select) statement()                          {}
func (SetVariables) statement()                    {}
func (ShowDatabases) statement()                   {}
func (ShowTables) statement()                      {}
func (ShowVariables) statement()                   {}
func (ShowWarnings) statement()                    {}
func (Use) statement()                             {}
func (Transaction) statement()                     {}
func (Empty) statement()                           {}

func (Literal) expr()  {}
func (Variable) expr() {}
func (Call) expr()     {}
