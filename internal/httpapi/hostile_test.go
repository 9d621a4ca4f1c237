package httpapi

import (
	"context"
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
	"os"
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
			r.apiError(t, http.StatusMisdirectedRequest, 0, "does not answer to host")
		}
		r := doHost(t, n, "PUT", "/api/v1/props/sql-show", host, "Bearer "+testToken)
		r.apiError(t, http.StatusMisdirectedRequest, 0, "does not answer to host")
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

// serveOn serves n's server on a loopback port of its own until the
// test's cleanup and returns the address.
func serveOn(t *testing.T, n *testNode) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveDone := make(chan error, 1)
	go func() { serveDone <- n.srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = n.srv.Shutdown(ctx)
		<-serveDone
	})
	return ln.Addr().String()
}

// rawRequest opens a connection to addr and sends head (a request line
// and headers, nothing of a body).
func rawRequest(t *testing.T, addr, head string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Write([]byte(head)); err != nil {
		t.Fatal(err)
	}
	return c
}

// readyzWithin asks /readyz on a new connection and fails unless it
// answers within d.
func readyzWithin(t *testing.T, addr string, d time.Duration) {
	t.Helper()
	client := &http.Client{Timeout: d, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatalf("/readyz: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/readyz: %d", resp.StatusCode)
	}
}

// TestHostileHTTPBodyNeverSent: a POST without the token that declares a
// 200 KB body and never sends it is answered 401 at once and its
// connection closed (the server does not wait to drain the body); one
// with the token whose body stops arriving is cut after the body
// timeout.
func TestHostileHTTPBodyNeverSent(t *testing.T) {
	n := startNode(t, memory.New(), "body-node", func(c *Config) { c.BodyTimeout = 500 * time.Millisecond })
	addr := serveOn(t, n)
	c := rawRequest(t, addr, "POST /api/v1/databases HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 200000\r\n\r\n")
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	answer, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("a refused POST whose body never comes: %v after %q (the answer waits for the body)", err, answer)
	}
	if !strings.HasPrefix(string(answer), "HTTP/1.1 401 ") || !strings.Contains(string(answer), "Connection: close") {
		t.Fatalf("a refused POST whose body never comes: %q, want 401 and the connection closed", answer)
	}

	start := time.Now()
	c = rawRequest(t, addr, "POST /api/v1/databases HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "+testToken+
		"\r\nContent-Type: application/json\r\nContent-Length: 200000\r\n\r\n{\"name\":")
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	answer, err = io.ReadAll(c)
	if err != nil {
		t.Fatalf("a POST whose body stops: %v after %q (the body has no deadline)", err, answer)
	}
	if took := time.Since(start); !strings.HasPrefix(string(answer), "HTTP/1.1 400 ") || took > 3*time.Second {
		t.Fatalf("a POST whose body stops: %q after %v, want 400 after the body timeout", answer, took)
	}
}

// TestHostileHTTPConnectionCap: connections that send part of a request
// and then nothing, three times the cap of them, hold at most the cap of
// the port's connections (each new one closes the one that waited
// longest), /readyz still answers on a new connection meanwhile, and the
// process's descriptors stay bounded.
func TestHostileHTTPConnectionCap(t *testing.T) {
	const maxConns = 20
	n := startNode(t, memory.New(), "cap-node", func(c *Config) { c.MaxConnections = maxConns })
	addr := serveOn(t, n)
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skipf("no /proc/self/fd: %v", err)
		}
		return len(ents)
	}
	before := fds()
	for i := range 3 * maxConns {
		if i%2 == 0 {
			rawRequest(t, addr, "GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n") // headers never end
		} else {
			rawRequest(t, addr, "POST /api/v1/databases HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "+testToken+
				"\r\nContent-Length: 200000\r\n\r\n{") // body never ends
		}
	}
	testenv.Eventually(t, "the slow connections to be accepted", func() bool { return n.srv.connLimit().held() == maxConns })
	readyzWithin(t, addr, 3*time.Second)
	if held := n.srv.connLimit().held(); held > maxConns {
		t.Fatalf("the port holds %d connections, over its cap %d", held, maxConns)
	}
	// Each client end is open still; the server's ends beyond the cap
	// are closed: the process holds the 60 client ends and at most the
	// cap of server ends.
	if got := fds() - before; got > 3*maxConns+maxConns+5 {
		t.Fatalf("%d more descriptors for %d slow connections with a cap of %d", got, 3*maxConns, maxConns)
	}
}
