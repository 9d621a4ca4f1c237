package httpapi

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry/memory"
)

// doHost is do with the Host header set to host.
func doHost(t *testing.T, n *testNode, method, path, host, auth string) response {
	t.Helper()
	req, err := http.NewRequest(method, n.http.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, body: b}
}

// TestHostileHostHeader: a request under a host name the node was not
// given (a DNS-rebinding page's own name) is refused with 421 on every
// route, reads and probes included; loopback names, IP addresses and the
// configured names are answered.
func TestHostileHostHeader(t *testing.T) {
	n := startNode(t, memory.New(), "host-node", func(c *Config) {
		c.AllowedHosts = []string{"node1.example.com", "*.svc.cluster.local"}
	})
	for _, host := range []string{"rebind.attacker.example", "rebind.attacker.example:8080", "localhost.attacker.example",
		"127.0.0.1.nip.io", "example.com", "svc.cluster.local", "node1.example.com.attacker.example"} {
		for _, path := range []string{"/api/v1/nodes", "/api/v1/status", "/metrics", "/readyz", "/"} {
			r := doHost(t, n, "GET", path, host, "")
			r.apiError(t, http.StatusMisdirectedRequest, CodeNone, "does not answer to host")
		}
		r := doHost(t, n, "PUT", "/api/v1/props/sql-show", host, "Bearer "+testToken)
		r.apiError(t, http.StatusMisdirectedRequest, CodeNone, "does not answer to host")
	}
	for _, host := range []string{"127.0.0.1", "127.0.0.1:8080", "localhost:8080", "LOCALHOST.", "app.localhost:1",
		"[::1]:8080", "[::1]", "10.1.2.3:8080", "node1.example.com:8080", "Node1.Example.COM.", "a.b.svc.cluster.local"} {
		if r := doHost(t, n, "GET", "/api/v1/nodes", host, ""); r.status != http.StatusOK {
			t.Errorf("Host %q: status %d, body %s", host, r.status, r.body)
		}
	}
	if _, err := New(Config{Node: n.node, Store: n.srv.cfg.Store, Repo: n.srv.cfg.Repo, AllowedHosts: []string{"bad host"}}); err == nil ||
		!strings.Contains(err.Error(), `allowed host "bad host"`) {
		t.Errorf("New with a malformed allowed host: %v", err)
	}
	any := startNode(t, memory.New(), "host-any", func(c *Config) { c.AllowedHosts = []string{"*"} })
	if r := doHost(t, any, "GET", "/api/v1/nodes", "whatever.example", ""); r.status != http.StatusOK {
		t.Errorf("AllowedHosts *: status %d, body %s", r.status, r.body)
	}
}

// TestHostileBearerCase: the authorization scheme is matched without
// regard to case; the token itself is not.
func TestHostileBearerCase(t *testing.T) {
	n := startNode(t, memory.New(), "bearer-node", func(c *Config) { c.OpenReads = false })
	for _, auth := range []string{"Bearer " + testToken, "bearer " + testToken, "BEARER " + testToken, "bEaReR  " + testToken + " "} {
		if r := doHost(t, n, "GET", "/api/v1/nodes", "127.0.0.1", auth); r.status != http.StatusOK {
			t.Errorf("Authorization %q: status %d, want 200; body %s", auth, r.status, r.body)
		}
	}
	for _, auth := range []string{"Bearer " + strings.ToUpper(testToken), "Basic " + testToken, "Bearer", "Bearer" + testToken, testToken} {
		r := doHost(t, n, "GET", "/api/v1/nodes", "127.0.0.1", auth)
		if r.status != http.StatusUnauthorized {
			t.Errorf("Authorization %q: status %d, want 401; body %s", auth, r.status, r.body)
		}
	}
}

// selfSignedTLS returns a server TLS config for 127.0.0.1.
func selfSignedTLS(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12}
}

// TestHostileTLSHandshakeLogRateLimit: a flood of failed TLS handshakes
// logs one line, then one summary per minute with the count; every
// failure is counted in /metrics.
func TestHostileTLSHandshakeLogRateLimit(t *testing.T) {
	var logs testenv.SyncBuffer
	var nowNs atomic.Int64
	nowNs.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	n := startNode(t, memory.New(), "tls-node", func(c *Config) {
		c.TLS = selfSignedTLS(t)
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		c.Now = func() time.Time { return time.Unix(0, nowNs.Load()) }
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveDone := make(chan error, 1)
	go func() { serveDone <- n.srv.Serve(ln) }()
	shutdown := func() {
		if err := n.srv.Shutdown(t.Context()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-serveDone; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}
	total := 0
	// failHandshakes makes count TLS handshakes fail (plain bytes on the
	// HTTPS port) and waits until the server has counted them.
	failHandshakes := func(count int) {
		t.Helper()
		for range count {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			_, _ = c.Write([]byte("\x00\x01\x02 not TLS\r\n\r\n"))
			_, _ = io.Copy(io.Discard, c)
			c.Close()
		}
		total += count
		want := regexp.MustCompile(`(?m)^shardkeeper_http_tls_handshake_errors_total ` + strconv.Itoa(total) + `$`)
		deadline := time.Now().Add(10 * time.Second)
		for {
			r := do(t, n, "GET", "/metrics", "", "")
			if want.Match(r.body) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("metrics never counted %d failed handshakes; log:\n%s", total, logs.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	lines := func() []string {
		var out []string
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "TLS handshake") {
				out = append(out, l)
			}
		}
		return out
	}

	failHandshakes(50)
	if got := lines(); len(got) != 1 || !strings.Contains(got[0], `msg="TLS handshake failed" remote=127.0.0.1:`) {
		t.Fatalf("after 50 failed handshakes within a minute, the log has %d lines, want 1:\n%s", len(got), strings.Join(got, "\n"))
	}
	nowNs.Add(int64(61 * time.Second))
	failHandshakes(1)
	got := lines()
	if len(got) != 2 || !strings.Contains(got[1], `msg="TLS handshakes failed" count=50 `) {
		t.Fatalf("a minute later, want a summary of 50 (49 held back and this one):\n%s", strings.Join(got, "\n"))
	}
	nowNs.Add(int64(10 * time.Second))
	failHandshakes(3)
	if got := lines(); len(got) != 2 {
		t.Fatalf("within the next minute nothing more is logged:\n%s", strings.Join(got, "\n"))
	}
	shutdown()
	got = lines()
	if len(got) != 3 || !strings.Contains(got[2], `msg="TLS handshakes failed" count=3 `) {
		t.Fatalf("at shutdown, want a summary of the 3 held back:\n%s", strings.Join(got, "\n"))
	}
}
