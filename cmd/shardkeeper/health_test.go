package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestHealth checks health's exit codes against answers a node gives:
// 200 is 0, a 503 from a node shutting down or cut off from its registry is
// 1 with the node's reason, an unreachable node or one that does not
// answer in time is 1, and a bad command line is 2.
func TestHealth(t *testing.T) {
	t.Setenv(envServer, "")
	var ready atomic.Bool
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/livez":
			_, _ = w.Write([]byte("ok\n"))
		case r.URL.Path == "/readyz" && r.Header.Get("Authorization") != "":
			http.Error(w, "a probe sent a token", http.StatusBadRequest)
		case r.URL.Path == "/readyz" && ready.Load():
			_, _ = w.Write([]byte("ok\n"))
		case r.URL.Path == "/readyz":
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("not ready: the node is shutting down\n"))
		case r.URL.Path == "/slow/readyz":
			select {
			case <-hang:
			case <-r.Context().Done():
			}
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	refused := "http://" + closedPort(t)

	for _, c := range []struct {
		name   string
		ready  bool
		args   []string
		env    string
		code   int
		stdout string
		stderr string
	}{
		{"ready", true, []string{"--server", srv.URL}, "", 0, srv.URL + "/readyz: ok", ""},
		{"server from the environment", true, nil, srv.URL, 0, srv.URL + "/readyz: ok", ""},
		{"not ready", false, []string{"--server", srv.URL}, "", 1, "", "HTTP 503: not ready: the node is shutting down"},
		{"live while not ready", false, []string{"--server", srv.URL, "--live"}, "", 0, srv.URL + "/livez: ok", ""},
		{"refused", true, []string{"--server", refused}, "", 1, "", "is `shardkeeper serve` running with its HTTP API there?"},
		{"no answer in time", true, []string{"--server", srv.URL + "/slow", "--timeout", "200ms"}, "", 1, "", "context deadline exceeded"},
		{"bad timeout", true, []string{"--server", srv.URL, "--timeout", "0s"}, "", 2, "", "--timeout 0s: must be above 0"},
		{"bad server", true, []string{"--server", "ftp://x"}, "", 2, "", "want a URL such as http://127.0.0.1:8080"},
		{"arguments", true, []string{"readyz"}, "", 2, "", "takes no arguments"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ready.Store(c.ready)
			t.Setenv(envServer, c.env)
			stdout, stderr, code := runCLI(t, append([]string{"health"}, c.args...)...)
			if code != c.code || !strings.Contains(stdout, c.stdout) || !strings.Contains(stderr, c.stderr) {
				t.Fatalf("health %v: exit %d, want %d\nstdout %q (want %q)\nstderr %q (want %q)", c.args, code, c.code, stdout, c.stdout, stderr, c.stderr)
			}
		})
	}
}

// TestKeysNextFindsTheLocalNode runs keys next without --server or
// $SHARDKEEPER_SERVER: it asks the local node at serve's default HTTP
// address, as health does (skipped when that port is taken).
func TestKeysNextFindsTheLocalNode(t *testing.T) {
	t.Setenv(envServer, "")
	ln, err := net.Listen("tcp", defaultHTTPAddr)
	if err != nil {
		t.Skipf("%s is taken: %v", defaultHTTPAddr, err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/keys" || r.URL.Query().Get("count") != "2" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`{"keys":["1190422418313265152","1190422418313265153"]}`))
	}))
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	stdout, stderr, code := runCLI(t, "keys", "next", "-n", "2")
	if code != 0 || !strings.Contains(stdout, "1190422418313265153") {
		t.Fatalf("keys next -n 2: exit %d\nstdout %q\nstderr %q", code, stdout, stderr)
	}
}

// closedPort returns a loopback host:port that nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
