package console

import (
	"context"
	"errors"
	"fmt"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/dbconfig"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/process"
	"github.com/shardkeeper/shardkeeper/internal/rule/families"
	"github.com/shardkeeper/shardkeeper/internal/rules"
	"github.com/shardkeeper/shardkeeper/registry"
)

// Deps are what an Engine works with. Repo, Node and Metadata are
// required; the rest have defaults.
type Deps struct {
	// Repo is the registry the node runs on.
	Repo registry.Repository
	// Node is the running node: its instance id, worker id, membership
	// view and key generator.
	Node *cluster.Node
	// Metadata is the node's live view of the logical databases, rules
	// and props.
	Metadata *metadata.Store
	// Processes is the node's session table (SHOW PROCESSLIST lists it,
	// KILL ends its sessions); nil means an empty table.
	Processes *process.Table
	// Mode is the node's `mode:` (SHOW COMPUTE NODE MODE); secrets are
	// never shown.
	Mode config.Mode
	// ModeType is "Cluster" or "Standalone" as SHOW COMPUTE NODES shows
	// it; empty means Mode.Type, or Cluster.
	ModeType string
	// ProcessTimeout bounds how long SHOW PROCESSLIST and KILL wait for
	// the other nodes; zero means DefaultProcessTimeout.
	ProcessTimeout time.Duration
	// Logger receives the engine's logs; nil means slog.Default().
	Logger *slog.Logger
	// Layout is the registry layout the node writes (its target
	// ShardingSphere release): where rule items, the cluster lock and
	// the database listener coordinator go.
	Layout paths.Layout
	// LayoutNow, when set, is the layout the node writes now, which a
	// migration of the tree may move (it then overrides Layout).
	LayoutNow *paths.LayoutVar
	// SetVariableTimeout bounds how long SET DIST VARIABLE waits for the
	// nodes to apply the value; zero means distvar.DefaultTimeout.
	SetVariableTimeout time.Duration
	// Ping checks a storage unit with a real connection before REGISTER,
	// ALTER or IMPORT writes it; nil means datasource.Ping.
	Ping func(ctx context.Context, unit string, ds config.DataSource) error
	// FileDir is where TO FILE and FROM FILE name files on the node's
	// host (serve --distsql-file-dir); nil refuses every file path.
	FileDir *dbconfig.FileDir
	// ConfDir is the node's conf dir (serve --conf), whose files CONVERT
	// YAML CONFIGURATION FROM FILE names (admin users only); nil refuses
	// every path.
	ConfDir *dbconfig.FileDir
	// AllowSQLite lets storage units (REGISTER, ALTER, IMPORT) use
	// SQLite, whose URL names a file the node creates with its own rights
	// (serve --allow-sqlite-units); false refuses them.
	AllowSQLite bool
	// Introspect reads the real schemas of a database's units (REFRESH
	// DATABASE METADATA, IMPORT, the single tables); nil means
	// datasource.Introspect.
	Introspect func(ctx context.Context, db config.Database) ([]datasource.Schema, error)
}

// DefaultProcessTimeout is how long SHOW PROCESSLIST and KILL wait for the
// other nodes' answers by default.
const DefaultProcessTimeout = 3 * time.Second

// MaxNextKeys bounds SHOW NEXT KEYS COUNT n.
const MaxNextKeys = 100_000

// Engine is the Executor of a node: it parses each statement with
// internal/distsql and runs it against the node's registry, membership
// view, metadata and session table. It is safe for concurrent use.
type Engine struct {
	d   Deps
	log *slog.Logger

	nodeRows atomic.Pointer[nodeRows] // SHOW COMPUTE NODES of the current membership view
	rules    *metadata.RuleCache      // the databases rule statements read, decoded

	mu     sync.Mutex
	closed bool
}

// New returns an Engine over d. It does no I/O.
func New(d Deps) *Engine {
	if d.Processes == nil {
		d.Processes = process.NewTable()
	}
	if d.ProcessTimeout <= 0 {
		d.ProcessTimeout = DefaultProcessTimeout
	}
	if d.ModeType == "" {
		d.ModeType = d.Mode.Type
		if d.ModeType == "" {
			d.ModeType = config.ModeCluster
		}
	}
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Engine{d: d, log: log, rules: metadata.NewStoreRuleCache(d.Metadata)}
}

var _ Executor = (*Engine)(nil)

// Close marks the engine closed: LABEL and UNLABEL after it fail. The
// labels nodes LABEL COMPUTE NODE created for nodes that had none live in
// the node's session and go with the node, as they go with a
// ShardingSphere node that wrote them. It does no I/O.
func (e *Engine) Close(context.Context) error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	return nil
}

// Execute parses query and runs it for session s. Failures a client caused
// or should see are *sqlerr.Error with ShardingSphere's vendor code and SQL
// state; a syntax error is code 12000, state 42000, naming the line,
// column and the text near the error.
func (e *Engine) Execute(ctx context.Context, s *Session, query string) (*Result, error) {
	if res, ok, err := e.catalogQuery(s, query); ok { // catalog.go
		return res, err
	}
	st, err := families.Parse(query)
	if err != nil {
		if res, ok, cerr := e.catalogSelect(s, query); ok {
			return res, cerr
		}
		return nil, distsql.Coded(err, query)
	}
	res, err := e.Run(ctx, s, st)
	var se *sqlerr.Error
	if _, sel := st.(*distsql.Select); sel && errors.As(err, &se) && se.Code == 1305 && e.d.Metadata != nil {
		// A function the console does not evaluate (current_setting,
		// format_type, ...) may be the catalog's.
		if cres, ok, cerr := e.catalogSelect(s, query); ok && cerr == nil {
			return cres, nil
		}
	}
	return nullMissing(res), err
}

// Run runs a parsed statement for session s (Execute without the parse),
// when the privilege model lets s run it (privilege.go).
func (e *Engine) Run(ctx context.Context, s *Session, st distsql.Statement) (*Result, error) {
	if err := e.authorize(s, st); err != nil {
		return nil, err
	}
	if rules.Is(st) { // rulechange.go
		return e.applyRule(ctx, s, st)
	}
	if res, ok := e.showGlobalRule(s, st); ok { // global_rules.go
		return res, nil
	}
	if res, ok, err := e.showFamilyRule(ctx, s, st); ok { // column_rules.go
		return res, err
	}
	switch st := st.(type) {
	case *distsql.Empty:
		return nil, &sqlerr.Error{Code: 12002, SQLState: "42000", Message: "SQL String can not be NULL or empty."}

	// computenodes.go
	case *distsql.ShowComputeNodes:
		return e.showComputeNodes(ctx, s, st)
	case *distsql.ShowComputeNodeInfo:
		return e.showComputeNodeInfo(ctx, s, st)
	case *distsql.ShowComputeNodeMode:
		return e.showComputeNodeMode(ctx, s, st)
	case *distsql.EnableComputeNode:
		return e.setComputeNodeState(ctx, st.InstanceID, true)
	case *distsql.DisableComputeNode:
		return e.setComputeNodeState(ctx, st.InstanceID, false)
	case *distsql.LabelComputeNode:
		return e.labelComputeNode(ctx, s, st)
	case *distsql.UnlabelComputeNode:
		return e.unlabelComputeNode(ctx, s, st)

	// variables.go, setvariable.go
	case *distsql.ShowDistVariables:
		return e.showDistVariables(ctx, s, st)
	case *distsql.ShowDistVariable:
		return e.showDistVariable(ctx, s, st)
	case *distsql.SetDistVariable:
		return e.setDistVariable(ctx, s, st)

	// lock.go
	case *distsql.LockCluster:
		return e.lockCluster(ctx, s, st)
	case *distsql.UnlockCluster:
		return e.unlockCluster(ctx, s, st)

	// storageunits.go, storageunits_rdl.go
	case *distsql.ShowStorageUnits:
		return e.showStorageUnits(ctx, s, st)
	case *distsql.RegisterStorageUnit:
		return e.registerStorageUnit(ctx, s, st)
	case *distsql.AlterStorageUnit:
		return e.alterStorageUnit(ctx, s, st)
	case *distsql.UnregisterStorageUnit:
		return e.unregisterStorageUnit(ctx, s, st)

	// readwrite_rules.go, global_rules.go
	case *distsql.ShowReadwriteSplittingStatus:
		return e.showReadwriteSplittingStatus(ctx, s, st)
	case *distsql.ShowRulesUsedStorageUnit:
		return e.showRulesUsedStorageUnit(ctx, s, st)
	case *distsql.CountRule:
		return e.countRule(ctx, s, st)
	case *distsql.CreateDatabase:
		return e.createDatabase(ctx, s, st)
	case *distsql.DropDatabase:
		return e.dropDatabase(ctx, s, st)

	// keys.go
	case *distsql.ShowKeyGenerateAlgorithmPlugins:
		return e.showKeyGenerateAlgorithmPlugins(ctx, s, st)
	case *distsql.ShowNextKeys:
		return e.showNextKeys(ctx, s, st)

	// refresh.go
	case *distsql.RefreshDatabaseMetadata:
		return e.refreshDatabaseMetadata(ctx, s, st)

	// ral.go
	case *distsql.RefreshTableMetadata:
		return e.refreshTableMetadata(ctx, s, st)
	case *distsql.ShowTableMetadata:
		return e.showTableMetadata(ctx, s, st)
	case *distsql.ExportStorageNodes:
		return e.exportStorageNodes(ctx, s, st)
	case *distsql.AlterComputeNode:
		return e.alterComputeNode(ctx, s, st)
	case *distsql.ShowPlugins:
		return e.showPlugins(ctx, s, st)
	case *distsql.ConvertYamlConfiguration:
		return e.convertYamlConfiguration(ctx, s, st)

	// importexport.go
	case *distsql.ExportDatabaseConfiguration:
		return e.exportDatabaseConfiguration(ctx, s, st)
	case *distsql.ImportDatabaseConfiguration:
		return e.importDatabaseConfiguration(ctx, s, st)
	case *distsql.ExportMetadata:
		return e.exportMetadata(ctx, s, st)
	case *distsql.ImportMetadata:
		return e.importMetadata(ctx, s, st)

	// processlist.go
	case *distsql.ShowProcesslist:
		return e.showProcesslist(ctx, s, st)
	case *distsql.Kill:
		return e.kill(ctx, s, st)

	// connect.go
	case *distsql.Select:
		return e.selectStatement(ctx, s, st)
	case *distsql.SetVariables:
		return e.setVariables(ctx, s, st)
	case *distsql.ShowDatabases:
		return e.showDatabases(ctx, s, st)
	case *distsql.ShowTables:
		return e.showTables(ctx, s, st)
	case *distsql.ShowLogicalTables: // logictables.go
		return e.showLogicalTables(ctx, s, st)
	case *distsql.NoEngine:
		return nil, noEngine(st)
	case *distsql.AlterReadwriteSplittingStatus: // rwstatus.go
		return e.alterReadwriteStatus(ctx, s, st)
	case *distsql.ShowVariables:
		return e.showVariables(ctx, s, st)
	case *distsql.ShowWarnings:
		return &Result{Columns: []Column{{Name: "Level"}, {Name: "Code", Type: Int64}, {Name: "Message"}}}, nil
	case *distsql.Use:
		return e.use(ctx, s, st)
	case *distsql.Transaction:
		return &Result{}, nil
	}
	return nil, unsupported(fmt.Sprintf("%T", st))
}

// str returns a pointer to s, for result rows.
func str(s string) *string { return &s }

// textColumns returns Text columns named names.
func textColumns(names ...string) []Column {
	cols := make([]Column, len(names))
	for i, n := range names {
		cols[i] = Column{Name: n}
	}
	return cols
}

// layoutNow is the registry layout the node writes now: Deps.LayoutNow
// when set, else static (the layout it was configured with).
func (e *Engine) layoutNow(static paths.Layout) paths.Layout {
	if e.d.LayoutNow != nil {
		return e.d.LayoutNow.Load()
	}
	return static
}
