package main

import (
	"bytes"
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

// run executes the CLI in-process and returns its standard output.
func run(t *testing.T, ctx context.Context, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	return out.String(), err
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	ctx := testenv.Context(t)
	out, err := run(t, ctx, args...)
	if err != nil {
		t.Fatalf("shardkeeper %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// roundTrip writes, reads and lists through the CLI with the given
// registry flags.
func roundTrip(t *testing.T, flags ...string) {
	t.Helper()
	mustRun(t, append([]string{"registry", "put", "/nodes/compute_nodes/status/cli-test", "OK"}, flags...)...)
	if got := mustRun(t, append([]string{"registry", "get", "/nodes/compute_nodes/status/cli-test"}, flags...)...); got != "OK\n" {
		t.Fatalf("get = %q", got)
	}
	if got := mustRun(t, append([]string{"registry", "ls", "/nodes/compute_nodes/status"}, flags...)...); !regexp.MustCompile(`(?m)^cli-test$`).MatchString(got) {
		t.Fatalf("ls = %q", got)
	}
	if got := mustRun(t, append([]string{"registry", "get", "/nodes/compute_nodes/status/cli-test", "-o", "json"}, flags...)...); !strings.Contains(got, `"value":"OK"`) {
		t.Fatalf("get -o json = %q", got)
	}
	versionedNode(t, flags...)
}

// versionedNode writes /props as ShardingSphere 5.5 does (versions/N and
// active_version) with the given registry flags: registry get /props
// prints the active version's value and names its key on stderr, registry
// put /props is refused and names props set, and get of a node without a
// value names its children.
func versionedNode(t *testing.T, flags ...string) {
	t.Helper()
	cli := cliExpect(t, flags...)
	cli(0, "OK", "registry", "put", "/props/versions/0", "sql-show: false")
	cli(0, "OK", "registry", "put", "/props/versions/1", "sql-show: true")
	cli(0, "OK", "registry", "put", "/props/active_version", "1")
	stdout, stderr, code := runCLI(t, append([]string{"registry", "get", "/props"}, flags...)...)
	if code != 0 || stdout != "sql-show: true\n" || !strings.Contains(stderr, "/props is versioned: its active version 1, /props/versions/1") {
		t.Fatalf("registry get /props: exit %d\nstdout %q\nstderr %q", code, stdout, stderr)
	}
	cli(0, `"value":"sql-show: true"`, "registry", "get", "/props", "-o", "json")
	cli(1, "refusing to put /props: it is a versioned node", "registry", "put", "/props", "sql-show: false")
	cli(1, "'shardkeeper props set NAME VALUE'", "registry", "put", "/props", "sql-show: false")
	if got := mustRun(t, append([]string{"registry", "get", "/props/versions/1"}, flags...)...); got != "sql-show: true\n" {
		t.Fatalf("a refused put changed the active version: %q", got)
	}
	if _, stderr, code := runCLI(t, append([]string{"registry", "get", "/nodes/compute_nodes/status"}, flags...)...); code != 1 ||
		!regexp.MustCompile(`/nodes/compute_nodes/status holds no value; its children do: (.*, )?cli-test`).MatchString(stderr) {
		t.Fatalf("registry get of a node without a value: exit %d, %s", code, stderr)
	}
	cli(0, "OK", "registry", "put", "/props/active_version", "7")
	cli(1, "/props is a versioned node whose active version 7 is missing", "registry", "get", "/props")
	mustRun(t, append([]string{"registry", "rm", "/props"}, flags...)...)
}

func TestRegistryCLIOnEtcd(t *testing.T) {
	endpoints := testenv.EtcdEndpoints(t)
	ns := testenv.Namespace("sk_cli_")
	flags := []string{"--repository-type", "etcd", "--server-lists", strings.Join(endpoints, ","), "--namespace", ns}
	roundTrip(t, flags...)
	// etcdctl sees the raw namespaced key.
	out, err := exec.Command("etcdctl", "--endpoints", endpoints[0], "get", ns+"/nodes/compute_nodes/status/cli-test", "--print-value-only").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "OK" {
		t.Fatalf("etcdctl get: %q, %v", out, err)
	}
	mustRun(t, append([]string{"registry", "rm", "/nodes", "--force"}, flags...)...)
	if _, err := run(t, context.Background(), append([]string{"registry", "get", "/nodes/compute_nodes/status/cli-test"}, flags...)...); err == nil || !strings.Contains(err.Error(), "key not found") {
		t.Fatalf("get after rm: %v", err)
	}
}

func TestRegistryCLIOnZooKeeper(t *testing.T) {
	servers := testenv.ZooKeeperServers(t)
	ns := testenv.Namespace("sk_cli_")
	flags := []string{"--repository-type", "ZooKeeper", "--server-lists", strings.Join(servers, ","), "--namespace", ns}
	roundTrip(t, flags...)
	// zkCli.sh sees the znode under the namespace root.
	out, err := exec.Command("/usr/share/zookeeper/bin/zkCli.sh", "-server", servers[0], "get", "/"+ns+"/nodes/compute_nodes/status/cli-test").CombinedOutput()
	if err != nil || !regexp.MustCompile(`(?m)^OK$`).Match(out) {
		t.Fatalf("zkCli.sh get: %v\n%s", err, out)
	}
	mustRun(t, append([]string{"registry", "rm", "/nodes", "--force"}, flags...)...)
}

func TestServeEmbeddedKeepsDataAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "conf")
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		t.Fatal(err)
	}
	global := "mode:\n  type: Standalone\n  repository:\n    type: Embedded\n    props:\n      dataDir: " + data +
		"\n      clientUrl: http://127.0.0.1:0\n"
	if err := os.WriteFile(filepath.Join(conf, "global.yaml"), []byte(global), 0o644); err != nil {
		t.Fatal(err)
	}
	serve := func() (endpoint string, stop func() string) {
		ctx, cancel := context.WithCancel(context.Background())
		var out testenv.SyncBuffer
		cmd := newRootCommand()
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs([]string{"serve", "--conf", conf})
		done := make(chan error, 1)
		go func() { done <- cmd.ExecuteContext(ctx) }()
		re := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)
		deadline := time.Now().Add(30 * time.Second)
		for {
			if m := re.FindStringSubmatch(out.String()); m != nil {
				endpoint = m[1]
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("serve did not start:\n%s", out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		return endpoint, func() string {
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("serve: %v", err)
			}
			return out.String()
		}
	}
	ep, stop := serve()
	flags := []string{"--repository-type", "etcd", "--server-lists", ep, "--data-dir", data}
	roundTrip(t, flags...)
	if out := stop(); !strings.Contains(out, "shardkeeper: stopped") {
		t.Fatalf("serve output:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(data, "member")); err != nil {
		t.Fatalf("no data under the data dir: %v", err)
	}
	ep, stop = serve()
	if got := mustRun(t, "registry", "get", "/nodes/compute_nodes/status/cli-test", "--repository-type", "etcd", "--server-lists", ep, "--data-dir", data); got != "OK\n" {
		t.Fatalf("after restart get = %q", got)
	}
	if out := stop(); !strings.Contains(out, "reusing registry data in "+data) {
		t.Fatalf("second start did not reuse the data:\n%s", out)
	}
}

func TestRegistryCLIErrors(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"registry", "get", "/x", "--repository-type", "etcd", "--server-lists", "http://127.0.0.1:1", "--timeout", "1s"}, "http://127.0.0.1:1"},
		{[]string{"registry", "get", "/x", "--repository-type", "ZooKeeper", "--server-lists", "127.0.0.1:1", "--timeout", "1s"}, "127.0.0.1:1"},
		{[]string{"registry", "get", "/x", "--repository-type", "consul", "--server-lists", "x:1"}, `--repository-type: "consul" is not a repository type`},
		{[]string{"registry", "get", "/x", "--repository-type", "etcd"}, "--server-lists: required"},
		{[]string{"registry", "get", "/x", "--repository-type", "etcd", "--server-lists", "127.0.0.1:2379"}, "must be a URL such as http://127.0.0.1:2379"},
		{[]string{"registry", "get", "/x", "--repository-type", "etcd", "--server-lists", "http://127.0.0.1:1", "--namespace", "../up"}, `--namespace: must not contain ".."`},
		{[]string{"registry", "get", "/x", "--conf", "/nonexistent"}, "neither global.yaml nor server.yaml"},
	} {
		start := time.Now()
		_, err := run(t, ctx, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want it to mention %q", c.args, err, c.want)
		}
		if time.Since(start) > 20*time.Second {
			t.Errorf("%v: took %v, the timeout was 1s", c.args, time.Since(start))
		}
	}
}

// startServe runs `shardkeeper serve args...` in-process until the
// returned stop is called (as SIGTERM would), and returns its output so far.
func startServe(t *testing.T, args ...string) (output func() string, stop func() string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out testenv.SyncBuffer
	cmd := newRootCommand()
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append([]string{"serve"}, args...))
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(out.String(), "shardkeeper: running") {
		select {
		case err := <-done:
			t.Fatalf("serve exited: %v\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return out.String, func() string {
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("serve: %v\n%s", err, out.String())
		}
		return out.String()
	}
}

// realRegistry is a real registry server the tests run against.
type realRegistry struct{ name, typ, servers string }

// realRegistries returns the real etcd and ZooKeeper of the test
// environment (see testenv: missing servers skip or fail the test).
func realRegistries(t *testing.T) []realRegistry {
	return []realRegistry{
		{"etcd", "etcd", strings.Join(testenv.EtcdEndpoints(t), ",")},
		{"ZooKeeper", "ZooKeeper", strings.Join(testenv.ZooKeeperServers(t), ",")},
	}
}

// clusterModeYAML is a global.yaml mode: section for a Cluster node on the
// registry typ at servers, in namespace ns, with a 15 s session TTL.
func clusterModeYAML(typ, servers, ns string) string {
	return "mode:\n  type: Cluster\n  repository:\n    type: " + typ + "\n    props:\n      namespace: " + ns +
		"\n      server-lists: " + servers + "\n      timeToLiveSeconds: 15\n"
}

// clusterConf writes a conf dir whose global.yaml is clusterModeYAML for
// reg and a fresh namespace named from nsPrefix, followed by extra (other
// top-level sections), and the files (name to content) next to it, all
// mode 0600.
func clusterConf(t *testing.T, reg realRegistry, nsPrefix, extra string, files map[string]string) string {
	t.Helper()
	conf := t.TempDir()
	all := map[string]string{"global.yaml": clusterModeYAML(reg.typ, reg.servers, testenv.Namespace(nsPrefix)) + extra}
	maps.Copy(all, files)
	for name, content := range all {
		if err := os.WriteFile(filepath.Join(conf, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return conf
}

// openConf opens the registry of conf as the CLI does (--conf conf). At
// the test's cleanup it deletes the paths clean (what the test wrote in its
// namespace), then closes the client.
func openConf(ctx context.Context, t *testing.T, conf string, clean ...string) registry.Repository {
	t.Helper()
	repo, err := openFromFlags(ctx, &registryFlags{confDir: conf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, p := range clean {
			_ = repo.Delete(context.Background(), p)
		}
		_ = repo.Close()
	})
	return repo
}

// TestServeClusterNode runs `serve --conf DIR` on real etcd and ZooKeeper:
// the node registers online with a worker id, and leaves on SIGTERM.
func TestServeClusterNode(t *testing.T) {
	for _, reg := range realRegistries(t) {
		t.Run(reg.name, func(t *testing.T) {
			conf := clusterConf(t, reg, "sk_serve_", "", nil)
			flags := []string{"--conf", conf}
			_, stop := startServe(t, "--conf", conf, "--instance-id", "serve-test", "--port", "3399")
			online := mustRun(t, append([]string{"registry", "get", "/nodes/compute_nodes/online/proxy/serve-test"}, flags...)...)
			if !strings.Contains(online, "attribute: 127.0.0.1@3399") {
				t.Fatalf("online node = %q", online)
			}
			wid := strings.TrimSpace(mustRun(t, append([]string{"registry", "get", "/nodes/compute_nodes/worker_id/serve-test"}, flags...)...))
			if holder := mustRun(t, append([]string{"registry", "get", "/reservation/worker_id/" + wid}, flags...)...); holder != "serve-test\n" {
				t.Fatalf("reservation %s = %q", wid, holder)
			}
			out := stop()
			if !strings.Contains(out, "holds worker id "+wid) || !strings.Contains(out, "shardkeeper: stopped") {
				t.Fatalf("serve output:\n%s", out)
			}
			if got, _ := run(t, context.Background(), append([]string{"registry", "ls", "/nodes/compute_nodes/online/proxy"}, flags...)...); strings.Contains(got, "serve-test") {
				t.Fatalf("still online after SIGTERM: %q", got)
			}
			mustRun(t, append([]string{"registry", "rm", "/nodes", "--force"}, flags...)...)
			mustRun(t, append([]string{"registry", "rm", "/reservation", "--force"}, flags...)...)
		})
	}
}
