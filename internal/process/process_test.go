package process_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/process"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/etcd/etcdtest"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper/zktest"
)

// backend opens clients on one fresh namespace of a real registry.
type backend struct {
	name string
	ns   string
	open func(t testing.TB) registry.Repository
	// cli writes key with value "" the way ShardingSphere does, with the
	// backend's own command-line client; nil when there is none.
	cli func(t testing.TB, key string)
}

// eachBackend runs f on a fresh namespace of real etcd and of real
// ZooKeeper.
func eachBackend(t *testing.T, f func(t *testing.T, b backend)) {
	t.Run("etcd", func(t *testing.T) { f(t, etcdBackend(t)) })
	t.Run("zookeeper", func(t *testing.T) { f(t, zkBackend(t)) })
}

func etcdBackend(t testing.TB) backend {
	s := etcdtest.New(t)
	ns := s.Namespace(t, "sk_process_")
	return backend{
		name: "etcd", ns: ns,
		open: func(t testing.TB) registry.Repository { return s.Open(t, ns) },
		cli: func(t testing.TB, key string) {
			// ShardingSphere's EtcdRepository.persist: a plain put of "".
			etcdctl(t, s.Endpoints, "put", ns+key, "")
		},
	}
}

func zkBackend(t testing.TB) backend {
	s := zktest.New(t)
	ns := s.Namespace(t, "sk_process_")
	return backend{
		name: "zookeeper", ns: ns,
		open: func(t testing.TB) registry.Repository { return s.Open(t, ns) },
		cli: func(t testing.TB, key string) {
			// ShardingSphere's ZookeeperRepository.persist: a persistent
			// znode (CreateMode.PERSISTENT) with value "". zkCli.sh creates
			// no parents; the trigger root exists once a responder watches.
			zkCli(t, s.Servers[0], "create", "/"+ns+key, "")
		},
	}
}

const zkCliPath = "/usr/share/zookeeper/bin/zkCli.sh"

func etcdctl(t testing.TB, endpoints []string, args ...string) {
	t.Helper()
	if _, err := exec.LookPath("etcdctl"); err != nil {
		t.Skip("etcdctl not installed (Debian package etcd-client)")
	}
	cmd := exec.Command("etcdctl", append([]string{"--endpoints=" + strings.Join(endpoints, ",")}, args...)...)
	cmd.Env = append(os.Environ(), "ETCDCTL_API=3")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("etcdctl %v: %v\n%s", args, err, out)
	}
}

func zkCli(t testing.TB, server string, args ...string) {
	t.Helper()
	if _, err := os.Stat(zkCliPath); err != nil {
		t.Skip("zkCli.sh not installed (Debian package zookeeper)")
	}
	out, err := exec.Command(zkCliPath, append([]string{"-server", server}, args...)...).CombinedOutput()
	if err != nil || strings.Contains(string(out), "Exception") || strings.Contains(string(out), "Node does not exist") {
		t.Fatalf("zkCli.sh %v: %v\n%s", args, err, out)
	}
}

// mustKey returns key; the paths in these tests are valid, so err is a
// bug in the test.
func mustKey(key string, err error) string {
	if err != nil {
		panic(err)
	}
	return key
}

func openResponder(t testing.TB, repo registry.Repository, id string, table *process.Table) *process.Responder {
	t.Helper()
	r, err := process.Open(testenv.Context(t), repo, process.Config{InstanceID: id, Table: table})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

func gone(ctx context.Context, t testing.TB, repo registry.Repository, key string) bool {
	ok, err := registry.Exists(ctx, repo, key)
	if err != nil {
		t.Fatal(err)
	}
	return !ok
}

// TestShowProcessListTriggerAnswered writes triggers as ShardingSphere
// does and checks the answers: with no processes only the trigger is
// deleted; with processes the list is written first; triggers of other
// instances are left alone.
func TestShowProcessListTriggerAnswered(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := testenv.Context(t)
		repo, asker := b.open(t), b.open(t)
		table := process.NewTable()
		openResponder(t, repo, "i1", table)

		empty := mustKey(paths.ShowProcessListTrigger("i1", "0000000000000000000000000000aaa0"))
		if _, err := asker.Put(ctx, empty, []byte{}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the trigger of an instance without processes deleted", func() bool { return gone(ctx, t, asker, empty) })
		if kvs, err := asker.List(ctx, mustKey(paths.ExecutionTask("0000000000000000000000000000aaa0"))); err != nil || len(kvs) != 0 {
			t.Fatalf("execution node written without processes: %v %v", kvs, err)
		}

		p := process.Process{ID: "p1", StartMillis: 1700000000000, SQL: "SHOW PROCESSLIST", DatabaseName: "sharding_db",
			Username: "root", Hostname: "127.0.0.1", TotalUnitCount: 2, CompletedUnitCount: 1}
		table.Add(p, nil, nil)
		other := mustKey(paths.ShowProcessListTrigger("i2", "0000000000000000000000000000aaa1"))
		mine := mustKey(paths.ShowProcessListTrigger("i1", "0000000000000000000000000000aaa1"))
		for _, k := range []string{other, mine} {
			if _, err := asker.Put(ctx, k, []byte{}); err != nil {
				t.Fatal(err)
			}
		}
		testenv.Eventually(t, "the trigger deleted", func() bool { return gone(ctx, t, asker, mine) })
		kv, err := asker.Get(ctx, mustKey(paths.ExecutionNode("0000000000000000000000000000aaa1", "i1")))
		if err != nil {
			t.Fatalf("execution node: %v", err)
		}
		want := "processes:\n- completedUnitCount: 1\n  databaseName: sharding_db\n  hostname: 127.0.0.1\n  id: p1\n" +
			"  idle: false\n  interrupted: false\n  sql: SHOW PROCESSLIST\n  startMillis: 1700000000000\n  totalUnitCount: 2\n  username: root\n"
		if string(kv.Value) != want {
			t.Errorf("execution node:\n%s\nwant:\n%s", kv.Value, want)
		}
		l, err := process.ParseList(kv.Value)
		if err != nil || len(l.Processes) != 1 || l.Processes[0] != p {
			t.Errorf("ParseList = %+v, %v; want %+v", l, err, p)
		}
		time.Sleep(100 * time.Millisecond)
		if gone(ctx, t, asker, other) {
			t.Error("another instance's trigger was deleted")
		}
	})
}

// TestKillProcessTrigger checks that a kill trigger for an unknown process
// is deleted, and one for a known process kills it, then is deleted.
func TestKillProcessTrigger(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := testenv.Context(t)
		repo, asker := b.open(t), b.open(t)
		table := process.NewTable()
		var killed atomic.Int32
		table.Add(process.Process{ID: "p1"}, func() { killed.Add(1) }, nil)
		openResponder(t, repo, "i1", table)

		unknown := mustKey(paths.KillProcessTrigger("i1", "nope"))
		if _, err := asker.Put(ctx, unknown, []byte{}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the kill trigger of an unknown process deleted", func() bool { return gone(ctx, t, asker, unknown) })
		if killed.Load() != 0 {
			t.Fatal("an unknown process id killed p1")
		}
		known := mustKey(paths.KillProcessTrigger("i1", "p1"))
		if _, err := asker.Put(ctx, known, []byte{}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the kill trigger of p1 deleted", func() bool { return gone(ctx, t, asker, known) })
		if killed.Load() != 1 {
			t.Fatalf("p1 killed %d times, want 1", killed.Load())
		}
		if l := table.List(); len(l) != 1 || !l[0].Interrupted {
			t.Fatalf("table after the kill: %+v, want p1 interrupted", l)
		}
	})
}

// TestTriggersWrittenByCLI writes the triggers with etcdctl and zkCli.sh,
// byte for byte as ShardingSphere's repositories write them, and checks
// that each is answered.
func TestTriggersWrittenByCLI(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := testenv.Context(t)
		repo, asker := b.open(t), b.open(t)
		openResponder(t, repo, "i1", process.NewTable())
		for _, root := range []string{paths.ShowProcessListTriggerRoot, paths.KillProcessTriggerRoot} {
			if _, err := asker.Put(ctx, root, []byte{}); err != nil { // the parents zkCli.sh does not create
				t.Fatal(err)
			}
		}
		for _, k := range []string{mustKey(paths.ShowProcessListTrigger("i1", "0123456789abcdef0123456789abcdef")), mustKey(paths.KillProcessTrigger("i1", "unknown"))} {
			b.cli(t, k)
			testenv.Eventually(t, k+" written by the CLI deleted", func() bool { return gone(ctx, t, asker, k) })
		}
	})
}

// TestTriggerLatency writes 100 triggers one after another, as many SHOW
// PROCESSLIST statements would, checks that every one is answered and logs
// the latency percentiles (BenchmarkTriggerAnswer reports them).
func TestTriggerLatency(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		lat := triggerLatencies(t, b, 100)
		t.Logf("%s: 100 triggers answered: p50 %v, p99 %v, max %v", b.name, pct(lat, 50), pct(lat, 99), lat[len(lat)-1])
	})
}

// BenchmarkTriggerAnswer measures how long a node takes to answer a SHOW
// PROCESSLIST trigger, from the asker's write until the asker's watch sees
// the trigger deleted, over 100 triggers per iteration. It reports p50 and
// p99 and, as a baseline from the same run, the asker's own put and
// delete of a key seen through the same watch (the registry's part).
func BenchmarkTriggerAnswer(b *testing.B) {
	for _, mk := range []func(testing.TB) backend{etcdBackend, zkBackend} {
		be := mk(b)
		b.Run(be.name, func(b *testing.B) {
			var lat, base []time.Duration
			for b.Loop() {
				lat = append(lat, triggerLatencies(b, be, 100)...)
				base = append(base, baseline(b, be, 100)...)
			}
			slices.Sort(lat)
			slices.Sort(base)
			b.ReportMetric(ms(pct(lat, 50)), "p50-ms")
			b.ReportMetric(ms(pct(lat, 99)), "p99-ms")
			b.ReportMetric(ms(pct(base, 99)), "baseline-p99-ms")
			b.ReportMetric(float64(pct(lat, 99))/float64(pct(base, 99)), "p99/baseline")
		})
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// pct returns the p-th percentile of sorted.
func pct(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p+99)/100 - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// triggerLatencies opens a responder for a fresh instance with one
// process and n times writes a trigger for it and waits for its deletion,
// returning the sorted times. It fails the test when a trigger is not
// answered within 10 s.
func triggerLatencies(t testing.TB, b backend, n int) []time.Duration {
	ctx := testenv.Context(t)
	id := testenv.Namespace("lat_")
	table := process.NewTable()
	table.Add(process.Process{ID: "p1", SQL: "select 1"}, nil, nil)
	repo, asker := b.open(t), b.open(t)
	r := openResponder(t, repo, id, table)
	defer r.Close()
	return timeDeletes(t, ctx, asker, n, func(i int) (string, error) {
		k := mustKey(paths.ShowProcessListTrigger(id, fmt.Sprintf("%032x", i)))
		_, err := asker.Put(ctx, k, []byte{})
		return k, err
	})
}

// baseline times n puts of a trigger-like key and its deletion by the
// same client, seen through a watch.
func baseline(t testing.TB, b backend, n int) []time.Duration {
	ctx := testenv.Context(t)
	asker := b.open(t)
	id := testenv.Namespace("base_")
	return timeDeletes(t, ctx, asker, n, func(i int) (string, error) {
		k := mustKey(paths.ShowProcessListTrigger(id, fmt.Sprintf("%032x", i)))
		if _, err := asker.Put(ctx, k, []byte{}); err != nil {
			return k, err
		}
		return k, asker.Delete(ctx, k)
	})
}

// timeDeletes runs write n times; each returns a key, and the time from
// the call until the key is seen deleted is recorded: by a watch on the
// trigger root or, since a watch may coalesce a creation and a deletion
// into nothing, by reading the key every 10 ms. The result is sorted.
func timeDeletes(t testing.TB, ctx context.Context, repo registry.Repository, n int, write func(i int) (string, error)) []time.Duration {
	t.Helper()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	_, changes, err := repo.Watch(wctx, paths.ShowProcessListTriggerRoot)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		for range changes {
		}
	}()
	out := make([]time.Duration, 0, n)
	for i := range n {
		start := time.Now()
		k, err := write(i)
		if err != nil {
			t.Fatal(err)
		}
		timeout := time.After(10 * time.Second)
		poll := time.NewTicker(10 * time.Millisecond)
	wait:
		for {
			select {
			case ev, ok := <-changes:
				if !ok || ev.Err != nil {
					t.Fatalf("watch ended: %v", ev.Err)
				}
				if ev.Type == registry.EventDelete && ev.KV.Key == k {
					break wait
				}
			case <-poll.C:
				if gone(ctx, t, repo, k) {
					break wait
				}
			case <-timeout:
				t.Fatalf("trigger %s not answered within 10s", k)
			}
		}
		out = append(out, time.Since(start))
		poll.Stop()
	}
	slices.Sort(out)
	return out
}

// TestCollectOverThreeNodes runs three in-process nodes, one of whose
// responders is stopped, and checks that Collect returns the lists of the
// two that answer and names the third, within its timeout, and leaves no
// trigger or execution node behind. Kill reaches the process on its node.
func TestCollectOverThreeNodes(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := testenv.Context(t)
		asker := b.open(t)
		var killed atomic.Int32
		tables := map[string]*process.Table{}
		for i, id := range []string{"a", "b", "c"} {
			repo := b.open(t)
			if _, err := repo.Put(ctx, mustKey(paths.Online(paths.Proxy, id)), []byte("attribute: 127.0.0.1@3307\nversion: 5.5.3\n")); err != nil {
				t.Fatal(err)
			}
			tables[id] = process.NewTable()
			for j := range i {
				pid := fmt.Sprintf("%s%d", id, j)
				tables[id].Add(process.Process{ID: pid, Username: "root"}, func() {
					if pid == "b0" {
						killed.Add(1)
					}
				}, nil)

			}
			r := openResponder(t, repo, id, tables[id])
			if id == "c" {
				r.Close() // c stays online but no longer answers
			}
		}
		// Long enough for a node on a loaded machine to answer; c's absence
		// costs the whole of it.
		const timeout = 3 * time.Second
		start := time.Now()
		c, err := process.Collect(ctx, asker, timeout)
		took := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		if took < timeout || took > timeout+5*time.Second {
			t.Errorf("Collect took %v with a timeout of %v", took, timeout)
		}
		want := []process.InstanceList{{InstanceID: "a"}, {InstanceID: "b", Processes: []process.Process{{ID: "b0", Username: "root"}}}}
		if fmt.Sprint(c.Answered) != fmt.Sprint(want) || !slices.Equal(c.Unanswered, []string{"c"}) {
			t.Fatalf("Collect = %+v; want answered %+v, unanswered [c]", c, want)
		}
		for _, root := range []string{paths.ShowProcessListTriggerRoot, paths.ExecutionNodesRoot} {
			if kvs, err := asker.List(ctx, root); err != nil || len(kvs) != 0 {
				t.Errorf("left under %s: %v %v", root, kvs, err)
			}
		}

		unanswered, err := process.Kill(ctx, asker, "b0", timeout)
		if err != nil || !slices.Equal(unanswered, []string{"c"}) {
			t.Fatalf("Kill = %v, %v; want [c] unanswered", unanswered, err)
		}
		if killed.Load() != 1 {
			t.Fatalf("b0 killed %d times, want 1", killed.Load())
		}
		if kvs, err := asker.List(ctx, paths.KillProcessTriggerRoot); err != nil || len(kvs) != 0 {
			t.Errorf("kill triggers left: %v %v", kvs, err)
		}
		if _, err := process.Kill(ctx, asker, "a:b", timeout); !errors.Is(err, registry.ErrBadKey) {
			t.Errorf("Kill of an id with a colon: %v, want ErrBadKey", err)
		}
	})
}

func TestTableUpdate(t *testing.T) {
	tab := process.NewTable()
	remove := tab.Add(process.Process{ID: "7", Username: "root", Idle: true}, nil, nil)
	if !tab.Update("7", func(p *process.Process) { p.SQL, p.Idle, p.ID = "SHOW COMPUTE NODES", false, "other" }) {
		t.Fatal("Update of a registered process reported false")
	}
	got := tab.List()
	if len(got) != 1 || got[0].ID != "7" || got[0].SQL != "SHOW COMPUTE NODES" || got[0].Idle || got[0].Username != "root" {
		t.Fatalf("after Update: %+v", got)
	}
	remove()
	if tab.Update("7", func(*process.Process) {}) {
		t.Fatal("Update of a removed process reported true")
	}
}

// TestTableByNumber: KILL QUERY and KILL find a process by its id and by
// its Number in decimal (MySQL's CONNECTION_ID()); KILL QUERY cancels
// without killing.
func TestTableByNumber(t *testing.T) {
	tab := process.NewTable()
	var killed, cancelled atomic.Int32
	id := "0000002a5b6c4d7e8f901a2b3c4d5e6f"
	tab.Add(process.Process{ID: id}, func() { killed.Add(1) }, func() { cancelled.Add(1) })
	if n := process.Number(id); n != 42 {
		t.Fatalf("Number(%s) = %d, want 42", id, n)
	}
	if !tab.Cancel("42") || !tab.Cancel(id) || cancelled.Load() != 2 || killed.Load() != 0 {
		t.Fatalf("Cancel by number and id: cancelled %d, killed %d", cancelled.Load(), killed.Load())
	}
	if tab.Cancel("43") || tab.Kill("43") || tab.Kill("0") || tab.Kill("-42") {
		t.Fatal("a number no process has matched")
	}
	if !tab.Kill("42") || killed.Load() != 1 {
		t.Fatalf("Kill by number: killed %d", killed.Load())
	}
}

// TestHostileForgedProcessTriggers: show_process_list triggers nobody
// collects (a co-tenant's flood left 20,000 execution nodes) leave no
// answer behind: a task id no asker makes gets none, the answers wait for
// at most maxAnswers askers at once and are removed after AnswerTTL, and
// an answer of this instance from an earlier run is removed at Open.
func TestHostileForgedProcessTriggers(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := testenv.Context(t)
		repo, asker := b.open(t), b.open(t)
		stale := mustKey(paths.ExecutionNode("00000000000000000000000000000bad", "i1"))
		if _, err := asker.Put(ctx, stale, []byte("processes: []\n")); err != nil {
			t.Fatal(err)
		}
		table := process.NewTable()
		table.Add(process.Process{ID: "p1", SQL: "select 1"}, nil, nil)
		r, err := process.Open(ctx, repo, process.Config{InstanceID: "i1", Table: table, AnswerTTL: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Close)
		testenv.Eventually(t, "the earlier run's answer removed", func() bool { return gone(ctx, t, asker, stale) })

		forged := mustKey(paths.ShowProcessListTrigger("i1", "not-a-task"))
		if _, err := asker.Put(ctx, forged, []byte{}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the forged trigger deleted", func() bool { return gone(ctx, t, asker, forged) })
		if !gone(ctx, t, asker, mustKey(paths.ExecutionNode("not-a-task", "i1"))) {
			t.Error("an answer was written for a task id no asker makes")
		}

		const flood = 300
		var triggers []string
		for i := range flood {
			k := mustKey(paths.ShowProcessListTrigger("i1", fmt.Sprintf("%032x", 0xf000+i)))
			if _, err := asker.Put(ctx, k, []byte{}); err != nil {
				t.Fatal(err)
			}
			triggers = append(triggers, k)
		}
		answers := func() int {
			n := 0
			tasks, err := asker.Children(ctx, paths.ExecutionNodesRoot)
			if err != nil {
				t.Fatal(err)
			}
			for _, task := range tasks {
				if !gone(ctx, t, asker, mustKey(paths.ExecutionNode(task, "i1"))) {
					n++
				}
			}
			return n
		}
		testenv.Eventually(t, "every trigger deleted", func() bool { return gone(ctx, t, asker, triggers[flood-1]) && gone(ctx, t, asker, triggers[0]) })
		if n := answers(); n == 0 || n > 256 {
			t.Errorf("%d answers waiting for %d uncollected triggers, want 1 to 256", n, flood)
		}
		testenv.Eventually(t, "the uncollected answers removed", func() bool { return answers() == 0 })
	})
}
