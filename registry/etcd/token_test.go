package etcd

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

// authEtcd starts a private etcd server from the installed binary (the
// Debian etcd 3.4 the other tests use) with authentication on, a root user
// and auth tokens that expire after one second unused. It returns the
// endpoints, the root password, and a function that restarts the server
// (which forgets every token).
func authEtcd(t *testing.T) ([]string, string, func()) {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		msg := "no etcd binary: run `make test` (it installs one)"
		if os.Getenv(testenv.EnvRequireServers) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	port := func() int {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port
	}
	dir := t.TempDir()
	client, peer := fmt.Sprintf("http://127.0.0.1:%d", port()), fmt.Sprintf("http://127.0.0.1:%d", port())
	var cmd *exec.Cmd
	run := func() {
		cmd = exec.Command(bin, "--name", "auth", "--data-dir", filepath.Join(dir, "data"),
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "auth="+peer,
			"--auth-token", "simple", "--auth-token-ttl", "1", "--log-level", "error")
		log, err := os.OpenFile(filepath.Join(dir, "etcd.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer log.Close()
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	stop := func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	run()
	t.Cleanup(func() { stop() })
	eps := []string{client}
	admin, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := admin.Get(testenv.Context(t), "health"); err == nil {
			break
		} else if time.Now().After(deadline) {
			out, _ := os.ReadFile(filepath.Join(dir, "etcd.log"))
			t.Fatalf("private etcd did not answer: %v\n%s", err, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	const password = "token-test-root"
	c := testenv.Context(t)
	for _, step := range []func() error{
		func() error { _, err := admin.UserAdd(c, "root", password); return err },
		func() error { _, err := admin.UserGrantRole(c, "root", "root"); return err },
		func() error { _, err := admin.AuthEnable(c); return err },
	} {
		if err := step(); err != nil {
			t.Fatalf("auth setup: %v", err)
		}
	}
	return eps, password, func() { stop(); run() }
}

// On etcd 3.4 with authentication, watches opened before and after the
// auth token expired deliver their events, and a session outlives several
// expiries. The etcd client presents a watch stream's original token for
// every watch it opens on that stream, which the server refuses once the
// token has expired.
func TestWatchAcrossTokenExpiry(t *testing.T) {
	r := openAuth(t)
	defer r.Close()
	c := testenv.Context(t)
	_, first, err := r.Watch(c, "/a")
	if err != nil {
		t.Fatal(err)
	}
	sess, err := r.NewSession(c, registry.SessionOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(c)
	time.Sleep(3 * time.Second) // the token expires
	_, second, err := r.Watch(c, "/b")
	if err != nil {
		t.Fatalf("watch after the token expired: %v", err)
	}
	if err := sess.PutEphemeral(c, "/a/x", []byte("1")); err != nil {
		t.Fatalf("ephemeral put after the token expired: %v", err)
	}
	if _, err := r.Put(c, "/b/x", []byte("2")); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		name string
		ch   <-chan registry.Event
		key  string
	}{{"watch opened before the expiry", first, "/a/x"}, {"watch opened after the expiry", second, "/b/x"}} {
		select {
		case ev := <-w.ch:
			if ev.Err != nil || ev.KV.Key != w.key {
				t.Fatalf("%s: %+v, want a put of %s", w.name, ev, w.key)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no event", w.name)
		}
	}
	time.Sleep(3 * time.Second)
	select {
	case <-sess.Done():
		t.Fatalf("session ended across token expiries: %v", sess.Err())
	default:
	}
	if kv, err := r.Get(c, "/a/x"); err != nil || string(kv.Value) != "1" {
		t.Fatalf("ephemeral key after two token expiries: %v, %v", kv, err)
	}
}

// A restarted etcd forgets its simple tokens: the next requests get a new
// one and succeed.
func TestRequestsAfterServerRestartForgotTheToken(t *testing.T) {
	eps, password, restart := authEtcd(t)
	r, err := Open(testenv.Context(t), Config{Endpoints: eps, Namespace: "governance_ds", Username: "root", Password: password, RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Put(testenv.Context(t), "/props", []byte("a: 1")); err != nil {
		t.Fatal(err)
	}
	restart()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := r.Put(testenv.Context(t), "/props", []byte("a: 2"))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("put after the server restarted: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if kv, err := r.Get(testenv.Context(t), "/props"); err != nil || string(kv.Value) != "a: 2" {
		t.Fatalf("get after restart: %v, %v", kv, err)
	}
}

// On etcd 3.4 with authentication, ReplayChanges answers from its history
// before and after the auth token expired.
func TestReplayAcrossTokenExpiry(t *testing.T) {
	r := openAuth(t)
	defer r.Close()
	c := testenv.Context(t)
	barrier := registry.ReplayBound{Barrier: "/replay_barrier"}
	since, err := r.Put(c, "/replay/a", []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	got, ok, err := registry.ReplayChanges(c, r, "/replay", since, barrier, 10)
	if err != nil || !ok || len(got.Events) != 0 {
		t.Fatalf("ReplayChanges before the expiry = %+v, %v, %v", got, ok, err)
	}
	time.Sleep(3 * time.Second) // the token expires
	v, err := r.Put(c, "/replay/b", []byte("2"))
	if err != nil {
		t.Fatal(err)
	}
	after, ok, err := registry.ReplayChanges(c, r, "/replay", got.Rev, barrier, 10)
	if err != nil || !ok || len(after.Events) != 1 || after.Events[0].KV.Version != v {
		t.Fatalf("ReplayChanges after the expiry = %+v, %v, %v; want the put of /replay/b", after, ok, err)
	}
}

// openAuth opens a Repo as root on a fresh etcd with authentication
// (authEtcd).
func openAuth(t *testing.T) *Repo {
	t.Helper()
	eps, password, _ := authEtcd(t)
	r, err := Open(testenv.Context(t), Config{Endpoints: eps, Namespace: "governance_ds", Username: "root", Password: password})
	if err != nil {
		t.Fatal(err)
	}
	return r
}
