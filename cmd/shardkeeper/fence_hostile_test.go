package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

// TestHostileRegistryRmNeedsForce: `registry rm` refuses, without --force
// and before it connects, to delete what holds worker id reservations and
// fences, or every compute node's registration; other paths, and these
// with --force, are deleted.
func TestHostileRegistryRmNeedsForce(t *testing.T) {
	endpoints := testenv.EtcdEndpoints(t)
	ns := testenv.Namespace("sk_rmforce_")
	flags := []string{"--repository-type", "etcd", "--server-lists", strings.Join(endpoints, ","), "--namespace", ns}
	fence := "/reservation/worker_id_fence/7"
	mustRun(t, append([]string{"registry", "put", fence, `{"epoch":1,"holder":"a","reservedUntil":1}`}, flags...)...)
	mustRun(t, append([]string{"registry", "put", "/props", "sql-show: true"}, flags...)...)
	ctx := context.Background()
	for _, path := range []string{"/", "/reservation", "/reservation/", "/reservation/worker_id", "/reservation/worker_id_fence",
		fence, "/reservation/worker_id/7", "/reservation/worker_id_ledger", "/nodes", "/nodes/compute_nodes", "/nodes/compute_nodes/worker_id", "//reservation//"} {
		out, err := run(t, ctx, append([]string{"registry", "rm", path}, flags...)...)
		if err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), "--force") {
			t.Errorf("registry rm %s: err = %v (exit %d), want a refusal naming --force (exit 2)\n%s", path, err, exitCode(err), out)
		}
	}
	if got := mustRun(t, append([]string{"registry", "get", fence}, flags...)...); !strings.Contains(got, `"epoch":1`) {
		t.Fatalf("the fence is gone after refused deletes: %q", got)
	}
	mustRun(t, append([]string{"registry", "rm", "/props"}, flags...)...)
	mustRun(t, append([]string{"registry", "rm", "/reservation", "--force"}, flags...)...)
	if out, err := run(t, ctx, append([]string{"registry", "get", fence}, flags...)...); err == nil {
		t.Fatalf("the fence survived rm --force: %q", out)
	}
}

// TestHostileServeReservationBounded: `serve --reservation` above a minute
// (or not positive) is a usage error before anything starts.
func TestHostileServeReservationBounded(t *testing.T) {
	for _, bad := range []string{"1h", "61s", "0s", "-1s"} {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a serve that starts runs until then
		out, err := run(t, ctx, "serve", "--reservation", bad, "--data-dir", t.TempDir(), "--http", "off")
		cancel()
		if err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), "--reservation") || !strings.Contains(err.Error(), "1m0s") {
			t.Errorf("serve --reservation %s: err = %v (exit %d), want a usage error naming the 1m0s bound\n%s", bad, err, exitCode(err), out)
		}
		if time.Since(start) > 5*time.Second {
			t.Errorf("serve --reservation %s took %v to refuse", bad, time.Since(start))
		}
	}
}
