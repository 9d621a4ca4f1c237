// Package distsql is the chaos harness's DistSQL workload: clients on the
// MySQL consoles of every node run rule changes (CREATE and DROP of a few
// broadcast tables, SET DIST VARIABLE) and reads (the SHOW of each), and
// record every operation with its real-time bounds for package linear,
// reads and refusals as observations of the view of the node that answered
// them (linear.Op.Node: n1, n2, ... in the order of Config.Consoles).
package distsql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/tools/chaos/linear"
)

// Tables are the broadcast tables the clients create and drop; their
// registers are named BroadcastKey(table).
var Tables = []string{"t_b0", "t_b1", "t_b2"}

// Variable is the dist variable the clients set to "true" or "false"; its
// register is PropsKey.
const Variable = "sql_show"

// PropsKey is the register of Variable.
const PropsKey = "props/" + Variable

// BroadcastKey is the register of a broadcast table.
func BroadcastKey(table string) string { return "broadcast/" + table }

// Codes of the console's refusals that say the statement's condition did
// not hold and nothing changed.
const (
	codeMissingRule   = 10202 // DROP of an absent rule
	codeDuplicateRule = 10204 // CREATE of a present rule
)

// Config configures Run.
type Config struct {
	// Consoles are the MySQL addresses (host:port) of the nodes, one each.
	Consoles []string
	// Database is the logical database the rules belong to; it must
	// exist, with a storage unit.
	Database string
	// User and Password log in to every console.
	User, Password string
	// ClientsPerNode is the number of clients on each console; 0 means 2.
	ClientsPerNode int
	// Seed chooses the clients' operations.
	Seed int64
	// Timeout bounds one operation; an operation without an answer by then
	// is of unknown outcome. 0 means 15 s.
	Timeout time.Duration
	// Dir is the run directory; the history goes to Dir/linear.HistoryDir.
	Dir string
	// Registry, when set, is a client of the cluster's registry: a reader
	// reads the broadcast tables from it as the view "registry" while the
	// workload runs, and once more after the nodes' views agree. Its read
	// (metadata.ReadDatabase, one List) is an observation of one moment
	// only where List is one snapshot: etcd's range read. ZooKeeper's List
	// walks the tree and can return a state that never was, so do not set
	// it there.
	Registry registry.Repository
	// Settle bounds how long, after ctx is done, Run waits for every
	// node's view to agree; 0 means 30 s.
	Settle time.Duration
}

// Stats is what Run measured.
type Stats struct {
	// Ops is the number of operations recorded.
	Ops int
	// Converged is the time from the end of the workload until one round
	// of reads found every node's view equal (the first round: 0).
	Converged time.Duration
	// Rounds is the number of read rounds it took.
	Rounds int
}

// Run runs the workload until ctx is done, then reads every node's view
// in rounds (recorded too, so that the check finds an acknowledged change
// they miss) until all views agree. It first sets Variable to "false"
// (recorded, so the history starts from a known value). It returns an
// error when the history cannot be recorded, the first operation fails or
// the views do not agree within cfg.Settle; a failing statement is an
// outcome, not an error.
func Run(ctx context.Context, cfg Config) (Stats, error) {
	var st Stats
	if cfg.ClientsPerNode == 0 {
		cfg.ClientsPerNode = 2
	}
	if cfg.Settle == 0 {
		cfg.Settle = 30 * time.Second
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 15 * time.Second
	}
	if len(cfg.Consoles) == 0 {
		return st, errors.New("distsql: no console")
	}
	hist := filepath.Join(cfg.Dir, linear.HistoryDir)
	if err := os.MkdirAll(hist, 0o755); err != nil {
		return st, err
	}
	var clients []*client
	for i := 0; i < len(cfg.Consoles)*cfg.ClientsPerNode; i++ {
		addr := cfg.Consoles[i%len(cfg.Consoles)]
		c, err := newClient(cfg, i, fmt.Sprintf("n%d", i%len(cfg.Consoles)+1), addr, filepath.Join(hist, fmt.Sprintf("c%d.jsonl", i)))
		if err != nil {
			closeAll(clients)
			return st, err
		}
		clients = append(clients, c)
	}
	defer closeAll(clients)
	var reg *client
	if cfg.Registry != nil {
		reg = &client{id: len(clients), node: RegistryView, rec: linear.NewRecorder(filepath.Join(hist, "registry.jsonl")),
			timeout: cfg.Timeout}
	}
	first := clients[0].set(ctx, "false")
	if first.Outcome != linear.OK {
		return Stats{Ops: 1}, fmt.Errorf("distsql: the first SET DIST VARIABLE %s on %s did not succeed", Variable, clients[0].addr)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(clients)+1)
	if reg != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && reg.recErr == nil {
				reg.readRegistry(ctx, cfg.Registry, cfg.Database)
				time.Sleep(10 * time.Millisecond)
			}
			errs[len(clients)] = reg.recErr
		}()
	}
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.loop(ctx)
		}()
	}
	wg.Wait()
	var err error
	st.Converged, st.Rounds, err = settle(clients[:len(cfg.Consoles)], cfg.Settle)
	errs = append(errs, err)
	if reg != nil {
		final, cancel := context.WithTimeout(context.Background(), cfg.Timeout)
		if reg.readRegistry(final, cfg.Registry, cfg.Database) == nil {
			errs = append(errs, errors.New("distsql: the registry could not be read after the workload"))
		}
		cancel()
		errs = append(errs, reg.recErr)
		st.Ops += reg.ops
	}
	for _, c := range clients {
		st.Ops += c.ops
	}
	return st, errors.Join(errs...)
}

// settle reads the view of every node (one client each) in rounds, 50 ms
// apart, until a round finds them all answering and equal, and says how
// long after its call that took and how many rounds.
func settle(clients []*client, bound time.Duration) (time.Duration, int, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	for round := 1; ; round++ {
		var views []string
		for _, c := range clients {
			views = append(views, c.view(ctx))
		}
		if !slices.Contains(views, "") && len(slices.Compact(slices.Clone(views))) == 1 {
			return time.Since(start), round, nil
		}
		select {
		case <-ctx.Done():
			return time.Since(start), round, fmt.Errorf("distsql: the nodes' views did not agree within %v of the workload's end: %q", bound, views)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// view reads the node's view of every register, recorded, and returns it
// as one string; "" when a read failed.
func (c *client) view(ctx context.Context) string {
	tables := c.readTables(ctx)
	variable := c.readVariable(ctx)
	if tables == nil || variable.Outcome != linear.OK {
		return ""
	}
	var b strings.Builder
	for _, o := range append(tables, variable) {
		fmt.Fprintf(&b, "%s=%v:%s ", o.Key, o.Present, o.Value)
	}
	return b.String()
}

func closeAll(cs []*client) {
	for _, c := range cs {
		_ = c.db.Close()
	}
}

// client is one console client: one connection, one operation at a time.
type client struct {
	id      int
	node    string // the name of the node whose console it uses: n1, n2, ...
	addr    string
	db      *sql.DB
	rec     *linear.Recorder
	rnd     *rand.Rand
	timeout time.Duration
	ops     int
	recErr  error
}

func newClient(cfg Config, id int, node, addr, path string) (*client, error) {
	mc := mysql.NewConfig()
	mc.User, mc.Passwd, mc.Net, mc.Addr, mc.DBName = cfg.User, cfg.Password, "tcp", addr, cfg.Database
	mc.Timeout = cfg.Timeout
	connector, err := mysql.NewConnector(mc)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(1)
	return &client{id: id, node: node, addr: addr, db: db, rec: linear.NewRecorder(path),
		rnd: rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(id))), timeout: cfg.Timeout}, nil
}

// loop runs operations until ctx is done or the history cannot be written.
func (c *client) loop(ctx context.Context) error {
	for ctx.Err() == nil && c.recErr == nil {
		table := Tables[c.rnd.IntN(len(Tables))]
		switch r := c.rnd.IntN(10); {
		case r < 3:
			c.readTables(ctx)
		case r < 4:
			c.readVariable(ctx)
		case r < 5:
			c.set(ctx, []string{"true", "false"}[c.rnd.IntN(2)])
		case r < 8:
			lenient := c.rnd.IntN(2) == 0
			stmt := "CREATE BROADCAST TABLE RULE " + table
			if lenient {
				stmt = "CREATE BROADCAST TABLE RULE IF NOT EXISTS " + table
			}
			c.write(ctx, linear.Op{Key: BroadcastKey(table), Kind: linear.Create, Lenient: lenient, Value: "1"}, stmt, codeDuplicateRule)
		default:
			lenient := c.rnd.IntN(2) == 0
			stmt := "DROP BROADCAST TABLE RULE " + table
			if lenient {
				stmt = "DROP BROADCAST TABLE RULE IF EXISTS " + table
			}
			c.write(ctx, linear.Op{Key: BroadcastKey(table), Kind: linear.Drop, Lenient: lenient}, stmt, codeMissingRule)
		}
	}
	if ctx.Err() != nil {
		return c.recErr
	}
	return fmt.Errorf("distsql: client %d: recording: %w", c.id, c.recErr)
}

// set runs SET DIST VARIABLE Variable = value.
func (c *client) set(ctx context.Context, value string) linear.Op {
	return c.write(ctx, linear.Op{Key: PropsKey, Kind: linear.Set, Value: value},
		fmt.Sprintf("SET DIST VARIABLE %s = %s", Variable, value), 0)
}

// write runs stmt as op: OK when it succeeds, Refused when the console
// answers refusedCode (its condition did not hold), Unknown otherwise.
func (c *client) write(ctx context.Context, op linear.Op, stmt string, refusedCode uint16) linear.Op {
	done := c.invoke(&op)
	opCtx, cancel := context.WithTimeout(ctx, c.timeout)
	_, err := c.db.ExecContext(opCtx, stmt)
	cancel()
	op.Return = time.Now().UnixNano()
	var me *mysql.MySQLError
	switch {
	case err == nil:
		op.Outcome = linear.OK
	case refusedCode != 0 && errors.As(err, &me) && me.Number == refusedCode:
		op.Outcome = linear.Refused
	default:
		op.Outcome = linear.Unknown
	}
	done(op)
	return op
}

// RegistryView is the linear.Op.Node of the reads of the registry itself.
const RegistryView = "registry"

// readTables runs SHOW BROADCAST TABLE RULES: one read of every table's
// register, with the statement's bounds. It returns the reads, nil when the
// statement failed.
func (c *client) readTables(ctx context.Context) []linear.Op {
	return c.observeTables(ctx, func(ctx context.Context) ([]string, error) {
		return c.column(ctx, "SHOW BROADCAST TABLE RULES", "broadcast_table")
	})
}

// readRegistry reads database db's broadcast tables from repo, as a node
// would apply them: one read of every table's register. It returns the
// reads, nil when the registry could not be read.
func (c *client) readRegistry(ctx context.Context, repo registry.Repository, db string) []linear.Op {
	return c.observeTables(ctx, func(ctx context.Context) ([]string, error) {
		ctx, cancel := context.WithTimeout(ctx, c.timeout)
		defer cancel()
		d, _, err := metadata.ReadDatabase(ctx, repo, db)
		if err != nil {
			return nil, err
		}
		return rule.List(d.Rules["broadcast"].Content["tables"]), nil
	})
}

// observeTables records one read of every table's register, with the
// bounds of the call of tables (the names of the broadcast tables the view
// holds). It returns the reads, nil when tables failed.
func (c *client) observeTables(ctx context.Context, tables func(context.Context) ([]string, error)) []linear.Op {
	ops := make([]linear.Op, len(Tables))
	dones := make([]func(linear.Op), len(Tables))
	for i, t := range Tables {
		ops[i] = linear.Op{Key: BroadcastKey(t), Kind: linear.Read}
		dones[i] = c.invoke(&ops[i])
	}
	present, err := tables(ctx)
	end := time.Now().UnixNano()
	for i, t := range Tables {
		ops[i].Return, ops[i].Outcome = end, linear.Unknown
		if err == nil {
			ops[i].Outcome, ops[i].Present = linear.OK, slices.Contains(present, t)
			if ops[i].Present {
				ops[i].Value = "1"
			}
		}
		dones[i](ops[i])
	}
	if err != nil {
		return nil
	}
	return ops
}

// readVariable runs SHOW DIST VARIABLE WHERE NAME = Variable and returns
// the read.
func (c *client) readVariable(ctx context.Context) linear.Op {
	op := linear.Op{Key: PropsKey, Kind: linear.Read}
	done := c.invoke(&op)
	values, err := c.column(ctx, "SHOW DIST VARIABLE WHERE NAME = "+Variable, "variable_value")
	op.Return, op.Outcome = time.Now().UnixNano(), linear.Unknown
	if err == nil && len(values) == 1 {
		op.Outcome, op.Present, op.Value = linear.OK, true, values[0]
	}
	done(op)
	return op
}

// column runs query and returns the values of its column name.
func (c *client) column(ctx context.Context, query, name string) ([]string, error) {
	opCtx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	rows, err := c.db.QueryContext(opCtx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	at := slices.Index(cols, name)
	if at < 0 {
		return nil, fmt.Errorf("%s: no column %s in %v", query, name, cols)
	}
	var out []string
	dest := make([]any, len(cols))
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		for i := range vals {
			dest[i] = &vals[i]
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		out = append(out, vals[at].String)
	}
	return out, rows.Err()
}

// invoke stamps op's call time and records its invocation; the function
// it returns records its completion. A recording error stops the client.
func (c *client) invoke(op *linear.Op) func(linear.Op) {
	op.Client, op.Node = c.id, c.node
	op.Call = time.Now().UnixNano()
	id, err := c.rec.Invoke(*op)
	c.ops++
	if err != nil && c.recErr == nil {
		c.recErr = err
	}
	return func(done linear.Op) {
		if err := c.rec.Complete(id, done); err != nil && c.recErr == nil {
			c.recErr = err
		}
	}
}
