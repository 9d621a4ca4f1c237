package daemon

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry/embedded"
)

// embeddedRepository is an embedded registry in a new data dir, on a
// free client port.
func embeddedRepository(t *testing.T) config.Repository {
	t.Helper()
	r := config.DefaultMode().Repository
	r.DataDir = filepath.Join(t.TempDir(), "data")
	r.ClientURL = "http://127.0.0.1:0"
	r.ConnectTimeout = 10 * time.Second
	return r
}

// TestDefaultInstanceIDStablePerDataDir starts a node without an
// instance id on the embedded registry twice on the same data dir: the
// second start has the same instance id and gets the same worker id
// back. A node on another data dir has another id.
func TestDefaultInstanceIDStablePerDataDir(t *testing.T) {
	ctx := testenv.Context(t)
	repo := embeddedRepository(t)
	start := func(r config.Repository) (string, int) {
		d, err := Start(ctx, Config{Repository: r, Node: cluster.Config{Reservation: time.Second}, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		id, wid := d.Node.InstanceID(), d.Node.WorkerID()
		if err := d.Close(ctx); err != nil {
			t.Fatal(err)
		}
		return id, wid
	}
	id1, wid1 := start(repo)
	kept, err := os.ReadFile(filepath.Join(repo.DataDir, InstanceIDFile))
	if err != nil || strings.TrimSpace(string(kept)) != id1 {
		t.Fatalf("%s = %q, %v; want %q", InstanceIDFile, kept, err, id1)
	}
	id2, wid2 := start(repo)
	if id2 != id1 || wid2 != wid1 {
		t.Fatalf("restart on the same data dir: instance id %s worker id %d, want %s and %d", id2, wid2, id1, wid1)
	}
	if id3, _ := start(embeddedRepository(t)); id3 == id1 {
		t.Fatalf("another data dir has the same instance id %s", id3)
	}
}

// TestDefaultInstanceIDBadFile checks that a kept id that is not an
// instance id refuses the start, naming the file, and is left as it is.
func TestDefaultInstanceIDBadFile(t *testing.T) {
	repo := embeddedRepository(t)
	if err := os.MkdirAll(repo.DataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(repo.DataDir, InstanceIDFile)
	for _, bad := range []string{"a/b\n", "", strings.Repeat("x", maxInstanceIDFile+1)} {
		if err := os.WriteFile(file, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Start(testenv.Context(t), Config{Repository: repo, Logger: slog.New(slog.DiscardHandler)})
		if err == nil || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "--instance-id") {
			t.Fatalf("start with %s = %q: %v; want an error naming the file", InstanceIDFile, bad, err)
		}
		if got, _ := os.ReadFile(file); string(got) != bad {
			t.Fatalf("the kept id changed to %q", got)
		}
	}
}

// TestSecondNodeOnDataDirInUse starts a node on the embedded registry
// with the default ports' fallbacks, then a second one on the same data
// dir: the second is refused because the data dir is in use, before it
// binds any port, so it logs no port-fallback warning.
func TestSecondNodeOnDataDirInUse(t *testing.T) {
	ctx := testenv.Context(t)
	repo := embeddedRepository(t)
	mysql := func() *MySQLConfig { return &MySQLConfig{Addr: "127.0.0.1:0", FallbackAddr: "127.0.0.1:0"} }
	first, err := Start(ctx, Config{Repository: repo, Node: cluster.Config{Reservation: time.Second}, MySQL: mysql(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = first.Close(context.Background()) })
	// The second asks for the first's ports, with fallbacks.
	var log bytes.Buffer
	second := mysql()
	second.Addr = first.MySQLAddr
	_, err = Start(ctx, Config{Repository: repo, MySQL: second, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if !errors.Is(err, embedded.ErrDirInUse) {
		t.Fatalf("second start = %v, want %v", err, embedded.ErrDirInUse)
	}
	if log.Len() != 0 {
		t.Fatalf("second start logged before its refusal:\n%s", log.String())
	}
	if c, err := net.Dial("tcp", first.MySQLAddr); err != nil {
		t.Fatalf("the first node's console: %v", err)
	} else {
		c.Close()
	}
}
