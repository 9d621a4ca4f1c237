package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

// TestHostileServeEmbeddedRegistryNeedsCredentials runs the real binary on
// the embedded registry and tries its etcd client port as another local
// process would: without the credentials in the data directory nothing can
// be read or written; the owner's CLI reaches it with --data-dir.
func TestHostileServeEmbeddedRegistryNeedsCredentials(t *testing.T) {
	conf := t.TempDir()
	data := filepath.Join(conf, "data")
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	global := "mode:\n  type: Standalone\n  repository:\n    type: Embedded\n    props:\n      dataDir: " + data +
		"\n      clientUrl: " + clientURL + "\n"
	if err := os.WriteFile(filepath.Join(conf, "global.yaml"), []byte(global), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, conf, "auth-e2e", freePort(t))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	anon, err := clientv3.New(clientv3.Config{Endpoints: []string{clientURL}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	if _, err := anon.Put(ctx, "governance_ds/states/cluster_state", "UNAVAILABLE"); err == nil {
		t.Fatal("a client without credentials wrote governance_ds/states/cluster_state")
	} else {
		t.Logf("put without credentials: %v", err)
	}
	if resp, err := anon.Get(ctx, "governance_ds/", clientv3.WithPrefix()); err == nil {
		t.Fatalf("a client without credentials read %d keys", len(resp.Kvs))
	}
	if _, err := exec.LookPath("etcdctl"); err == nil {
		out, err := exec.CommandContext(ctx, "etcdctl", "--endpoints", clientURL, "put", "governance_ds/states/cluster_state", "UNAVAILABLE").CombinedOutput()
		if err == nil {
			t.Fatalf("etcdctl put without credentials succeeded: %s", out)
		}
		t.Logf("etcdctl put without credentials: %v: %s", err, strings.TrimSpace(string(out)))
	}

	// The owner's credentials, readable by the owner only, work.
	credPath := filepath.Join(data, "credentials.json")
	st, err := os.Stat(credPath)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", credPath, st.Mode().Perm())
	}
	raw, err := os.ReadFile(credPath)
	if err != nil {
		t.Fatal(err)
	}
	var creds struct{ Username, Password string }
	if err := json.Unmarshal(raw, &creds); err != nil {
		t.Fatal(err)
	}
	owner, err := clientv3.New(clientv3.Config{Endpoints: []string{clientURL}, DialTimeout: 10 * time.Second,
		Username: creds.Username, Password: creds.Password, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("client with the credentials: %v", err)
	}
	defer owner.Close()
	resp, err := owner.Get(ctx, "governance_ds/nodes/compute_nodes/worker_id/auth-e2e")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("worker id of the node with the credentials: %v, %v", resp, err)
	}
	if resp, err := owner.Get(ctx, "governance_ds/states/cluster_state"); err != nil || (len(resp.Kvs) == 1 && string(resp.Kvs[0].Value) == "UNAVAILABLE") {
		t.Fatalf("cluster_state after the refused writes: %v, %v", resp, err)
	}

	// The CLI: --data-dir alone reaches the running node's etcd (on a port
	// other than the default) with the credentials; the etcd flags alone
	// are refused.
	wid := string(resp.Kvs[0].Value)
	out, err := exec.CommandContext(ctx, testenv.ShardkeeperBinary(t), "registry", "get", "/nodes/compute_nodes/worker_id/auth-e2e", "--data-dir", data).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != wid {
		t.Fatalf("registry get --data-dir: %v\n%s", err, out)
	}
	out, err = exec.CommandContext(ctx, testenv.ShardkeeperBinary(t), "registry", "get", "/nodes/compute_nodes/worker_id/auth-e2e",
		"--repository-type", "etcd", "--server-lists", clientURL, "--data-dir", data).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != wid {
		t.Fatalf("registry get --repository-type etcd --data-dir: %v\n%s", err, out)
	}
	out, err = exec.CommandContext(ctx, testenv.ShardkeeperBinary(t), "registry", "get", "/nodes/compute_nodes/worker_id/auth-e2e",
		"--repository-type", "etcd", "--server-lists", clientURL, "--timeout", "5s").CombinedOutput()
	if err == nil {
		t.Fatalf("registry get without credentials succeeded:\n%s", out)
	}
	t.Logf("registry get without credentials: %s", strings.TrimSpace(string(out)))
	if err := p.stop(t); err != nil {
		t.Fatalf("serve: %v\nstderr:\n%s", err, p.stderr.String())
	}
}
