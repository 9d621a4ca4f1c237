package deploy

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/daemon"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

// TestMain removes the binary testenv.ShardkeeperBinary builds.
func TestMain(m *testing.M) { testenv.Main(m) }

// TestMetricNamesExistInLiveNode starts a node (the daemon, on real etcd)
// with the HTTP API, makes it issue keys and answer one error, and checks
// that every metric name the alerting and recording rules, their unit
// tests and the Grafana dashboard use is a series in its /metrics.
func TestMetricNamesExistInLiveNode(t *testing.T) {
	ctx := testenv.Context(t)
	repo := config.Repository{Type: config.RepositoryEtcd, ServerLists: testenv.EtcdEndpoints(t),
		Namespace: testenv.Namespace("sk_deploy_"), TimeToLive: 10 * time.Second, ConnectTimeout: 10 * time.Second}
	d, err := daemon.Start(ctx, daemon.Config{
		Repository: repo,
		Node:       cluster.Config{InstanceID: "deploy-metrics", Reservation: time.Second},
		HTTP:       &daemon.HTTPConfig{Addr: "127.0.0.1:0", OpenReads: true},
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close(context.Background()) })
	base := "http://" + d.HTTPAddr
	if code, _ := httpGet(t, base+"/api/v1/keys?count=3"); code != http.StatusOK {
		t.Fatalf("GET /api/v1/keys = %d", code)
	}
	if code, _ := httpGet(t, base+"/no-such-route"); code != http.StatusNotFound {
		t.Fatalf("GET /no-such-route = %d, want 404 (so that shardkeeper_http_errors_total has a series)", code)
	}
	_, body := httpGet(t, base+"/metrics")
	exported := exposedSeries(body)
	used := referencedMetrics(t)
	if len(used) < 20 {
		t.Fatalf("only %d metric names found in the rules and the dashboard: the name extraction is broken", len(used))
	}
	names := make([]string, 0, len(used))
	for name := range used {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !exported[name] {
			t.Errorf("%s is not in a live node's /metrics; used by:\n  %s", name, strings.Join(used[name], "\n  "))
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
}

func httpGet(t *testing.T, url string) (int, []byte) {
	t.Helper()
	r, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	return r.StatusCode, b
}

// exposedSeries returns the names of the samples in a Prometheus text
// exposition (histogram samples by their _bucket, _sum and _count names).
func exposedSeries(body []byte) map[string]bool {
	names := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	return names
}
