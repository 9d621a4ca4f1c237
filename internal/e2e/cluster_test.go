package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/connect"
	"github.com/shardkeeper/shardkeeper/internal/httpapi"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

const token = "e2e-token"

func TestMain(m *testing.M) { testenv.Main(m) }

// proc is one `shardkeeper serve` child process.
type proc struct {
	id     string
	url    string
	cmd    *exec.Cmd
	stdout testenv.SyncBuffer
	stderr testenv.SyncBuffer
	done   chan error

	stopOnce sync.Once
	exitErr  error
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startServe runs serve --conf conf with its own instance id and HTTP port
// and the extra arguments, and waits until /readyz answers 200 (over
// HTTPS, not checking the certificate, when extra has --tls-cert).
func startServe(t *testing.T, conf, id string, port int, extra ...string) *proc {
	t.Helper()
	httpPort := freePort(t)
	scheme, probe := "http", http.DefaultClient
	if slices.Contains(extra, "--tls-cert") {
		scheme = "https"
		probe = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	}
	p := &proc{id: id, url: fmt.Sprintf("%s://127.0.0.1:%d", scheme, httpPort)}
	args := []string{"serve", "--conf", conf, "--instance-id", id, "--port", fmt.Sprint(port),
		"--http", fmt.Sprintf("127.0.0.1:%d", httpPort), "--log-format", "json", "--reservation", "1500ms"}
	p.start(t, append(args, extra...), []string{"SHARDKEEPER_TOKEN=" + token}, "ready", func() bool {
		r, err := probe.Get(p.url + "/readyz")
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == 200
	})
	return p
}

// start runs the shardkeeper binary with args as p, with env added to the
// environment, stops it at the test's cleanup, and polls ready every
// 50 ms until it reports true. The test fails, with p's output, when p
// exits first or is not ready (what) in 60 s.
func (p *proc) start(t *testing.T, args, env []string, what string, ready func() bool) {
	t.Helper()
	p.done = make(chan error, 1)
	p.cmd = exec.Command(testenv.ShardkeeperBinary(t), args...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() { p.stop(t) })
	deadline := time.Now().Add(60 * time.Second)
	for !ready() {
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("%s exited at start: %v\nstdout:\n%s\nstderr:\n%s", p.id, err, p.stdout.String(), p.stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not %s in 60s\nstdout:\n%s\nstderr:\n%s", p.id, what, p.stdout.String(), p.stderr.String())
		}
	}
}

// stop sends SIGTERM and waits for the exit (once); it returns the exit
// error.
func (p *proc) stop(t *testing.T) error {
	p.stopOnce.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case p.exitErr = <-p.done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			p.exitErr = <-p.done
			t.Errorf("%s did not stop within 30s of SIGTERM", p.id)
		}
	})
	return p.exitErr
}

// pause stops p with SIGSTOP and returns once every thread of p is
// stopped: kill returns when the signal is queued, and on a loaded machine
// p's running threads go on (reading watch events, writing to the
// registry) until the thread the kernel picked gets a CPU and stops the
// group. p is resumed with SIGCONT at the test's cleanup, before its
// SIGTERM, which a stopped process would not act on.
func (p *proc) pause(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.cmd.Process.Signal(syscall.SIGCONT) })
	testenv.Eventually(t, p.id+" stopped by SIGSTOP", func() bool {
		stopped, err := allThreadsStopped(p.cmd.Process.Pid)
		if err != nil {
			t.Fatalf("%s: %v", p.id, err)
		}
		return stopped
	})
}

// resume continues p after pause.
func (p *proc) resume(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}

// allThreadsStopped reports whether no thread of process pid can run: each
// is stopped (T, t) or gone (Z, X), as /proc/pid/task/*/stat says.
func allThreadsStopped(pid int) (bool, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return false, fmt.Errorf("read the threads of process %d: %w", pid, err)
	}
	for _, task := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, task.Name(), "stat"))
		if err != nil {
			continue // the thread exited
		}
		// The state follows the command name, which is in parentheses and
		// may hold any character.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) {
			return false, fmt.Errorf("%s/%s/stat: no state in %q", dir, task.Name(), b)
		}
		switch b[i+2] {
		case 'T', 't', 'Z', 'X':
		default:
			return false, nil
		}
	}
	return true, nil
}

var client = &http.Client{Timeout: 30 * time.Second}

func call(t *testing.T, method, url, body string, out any) int {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if method != "GET" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode == 200 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, url, err, b)
		}
	}
	if resp.StatusCode != 200 {
		t.Logf("%s %s: %d %s", method, url, resp.StatusCode, b)
	}
	return resp.StatusCode
}

type nodeRow struct {
	InstanceID string `json:"instance_id"`
	Status     string `json:"status"`
	WorkerID   int    `json:"worker_id"`
	Port       int    `json:"port"`
}

func nodes(t *testing.T, p *proc) []nodeRow {
	t.Helper()
	var v struct {
		Nodes []nodeRow `json:"nodes"`
	}
	call(t, "GET", p.url+"/api/v1/nodes", "", &v)
	return v.Nodes
}

// registries are the real registries the cluster tests run on.
var registries = []struct{ name, typ string }{{"etcd", config.RepositoryEtcd}, {"ZooKeeper", config.RepositoryZooKeeper}}

// eachRegistry runs f as one subtest per real registry, named after it,
// with the registry's type.
func eachRegistry(t *testing.T, f func(t *testing.T, typ string)) {
	for _, reg := range registries {
		t.Run(reg.name, func(t *testing.T) { f(t, reg.typ) })
	}
}

// registryServers returns the comma-separated servers of the real
// registry typ (testenv.EtcdEndpoints or testenv.ZooKeeperServers).
func registryServers(t *testing.T, typ string) string {
	t.Helper()
	if typ == config.RepositoryEtcd {
		return strings.Join(testenv.EtcdEndpoints(t), ",")
	}
	return strings.Join(testenv.ZooKeeperServers(t), ",")
}

// writeConf writes a conf dir whose global.yaml points at a fresh
// namespace of the registry typ at servers (comma-separated), with a
// session time to live of 10 s.
func writeConf(t *testing.T, typ, servers string) string {
	t.Helper()
	return writeGlobal(t, typ, servers, 10, "")
}

// writeGlobal writes a conf dir whose global.yaml points at a fresh
// namespace of the registry typ at servers (comma-separated), with
// timeToLiveSeconds ttl (left out when 0) and the YAML extra (top-level
// sections such as authority) after the mode.
func writeGlobal(t *testing.T, typ, servers string, ttl int, extra string) string {
	t.Helper()
	conf := t.TempDir()
	global := "mode:\n  type: Cluster\n  repository:\n    type: " + typ + "\n    props:\n      namespace: " + testenv.Namespace("sk_e2e_") +
		"\n      server-lists: " + servers + "\n"
	if ttl > 0 {
		global += fmt.Sprintf("      timeToLiveSeconds: %d\n", ttl)
	}
	if err := os.WriteFile(filepath.Join(conf, "global.yaml"), []byte(global+extra), 0o644); err != nil {
		t.Fatal(err)
	}
	return conf
}

// clusterOptions says how startCluster configures and runs its nodes.
type clusterOptions struct {
	prefix string   // instance ids prefix-1 to prefix-n
	port   int      // serve nodes: node i publishes port+i
	mysql  bool     // nodes with their MySQL console on 127.0.0.1 (startMySQLNode), no HTTP API
	ttl    int      // timeToLiveSeconds in global.yaml; 0 leaves the registry's default
	global string   // YAML appended to global.yaml, e.g. an authority rule
	extra  []string // more serve arguments, for every node
	// seed, when set, runs on the registry client before the first node
	// starts; cleanups it registers run after the nodes stopped.
	seed func(ctx context.Context, repo registry.Repository)
}

// cluster is n serve processes on one fresh namespace of a real
// registry, and a client of that namespace.
type cluster struct {
	conf  string              // the conf dir with global.yaml
	repo  registry.Repository // the client, closed after the nodes stopped
	procs []*proc             // the nodes in order
	mysql []*mysqlNode        // with clusterOptions.mysql, the nodes in order (procs holds their processes)
}

// startCluster writes a conf dir for a fresh namespace of the real
// registry typ, opens a client of it from that conf (as serve reads it),
// runs opts.seed and starts n nodes one after the other, each waited for
// until it runs (serve nodes: until /readyz answers 200). The nodes are
// stopped at the test's cleanup, then the client is closed.
func startCluster(t *testing.T, typ string, n int, opts clusterOptions) *cluster {
	t.Helper()
	c := &cluster{conf: writeGlobal(t, typ, registryServers(t, typ), opts.ttl, opts.global)}
	ctx := testenv.Context(t)
	mode, err := config.LoadMode(ctx, c.conf)
	if err != nil {
		t.Fatal(err)
	}
	if c.repo, err = connect.Open(ctx, mode.Repository, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.repo.Close() })
	if opts.seed != nil {
		opts.seed(ctx, c.repo)
	}
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("%s-%d", opts.prefix, i)
		if opts.mysql {
			m := startMySQLNode(t, c.conf, id, "127.0.0.1", opts.extra...)
			c.mysql = append(c.mysql, m)
			c.procs = append(c.procs, m.proc)
		} else {
			c.procs = append(c.procs, startServe(t, c.conf, id, opts.port+i, opts.extra...))
		}
	}
	return c
}

// TestThreeNodes runs three serve processes on one conf dir, on real etcd
// and on real ZooKeeper, and drives them through the HTTP API.
func TestThreeNodes(t *testing.T) {
	eachRegistry(t, func(t *testing.T, typ string) {
		start := time.Now()
		procs := startCluster(t, typ, 3, clusterOptions{prefix: "e2e-node", port: 3300, ttl: 10}).procs
		t.Logf("3 nodes ready in %v", time.Since(start).Round(time.Millisecond))
		threeNodes(t, procs)
	})
}

// threeNodes drives three running nodes (instance ids e2e-node-1 to 3,
// ports 3301 to 3303) through the HTTP API.
func threeNodes(t *testing.T, procs []*proc) {
	// Membership: every node shows three rows with distinct worker ids.
	for _, p := range procs {
		testenv.Eventually(t, p.id+" sees 3 nodes", func() bool { return len(nodes(t, p)) == 3 })
		rows := nodes(t, p)
		seen := map[int]bool{}
		for i, r := range rows {
			if r.WorkerID < 0 || seen[r.WorkerID] || r.Status != "OK" || r.InstanceID != procs[i].id || r.Port != 3301+i {
				t.Fatalf("%s: nodes = %+v", p.id, rows)
			}
			seen[r.WorkerID] = true
		}
	}

	// 10,000 keys from each node, 1,000 per request, all nodes at once.
	var mu sync.Mutex
	all := make(map[string]string, 30000)
	var wg sync.WaitGroup
	errs := make(chan error, 30)
	keyStart := time.Now()
	for _, p := range procs {
		for range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := client.Get(p.url + "/api/v1/keys?count=1000")
				if err != nil {
					errs <- err
					return
				}
				defer resp.Body.Close()
				var b httpapi.Keys
				if err := json.NewDecoder(resp.Body).Decode(&b); err != nil || resp.StatusCode != 200 || len(b.Keys) != 1000 {
					errs <- fmt.Errorf("%s: status %d, %d keys, %v", p.id, resp.StatusCode, len(b.Keys), err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				for _, k := range b.Keys {
					if other, dup := all[k]; dup {
						errs <- fmt.Errorf("duplicate key %s from %s and %s", k, other, p.id)
						return
					}
					all[k] = p.id
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(all) != 30000 {
		t.Fatalf("%d unique keys, want 30000", len(all))
	}
	t.Logf("30,000 keys, all unique, in %v", time.Since(keyStart).Round(time.Millisecond))

	// A key from node 3 decodes on node 1 to node 3's worker id and instance.
	var k3 string
	for k, id := range all {
		if id == procs[2].id {
			k3 = k
			break
		}
	}
	var info httpapi.KeyInfo
	call(t, "GET", procs[0].url+"/api/v1/keys/"+k3, "", &info)
	if info.InstanceID != procs[2].id {
		t.Fatalf("key %s decoded on node 1: %+v", k3, info)
	}

	// Unauthenticated mutation: 401.
	req, _ := http.NewRequest("PUT", procs[0].url+"/api/v1/nodes/"+procs[2].id+"/state", strings.NewReader(`{"state":"DISABLE"}`))
	if resp, err := client.Do(req); err != nil || resp.StatusCode != 401 {
		t.Fatalf("unauthenticated DISABLE: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	// DISABLE node 3 through node 1: every node sees it, node 3 stops serving keys.
	var row nodeRow
	if code := call(t, "PUT", procs[0].url+"/api/v1/nodes/"+procs[2].id+"/state", `{"state":"DISABLE"}`, &row); code != 200 || row.Status != "CIRCUIT_BREAK" {
		t.Fatalf("DISABLE: %d %+v", code, row)
	}
	for _, p := range procs {
		testenv.Eventually(t, p.id+" sees node 3 disabled", func() bool {
			for _, r := range nodes(t, p) {
				if r.InstanceID == procs[2].id {
					return r.Status == "CIRCUIT_BREAK"
				}
			}
			return false
		})
	}
	testenv.Eventually(t, "node 3 not ready", func() bool { return call(t, "GET", procs[2].url+"/readyz", "", nil) == 503 })
	if code := call(t, "GET", procs[2].url+"/api/v1/keys", "", nil); code != 503 {
		t.Fatalf("keys from a disabled node: %d", code)
	}
	if code := call(t, "PUT", procs[1].url+"/api/v1/nodes/"+procs[2].id+"/state", `{"state":"ENABLE"}`, &row); code != 200 || row.Status != "OK" {
		t.Fatalf("ENABLE: %d %+v", code, row)
	}
	testenv.Eventually(t, "node 3 ready again", func() bool { return call(t, "GET", procs[2].url+"/readyz", "", nil) == 200 })

	// SIGTERM node 2: it leaves gracefully and the others see it go.
	if err := procs[1].stop(t); err != nil {
		t.Fatalf("node 2 exit: %v\n%s", err, procs[1].stderr.String())
	}
	if out := procs[1].stdout.String(); !strings.Contains(out, "shardkeeper: stopped") {
		t.Fatalf("node 2 output:\n%s", out)
	}
	for _, p := range []*proc{procs[0], procs[2]} {
		testenv.Eventually(t, p.id+" sees node 2 leave", func() bool {
			rows := nodes(t, p)
			for _, r := range rows {
				if r.InstanceID == procs[1].id {
					return false
				}
			}
			return len(rows) == 2
		})
	}

	// Every log line is JSON and carries its node's instance id.
	for _, p := range procs {
		_ = p.stop(t)
		sc := bufio.NewScanner(strings.NewReader(p.stderr.String()))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		lines := 0
		for sc.Scan() {
			var rec map[string]any
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				t.Fatalf("%s: log line is not JSON: %q", p.id, sc.Text())
			}
			if rec["instance"] != p.id {
				t.Fatalf("%s: log line without its instance id: %q", p.id, sc.Text())
			}
			lines++
		}
		if lines == 0 {
			t.Fatalf("%s logged nothing", p.id)
		}
	}
}
