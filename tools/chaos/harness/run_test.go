package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/tools/chaos/chaostest"
)

// TestRunCleansUpWhenInterrupted starts a real run (3 etcd members, 5 node
// processes in namespaces), cancels it while faults are being injected, as
// an interrupt does, and checks that nothing is left: no namespace, no
// link, no process.
func TestRunCleansUpWhenInterrupted(t *testing.T) {
	chaostest.RequireTools(t, "etcd", "go")
	bin := filepath.Join(t.TempDir(), "chaos")
	build := exec.Command("go", "build", "-o", bin, "github.com/shardkeeper/shardkeeper/tools/chaos")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	prefix := fmt.Sprintf("skr%04x", rand.IntN(1<<16))
	cfg := Config{Dir: t.TempDir(), Registry: "etcd", Nodes: 5, Duration: 5 * time.Minute, Seed: 1, Binary: bin,
		Prefix: prefix, Subnet: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 213, byte(100 + rand.IntN(100)), 0}), 24),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg) }()

	deadline := time.Now().Add(90 * time.Second)
	for !faultsRecorded(cfg.Dir) {
		select {
		case err := <-done:
			t.Fatalf("Run ended before faults were injected: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no fault injected within 90 s (Run error: %v)", <-done)
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run after cancel = %v, want context.Canceled", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not return within 60 s of the interrupt")
	}
	chaostest.AssertNoLeftovers(t, prefix)
	if procs := processesMentioning(prefix, bin); len(procs) > 0 {
		t.Fatalf("processes left behind: %v", procs)
	}
}

func faultsRecorded(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, "faults.jsonl"))
	return err == nil && fi.Size() > 0
}

// processesMentioning lists the command lines that contain any of words.
func processesMentioning(words ...string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || e.Name() == fmt.Sprint(os.Getpid()) {
			continue
		}
		cmd := strings.ReplaceAll(string(b), "\x00", " ")
		for _, w := range words {
			if strings.Contains(cmd, w) {
				out = append(out, cmd)
				break
			}
		}
	}
	return out
}
