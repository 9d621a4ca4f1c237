// Package dbconfig is EXPORT DATABASE CONFIGURATION and IMPORT DATABASE
// CONFIGURATION: a logical database (its storage units and rules) as the
// YAML of a database-*.yaml file, written the way ShardingSphere's
// DatabaseExportMetaDataGenerator writes it, and read back all or nothing.
//
// Import validates everything before it writes anything: the YAML, the
// database name, every storage unit (a real connection), every rule
// (references to units and algorithms, algorithm types). Then it writes
// the whole database in one registry transaction (an etcd Txn, a
// ZooKeeper multi). A database too big for one transaction (see
// DefaultMaxTxnKeys, DefaultMaxTxnBytes) is written in several, in order;
// when one of them fails, the ones before are deleted again. Either way a
// failed import leaves the registry as it was.
package dbconfig

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/registry"
)

// UnknownDatabaseError is the error of a call on a database the metadata
// does not hold (ShardingSphere's UnknownDatabaseException; each front
// end answers it with its own code).
type UnknownDatabaseError struct {
	Name string
}

func (e *UnknownDatabaseError) Error() string { return fmt.Sprintf("Unknown database '%s'.", e.Name) }

// unsupported is UnsupportedSQLOperationException (30001, 0A000).
func unsupported(format string, args ...any) *sqlerr.Error {
	return &sqlerr.Error{Code: 30001, SQLState: "0A000", Message: "Unsupported SQL operation: " + fmt.Sprintf(format, args...)}
}

// Export returns database db of snap as ShardingSphere exports it:
// databaseName, then dataSources (each unit's standard connection and pool
// properties, the password included: the export is what an import needs),
// then rules, each a tagged YAML item (!SHARDING, ...). It returns an
// *UnknownDatabaseError when snap has no database db.
func Export(snap *metadata.Snapshot, db string) ([]byte, error) {
	d := snap.Databases[db]
	if d == nil {
		return nil, noDatabase(db)
	}
	var b bytes.Buffer
	b.WriteString("databaseName: " + yamlScalar(d.Name) + "\n")
	if len(d.Units) > 0 {
		b.WriteString("dataSources:\n")
		for _, name := range slices.Sorted(mapsKeys(d.Units)) {
			b.WriteString("  " + yamlScalar(name) + ":\n")
			m := d.Units[name].Map()
			for _, k := range slices.Sorted(mapsKeys(m)) {
				v, err := marshalOneLine(map[string]any{k: m[k]})
				if err != nil {
					return nil, fmt.Errorf("unit %s: %s: %w", name, k, err)
				}
				b.WriteString(indent(string(v), "    "))
			}
		}
	}
	if len(d.Rules) > 0 {
		var nodes []*yaml.Node
		for _, typ := range slices.Sorted(mapsKeys(d.Rules)) {
			r := d.Rules[typ]
			if len(r.Content) == 0 {
				continue
			}
			var n yaml.Node
			if err := n.Encode(r.Content); err != nil {
				return nil, fmt.Errorf("rule %s: %w", typ, err)
			}
			quoteBreaks(&n)
			n.Tag = "!" + strings.ToUpper(typ)
			nodes = append(nodes, &n)
		}
		if len(nodes) > 0 {
			var buf bytes.Buffer
			enc := yaml.NewEncoder(&buf)
			enc.SetIndent(2)
			if err := enc.Encode(&yaml.Node{Kind: yaml.SequenceNode, Content: nodes}); err != nil {
				return nil, fmt.Errorf("rules: %w", err)
			}
			_ = enc.Close()
			b.WriteString("rules:\n")
			b.Write(buf.Bytes())
		}
	}
	return b.Bytes(), nil
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func yamlScalar(s string) string {
	out, err := marshalOneLine(s)
	if err != nil {
		return s
	}
	return strings.TrimSuffix(string(out), "\n")
}

// marshalOneLine is yaml.Marshal with quoteBreaks applied.
func marshalOneLine(v any) ([]byte, error) {
	var n yaml.Node
	if err := n.Encode(v); err != nil {
		return nil, err
	}
	quoteBreaks(&n)
	return yaml.Marshal(&n)
}

// quoteBreaks makes every scalar of n (keys and values) that holds a line
// break double-quoted, its breaks escaped: no value of an export starts a
// line of its own, so a file where lines mean something (authorized_keys,
// crontab) gets no line from a value.
func quoteBreaks(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && strings.ContainsAny(n.Value, "\n\r\u0085\u2028\u2029") {
		n.Style = yaml.DoubleQuotedStyle
	}
	for _, c := range n.Content {
		quoteBreaks(c)
	}
}

func indent(s, prefix string) string {
	lines := strings.SplitAfter(s, "\n")
	var b strings.Builder
	for _, l := range lines {
		if l != "" {
			b.WriteString(prefix + l)
		}
	}
	return b.String()
}

// Options configures Import.
type Options struct {
	// Layout places the rule items (the target release).
	Layout paths.Layout
	// Ping checks one storage unit with a real connection; nil means
	// datasource.Ping.
	Ping func(ctx context.Context, unit string, ds config.DataSource) error
	// Introspect, when set, reads the real schemas of the database, whose
	// tables are written in the same transaction(s).
	Introspect func(ctx context.Context, db config.Database) ([]datasource.Schema, error)
	// Session commits the transactions; nil means a session of Import's
	// own, closed before it returns.
	Session registry.Session
	// MaxTxnKeys and MaxTxnBytes bound one transaction; zero means
	// DefaultMaxTxnKeys, DefaultMaxTxnBytes.
	MaxTxnKeys  int
	MaxTxnBytes int
	// Statement is the import as run, shown (masked by the caller) in the
	// mark that says a database is being imported (ImportMark); Instance
	// the node running it.
	Statement string
	Instance  string
	// ListenerHold is how long the database listener coordinator node
	// (/states/database_listener_coordinator/{db} = CREATE, through which
	// ShardingSphere nodes add a database) stays after the write; zero
	// means metadata.ListenerHold. Only tests set it.
	ListenerHold time.Duration
}

// Result says what Import wrote.
type Result struct {
	Database     string
	Keys         int // registry keys written
	Transactions int
}

// pingParallelism bounds the storage units Import connects to at once.
const pingParallelism = 8

// Import reads a database configuration (a database-*.yaml document,
// source names it in messages) and creates the database in the registry,
// all or nothing (see the package doc). It returns an *sqlerr.Error for every
// refusal, before anything is written: no databaseName (30001), a database
// that exists with storage units (30001), no storage units (10101), units
// that do not connect (10110), rules that fail their checks (102xx-104xx;
// the first problem's code, every problem in the message). ctx bounds
// everything.
func Import(ctx context.Context, repo registry.Repository, source string, data []byte, opts Options) (Result, error) {
	p, err := prepare(ctx, repo, source, data, opts)
	if err != nil {
		return Result{}, err
	}
	txns, err := write(ctx, repo, []*plan{p}, registry.Txn{}, opts)
	if err != nil {
		return Result{}, err
	}
	return Result{Database: p.name, Keys: len(p.kvs), Transactions: txns}, nil
}

// plan is one database ready to be written.
type plan struct {
	name  string
	kvs   []registry.KV   // keys to create
	conds []registry.Cond // keys that must keep their version
	undo  *undoer
	// markVersion is the version of a mark a dead import left without a
	// database (replaced), 0 when there is none.
	markVersion registry.Version
}

// prepare parses and checks one database configuration and reads what the
// registry holds of it; it writes nothing.
func prepare(ctx context.Context, repo registry.Repository, source string, data []byte, opts Options) (*plan, error) {
	db, err := config.ParseDatabase(source, data)
	if err != nil {
		if strings.Contains(err.Error(), "databaseName") && strings.Contains(err.Error(), "required") {
			return nil, unsupported("Property `databaseName` in imported config is required")
		}
		return nil, unsupported("invalid database configuration: %v", err)
	}
	if db == nil || db.Name == "" {
		return nil, unsupported("Property `databaseName` in imported config is required")
	}
	dbKey, err := paths.Database(db.Name)
	if err != nil {
		return nil, unsupported("database name %q: %v", db.Name, err)
	}
	units, err := repo.Children(ctx, dbKey+"/data_sources/units")
	if err != nil {
		return nil, err
	}
	mark, markVersion, err := readMark(ctx, repo, db.Name)
	if err != nil {
		return nil, err
	}
	if markVersion != 0 {
		// A mark left by an import that died: the database is half-written
		// (or, with no database node, the import died before writing it,
		// and the mark is replaced).
		if has, err := exists(ctx, repo, dbKey); err != nil || has {
			if err != nil {
				return nil, err
			}
			return nil, unsupported("%s", mark.Advice())
		}
	}
	if len(units) > 0 {
		return nil, unsupported("Database `%s` exists and is not empty, overwrite is not supported", db.Name)
	}
	if len(db.DataSources) == 0 {
		return nil, rule.EmptyStorageUnits(db.Name)
	}
	if err := pingAll(ctx, *db, opts.Ping); err != nil {
		return nil, err
	}
	errs, err := checkRules(ctx, *db)
	if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Message
		}
		return nil, &sqlerr.Error{Code: errs[0].Code, SQLState: errs[0].SQLState, Message: strings.Join(msgs, " ")}
	}
	kvs, err := metadata.DatabaseWrites(opts.Layout, *db)
	if err != nil {
		return nil, unsupported("%v", err)
	}
	if err := metadata.CheckRuleReaders(ctx, repo, opts.Layout, db.Name, db.Rules...); err != nil {
		return nil, err
	}
	if opts.Introspect != nil {
		schemas, err := opts.Introspect(ctx, *db)
		if err != nil {
			return nil, &sqlerr.Error{Code: 10012, SQLState: "HY000", Message: fmt.Sprintf("Load table meta data failed for database '%s': %v", db.Name, err)}
		}
		more, err := metadata.SchemaWrites(opts.Layout, db.Name, schemas)
		if err != nil {
			return nil, err
		}
		kvs = append(kvs, more...)
	}
	p := &plan{name: db.Name, kvs: kvs, markVersion: markVersion}
	if p.undo, err = newUndoer(ctx, repo, dbKey); err != nil {
		return nil, err
	}
	if p.undo.hadDB {
		// An empty database (no units) may be imported into: keep its node
		// as it is, and require it unchanged.
		kv, err := repo.Get(ctx, dbKey)
		if err != nil {
			return nil, err
		}
		p.conds = append(p.conds, registry.Cond{Key: dbKey, Version: kv.Version})
		p.kvs = slices.DeleteFunc(p.kvs, func(kv registry.KV) bool { return kv.Key == dbKey })
	}
	if _, err := opts.Layout.DatabaseListener(db.Name); err != nil { // the CREATE announcement's key
		return nil, err
	}
	return p, nil
}

// write commits the plans' keys and tail (see commitAll), the last
// transaction with the plans' CREATE announcements through
// metadata.Coordinator.Announce, which holds and then deletes them. It
// returns how many transactions it took.
func write(ctx context.Context, repo registry.Repository, plans []*plan, tail registry.Txn, opts Options) (int, error) {
	var kvs []registry.KV
	var head []registry.Cond
	var names []string
	for _, p := range plans {
		kvs = append(kvs, p.kvs...)
		head = append(head, p.conds...)
		names = append(names, p.name)
	}
	sess := opts.Session
	if sess == nil {
		s, err := repo.NewSession(ctx, registry.SessionOptions{})
		if err != nil {
			return 0, fmt.Errorf("open a registry session for the import: %w", err)
		}
		defer s.Close(context.WithoutCancel(ctx))
		sess = s
	}
	maxKeys, maxBytes := opts.MaxTxnKeys, opts.MaxTxnBytes
	if maxKeys <= 0 {
		maxKeys = DefaultMaxTxnKeys
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxTxnBytes
	}
	// The marks: written first, each deleted in the last transaction, so a
	// database stays marked for as long as it may be half-written.
	var marks []registry.Cond
	dropMarks := func() {
		for _, m := range marks {
			_, _ = sess.Commit(context.WithoutCancel(ctx), registry.Txn{Conds: []registry.Cond{m}, Ops: []registry.Op{{Key: m.Key, Delete: true}}})
		}
	}
	for _, p := range plans {
		key, err := paths.Import(p.name)
		if err != nil {
			return 0, err
		}
		val, err := json.Marshal(ImportMark{Database: p.name, Statement: opts.Statement, Instance: opts.Instance, Started: time.Now()})
		if err != nil {
			return 0, err
		}
		v, err := sess.Commit(ctx, registry.Txn{Conds: []registry.Cond{{Key: key, Version: p.markVersion}}, Ops: []registry.Op{{Key: key, Value: val}}})
		if err != nil {
			dropMarks()
			if errors.Is(err, registry.ErrExists) || errors.Is(err, registry.ErrBadVersion) || errors.Is(err, registry.ErrNotFound) {
				return 0, unsupported("database %s is being imported by another statement; nothing was imported", p.name)
			}
			return 0, fmt.Errorf("import: mark %s: %w", key, err)
		}
		marks = append(marks, registry.Cond{Key: key, Version: v})
		tail.Conds = append(tail.Conds, registry.Cond{Key: key, Version: v})
		tail.Ops = append(tail.Ops, registry.Op{Key: key, Delete: true})
	}
	rolledBack := true
	undo := func(ctx context.Context) error {
		var errs []error
		for _, p := range plans {
			errs = append(errs, p.undo.undo(ctx))
		}
		err := errors.Join(errs...)
		rolledBack = err == nil
		return err
	}
	// The last transaction carries the CREATE announcements: a node that
	// follows one loads the whole database (metadata.Coordinator.Announce).
	announcer := metadata.Coordinator{Repo: repo, Session: sess, Layout: opts.Layout, Hold: opts.ListenerHold}
	commit := func(ctx context.Context, txn registry.Txn, last bool) error {
		if last {
			return announcer.Announce(ctx, metadata.Announcement{Databases: names, Create: true, With: txn})
		}
		_, err := sess.Commit(ctx, txn)
		return err
	}
	txns, err := commitAll(ctx, commit, kvs, head, tail, maxKeys-len(names), maxBytes, undo)
	if err != nil {
		if rolledBack {
			dropMarks() // nothing of the import is left
		}
		var oe *registry.OpError
		if errors.As(err, &oe) && (errors.Is(err, registry.ErrExists) || errors.Is(err, registry.ErrBadVersion) || errors.Is(err, registry.ErrNotFound)) {
			return txns, unsupported("%s changed during the import; nothing was imported", oe.Key)
		}
		return txns, fmt.Errorf("import: %w", err)
	}
	return txns, nil
}

// pingAll connects to every unit of db, at most pingParallelism at once,
// and returns 10110 naming every unit that failed.
func pingAll(ctx context.Context, db config.Database, ping func(context.Context, string, config.DataSource) error) error {
	if ping == nil {
		ping = datasource.Ping
	}
	names := slices.Sorted(mapsKeys(db.DataSources))
	errs := make([]error, len(names))
	sem := make(chan struct{}, pingParallelism)
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = ping(ctx, name, db.DataSources[name])
		}()
	}
	wg.Wait()
	var msgs []string
	for i, err := range errs {
		if err != nil {
			msgs = append(msgs, fmt.Sprintf("%s: %v", names[i], err))
		}
	}
	if len(msgs) > 0 {
		return &sqlerr.Error{Code: 10110, SQLState: "08000", Message: fmt.Sprintf("Storage units can not connect, error messages are: [%s].", strings.Join(msgs, "; "))}
	}
	return nil
}
