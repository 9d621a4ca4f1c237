package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNoLeader is returned by Ensemble.Leader when no running member
// reports a leader.
var ErrNoLeader = errors.New("chaos: no leader")

// startTimeout bounds how long Start and the Start* constructors wait for
// members to answer.
const startTimeout = 60 * time.Second

// Ensemble is a running 3-member registry cluster, one member per host.
// Members are addressed by index in host order. The process-control methods
// are safe for concurrent use and in any order: Kill of a paused member
// kills it, Pause and Resume of a member that is down do nothing, Start of
// a running member only waits until it answers.
type Ensemble interface {
	// Kind returns "etcd" or "zookeeper".
	Kind() string
	// Hosts returns the members' hosts, in member order.
	Hosts() []*Host
	// Endpoints returns the client addresses "ip:port", in member order.
	Endpoints() []string
	// Leader returns the index of the member that the running, unpaused
	// members report as leader; when they disagree, the report from the
	// newest term (etcd raft term, ZooKeeper epoch) wins. It returns
	// ErrNoLeader when none reports one, and ctx's error when ctx ends.
	Leader(ctx context.Context) (int, error)
	// Kill sends SIGKILL to member i's process group and waits until the
	// process is gone. It does nothing when the member is down.
	Kill(i int) error
	// Start starts member i again with its data directory (resuming it
	// first if it is paused) and waits up to 60 s until it answers and,
	// when a majority of members is running and not paused, until it
	// serves requests. On failure the error holds the tail of its log.
	Start(i int) error
	// Pause sends SIGSTOP to member i; nothing when it is down or paused.
	Pause(i int) error
	// Resume sends SIGCONT to member i; nothing when it is down or running.
	Resume(i int) error
	// Running reports whether member i has a process (paused or not).
	Running(i int) bool
	// PID returns the process id of member i, or 0 when it is down.
	PID(i int) int
	// Version returns the server version, e.g. "etcd 3.4.23".
	Version() string
	// Close kills every member and removes the data directories it
	// created. It is idempotent; after it the other methods return errors.
	Close() error
}

// Option refines StartEtcd and StartZooKeeper.
type Option func(*options)

type options struct {
	cpus string
}

// WithCPUs pins the servers with `taskset -c cpus`; "" disables pinning.
// The default is "0" when taskset is installed and no pinning otherwise.
func WithCPUs(cpus string) Option { return func(o *options) { o.cpus = cpus } }

func buildOptions(opts []Option) options {
	o := options{}
	if _, err := exec.LookPath("taskset"); err == nil {
		o.cpus = "0"
	}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// httpClient talks to members without any proxy from the environment.
var httpClient = &http.Client{
	Timeout:   time.Second,
	Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
}

// tempDirPrefix starts the names of the temporary directories that
// ensembles create when given no directory: "chaos-<namespace of the first
// host>-<kind>-<random>". CleanupStale finds leftovers by it.
const tempDirPrefix = "chaos-"

// StartEtcd starts a static 3-member etcd cluster, member i named after
// hosts[i] and listening on hosts[i].Addr (client port 2379, peer 2380),
// with heartbeat 100 ms, election timeout 1000 ms and auto-compaction off.
// Data goes to dir/<host name> (dir "" means a new temporary directory
// named after the first host's namespace, removed on Close and by
// CleanupStale). Member output goes to logs, each line prefixed with
// "[<host name>] " (nil discards it). ctx bounds the wait until every member
// is healthy and a leader exists, at most 60 s; on failure the started
// members are killed, the data removed, and the error holds their log tails.
func StartEtcd(ctx context.Context, hosts []*Host, dir string, logs io.Writer, opts ...Option) (Ensemble, error) {
	if _, err := exec.LookPath("etcd"); err != nil {
		return nil, fmt.Errorf("chaos: etcd not installed (Debian package etcd-server): %w", err)
	}
	out, err := exec.Command("etcd", "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("chaos: etcd --version: %w", err)
	}
	version := "etcd"
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "etcd Version: "); ok {
			version = "etcd " + strings.TrimSpace(v)
		}
	}
	c, err := newMemberSet("etcd", hosts, dir, logs, buildOptions(opts))
	if err != nil {
		return nil, err
	}
	e := &etcdEnsemble{memberSet: c, version: version}
	var initial []string
	for _, h := range hosts {
		initial = append(initial, fmt.Sprintf("%s=http://%s:2380", h.Name, h.Addr))
	}
	c.command = func(i int) []string {
		h := hosts[i]
		client := fmt.Sprintf("http://%s:2379", h.Addr)
		peer := fmt.Sprintf("http://%s:2380", h.Addr)
		return []string{"etcd",
			"--name", h.Name,
			"--data-dir", c.members[i].dir,
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", strings.Join(initial, ","),
			"--initial-cluster-state", "new",
			"--initial-cluster-token", "chaos-" + hosts[0].NS,
			"--heartbeat-interval", "100", "--election-timeout", "1000",
			"--auto-compaction-retention", "0",
			"--logger", "zap", "--log-outputs", "stderr", "--log-level", "info",
		}
	}
	c.alive = func(ctx context.Context, i int) error {
		_, err := e.get(ctx, i, "/version")
		return err
	}
	c.serving = func(ctx context.Context, i int) error {
		body, err := e.get(ctx, i, "/health")
		if err != nil {
			return err
		}
		var h struct{ Health string }
		if err := json.Unmarshal(body, &h); err != nil || h.Health != "true" {
			return fmt.Errorf("unhealthy: %s", bytes.TrimSpace(body))
		}
		return nil
	}
	if err := c.startAll(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

type etcdEnsemble struct {
	*memberSet
	version string

	idsMu sync.Mutex
	ids   map[uint64]int // member id -> index
}

func (e *etcdEnsemble) Endpoints() []string { return e.endpoints(2379) }
func (e *etcdEnsemble) Version() string     { return e.version }

func (e *etcdEnsemble) get(ctx context.Context, i int, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		fmt.Sprintf("http://%s:2379%s", e.hosts[i].Addr, path), nil)
	if err != nil {
		return nil, err
	}
	return e.do(req)
}

func (e *etcdEnsemble) post(ctx context.Context, i int, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost,
		fmt.Sprintf("http://%s:2379%s", e.hosts[i].Addr, path), strings.NewReader("{}"))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return e.do(req)
}

func (e *etcdEnsemble) do(req *http.Request) ([]byte, error) {
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return body, fmt.Errorf("%s: %s: %s", req.URL.Path, resp.Status, bytes.TrimSpace(body))
	}
	return body, nil
}

// etcdStatus is the JSON of the gRPC gateway's /v3/maintenance/status;
// 64-bit numbers come as strings.
type etcdStatus struct {
	Header struct {
		MemberID string `json:"member_id"`
	} `json:"header"`
	Leader   string `json:"leader"`
	RaftTerm string `json:"raftTerm"`
}

func (e *etcdEnsemble) Leader(ctx context.Context) (int, error) {
	type report struct{ leader, term uint64 }
	reports := e.probe(ctx, func(ctx context.Context, i int) (any, error) {
		body, err := e.post(ctx, i, "/v3/maintenance/status")
		if err != nil {
			return nil, err
		}
		var s etcdStatus
		if err := json.Unmarshal(body, &s); err != nil {
			return nil, err
		}
		self, _ := strconv.ParseUint(s.Header.MemberID, 10, 64)
		leader, _ := strconv.ParseUint(s.Leader, 10, 64)
		term, _ := strconv.ParseUint(s.RaftTerm, 10, 64)
		e.idsMu.Lock()
		if e.ids == nil {
			e.ids = make(map[uint64]int)
		}
		if self != 0 {
			e.ids[self] = i
		}
		e.idsMu.Unlock()
		return report{leader, term}, nil
	})
	var best report
	for _, r := range reports {
		if r, ok := r.(report); ok && r.leader != 0 && r.term >= best.term {
			best = r
		}
	}
	if err := ctx.Err(); err != nil {
		return -1, err
	}
	if best.leader == 0 {
		return -1, ErrNoLeader
	}
	e.idsMu.Lock()
	i, ok := e.ids[best.leader]
	e.idsMu.Unlock()
	if !ok {
		if err := e.learnIDs(ctx); err != nil {
			return -1, err
		}
		e.idsMu.Lock()
		i, ok = e.ids[best.leader]
		e.idsMu.Unlock()
	}
	if !ok {
		return -1, fmt.Errorf("%w: leader id %x is not a known member", ErrNoLeader, best.leader)
	}
	return i, nil
}

// learnIDs maps member ids to indexes through the member list of any
// member that answers.
func (e *etcdEnsemble) learnIDs(ctx context.Context) error {
	var errs []error
	for i := range e.hosts {
		if !e.available(i) {
			continue
		}
		body, err := e.post(ctx, i, "/v3/cluster/member/list")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var list struct {
			Members []struct {
				ID   string `json:"ID"`
				Name string `json:"name"`
			} `json:"members"`
		}
		if err := json.Unmarshal(body, &list); err != nil {
			errs = append(errs, err)
			continue
		}
		e.idsMu.Lock()
		if e.ids == nil {
			e.ids = make(map[uint64]int)
		}
		for _, m := range list.Members {
			id, _ := strconv.ParseUint(m.ID, 10, 64)
			for j, h := range e.hosts {
				if h.Name == m.Name {
					e.ids[id] = j
				}
			}
		}
		e.idsMu.Unlock()
		return nil
	}
	return fmt.Errorf("chaos: etcd member list: %w", errors.Join(errs...))
}

// StartZooKeeper starts a 3-server ZooKeeper ensemble (QuorumPeerMain from
// /usr/share/java/zookeeper.jar), server i with myid i+1 listening on
// hosts[i].Addr (client 2181, quorum 2888, election 3888), tickTime 200 ms
// (sessions of 400 ms to 60 s are granted as asked), initLimit 10 and
// syncLimit 5 ticks, 4lw commands srvr, ruok, mntr and stat. Each JVM runs
// with -Xmx256m and the serial collector. Data goes to dir/<host name> (dir
// "" means a new temporary directory, removed on Close); output goes to
// logs like StartEtcd's. ctx bounds the wait until every server answers
// ruok and serves as leader or follower, at most 60 s; on failure
// everything is removed and the error holds the log tails.
func StartZooKeeper(ctx context.Context, hosts []*Host, dir string, logs io.Writer, opts ...Option) (Ensemble, error) {
	const jar = "/usr/share/java/zookeeper.jar"
	if _, err := os.Stat(jar); err != nil {
		return nil, fmt.Errorf("chaos: ZooKeeper not installed (Debian package zookeeper): %w", err)
	}
	if _, err := exec.LookPath("java"); err != nil {
		return nil, fmt.Errorf("chaos: java not installed (Debian package default-jre-headless): %w", err)
	}
	c, err := newMemberSet("zookeeper", hosts, dir, logs, buildOptions(opts))
	if err != nil {
		return nil, err
	}
	z := &zkEnsemble{memberSet: c}
	// Debian's zookeeper.jar names only slf4j-api in its class path, so the
	// servers log nothing; add the log4j binding when it is installed.
	classpath := "/etc/zookeeper/conf:" + jar
	for _, j := range []string{"/usr/share/java/slf4j-log4j12.jar", "/usr/share/java/log4j-1.2.jar"} {
		if _, err := os.Stat(j); err == nil {
			classpath += ":" + j
		}
	}
	var servers []string
	for i, h := range hosts {
		servers = append(servers, fmt.Sprintf("server.%d=%s:2888:3888", i+1, h.Addr))
	}
	for i, h := range hosts {
		m := c.members[i]
		cfg := strings.Join(append([]string{
			"tickTime=200",
			"initLimit=10",
			"syncLimit=5",
			"minSessionTimeout=400",
			"maxSessionTimeout=60000",
			"dataDir=" + filepath.Join(m.dir, "data"),
			"clientPort=2181",
			"clientPortAddress=" + h.Addr.String(),
			"admin.enableServer=false",
			"4lw.commands.whitelist=srvr,ruok,mntr,stat",
			"maxClientCnxns=0",
			"preAllocSize=4096",
			"reconfigEnabled=false",
		}, servers...), "\n") + "\n"
		if err := os.MkdirAll(filepath.Join(m.dir, "data"), 0o755); err != nil {
			c.removeDirs()
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(m.dir, "data", "myid"), []byte(strconv.Itoa(i+1)+"\n"), 0o644); err != nil {
			c.removeDirs()
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(m.dir, "zoo.cfg"), []byte(cfg), 0o644); err != nil {
			c.removeDirs()
			return nil, err
		}
	}
	c.command = func(i int) []string {
		m := c.members[i]
		return []string{"java",
			"-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
			"-Djava.net.preferIPv4Stack=true",
			"-Dzookeeper.log.dir=" + m.dir,
			"-Dzookeeper.root.logger=INFO,CONSOLE",
			"-Dlog4j.configuration=file:/etc/zookeeper/conf/log4j.properties",
			"-Dzookeeper.jmx.log4j.disable=true",
			"-Dzookeeper.cnxTimeout=1000",
			"-cp", classpath,
			"org.apache.zookeeper.server.quorum.QuorumPeerMain", filepath.Join(m.dir, "zoo.cfg"),
		}
	}
	c.alive = func(ctx context.Context, i int) error {
		out, err := z.fourLetter(ctx, i, "ruok")
		if err == nil && out != "imok" {
			err = fmt.Errorf("ruok: %q", out)
		}
		return err
	}
	c.serving = func(ctx context.Context, i int) error {
		out, err := z.fourLetter(ctx, i, "srvr")
		if err != nil {
			return err
		}
		if mode := srvrField(out, "Mode"); mode != "leader" && mode != "follower" {
			return fmt.Errorf("not serving: %q", out)
		}
		return nil
	}
	if err := c.startAll(ctx); err != nil {
		return nil, err
	}
	z.version = "zookeeper"
	if out, err := z.fourLetter(ctx, 0, "srvr"); err == nil {
		v := srvrField(out, "Zookeeper version")
		v, _, _ = strings.Cut(v, "-")
		v, _, _ = strings.Cut(v, ",")
		z.version = "zookeeper " + v
	}
	return z, nil
}

type zkEnsemble struct {
	*memberSet
	version string
}

func (z *zkEnsemble) Endpoints() []string { return z.endpoints(2181) }
func (z *zkEnsemble) Version() string     { return z.version }

// fourLetter sends a four-letter-word command to member i and returns the
// whole answer.
func (z *zkEnsemble) fourLetter(ctx context.Context, i int, cmd string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(z.hosts[i].Addr.String(), "2181"))
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := io.WriteString(conn, cmd); err != nil {
		return "", err
	}
	out, err := io.ReadAll(io.LimitReader(conn, 64<<10))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// srvrField returns the value of "key: value" in a srvr answer.
func srvrField(out, key string) string {
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func (z *zkEnsemble) Leader(ctx context.Context) (int, error) {
	reports := z.probe(ctx, func(ctx context.Context, i int) (any, error) {
		out, err := z.fourLetter(ctx, i, "srvr")
		if err != nil {
			return nil, err
		}
		if srvrField(out, "Mode") != "leader" {
			return nil, nil
		}
		zxid, _ := strconv.ParseUint(strings.TrimPrefix(srvrField(out, "Zxid"), "0x"), 16, 64)
		return zxid >> 32, nil // epoch
	})
	leader, best := -1, uint64(0)
	for i, r := range reports {
		if epoch, ok := r.(uint64); ok && (leader < 0 || epoch > best) {
			leader, best = i, epoch
		}
	}
	if err := ctx.Err(); err != nil {
		return -1, err
	}
	if leader < 0 {
		return -1, ErrNoLeader
	}
	return leader, nil
}

// memberSet runs and watches the member processes of an ensemble.
type memberSet struct {
	kind    string
	hosts   []*Host
	dir     string
	tempDir bool // dir was created here and is removed whole
	cpus    string
	logs    io.Writer
	logMu   sync.Mutex

	command func(i int) []string
	alive   func(ctx context.Context, i int) error // answers at all
	serving func(ctx context.Context, i int) error // in a quorum, serving

	mu      sync.Mutex // guards the members' process state and closed
	members []*member
	closed  bool
}

type member struct {
	name string
	dir  string
	op   sync.Mutex // serialises Start, Kill, Pause, Resume of this member
	tail *tail

	cmd    *exec.Cmd     // nil when down
	done   chan struct{} // closed when cmd has exited
	paused bool
}

func newMemberSet(kind string, hosts []*Host, dir string, logs io.Writer, o options) (*memberSet, error) {
	if len(hosts) != 3 {
		return nil, fmt.Errorf("chaos: %s ensemble: want 3 hosts, got %d", kind, len(hosts))
	}
	c := &memberSet{kind: kind, hosts: hosts, dir: dir, cpus: o.cpus, logs: logs}
	if c.logs == nil {
		c.logs = io.Discard
	}
	if dir == "" {
		d, err := os.MkdirTemp("", tempDirPrefix+hosts[0].NS+"-"+kind+"-")
		if err != nil {
			return nil, err
		}
		c.dir, c.tempDir = d, true
	}
	for _, h := range hosts {
		m := &member{name: h.Name, dir: filepath.Join(c.dir, h.Name), tail: &tail{}}
		if _, err := os.Stat(m.dir); err == nil {
			c.removeDirs()
			return nil, fmt.Errorf("chaos: %s data directory %s exists; remove it or use another dir", kind, m.dir)
		}
		if err := os.MkdirAll(m.dir, 0o755); err != nil {
			c.removeDirs()
			return nil, err
		}
		c.members = append(c.members, m)
	}
	return c, nil
}

func (c *memberSet) Kind() string   { return c.kind }
func (c *memberSet) Hosts() []*Host { return slices.Clone(c.hosts) }

func (c *memberSet) endpoints(port int) []string {
	var eps []string
	for _, h := range c.hosts {
		eps = append(eps, net.JoinHostPort(h.Addr.String(), strconv.Itoa(port)))
	}
	return eps
}

func (c *memberSet) member(i int) (*member, error) {
	if i < 0 || i >= len(c.members) {
		return nil, fmt.Errorf("chaos: %s member %d: want 0..%d", c.kind, i, len(c.members)-1)
	}
	return c.members[i], nil
}

// available reports whether member i has a process that is not paused.
func (c *memberSet) available(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.members[i]
	return m.cmd != nil && !m.paused
}

func (c *memberSet) Running(i int) bool {
	m, err := c.member(i)
	if err != nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return m.cmd != nil
}

func (c *memberSet) PID(i int) int {
	m, err := c.member(i)
	if err != nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if m.cmd == nil {
		return 0
	}
	return m.cmd.Process.Pid
}

// spawn starts member i's process; the caller holds m.op. It returns the
// channel closed when the process exits.
func (c *memberSet) spawn(i int) (chan struct{}, error) {
	m := c.members[i]
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, fmt.Errorf("chaos: %s ensemble closed", c.kind)
	}
	if m.cmd != nil {
		if m.paused {
			if err := syscall.Kill(-m.cmd.Process.Pid, syscall.SIGCONT); err != nil {
				return nil, err
			}
			m.paused = false
		}
		return m.done, nil
	}
	args := c.command(i)
	if c.cpus != "" {
		args = append([]string{"taskset", "-c", c.cpus}, args...)
	}
	cmd := c.hosts[i].Command(context.Background(), args[0], args[1:]...)
	w := &lineWriter{prefix: "[" + m.name + "] ", c: c, tail: m.tail}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("chaos: start %s member %s: %w", c.kind, m.name, err)
	}
	done := make(chan struct{})
	m.cmd, m.done, m.paused = cmd, done, false
	go func() {
		err := cmd.Wait()
		w.flush()
		c.mu.Lock()
		if m.cmd == cmd {
			m.cmd, m.paused = nil, false
		}
		c.mu.Unlock()
		fmt.Fprintf(w, "chaos: %s member %s exited: %v\n", c.kind, m.name, err)
		w.flush()
		close(done)
	}()
	return done, nil
}

// startAll starts every member and waits until all serve.
func (c *memberSet) startAll(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	dones := make([]chan struct{}, len(c.members))
	for i, m := range c.members {
		m.op.Lock()
		d, err := c.spawn(i)
		m.op.Unlock()
		if err != nil {
			return errors.Join(err, c.Close())
		}
		dones[i] = d
	}
	for i := range c.members {
		if err := c.waitReady(ctx, i, dones[i], true); err != nil {
			return errors.Join(err, c.Close())
		}
	}
	return nil
}

// waitReady polls member i until it answers (and serves, when serve) or
// its process exits or ctx ends; the error holds the log tail.
func (c *memberSet) waitReady(ctx context.Context, i int, done chan struct{}, serve bool) error {
	m := c.members[i]
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		last = c.alive(pctx, i)
		if last == nil && serve {
			last = c.serving(pctx, i)
		}
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("chaos: %s member %s exited while starting; log tail:\n%s", c.kind, m.name, m.tail.last(30))
		case <-ctx.Done():
			return fmt.Errorf("chaos: %s member %s not ready (%v): %w; log tail:\n%s",
				c.kind, m.name, last, ctx.Err(), m.tail.last(30))
		case <-tick.C:
		}
	}
}

func (c *memberSet) Start(i int) error {
	m, err := c.member(i)
	if err != nil {
		return err
	}
	m.op.Lock()
	done, err := c.spawn(i)
	m.op.Unlock()
	if err != nil {
		return err
	}
	up := 0
	c.mu.Lock()
	for _, o := range c.members {
		if o.cmd != nil && !o.paused {
			up++
		}
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	return c.waitReady(ctx, i, done, up > len(c.members)/2)
}

func (c *memberSet) Kill(i int) error {
	m, err := c.member(i)
	if err != nil {
		return err
	}
	m.op.Lock()
	defer m.op.Unlock()
	return c.kill(m)
}

func (c *memberSet) kill(m *member) error {
	c.mu.Lock()
	cmd, done := m.cmd, m.done
	c.mu.Unlock()
	if cmd == nil {
		return nil
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("chaos: kill %s member %s: %w", c.kind, m.name, err)
	}
	select {
	case <-done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("chaos: %s member %s (pid %d) did not exit 10 s after SIGKILL", c.kind, m.name, cmd.Process.Pid)
	}
}

func (c *memberSet) Pause(i int) error  { return c.signal(i, syscall.SIGSTOP) }
func (c *memberSet) Resume(i int) error { return c.signal(i, syscall.SIGCONT) }

func (c *memberSet) signal(i int, sig syscall.Signal) error {
	m, err := c.member(i)
	if err != nil {
		return err
	}
	m.op.Lock()
	defer m.op.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if m.cmd == nil || m.paused == (sig == syscall.SIGSTOP) {
		return nil
	}
	if err := syscall.Kill(-m.cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("chaos: %v %s member %s: %w", sig, c.kind, m.name, err)
	}
	m.paused = sig == syscall.SIGSTOP
	return nil
}

// probe runs f concurrently on every available member; the result of a
// member that is down, paused or failed is nil.
func (c *memberSet) probe(ctx context.Context, f func(ctx context.Context, i int) (any, error)) []any {
	res := make([]any, len(c.members))
	var wg sync.WaitGroup
	for i := range c.members {
		if !c.available(i) {
			continue
		}
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			if r, err := f(pctx, i); err == nil {
				res[i] = r
			}
		})
	}
	wg.Wait()
	return res
}

func (c *memberSet) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	var errs []error
	for _, m := range c.members {
		m.op.Lock()
		errs = append(errs, c.kill(m))
		m.op.Unlock()
	}
	errs = append(errs, c.removeDirs())
	return errors.Join(errs...)
}

func (c *memberSet) removeDirs() error {
	if c.tempDir {
		return os.RemoveAll(c.dir)
	}
	var errs []error
	for _, m := range c.members {
		errs = append(errs, os.RemoveAll(m.dir))
	}
	return errors.Join(errs...)
}

// lineWriter copies a member's output line by line to the ensemble's log
// writer, prefixed, and into the member's tail.
type lineWriter struct {
	prefix string
	c      *memberSet
	tail   *tail

	mu  sync.Mutex
	buf []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.tail.write(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.emit(w.buf[:i+1])
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emit(append(w.buf, '\n'))
		w.buf = nil
	}
}

func (w *lineWriter) emit(line []byte) {
	w.c.logMu.Lock()
	defer w.c.logMu.Unlock()
	_, _ = io.WriteString(w.c.logs, w.prefix)
	_, _ = w.c.logs.Write(line)
}

// tail keeps the last 64 KiB of a member's output for error messages.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 64 << 10

func (t *tail) write(p []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*tailSize {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-tailSize:]...)
	}
}

// last returns the last n lines.
func (t *tail) last(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(t.buf))
	sc.Buffer(make([]byte, 0, 64<<10), 2*tailSize)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
