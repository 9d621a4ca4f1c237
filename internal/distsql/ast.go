package distsql

// Statement is one parsed statement: one of the types of this package.
// Every statement says what it acts on (Scope), which the consoles'
// privilege check asks: a statement type without a Scope method is no
// Statement, so a new statement cannot forget to say.
type Statement interface {
	// Scope is what the statement acts on for the privilege model
	// (docs/security.md).
	Scope() Scope
}

// Scope is what one statement acts on.
type Scope struct {
	// Cluster names the statement, as a refusal shows it ("LOCK
	// CLUSTER", "ALTER TRANSACTION RULE"), when its effect is not
	// confined to one database: every tenant's (cluster locks, global
	// rules, dist variables, compute node states and labels, REFRESH of
	// every database), the cluster's users (IMPORT METADATA), every
	// database's configuration (EXPORT METADATA), or the node's files
	// (TO FILE, FROM FILE). Such a statement needs an admin user. ""
	// when the effect stays within Database.
	Cluster string
	// Database is the database the statement names (FROM db, IN db, USE
	// db, CREATE DATABASE db); "" when it names none.
	Database string
	// Session: with Database "", the statement acts on the session's
	// database (storage unit and database rule statements, SHOW ...
	// without FROM).
	Session bool
}

// named is the scope of a statement acting on database db, the session's
// when db is "" (FROM db left out).
func named(db string) Scope { return Scope{Database: db, Session: true} }

// sessionDatabase is the scope of a statement acting on the session's
// database.
var sessionDatabase = Scope{Session: true}

// cluster is the scope of a statement whose effect reaches beyond one
// database, named what.
func cluster(what string) Scope { return Scope{Cluster: what} }

// local is the scope of a statement that acts on no database and changes
// nothing beyond the session: reads of the cluster's state, client
// statements. (SHOW PROCESSLIST and KILL restrict themselves to the
// session's user.)
var local = Scope{}

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
	// Expr is a value computed by a function call (SET sql_mode =
	// CONCAT(@@sql_mode, ',STRICT_TRANS_TABLES')); nil for a plain Value.
	Expr Expr
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

// Scope implements Statement.
func (ShowComputeNodes) Scope() Scope { return local }

// Scope implements Statement.
func (ShowComputeNodeInfo) Scope() Scope { return local }

// Scope implements Statement.
func (ShowComputeNodeMode) Scope() Scope { return local }

// Scope implements Statement: a node's state acts on every tenant's
// traffic through it.
func (EnableComputeNode) Scope() Scope { return cluster("ENABLE COMPUTE NODE") }

// Scope implements Statement.
func (DisableComputeNode) Scope() Scope { return cluster("DISABLE COMPUTE NODE") }

// Scope implements Statement.
func (st LabelComputeNode) Scope() Scope {
	if st.Relabel {
		return cluster("RELABEL COMPUTE NODE")
	}
	return cluster("LABEL COMPUTE NODE")
}

// Scope implements Statement.
func (UnlabelComputeNode) Scope() Scope { return cluster("UNLABEL COMPUTE NODE") }

// Scope implements Statement.
func (ShowDistVariables) Scope() Scope { return local }

// Scope implements Statement.
func (ShowDistVariable) Scope() Scope { return local }

// Scope implements Statement: /props apply to every database.
func (SetDistVariable) Scope() Scope { return cluster("SET DIST VARIABLE") }

// Scope implements Statement.
func (LockCluster) Scope() Scope { return cluster("LOCK CLUSTER") }

// Scope implements Statement.
func (UnlockCluster) Scope() Scope { return cluster("UNLOCK CLUSTER") }

// Scope implements Statement: without a database, every database.
func (st RefreshDatabaseMetadata) Scope() Scope {
	if st.Database == "" {
		return cluster("REFRESH DATABASE METADATA of every database")
	}
	return Scope{Database: st.Database}
}

// Scope implements Statement: TO FILE writes the node's files.
func (st ExportDatabaseConfiguration) Scope() Scope {
	sc := named(st.Database)
	if st.File != "" {
		sc.Cluster = "EXPORT ... TO FILE"
	}
	return sc
}

// Scope implements Statement: it creates a database and reads the node's
// files.
func (ImportDatabaseConfiguration) Scope() Scope { return cluster("IMPORT DATABASE CONFIGURATION") }

// Scope implements Statement: every database and every user's password.
func (ExportMetadata) Scope() Scope { return cluster("EXPORT METADATA") }

// Scope implements Statement: every database, the global rules and the
// users.
func (ImportMetadata) Scope() Scope { return cluster("IMPORT METADATA") }

// Scope implements Statement.
func (ShowKeyGenerateAlgorithmPlugins) Scope() Scope { return local }

// Scope implements Statement (a non-admin sees its own sessions only).
func (ShowProcesslist) Scope() Scope { return local }

// Scope implements Statement (a non-admin ends its own sessions only).
func (Kill) Scope() Scope { return local }

// Scope implements Statement.
func (ShowNextKeys) Scope() Scope { return local }

// Scope implements Statement.
func (st ShowStorageUnits) Scope() Scope { return named(st.Database) }

// Scope implements Statement.
func (RegisterStorageUnit) Scope() Scope { return sessionDatabase }

// Scope implements Statement.
func (AlterStorageUnit) Scope() Scope { return sessionDatabase }

// Scope implements Statement.
func (UnregisterStorageUnit) Scope() Scope { return sessionDatabase }

// Scope implements Statement.
func (Select) Scope() Scope { return local }

// Scope implements Statement: session variables only.
func (SetVariables) Scope() Scope { return local }

// Scope implements Statement (a non-admin sees its permitted databases
// only).
func (ShowDatabases) Scope() Scope { return local }

// Scope implements Statement.
func (st ShowTables) Scope() Scope { return named(st.Database) }

// Scope implements Statement.
func (ShowVariables) Scope() Scope { return local }

// Scope implements Statement.
func (ShowWarnings) Scope() Scope { return local }

// Scope implements Statement.
func (st Use) Scope() Scope { return Scope{Database: st.Database} }

// Scope implements Statement.
func (Transaction) Scope() Scope { return local }

// Scope implements Statement.
func (Empty) Scope() Scope { return local }

func (Literal) expr()  {}
func (Variable) expr() {}
func (Call) expr()     {}
