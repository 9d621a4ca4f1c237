// Package distsql is the chaos harness's DistSQL workload: clients on the
// MySQL consoles of every node run rule changes (CREATE and DROP of a few
// broadcast tables, CREATE, ALTER and DROP of two sharding tables and a
// readwrite-splitting group, SET DIST VARIABLE) and reads (the SHOW of
// each), and
// record every operation with its real-time bounds for package linear,
// reads and refusals as observations of the view of the node that answered
// them (linear.Op.Node: n1, n2, ... in the order of Config.Consoles).
package distsql

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/shardkeeper/shardkeeper/internal/distvar"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/rule/readwrite"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/tools/chaos/linear"
	"github.com/shardkeeper/shardkeeper/tools/chaos/record"
)

// Tables are the broadcast tables the clients create and drop; their
// registers are named BroadcastKey(table).
var Tables = []string{"t_b0", "t_b1", "t_b2"}

// ShardingTables are the sharding tables the clients create, alter (their
// data nodes) and drop; their registers are named ShardingKey(table) and
// hold the table's data nodes (ShardingNodes).
var ShardingTables = []string{"t_s0", "t_s1"}

// Groups are the readwrite-splitting groups the clients create, alter
// (their read units) and drop, writing to storage unit ds_0 and reading
// from ds_1, or ds_0 and ds_1; their registers are named
// ReadwriteKey(group) and hold the read units as SHOW lists them
// ("ds_0,ds_1"). No load balancer: a group with one is two rule items (the
// group, the load balancer), which a change writes together and a
// ZooKeeper node's view may apply one at a time (docs/chaos.md, "Open,
// ZooKeeper seed 1").
var Groups = []string{"rw0"}

// ShardingKey is the register of a sharding table.
func ShardingKey(table string) string { return "sharding/" + table }

// ReadwriteKey is the register of a readwrite-splitting group.
func ReadwriteKey(group string) string { return "readwrite_splitting/" + group }

// ShardingNodes is the data nodes expression of sharding table t with n+1
// tables on ds_0, the value of its register.
func ShardingNodes(t string, n int) string { return fmt.Sprintf("ds_0.%s_${0..%d}", t, n) }

// readUnits are the read units a readwrite-splitting group is given.
var readUnits = []string{"ds_1", "ds_0,ds_1"}

// family is one kind of rule item the clients change and read: its items,
// statements, SHOW and where its content keeps the items.
type family struct {
	name   string   // the rule type in the registry and the HTTP API
	items  []string // the items' names
	key    func(item string) string
	show   string // the SHOW of every item
	column string // its column of the items' names
	value  string // its column of the items' values, or "" (value "1")
	// values returns a value an item may be given (rnd chooses).
	values func(item string, rnd *rand.Rand) string
	create func(item, value string, ifNotExists bool) string
	alter  func(item, value string) string // nil: no ALTER
	drop   func(item string, ifExists bool) string
	// content returns the value of each item the rule's content holds.
	content func(c map[string]any) map[string]string
}

// ifNot returns word when b, else "".
func ifNot(b bool, word string) string {
	if b {
		return word
	}
	return ""
}

// families are the rule items of the workload: broadcast tables, sharding
// tables and a readwrite-splitting group.
var families = []family{
	{
		name: "broadcast", items: Tables, key: BroadcastKey,
		show: "SHOW BROADCAST TABLE RULES", column: "broadcast_table",
		values: func(string, *rand.Rand) string { return "1" },
		create: func(t, _ string, ine bool) string {
			return "CREATE BROADCAST TABLE RULE " + ifNot(ine, "IF NOT EXISTS ") + t
		},
		drop: func(t string, ie bool) string { return "DROP BROADCAST TABLE RULE " + ifNot(ie, "IF EXISTS ") + t },
		content: func(c map[string]any) map[string]string {
			out := map[string]string{}
			for _, t := range rule.List(c["tables"]) {
				out[t] = "1"
			}
			return out
		},
	},
	{
		name: "sharding", items: ShardingTables, key: ShardingKey,
		show: "SHOW SHARDING TABLE RULES", column: "table", value: "actual_data_nodes",
		values: func(t string, rnd *rand.Rand) string { return ShardingNodes(t, rnd.IntN(3)) },
		create: func(t, v string, ine bool) string {
			return fmt.Sprintf("CREATE SHARDING TABLE RULE %s%s (DATANODES('%s'))", ifNot(ine, "IF NOT EXISTS "), t, v)
		},
		alter: func(t, v string) string { return fmt.Sprintf("ALTER SHARDING TABLE RULE %s (DATANODES('%s'))", t, v) },
		drop:  func(t string, ie bool) string { return "DROP SHARDING TABLE RULE " + ifNot(ie, "IF EXISTS ") + t },
		content: func(c map[string]any) map[string]string {
			out := map[string]string{}
			for t, body := range rule.Map(c["tables"]) {
				out[t] = rule.Text(rule.Map(body)["actualDataNodes"])
			}
			return out
		},
	},
	{
		name: "readwrite_splitting", items: Groups, key: ReadwriteKey,
		show: "SHOW READWRITE_SPLITTING RULES", column: "name", value: "read_storage_unit_names",
		values: func(_ string, rnd *rand.Rand) string { return readUnits[rnd.IntN(len(readUnits))] },
		create: func(g, v string, ine bool) string {
			return fmt.Sprintf("CREATE READWRITE_SPLITTING RULE %s%s (WRITE_STORAGE_UNIT=ds_0, READ_STORAGE_UNITS(%s))", ifNot(ine, "IF NOT EXISTS "), g, v)
		},
		alter: func(g, v string) string {
			return fmt.Sprintf("ALTER READWRITE_SPLITTING RULE %s (WRITE_STORAGE_UNIT=ds_0, READ_STORAGE_UNITS(%s))", g, v)
		},
		drop: func(g string, ie bool) string { return "DROP READWRITE_SPLITTING RULE " + ifNot(ie, "IF EXISTS ") + g },
		content: func(c map[string]any) map[string]string {
			out := map[string]string{}
			for g, body := range readwrite.Groups(c) {
				out[g] = rule.Text(rule.Map(body)["readDataSourceNames"])
			}
			return out
		},
	},
}

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
	// Readers is the number of clients on each console that only read
	// (the SHOW of each item, ReaderPause apart), besides ClientsPerNode:
	// a node cut off from the registry keeps answering them while its
	// other clients wait for their changes.
	Readers int
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
	// RegistryFinalOnly reads Registry only once, after the nodes' views
	// agree and the workload has stopped (a ZooKeeper registry: its List
	// is then one state, nothing changing it).
	RegistryFinalOnly bool
	// Settle bounds how long, after ctx is done, Run waits for every
	// node's view to agree; 0 means 30 s.
	Settle time.Duration
	// HTTP are the base URLs of the nodes' HTTP APIs
	// ("http://host:port"), in the order of Consoles, or none. With them,
	// a third of the clients' CREATE and DROP statements go to the HTTP
	// API (POST /api/v1/databases/{db}/rules) with Token. Their refusals
	// are decided from what the registry held during the call, so they are
	// recorded as observations of the view "registry".
	HTTP  []string
	Token string
	// InstanceIDs are the nodes' instance ids. With Registry, after the
	// views agree, Run waits (within Settle) until every one of them
	// acknowledges the digest of the rules the registry holds for
	// Database (distvar.Ack).
	InstanceIDs []string
	// Racers is the number of clients, on the nodes in turn (n1, n2, ...),
	// that run the same rule change at the same moment, besides
	// ClientsPerNode and Readers: every round they meet, then all run a
	// CREATE of the same new broadcast table (RaceTable) without IF NOT
	// EXISTS, so that several nodes decide the same change from the same
	// registry state. Of such a race at most one may be acknowledged (the
	// others refused); a plain overwrite acknowledges them all, which the
	// check rejects. 0 or 1: no races.
	Racers int
	// Online, when set, returns the instance ids the registry lists
	// online. Run then reads it every OnlinePoll until it returns and
	// records the samples (linear.OnlineName), so that the check leaves
	// out what nodes answered while not online (linear.Online): the
	// guarantee is every online node's.
	Online func(ctx context.Context) ([]string, error)
}

// OnlinePoll is the gap between two readings of the online nodes.
const OnlinePoll = 20 * time.Millisecond

// Stats is what Run measured.
type Stats struct {
	// Ops is the number of operations recorded.
	Ops int
	// Converged is the time from the end of the workload until one round
	// of reads found every node's view equal (the first round: 0).
	Converged time.Duration
	// Rounds is the number of read rounds it took.
	Rounds int
	// RegistryAgrees is true when, with Config.Registry, the registry's
	// broadcast tables read after the views agreed are the ones the views
	// hold.
	RegistryAgrees bool
	// Digests is the time from the end of the workload until every node
	// of Config.InstanceIDs acknowledged the registry's rules digest; 0
	// without them.
	Digests time.Duration
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
	writers := len(cfg.Consoles) * cfg.ClientsPerNode
	readers := len(cfg.Consoles) * cfg.Readers
	var rc *race
	if cfg.Racers > 1 {
		rc = &race{n: cfg.Racers}
	}
	for i := 0; i < writers+readers+cfg.Racers; i++ {
		addr := cfg.Consoles[i%len(cfg.Consoles)]
		c, err := newClient(cfg, i, fmt.Sprintf("n%d", i%len(cfg.Consoles)+1), addr, filepath.Join(hist, fmt.Sprintf("c%d.jsonl", i)))
		for k := 1; err == nil && (i < writers || i >= writers+readers) && k < len(cfg.Consoles); k++ {
			next := (i + k) % len(cfg.Consoles)
			var peer *client
			name := fmt.Sprintf("c%d-peer.jsonl", i)
			if k > 1 {
				name = fmt.Sprintf("c%d-peer%d.jsonl", i, k)
			}
			peer, err = newClient(cfg, i, fmt.Sprintf("n%d", next+1), cfg.Consoles[next], filepath.Join(hist, name))
			if err == nil {
				c.peers = append(c.peers, peer)
			}
		}
		if err == nil {
			c.reader = i >= writers && i < writers+readers
			if i >= writers+readers {
				c.race = rc
			}
			c.views = map[string]string{}
			for j, id := range cfg.InstanceIDs {
				c.views[id] = fmt.Sprintf("n%d", j+1)
			}
		}
		if err == nil && len(cfg.HTTP) == len(cfg.Consoles) {
			c.http, c.token, c.database = cfg.HTTP[i%len(cfg.Consoles)], cfg.Token, cfg.Database
			c.hc = &http.Client{Timeout: cfg.Timeout}
		}
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
	if cfg.Online != nil {
		pollCtx, stopPoll := context.WithCancel(context.Background())
		polled := make(chan struct{})
		go func() {
			defer close(polled)
			pollOnline(pollCtx, cfg, filepath.Join(cfg.Dir, linear.OnlineName))
		}()
		defer func() {
			stopPoll()
			<-polled
		}()
	}
	first := clients[0].set(ctx, "false")
	if first.Outcome != linear.OK {
		return Stats{Ops: 1}, fmt.Errorf("distsql: the first SET DIST VARIABLE %s on %s did not succeed", Variable, clients[0].addr)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(clients)+1)
	if reg != nil && !cfg.RegistryFinalOnly {
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
	var agreed string
	start := time.Now()
	st.Converged, st.Rounds, agreed, err = settle(clients[:len(cfg.Consoles)], cfg.Settle)
	errs = append(errs, err)
	if reg != nil {
		// A change of unknown outcome that the end of the workload cut
		// short may still commit after the views agreed: read the registry
		// and the views again, within cfg.Settle, until they agree.
		for {
			final, cancel := context.WithTimeout(context.Background(), cfg.Timeout)
			read := reg.readRegistry(final, cfg.Registry, cfg.Database)
			cancel()
			if read == nil {
				errs = append(errs, errors.New("distsql: the registry could not be read after the workload"))
				break
			}
			if err != nil {
				break
			}
			st.RegistryAgrees = strings.HasPrefix(agreed, viewString(read))
			left := cfg.Settle - time.Since(start)
			if st.RegistryAgrees || left <= 0 {
				if !st.RegistryAgrees {
					errs = append(errs, fmt.Errorf("distsql: the registry holds %q after the workload, the nodes' views %q", viewString(read), agreed))
				}
				break
			}
			time.Sleep(50 * time.Millisecond)
			var rounds int
			_, rounds, agreed, err = settle(clients[:len(cfg.Consoles)], max(left, time.Millisecond))
			st.Converged, st.Rounds = time.Since(start), st.Rounds+rounds
			errs[len(errs)-1] = err // the last settle's verdict
		}
		errs = append(errs, reg.recErr)
		st.Ops += reg.ops
		if err == nil && len(cfg.InstanceIDs) > 0 {
			derr := awaitDigests(cfg.Registry, cfg.Database, cfg.InstanceIDs, cfg.Settle-st.Converged)
			st.Digests = time.Since(start)
			errs = append(errs, derr)
		}
	}
	for _, c := range clients {
		st.Ops += c.ops
		for _, p := range c.peers {
			st.Ops += p.ops
			errs = append(errs, p.recErr)
		}
	}
	return st, errors.Join(errs...)
}

// pollOnline records, every OnlinePoll until ctx ends, the views of the
// nodes cfg.Online lists online, in path.
func pollOnline(ctx context.Context, cfg Config, path string) {
	views := map[string]string{}
	for j, id := range cfg.InstanceIDs {
		views[id] = fmt.Sprintf("n%d", j+1)
	}
	for ctx.Err() == nil {
		from := time.Now().UnixNano()
		c, cancel := context.WithTimeout(ctx, time.Second)
		ids, err := cfg.Online(c)
		cancel()
		if err == nil {
			smp := linear.OnlineSample{From: from, To: time.Now().UnixNano(), Views: []string{}}
			for _, id := range ids {
				if v, ok := views[id]; ok {
					smp.Views = append(smp.Views, v)
				}
			}
			_ = record.AppendJSONLine(path, smp)
		}
		select {
		case <-ctx.Done():
		case <-time.After(OnlinePoll):
		}
	}
}

// awaitDigests reads, every 50 ms for at most bound, the digest of
// database db's rules in repo and the acknowledgements of the nodes ids,
// until every one acknowledges that digest.
func awaitDigests(repo registry.Repository, db string, ids []string, bound time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), max(bound, time.Second))
	defer cancel()
	var last string
	for {
		d, _, err := metadata.ReadDatabase(ctx, repo, db)
		if err == nil {
			want := d.RulesDigest()
			var differ []string
			for _, id := range ids {
				key, _ := paths.PropsApplied(id)
				kv, err := repo.Get(ctx, key)
				got := "(none)"
				if err == nil {
					got = distvar.ParseAck(kv.Value).Rules[db]
				}
				if got != want {
					differ = append(differ, fmt.Sprintf("%s acknowledges %s", id, got))
				}
			}
			if len(differ) == 0 {
				return nil
			}
			last = fmt.Sprintf("the registry's rules digest is %s, %s", want, strings.Join(differ, ", "))
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("distsql: the nodes' digests did not equal the registry's within %v of the views' agreement: %s", bound, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// settle reads the view of every node (one client each) in rounds, 50 ms
// apart, until a round finds them all answering and equal, and says how
// long after its call that took, how many rounds and the view they agreed on.
func settle(clients []*client, bound time.Duration) (time.Duration, int, string, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	for round := 1; ; round++ {
		var views []string
		for _, c := range clients {
			views = append(views, c.view(ctx))
		}
		if !slices.Contains(views, "") && len(slices.Compact(slices.Clone(views))) == 1 {
			return time.Since(start), round, views[0], nil
		}
		select {
		case <-ctx.Done():
			return time.Since(start), round, "", fmt.Errorf("distsql: the nodes' views did not agree within %v of the workload's end: %q", bound, views)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// view reads the node's view of every register, recorded, and returns it
// as one string; "" when a read failed.
func (c *client) view(ctx context.Context) string {
	var reads []linear.Op
	for i := range families {
		ops := c.readFamily(ctx, &families[i])
		if ops == nil {
			return ""
		}
		reads = append(reads, ops...)
	}
	variable := c.readVariable(ctx)
	if variable.Outcome != linear.OK {
		return ""
	}
	return viewString(append(reads, variable))
}

// viewString is the view the reads ops saw, as one string: the rule
// items' registers first, in the order of families and their items.
func viewString(ops []linear.Op) string {
	var b strings.Builder
	for _, o := range ops {
		fmt.Fprintf(&b, "%s=%v:%s ", o.Key, o.Present, o.Value)
	}
	return b.String()
}

func closeAll(cs []*client) {
	for _, c := range cs {
		_ = c.db.Close()
		for _, p := range c.peers {
			_ = p.db.Close()
		}
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
	// http, when set, is the base URL of the node's HTTP API, where a
	// third of the CREATE and DROP statements go (with token, on
	// database).
	http, token, database string
	hc                    *http.Client
	failed                bool  // an operation's outcome was unknown: pause (failedPause)
	reader                bool  // only reads, ReaderPause apart
	race                  *race // races the other racers (Config.Racers), when set
	// peers, for a writer, are connections to every other node's console
	// (each with its own history file), the next node's first, on which it
	// reads what it changed, at once after each acknowledged change.
	peers []*client
	// views maps the nodes' instance ids (Config.InstanceIDs) to their
	// views (n1, n2, ...), for the nodes a change's warnings name.
	views map[string]string
}

// ReaderPause is the pause between two reads of a reader (Config.Readers).
const ReaderPause = 20 * time.Millisecond

// failedPause is how long a client waits after an operation of unknown
// outcome before its next one.
const failedPause = 200 * time.Millisecond

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
		if c.failed {
			// The node is down or cut off: do not pile up operations of
			// unknown outcome, each of which the check must place anywhere
			// after its call.
			c.failed = false
			select {
			case <-ctx.Done():
				continue
			case <-time.After(failedPause):
			}
		}
		if c.race != nil {
			if r, ok := c.race.meet(ctx); ok {
				c.runRace(ctx, r)
			}
			continue
		}
		if c.reader {
			switch r := c.rnd.IntN(3); {
			case r == 0:
				c.readVariable(ctx)
			case r == 1 && c.http != "":
				c.readTablesHTTP(ctx)
			default:
				c.readFamily(ctx, &families[c.rnd.IntN(len(families))])
			}
			select {
			case <-ctx.Done():
			case <-time.After(ReaderPause):
			}
			continue
		}
		f := &families[c.rnd.IntN(len(families))]
		item := f.items[c.rnd.IntN(len(f.items))]
		switch r := c.rnd.IntN(10); {
		case r < 3:
			c.readFamily(ctx, f)
		case r < 4:
			c.readVariable(ctx)
		case r < 5:
			if c.set(ctx, []string{"true", "false"}[c.rnd.IntN(2)]).Outcome == linear.OK {
				c.readAfter(func(r *client) { r.readVariable(ctx) })
			}
		case r < 7 || r < 8 && f.alter == nil:
			lenient := c.rnd.IntN(2) == 0
			v := f.values(item, c.rnd)
			c.checkPeer(ctx, f, c.change(ctx, linear.Op{Key: f.key(item), Kind: linear.Create, Lenient: lenient, Value: v}, f.create(item, v, lenient), codeDuplicateRule))
		case r < 8:
			v := f.values(item, c.rnd)
			c.checkPeer(ctx, f, c.change(ctx, linear.Op{Key: f.key(item), Kind: linear.Alter, Value: v}, f.alter(item, v), codeMissingRule))
		default:
			lenient := c.rnd.IntN(2) == 0
			c.checkPeer(ctx, f, c.change(ctx, linear.Op{Key: f.key(item), Kind: linear.Drop, Lenient: lenient}, f.drop(item, lenient), codeMissingRule))
		}
	}
	if ctx.Err() != nil {
		return c.recErr
	}
	return fmt.Errorf("distsql: client %d: recording: %w", c.id, c.recErr)
}

// race makes its racers (Config.Racers) run the same change at the same
// moment, round after round.
type race struct {
	n       int
	mu      sync.Mutex
	waiting int
	rounds  int
	release chan struct{}
	timer   *time.Timer // starts a round without the racers still busy
}

// RaceTable is the broadcast table of the n-th race; no other client uses
// it.
func RaceTable(n int) string { return fmt.Sprintf("t_race%d", n) }

// RaceWait is how long a round waits, once two racers are there, for the
// others: a racer whose node is cut off may wait for its change until the
// operation's timeout, and the others race on without it.
const RaceWait = 300 * time.Millisecond

// start starts the round the racers waiting are in; r.mu is held.
func (r *race) start() {
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	close(r.release)
	r.waiting, r.release = 0, nil
	r.rounds++
}

// round is one race: a CREATE of table without IF NOT EXISTS.
type round struct {
	table string
}

// meet waits until every racer has arrived, or two have and RaceWait has
// passed since the second came, and returns the race they run: round k
// creates RaceTable(k), which nothing else touches, ever: two CREATEs of
// it acknowledged can then not be explained by a DROP, of unknown outcome
// or still in flight, placed between them (under faults many are, and a
// DROP race right after would start while a slow racer's CREATE is still
// in flight). The tables stay: a few dozen a run. A racer that comes late
// joins the next round. It returns false when ctx ends first.
func (r *race) meet(ctx context.Context) (round, bool) {
	r.mu.Lock()
	if r.release == nil {
		r.release = make(chan struct{})
	}
	k, ch := r.rounds, r.release
	r.waiting++
	switch {
	case r.waiting == r.n:
		r.start()
	case r.waiting == 2:
		r.timer = time.AfterFunc(RaceWait, func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.rounds == k && r.release != nil {
				r.start()
			}
		})
	}
	r.mu.Unlock()
	select {
	case <-ch:
		return round{table: RaceTable(k)}, true
	case <-ctx.Done():
		return round{}, false
	}
}

// runRace runs the race r: a CREATE of its table, on the console or
// through the HTTP API (change), then the reads on its own and the next
// node once acknowledged (checkPeer).
func (c *client) runRace(ctx context.Context, r round) {
	c.checkPeer(ctx, &families[0], c.change(ctx, linear.Op{Key: BroadcastKey(r.table), Kind: linear.Create, Value: "1"}, "CREATE BROADCAST TABLE RULE "+r.table, codeDuplicateRule))
}

// change runs rule statement stmt as op, on the console or, for a third
// of them when the client has the node's HTTP API, there (see write and
// post).
func (c *client) change(ctx context.Context, op linear.Op, stmt string, refusedCode uint16) linear.Op {
	if c.http != "" && c.rnd.IntN(3) == 0 {
		return c.post(ctx, op, stmt, refusedCode)
	}
	return c.write(ctx, op, stmt, refusedCode)
}

// post runs rule statement stmt as op through the HTTP API: OK on 200,
// Refused when the answer carries refusedCode (an observation of the
// registry's view, RegistryView: it is decided from what the registry
// held during the call), Unknown otherwise.
func (c *client) post(ctx context.Context, op linear.Op, stmt string, refusedCode uint16) linear.Op {
	done := c.invoke(&op)
	body, _ := json.Marshal(map[string]string{"statement": stmt})
	opCtx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	op.Outcome = linear.Unknown
	req, err := http.NewRequestWithContext(opCtx, http.MethodPost, c.http+"/api/v1/databases/"+c.database+"/rules", bytes.NewReader(body))
	if err == nil {
		req.Header.Set("Authorization", "Bearer "+c.token)
		req.Header.Set("Content-Type", "application/json")
		var resp *http.Response
		if resp, err = c.hc.Do(req); err == nil {
			var answer struct {
				Code            uint16   `json:"code"`
				Pending         []string `json:"pending"`
				Unacknowledging []string `json:"unacknowledging"`
			}
			derr := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&answer)
			resp.Body.Close()
			switch {
			case resp.StatusCode == http.StatusOK && derr == nil:
				op.Outcome = linear.OK
				for _, id := range append(answer.Pending, answer.Unacknowledging...) {
					if v, ok := c.views[id]; ok {
						op.Pending = append(op.Pending, v)
					}
				}
			case resp.StatusCode/100 == 4 && derr == nil && answer.Code == refusedCode:
				op.Outcome, op.Node = linear.Refused, RegistryView
			}
		}
	}
	op.Return = time.Now().UnixNano()
	done(op)
	return op
}

// checkPeer reads the items of family f on the client's own node and on
// its peers (every other node) at once when op, a CREATE, ALTER or DROP
// of one, was acknowledged: such a change must show on all of them from
// its answer on, unless the answer named the node. With IF [NOT] EXISTS too: a no-op
// waits for every online node like a change (rules.Apply).
func (c *client) checkPeer(ctx context.Context, f *family, op linear.Op) {
	if op.Outcome == linear.OK {
		c.readAfter(func(r *client) { r.readFamily(ctx, f) })
	}
}

// readAfter runs read on the client and, at the same time, on each of its
// peers: right after an acknowledged change, where an answer that came
// before the nodes applied it (the early-ack control) is seen. Reading on
// every other node, not only the next one, finds it more often (on etcd
// the nodes apply a change within milliseconds: with the next node only,
// the etcd early-ack control found nothing in 2 of 7 runs).
func (c *client) readAfter(read func(*client)) {
	var wg sync.WaitGroup
	for _, p := range c.peers {
		wg.Go(func() { read(p) })
	}
	read(c)
	wg.Wait()
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
	defer cancel()
	conn, err := c.db.Conn(opCtx)
	if err == nil {
		defer conn.Close()
		_, err = conn.ExecContext(opCtx, stmt)
	}
	op.Return = time.Now().UnixNano()
	var me *mysql.MySQLError
	switch {
	case err == nil:
		op.Outcome = linear.OK
		op.Pending = c.pending(opCtx, conn)
	case refusedCode != 0 && errors.As(err, &me) && me.Number == refusedCode:
		op.Outcome = linear.Refused
	default:
		op.Outcome = linear.Unknown
	}
	done(op)
	return op
}

// pending reads the warnings of the statement conn just ran and returns
// the views of the nodes they say did not confirm the change in time
// (rules.Outcome.Warnings, distvar.Outcome.Warnings); the names of every
// node when the warnings cannot be read, since then none is known to have
// confirmed it.
func (c *client) pending(ctx context.Context, conn *sql.Conn) []string {
	rows, err := conn.QueryContext(ctx, "SHOW WARNINGS")
	var messages []string
	if err == nil {
		for rows.Next() {
			var level, code, message sql.NullString
			if err = rows.Scan(&level, &code, &message); err != nil {
				break
			}
			messages = append(messages, message.String)
		}
		err = errors.Join(err, rows.Err(), rows.Close())
	}
	if err != nil {
		return slices.Sorted(maps.Values(c.views))
	}
	return c.pendingIn(messages)
}

// pendingIn returns the views of the nodes that messages (warnings) name
// as not confirming a change: those that did not in time, and those that
// publish no acknowledgement (a node still starting), which the change
// did not wait for either.
func (c *client) pendingIn(messages []string) []string {
	var out []string
	for _, m := range messages {
		_, names, ok := strings.Cut(m, "did not confirm applying it in time: ")
		if !ok {
			_, names, ok = strings.Cut(m, "without acknowledging (ShardingSphere nodes, or shardkeeper nodes still starting): ")
		}
		if !ok {
			continue
		}
		for _, id := range strings.Split(names, ", ") {
			if v, ok := c.views[strings.TrimSpace(id)]; ok && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out
}

// RegistryView is the linear.Op.Node of the reads of the registry itself.
const RegistryView = linear.RegistryView

// readFamily runs f's SHOW: one read of every item's register, with the
// statement's bounds. It returns the reads, nil when the statement failed.
func (c *client) readFamily(ctx context.Context, f *family) []linear.Op {
	return c.observe(ctx, []*family{f}, func(ctx context.Context) (map[string]map[string]string, error) {
		names, values, err := c.columns(ctx, f.show, f.column, f.value)
		if err != nil {
			return nil, err
		}
		held := map[string]string{}
		for i, n := range names {
			held[n] = "1"
			if f.value != "" {
				held[n] = values[i]
			}
		}
		return map[string]map[string]string{f.name: held}, nil
	})
}

// allFamilies are the families, for a read of them all.
func allFamilies() []*family {
	out := make([]*family, len(families))
	for i := range families {
		out[i] = &families[i]
	}
	return out
}

// fromContents returns the values of every family's items in rules, the
// content of each rule type.
func fromContents(rules map[string]map[string]any) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, f := range families {
		out[f.name] = f.content(rules[f.name])
	}
	return out
}

// readTablesHTTP reads the rule items through the node's HTTP API (GET
// /api/v1/databases/{db}, which answers from the node's view, as SHOW
// does): one read of every item's register. It returns the reads, nil
// when the request failed.
func (c *client) readTablesHTTP(ctx context.Context) []linear.Op {
	return c.observe(ctx, allFamilies(), func(ctx context.Context) (map[string]map[string]string, error) {
		ctx, cancel := context.WithTimeout(ctx, c.timeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.http+"/api/v1/databases/"+c.database, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+c.token)
		resp, err := c.hc.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %s", req.URL, resp.Status)
		}
		var answer struct {
			Rules []struct {
				Type    string         `json:"type"`
				Content map[string]any `json:"content"`
			} `json:"rules"`
		}
		if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&answer); err != nil {
			return nil, err
		}
		rules := map[string]map[string]any{}
		for _, r := range answer.Rules {
			rules[r.Type] = r.Content
		}
		return fromContents(rules), nil
	})
}

// readRegistry reads database db's rules from repo, as a node would apply
// them: one read of every item's register. It returns the reads, nil when
// the registry could not be read.
func (c *client) readRegistry(ctx context.Context, repo registry.Repository, db string) []linear.Op {
	return c.observe(ctx, allFamilies(), func(ctx context.Context) (map[string]map[string]string, error) {
		ctx, cancel := context.WithTimeout(ctx, c.timeout)
		defer cancel()
		d, _, err := metadata.ReadDatabase(ctx, repo, db)
		if err != nil {
			return nil, err
		}
		rules := map[string]map[string]any{}
		for _, f := range families {
			rules[f.name] = d.Rules[f.name].Content
		}
		return fromContents(rules), nil
	})
}

// observe records one read of every item's register of fams, with the
// bounds of the call of held (the value of each item the view holds, by
// family name). It returns the reads, nil when held failed.
func (c *client) observe(ctx context.Context, fams []*family, held func(context.Context) (map[string]map[string]string, error)) []linear.Op {
	var ops []linear.Op
	var names []string
	for _, f := range fams {
		for _, item := range f.items {
			ops = append(ops, linear.Op{Key: f.key(item), Kind: linear.Read})
			names = append(names, f.name+"\x00"+item)
		}
	}
	dones := make([]func(linear.Op), len(ops))
	for i := range ops {
		dones[i] = c.invoke(&ops[i])
	}
	got, err := held(ctx)
	end := time.Now().UnixNano()
	for i := range ops {
		ops[i].Return, ops[i].Outcome = end, linear.Unknown
		if err == nil {
			fam, item, _ := strings.Cut(names[i], "\x00")
			v, ok := got[fam][item]
			ops[i].Outcome, ops[i].Present, ops[i].Value = linear.OK, ok, v
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

// columns runs query and returns the values of its column name and,
// when value is not "", of its column value.
func (c *client) columns(ctx context.Context, query, name, value string) ([]string, []string, error) {
	if value == "" {
		names, err := c.column(ctx, query, name)
		return names, nil, err
	}
	rows, err := c.column(ctx, query, name+"\x00"+value)
	if err != nil {
		return nil, nil, err
	}
	var names, values []string
	for _, r := range rows {
		n, v, _ := strings.Cut(r, "\x00")
		names, values = append(names, n), append(values, v)
	}
	return names, values, nil
}

// column runs query and returns the values of its column name, or of its
// columns a and b joined by a NUL where name is "a\x00b".
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
	first, second, two := strings.Cut(name, "\x00")
	at, at2 := slices.Index(cols, first), slices.Index(cols, second)
	if at < 0 || two && at2 < 0 {
		return nil, fmt.Errorf("%s: no column %s in %v", query, strings.ReplaceAll(name, "\x00", " or "), cols)
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
		if two {
			out = append(out, vals[at].String+"\x00"+vals[at2].String)
			continue
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
		c.failed = c.failed || done.Outcome == linear.Unknown
		if err := c.rec.Complete(id, done); err != nil && c.recErr == nil {
			c.recErr = err
		}
	}
}
