package main

import (
	"context"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

// TestServeBadHTTPMaxConnections: an --http-max-connections below 1 is
// refused before serving.
func TestServeBadHTTPMaxConnections(t *testing.T) {
	for _, n := range []int{0, -1} {
		hf := httpFlags{addr: "127.0.0.1:0", maxConns: n}
		if _, err := hf.config(context.Background(), true); err == nil || !strings.Contains(err.Error(), "--http-max-connections") {
			t.Fatalf("--http-max-connections %d: %v", n, err)
		}
	}
}

// TestServeHTTPSlowClients: serve --http-max-connections 32 holds 200
// connections that declare a 200 KB body and never send it (with and
// without the token) or never end their headers: /readyz answers on a
// new connection meanwhile, and the MySQL console still logs in a real
// mariadb client.
func TestServeHTTPSlowClients(t *testing.T) {
	mariadb, err := exec.LookPath("mariadb")
	if err != nil {
		testenv.DatabaseUnreachable(t, "the mariadb client", err) // installed by scripts/servers.sh
	}
	dir := embeddedConfDir(t)
	output, stop := startServe(t, "--conf", dir, "--http", "127.0.0.1:0", "--http-max-connections", "32", "--mysql", "127.0.0.1:0")
	defer stop()
	hm := regexp.MustCompile(`HTTP API and status page on http://(127\.0\.0\.1:\d+)/`).FindStringSubmatch(output())
	mm := regexp.MustCompile(`MySQL protocol on 127\.0\.0\.1:(\d+)`).FindStringSubmatch(output())
	if hm == nil || mm == nil {
		t.Fatalf("no --http or --mysql address in the serve output:\n%s", output())
	}
	heads := []string{
		"POST /api/v1/databases HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 200000\r\n\r\n",
		"POST /api/v1/databases HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer x\r\nContent-Length: 200000\r\n\r\n{",
		"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n",
	}
	for i := range 200 {
		c, err := net.Dial("tcp", hm[1])
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write([]byte(heads[i%len(heads)])); err != nil {
			t.Fatal(err)
		}
	}
	client := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://" + hm[1] + "/readyz")
	if err != nil {
		t.Fatalf("/readyz with 200 slow connections open: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/readyz with 200 slow connections open: %d", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, mariadb, "--protocol=TCP", "-h", "127.0.0.1", "-P", mm[1], "-u", "root", "-e", "SHOW COMPUTE NODE MODE").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "repository") {
		t.Fatalf("mariadb with 200 slow HTTP connections open: %v\n%s", err, out)
	}
}
