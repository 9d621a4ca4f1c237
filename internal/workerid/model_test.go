package workerid_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/workerid"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/fault"
	"github.com/shardkeeper/shardkeeper/registry/memory"
	"github.com/shardkeeper/shardkeeper/snowflake"
)

// This file ties the SPIN model (model/fence.pml) to the code:
//   - TestModelOps records the registry operations of a scripted
//     acquisition (cluster.Open, one key, Node.Close) through a decorator on the
//     memory backend and compares them with model/ops.txt, whose every line
//     must name a step of the model (its "@step" comments): a change of the
//     code's registry calls, or of the model's, without the other fails it;
//   - TestModelTrails replays each control model's counterexample trail
//     (model/trails/*.txt, printed by `spin -t` from the committed .trail)
//     on real nodes over the memory backend: every registry call of a node
//     waits for its turn in the trail (a fault.Hook), and the trail's
//     environment steps (a session expiry, an operator deleting a fence, a
//     clock step) are made at their place. The node with the matching unsafe
//     switch must follow the trail step for step and issue the duplicate
//     key; our code must refuse to issue the key where the trail duplicates.

const (
	modelBase = int64(1_800_000_000_000) // unix ms of tick 0
	modelTick = int64(10_000)            // ms per model tick
	modelW    = 1                        // the model's W, in ticks (scripts/model.sh)
	modelID0  = 200                      // Go worker id of the model's id 0
)

// modelClock is one node's clock: the world's tick plus the node's offset.
type modelClock struct {
	t   *atomic.Int64
	off atomic.Int64
}

func (c *modelClock) UnixNano() int64 {
	return (modelBase + (c.t.Load()+c.off.Load())*modelTick) * int64(time.Millisecond)
}
func (c *modelClock) Sleep(d time.Duration) { time.Sleep(min(d, time.Millisecond)) }

// gateReq is one registry call of a node waiting for its turn.
type gateReq struct {
	kind  string
	grant chan string // the fault: "", "error" or "lostresponse"
	done  chan bool   // true: the call ran; false: it gave up waiting
	once  sync.Once
}

func (r *gateReq) finish(ran bool) { r.once.Do(func() { r.done <- ran }) }

// modelNode is one model node: the decorator its cluster.Node uses.
type modelNode struct {
	idx         int
	inst        string
	scripted    atomic.Bool // calls wait for the trail (else they pass)
	gate        chan *gateReq
	view        atomic.Int64  // the only worker id Children shows free; -1: the real view
	watch       chan struct{} // closed: watch events reach the node
	sessions    chan *modelSession
	record      func(string) // TestModelOps
	clock       *modelClock
	n           atomic.Pointer[cluster.Node]
	lastSession atomic.Int64
	openErr     atomic.Pointer[error]
	opened      chan struct{}
}

// kind names the registry calls the trail orders; others pass at once.
func (m *modelNode) kind(op, key string) string {
	wid, _ := paths.WorkerID(m.inst)
	status, _ := paths.Status(m.inst)
	switch {
	case op == "session":
		return "session"
	case op == "session-close":
		return "close"
	case op == "children" && key == paths.ReservationRoot:
		return "children"
	case op == "get-many" && strings.HasPrefix(key, paths.FenceRoot+"/"):
		return "get-fences"
	case op == "get" && strings.HasPrefix(key, paths.FenceRoot+"/"):
		return "get-fence"
	case op == "get" && strings.HasPrefix(key, paths.ReservationRoot+"/"):
		return "adopt-res"
	case op == "commit-first" && strings.HasPrefix(key, paths.ReservationRoot+"/"):
		return "claim"
	case op == "commit" && strings.HasPrefix(key, paths.ReservationRoot+"/"):
		return "claim"
	case op == "commit" && strings.HasPrefix(key, paths.FenceRoot+"/"):
		return "reserve"
	case op == "put-ephemeral" && key == status:
		return "register"
	case op == "commit" && key == wid:
		return "claim"
	}
	return ""
}

func (m *modelNode) Before(ctx context.Context, op, key string) (func(error) error, error) {
	kind := m.kind(op, key)
	if kind == "" || !m.scripted.Load() {
		return nil, nil
	}
	req := &gateReq{kind: kind, grant: make(chan string, 1), done: make(chan bool, 1)}
	select {
	case m.gate <- req:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var f string
	select {
	case f = <-req.grant:
	case <-ctx.Done():
		req.finish(false)
		return nil, ctx.Err()
	}
	if f == "error" {
		req.finish(true)
		return nil, &registry.OpError{Op: op, Key: key, Err: fmt.Errorf("%w: injected by the trail", registry.ErrUnavailable)}
	}
	return func(err error) error {
		req.finish(true)
		if f == "lostresponse" && err == nil {
			return &registry.OpError{Op: op, Key: key, Err: fmt.Errorf("%w: response lost (trail)", registry.ErrUnavailable)}
		}
		return err
	}, nil
}

// modelRepo is the decorator: the gate (a fault.Hook) around every call,
// a Children of the reservations that shows only the trail's candidate
// free, watch events held until the trail delivers them, and sessions
// whose Done closes when the trail says the node noticed.
type modelRepo struct {
	*fault.Repo
	m *modelNode
}

func (r *modelRepo) Children(ctx context.Context, key string) ([]string, error) {
	names, err := r.Repo.Children(ctx, key)
	r.rec("children " + normKey(key, r.m.inst))
	if err != nil || key != paths.ReservationRoot {
		return names, err
	}
	if free := r.m.view.Load(); free >= 0 {
		names = names[:0:0]
		for id := 0; id < workerid.Count; id++ {
			if id != int(free) {
				names = append(names, strconv.Itoa(id))
			}
		}
	}
	return names, nil
}

func (r *modelRepo) Get(ctx context.Context, key string) (registry.KV, error) {
	if r.m.kind("get", key) != "" || key == paths.Ledger {
		r.rec("get " + normKey(key, r.m.inst))
	}
	return r.Repo.Get(ctx, key)
}

// GetMany records one call, its keys as the model's step comments write
// them (the candidates' fences: one key pattern).
func (r *modelRepo) GetMany(ctx context.Context, keys []string) ([]registry.KV, error) {
	var names []string
	for _, k := range keys {
		if n := normKey(k, r.m.inst); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	r.rec("getmany " + strings.Join(names, " "))
	return r.Repo.GetMany(ctx, keys)
}

func (r *modelRepo) rec(s string) {
	if r.m.record != nil {
		r.m.record(s)
	}
}

func (r *modelRepo) Watch(ctx context.Context, key string) ([]registry.KV, <-chan registry.Event, error) {
	if isWorkerIDKey(key, r.m.inst) {
		r.rec("watch " + normKey(key, r.m.inst))
		// The watch answers when the trail says the node sees it (its
		// first state included): until then the node knows nothing.
		select {
		case <-r.m.watch:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	return r.Repo.Watch(ctx, key)
}

func (r *modelRepo) NewSession(ctx context.Context, opts registry.SessionOptions) (registry.Session, error) {
	r.rec("session /")
	s, err := r.Repo.NewSession(ctx, opts)
	if err != nil {
		return nil, err
	}
	ms := &modelSession{Session: s, r: r, done: make(chan struct{})}
	select {
	case r.m.sessions <- ms:
	default:
	}
	return ms, nil
}

type modelSession struct {
	registry.Session // a *fault.Session
	r                *modelRepo
	once             sync.Once
	done             chan struct{}
}

func (s *modelSession) notice() { s.once.Do(func() { close(s.done) }) }

func (s *modelSession) Done() <-chan struct{} { return s.done }

func (s *modelSession) Err() error {
	select {
	case <-s.done:
		if err := s.Session.Err(); err != nil {
			return err
		}
		return registry.ErrClosed
	default:
		return nil
	}
}

// memorySession is the backend's session, for memory.Expire.
func (s *modelSession) memorySession() registry.Session { return s.Session.(*fault.Session).Unwrap() }

func (s *modelSession) Close(ctx context.Context) error {
	s.r.rec("session-close /")
	err := s.Session.Close(ctx)
	s.notice()
	return err
}

func (s *modelSession) PutEphemeral(ctx context.Context, key string, value []byte) error {
	if s.r.m.kind("put-ephemeral", key) != "" {
		s.r.rec("put-ephemeral " + normKey(key, s.r.m.inst))
	}
	return s.Session.PutEphemeral(ctx, key, value)
}

func (s *modelSession) Commit(ctx context.Context, txn registry.Txn) (registry.Version, error) {
	s.r.rec(describeTxn(txn, s.r.m.inst))
	return s.Session.Commit(ctx, txn)
}

// CommitFirst records one call, its alternatives as the model's step
// comments write them (alternatives of one shape once), and forwards it to
// the fault.Session, whose hook sees one "commit-first" call.
func (s *modelSession) CommitFirst(ctx context.Context, alts []registry.Txn) (int, registry.Version, error) {
	var shapes []string
	for _, t := range alts {
		if d := strings.TrimPrefix(describeTxn(t, s.r.m.inst), "commit "); !slices.Contains(shapes, d) {
			shapes = append(shapes, d)
		}
	}
	s.r.rec("commitfirst " + strings.Join(shapes, " | "))
	return registry.CommitFirst(ctx, s.Session, alts)
}

func isWorkerIDKey(key, inst string) bool {
	wid, _ := paths.WorkerID(inst)
	return key == wid || strings.HasPrefix(key, paths.FenceRoot+"/") || strings.HasPrefix(key, paths.ReservationRoot+"/")
}

// normKey writes a key as the model's step comments do.
func normKey(key, inst string) string {
	for _, root := range []string{paths.FenceRoot, paths.ReservationRoot} {
		if rest, ok := strings.CutPrefix(key, root+"/"); ok {
			if _, err := strconv.Atoi(rest); err == nil {
				return root + "/{id}"
			}
		}
	}
	return strings.ReplaceAll(key, inst, "{instance}")
}

// keyName is a key's short name in a commit's description.
func keyName(key, inst string) string {
	wid, _ := paths.WorkerID(inst)
	hint, _ := paths.WorkerIDHint(inst)
	switch {
	case key == wid:
		return "worker_id"
	case key == hint:
		return "hint"
	case key == paths.Ledger:
		return "ledger"
	case strings.HasPrefix(key, paths.FenceRoot+"/"):
		return "fence"
	case strings.HasPrefix(key, paths.ReservationRoot+"/"):
		return "res"
	}
	return normKey(key, inst)
}

// describeTxn writes a commit as the model's step comments do:
// commit if(res absent, fence at version) put(fence).
func describeTxn(txn registry.Txn, inst string) string {
	var conds, ops []string
	for _, c := range txn.Conds {
		if c.Version == 0 {
			conds = append(conds, keyName(c.Key, inst)+" absent")
		} else {
			conds = append(conds, keyName(c.Key, inst)+" at version")
		}
	}
	for _, o := range txn.Ops {
		switch {
		case o.Delete:
			ops = append(ops, "delete "+keyName(o.Key, inst))
		case o.Ephemeral:
			ops = append(ops, keyName(o.Key, inst)+" ephemeral")
		default:
			ops = append(ops, keyName(o.Key, inst))
		}
	}
	return "commit if(" + strings.Join(conds, ", ") + ") put(" + strings.Join(ops, ", ") + ")"
}

// modelSteps reads the "@step NAME: GOFUNC: OPERATION" comments of the model.
func modelSteps(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile("model/fence.pml")
	if err != nil {
		t.Fatal(err)
	}
	steps := map[string]bool{}
	re := regexp.MustCompile(`@step ([a-z-]+): ([A-Za-z.]+): (.*?) \*/`)
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		steps[m[1]+": "+m[3]] = true
	}
	if len(steps) < 10 {
		t.Fatalf("the model names %d registry steps; want its @step comments", len(steps))
	}
	return steps
}

// newLedgeredStore is a cluster whose ledger and fences exist.
func newLedgeredStore(t *testing.T) *memory.Repo {
	t.Helper()
	store := memory.New()
	ctx := context.Background()
	sess, err := store.NewSession(ctx, registry.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := workerid.EnsureLedger(ctx, store, sess, "ledger-maker", workerid.Options{NowMillis: func() int64 { return modelBase }, Logger: quiet()}); !ok || err != nil {
		t.Fatalf("EnsureLedger: %v, %v", ok, err)
	}
	sess.Close(ctx)
	return store
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(discardWriter{}, nil)) }

type discardWriter struct{}

func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }

func newModelNode(store *memory.Repo, idx int, t *atomic.Int64) (*modelNode, *modelRepo) {
	m := &modelNode{idx: idx, inst: fmt.Sprintf("model-%d", idx), gate: make(chan *gateReq),
		watch: make(chan struct{}), sessions: make(chan *modelSession, 8), clock: &modelClock{t: t}, opened: make(chan struct{})}
	m.view.Store(-1)
	return m, &modelRepo{Repo: fault.Observe(store.Clone(), m), m: m}
}

func (m *modelNode) config(variant string) cluster.Config {
	sf := snowflake.DefaultConfig()
	sf.Clock = m.clock
	return cluster.Config{InstanceID: m.inst, RandomInstanceID: true, Reservation: time.Duration(modelW*modelTick) * time.Millisecond,
		Snowflake: sf, Logger: quiet(),
		UnsafeLeaseOnly: variant == "lease-only", UnsafeIgnoreFloor: variant == "ignore-floor", UnsafeTrustAbsentFence: variant == "trust-absent"}
}

// TestModelOps: the registry calls of a scripted acquisition, in order,
// are model/ops.txt, and each of its lines is a step of the model.
func TestModelOps(t *testing.T) {
	steps := modelSteps(t)
	want := readOps(t)
	for _, w := range want {
		if !steps[w.step+": "+w.op] {
			t.Errorf("model/ops.txt: %q is not a step of model/fence.pml (no \"@step %s: <function>: %s\" comment)", w.step+": "+w.op, w.step, w.op)
		}
	}

	store := newLedgeredStore(t)
	var tick atomic.Int64
	m, repo := newModelNode(store, 0, &tick)
	var mu sync.Mutex
	var got []string
	m.record = func(s string) { mu.Lock(); got = append(got, s); mu.Unlock() }
	close(m.watch)
	ctx := context.Background()
	cfg := m.config("")
	cfg.Reservation = 30 * time.Second // no renewal during the script
	n, err := cluster.Open(ctx, repo, cfg)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	watches := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, g := range got {
			if strings.HasPrefix(g, "watch ") {
				n++
			}
		}
		return n
	}
	for watches() < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := n.NextID(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	// The ledger check runs in the background at a random time; the watches
	// start concurrently: compare those as sets, the rest in order.
	var seq, wantSeq []string
	var gotWatch, wantWatch []string
	for _, g := range got {
		switch {
		case g == "get "+paths.Ledger:
		case strings.HasPrefix(g, "watch "):
			gotWatch = append(gotWatch, g)
		default:
			seq = append(seq, g)
		}
	}
	for _, w := range want {
		if strings.HasPrefix(w.op, "watch ") {
			wantWatch = append(wantWatch, w.op)
		} else {
			wantSeq = append(wantSeq, w.op)
		}
	}
	if strings.Join(seq, "\n") != strings.Join(wantSeq, "\n") {
		t.Errorf("registry calls of cluster.Open, NextID, Node.Close:\n%s\nwant (model/ops.txt):\n%s", strings.Join(seq, "\n"), strings.Join(wantSeq, "\n"))
	}
	slices.Sort(gotWatch)
	slices.Sort(wantWatch)
	if !slices.Equal(gotWatch, wantWatch) {
		t.Errorf("watches %q, want %q", gotWatch, wantWatch)
	}
}

type opLine struct{ step, op string }

func readOps(t *testing.T) []opLine {
	t.Helper()
	f, err := os.Open("model/ops.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []opLine
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		step, op, ok := strings.Cut(l, ": ")
		if !ok {
			t.Fatalf("model/ops.txt:%d: %q: want \"step: operation\"", line, l)
		}
		out = append(out, opLine{step, op})
	}
	return out
}

// trailStep is one line of a trail's schedule: "@ WHO NAME k=v...".
type trailStep struct {
	line string
	who  string // "env" or a node index
	name string
	args map[string]int
	res  string
}

func readTrail(t *testing.T, path string) []trailStep {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var steps []trailStep
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		if len(f) < 3 || f[0] != "@" {
			t.Fatalf("%s: %q is not a step", path, l)
		}
		s := trailStep{line: l, who: f[1], name: f[2], args: map[string]int{}}
		for _, kv := range f[3:] {
			k, v, _ := strings.Cut(kv, "=")
			if k == "res" {
				s.res = v
				continue
			}
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("%s: %q: %v", path, l, err)
			}
			s.args[k] = n
		}
		steps = append(steps, s)
	}
	return steps
}

// stepKind is the gated registry call a node step makes ("" none).
var stepKind = map[string]string{
	"session": "session", "children": "children", "getfence": "get-fences", "claim": "claim", "claim-unused": "claim",
	"reserve": "reserve", "adopt-fence": "get-fence", "adopt-res": "adopt-res", "register": "register", "close": "close",
}

type replayResult struct {
	diverged   []string // node steps our code did not take
	duplicates int
	lastKey    error // the outcome of the trail's last step (a stamp)
	lastIssued bool
}

// replay runs trail on len(nodes) nodes built with variant's unsafe switch
// ("" for none).
func replay(t *testing.T, trail []trailStep, variant string) replayResult {
	var tick atomic.Int64
	store := newLedgeredStore(t)
	nodes := map[string]*modelNode{}
	repos := map[string]*modelRepo{}
	for _, s := range trail {
		if _, ok := nodes[s.who]; s.who != "env" && !ok {
			i, _ := strconv.Atoi(s.who)
			m, r := newModelNode(store, i, &tick)
			m.scripted.Store(true)
			nodes[s.who], repos[s.who] = m, r
		}
	}
	sessions := map[int]*modelSession{}
	free := map[string]bool{} // nodes that left the trail
	var res replayResult
	seen := map[int64]string{}
	ctx := context.Background()
	defer func() {
		for _, m := range nodes {
			m.scripted.Store(false)
			if n := m.n.Load(); n != nil {
				n.Close(ctx)
			}
		}
	}()
	for i, s := range trail {
		last := i == len(trail)-1
		if s.who == "env" {
			switch s.name {
			case "tick":
				tick.Store(int64(s.args["T"]))
			case "clock":
				nodes[strconv.Itoa(s.args["n"])].clock.off.Store(int64(s.args["off"]))
			case "expire":
				ms := sessions[s.args["s"]]
				if ms == nil || !memory.Expire(ms.memorySession()) {
					t.Fatalf("%s: no live session %d", s.line, s.args["s"])
				}
			case "delfence":
				fk, _ := paths.Fence(modelID0 + s.args["w"])
				if err := store.Delete(ctx, fk); err != nil {
					t.Fatal(err)
				}
			default:
				t.Fatalf("%s: unknown environment step", s.line)
			}
			continue
		}
		m := nodes[s.who]
		switch s.name {
		case "stamp":
			select {
			case <-m.opened:
			case <-time.After(5 * time.Second):
				t.Fatalf("%s: the node is not open", s.line)
			}
			n := m.n.Load()
			if n == nil {
				err := fmt.Errorf("%w: Open failed: %v", cluster.ErrNotIssuing, *m.openErr.Load())
				t.Logf("%-40s node %s refuses: %v", s.line, s.who, err)
				if last {
					res.lastKey, res.lastIssued = err, false
				}
				continue
			}
			c, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
			k, err := n.NextID(c)
			cancel()
			if last {
				res.lastKey, res.lastIssued = err, err == nil
			}
			if err != nil {
				t.Logf("%-40s node %s refuses: %v", s.line, s.who, err)
				continue
			}
			p := snowflake.Decompose(k)
			t.Logf("%-40s node %s issues worker %d ms %+d", s.line, s.who, p.WorkerID, p.Millis+snowflake.DefaultEpochMillis-modelBase)
			if want := modelBase + int64(s.args["ts"])*modelTick; !free[s.who] && (p.Millis+snowflake.DefaultEpochMillis != want || int(p.WorkerID) != modelID0+s.args["w"]) {
				t.Errorf("%s: key at worker %d ms %d, the model stamps worker %d ms %d", s.line, p.WorkerID, p.Millis+snowflake.DefaultEpochMillis, modelID0+s.args["w"], want)
			}
			if by, dup := seen[k]; dup && by != s.who {
				res.duplicates++
			}
			seen[k] = s.who
		case "watch":
			close(m.watch)
		case "sessdone":
			sessions[m.sessionOf()].notice()
		case "leave":
			if n := m.n.Load(); n != nil {
				go n.Close(ctx)
			}
		default:
			kind, ok := stepKind[s.name]
			if !ok {
				t.Fatalf("%s: unknown node step", s.line)
			}
			if free[s.who] {
				continue
			}
			if s.name == "session" && m.n.Load() == nil {
				startNode(m, repos[s.who], variant)
			}
			if s.name == "getfence" && prevStep(trail, i) == "getfence" {
				// A run of the model's fence reads is the node's one
				// GetMany (see children): released at the run's first.
				continue
			}
			if s.name == "children" {
				// The trail's next claim of this node is its choice: the
				// only id the view shows free, so the claim reads one fence
				// (GetMany) and tries one alternative (CommitFirst), as the
				// model's run of getfence steps and claim.
				for _, n := range trail[i+1:] {
					if n.who == s.who && (n.name == "claim" || n.name == "claim-unused") {
						m.view.Store(int64(modelID0 + n.args["w"]))
						break
					}
				}
			}
			var req *gateReq
			select {
			case req = <-m.gate:
			case <-time.After(5 * time.Second):
				t.Fatalf("%s: node %s made no registry call", s.line, s.who)
			}
			fault := ""
			if s.res == "error" || s.res == "lostresponse" {
				fault = s.res
			}
			if req.kind != kind {
				// Our code takes another step here: let it run on its own.
				res.diverged = append(res.diverged, fmt.Sprintf("%s (the node's call: %s)", s.line, req.kind))
				free[s.who] = true
				m.scripted.Store(false)
				req.grant <- ""
				// It finishes what it does before the trail goes on (an
				// acquisition: until Open returns).
				select {
				case <-m.opened:
				case <-time.After(5 * time.Second):
					t.Fatalf("%s: node %s does not finish opening on its own", s.line, s.who)
				}
				continue
			}
			req.grant <- fault
			if !<-req.done {
				t.Fatalf("%s: the node gave up its call", s.line)
			}
			if s.name == "register" {
				// The rest of Open (the online node, the membership) is no
				// step of the model: let it finish.
				select {
				case <-m.opened:
				case <-time.After(5 * time.Second):
					t.Fatalf("%s: node %s does not finish opening", s.line, s.who)
				}
			}
			if s.name == "session" {
				select {
				case ms := <-m.sessions:
					sessions[s.args["s"]] = ms
					m.lastSession.Store(int64(s.args["s"]))
				case <-time.After(time.Second):
					t.Fatalf("%s: no session", s.line)
				}
			}
		}
	}
	return res
}

// prevStep is the name of the step before trail[i] of the same node, or "".
func prevStep(trail []trailStep, i int) string {
	for j := i - 1; j >= 0; j-- {
		if trail[j].who == trail[i].who {
			return trail[j].name
		}
	}
	return ""
}

func (m *modelNode) sessionOf() int { return int(m.lastSession.Load()) }

func startNode(m *modelNode, r *modelRepo, variant string) {
	go func() {
		defer close(m.opened)
		n, err := cluster.Open(context.Background(), r, m.config(variant))
		if err != nil {
			m.openErr.Store(&err)
			return
		}
		m.n.Store(n)
	}()
}

// TestModelTrails replays the counterexample of each control model.
func TestModelTrails(t *testing.T) {
	for _, variant := range []string{"lease-only", "ignore-floor", "trust-absent"} {
		t.Run(variant, func(t *testing.T) {
			trail := readTrail(t, "model/trails/"+variant+".txt")
			unsafe := replay(t, trail, variant)
			if len(unsafe.diverged) > 0 {
				t.Errorf("with the unsafe switch the node left the trail: %q", unsafe.diverged)
			}
			if unsafe.duplicates == 0 || !unsafe.lastIssued {
				t.Errorf("with the unsafe switch: %d duplicate keys (last step issued: %v, %v); the trail must reproduce the model's duplicate",
					unsafe.duplicates, unsafe.lastIssued, unsafe.lastKey)
			}
			ours := replay(t, trail, "")
			t.Logf("our code leaves the trail at %q", ours.diverged)
			if ours.duplicates != 0 {
				t.Errorf("our code: %d duplicate keys", ours.duplicates)
			}
			if ours.lastIssued {
				t.Errorf("our code issued a key at the trail's last step, where the control duplicates")
			} else if !errors.Is(ours.lastKey, snowflake.ErrReservationExpired) && !errors.Is(ours.lastKey, cluster.ErrNotIssuing) {
				t.Errorf("our code's refusal at the last step: %v; want waiting for the floor or not issuing", ours.lastKey)
			}
		})
	}
}
