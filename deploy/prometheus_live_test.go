package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/connect"
	"github.com/shardkeeper/shardkeeper/internal/daemon"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

// TestPrometheusServerOnLiveNode runs a real Prometheus server (the Debian
// package's) with the rules of deploy/prometheus, scraping a live node on
// real etcd every second with the API token, as the ServiceMonitor does
// (the node closes reads). On the healthy node every rule evaluates
// without error, every recording rule has a value and no alert fires
// (alerts with a `for` may be pending on a loaded machine: a slow registry
// call is what they wait out). Then a foreign write to the node's
// reservation makes it lose its worker id, and ShardkeeperWorkerIDLost
// fires, and no other alert.
func TestPrometheusServerOnLiveNode(t *testing.T) {
	prometheus := tool(t, "prometheus", "prometheus")
	ctx := testenv.Context(t)
	repoConf := config.Repository{Type: config.RepositoryEtcd, ServerLists: testenv.EtcdEndpoints(t),
		Namespace: testenv.Namespace("sk_deploy_prom_"), TimeToLive: 10 * time.Second, ConnectTimeout: 10 * time.Second}
	const token = "prometheus-test-token"
	d, err := daemon.Start(ctx, daemon.Config{
		Repository: repoConf,
		Node:       cluster.Config{InstanceID: "deploy-prometheus"},
		HTTP:       &daemon.HTTPConfig{Addr: "127.0.0.1:0", Token: token},
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close(context.Background()) })

	dir := t.TempDir()
	rules, err := filepath.Abs(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
  - job_name: shardkeeper
    authorization:
      credentials_file: %q
    static_configs:
      - targets: [%q]
`, rules, tokenFile, d.HTTPAddr)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	var logs testenv.SyncBuffer
	cmd := exec.Command(prometheus, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	api := promAPI{t: t, base: "http://" + addr}
	testenv.Eventually(t, "Prometheus to be ready", func() bool {
		r, err := http.Get(api.base + "/-/ready")
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == http.StatusOK
	})

	// Some keys, so that the key rate has something to count.
	if code, _ := httpGetToken(t, "http://"+d.HTTPAddr+"/api/v1/keys?count=10", token); code != http.StatusOK {
		t.Fatalf("GET /api/v1/keys = %d", code)
	}
	testenv.Eventually(t, "Prometheus to scrape the node (up == 1)", func() bool {
		return len(api.query(`up{job="shardkeeper"} == 1`)) == 1
	})
	var recorded []string
	for _, r := range loadRules(t) {
		if r.Record != "" {
			recorded = append(recorded, r.Record)
		}
	}
	testenv.Eventually(t, "every recording rule to have a value", func() bool {
		for _, name := range recorded {
			if len(api.query(name)) == 0 {
				return false
			}
		}
		return true
	})
	for _, g := range api.rules() {
		if g.Health != "ok" {
			t.Errorf("rule %s: health %q: %s", g.Name, g.Health, g.LastError)
		}
	}
	if alerts := api.alerts("firing"); len(alerts) != 0 {
		t.Fatalf("alerts firing on a healthy node: %v\n%s", alerts, logs.LastLines(20))
	}

	// Someone else writes the node's reservation: the node loses its id.
	repo, err := connect.Open(ctx, repoConf, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer repo.Close()
	before := d.Node.Stats().Losses
	res, err := paths.Reservation(d.Node.WorkerID())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Put(ctx, res, []byte("someone-else")); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the node to lose its worker id", func() bool { return d.Node.Stats().Losses > before })
	testenv.Eventually(t, "ShardkeeperWorkerIDLost to fire", func() bool {
		alerts := api.alerts("firing")
		return len(alerts) == 1 && alerts[0] == "ShardkeeperWorkerIDLost"
	})
}

// promAPI queries a Prometheus server's HTTP API.
type promAPI struct {
	t    *testing.T
	base string
}

func (p promAPI) get(path string, data any) {
	p.t.Helper()
	r, err := http.Get(p.base + path)
	if err != nil {
		p.t.Fatalf("GET %s: %v", path, err)
	}
	defer r.Body.Close()
	var env struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
		Error  string          `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 4<<20)).Decode(&env); err != nil || env.Status != "success" {
		p.t.Fatalf("GET %s: %v %s %s", path, err, env.Status, env.Error)
	}
	if err := json.Unmarshal(env.Data, data); err != nil {
		p.t.Fatalf("GET %s: %v", path, err)
	}
}

// query returns the label sets of an instant query's result.
func (p promAPI) query(q string) []map[string]string {
	var data struct {
		Result []struct {
			Metric map[string]string `json:"metric"`
		} `json:"result"`
	}
	p.get("/api/v1/query?query="+url.QueryEscape(q), &data)
	var out []map[string]string
	for _, r := range data.Result {
		out = append(out, r.Metric)
	}
	return out
}

type promRule struct {
	Name      string `json:"name"`
	Health    string `json:"health"`
	LastError string `json:"lastError"`
}

func (p promAPI) rules() []promRule {
	var data struct {
		Groups []struct {
			Rules []promRule `json:"rules"`
		} `json:"groups"`
	}
	p.get("/api/v1/rules", &data)
	var out []promRule
	for _, g := range data.Groups {
		out = append(out, g.Rules...)
	}
	if len(out) == 0 {
		p.t.Fatal("Prometheus loaded no rules")
	}
	return out
}

// alerts returns the names of the alerts in state (pending or firing),
// sorted.
func (p promAPI) alerts(state string) []string {
	var data struct {
		Alerts []struct {
			Labels map[string]string `json:"labels"`
			State  string            `json:"state"`
		} `json:"alerts"`
	}
	p.get("/api/v1/alerts", &data)
	var out []string
	for _, a := range data.Alerts {
		if a.State == state {
			out = append(out, a.Labels["alertname"])
		}
	}
	sort.Strings(out)
	return out
}

func httpGetToken(t *testing.T, url, token string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	return r.StatusCode, b
}

// freeAddr returns a loopback address nothing listens on at the moment.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
