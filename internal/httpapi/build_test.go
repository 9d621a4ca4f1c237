package httpapi

import (
	"encoding/json"
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/version"
	"github.com/shardkeeper/shardkeeper/registry/memory"
)

var testBuild = version.Info{Release: "0.1.0", Module: "v0.1.0", Commit: "0123456789abcdef", Go: "go1.26.0"}

// TestBuildAndRuntimeMetrics checks that /metrics has the build, the Go
// runtime's and the process's standard metrics besides the node's.
func TestBuildAndRuntimeMetrics(t *testing.T) {
	n := startNode(t, memory.New(), "build", func(c *Config) { c.Build = testBuild })
	body := string(get(t, n, "/metrics").body)
	for _, want := range []string{
		`shardkeeper_build_info{commit="0123456789ab",goversion="go1.26.0",module="v0.1.0",release="0.1.0"} 1`,
		"go_goroutines ", "go_memstats_heap_inuse_bytes ", "go_gc_duration_seconds",
		"process_open_fds ", "process_max_fds ", "process_cpu_seconds_total ", "process_resident_memory_bytes ",
		"shardkeeper_uptime_seconds ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if t.Failed() {
		t.Log(body)
	}
}

// TestStatusVersionPortsUptime checks that /api/v1/status says which
// build runs, on which ports, and since when.
func TestStatusVersionPortsUptime(t *testing.T) {
	started := time.Now().Add(-90 * time.Second)
	ports := map[string]string{"http": "127.0.0.1:8080", "mysql": "127.0.0.1:3307"}
	n := startNode(t, memory.New(), "ver", func(c *Config) { c.Build, c.Ports, c.Started = testBuild, ports, started })
	var st status
	get(t, n, "/api/v1/status").json(t, &st)
	if st.Version != testBuild || st.Ports["mysql"] != "127.0.0.1:3307" || st.Uptime < 90 || st.Uptime > 600 || st.Started != started.UnixMilli() {
		t.Fatalf("status version %+v ports %v uptime %v started %v", st.Version, st.Ports, st.Uptime, st.Started)
	}
}

// TestPageCarriesStatus checks that the status page is served with the
// current status in it, so that it renders on load, before the event
// stream's first event.
func TestPageCarriesStatus(t *testing.T) {
	n := startNode(t, memory.New(), "page<x>&", func(c *Config) { c.Build = testBuild })
	r := get(t, n, "/")
	m := regexp.MustCompile(`(?s)<script id="initial" type="application/json">(.*?)</script>`).FindSubmatch(r.body)
	if m == nil {
		t.Fatalf("page has no initial status:\n%s", r.body)
	}
	var st status
	if err := json.Unmarshal(m[1], &st); err != nil {
		t.Fatalf("initial status %q: %v", m[1], err)
	}
	if st.InstanceID != "page<x>&" || st.Version != testBuild || st.WorkerID != n.node.WorkerID() {
		t.Fatalf("initial status = %+v", st)
	}
	if strings.ContainsAny(string(m[1]), "<>&") || strings.Contains(html.UnescapeString(string(r.body)), "/*STATUS*/") {
		t.Fatalf("initial status not escaped or not replaced: %s", m[1])
	}
}
