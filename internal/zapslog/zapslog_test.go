package zapslog

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
)

func TestLevelsFieldsAndBenignErrors(t *testing.T) {
	var buf bytes.Buffer
	l := Logger(slog.New(slog.NewJSONHandler(&buf, nil)).With("instance", "n1")).Named("etcd").With(zap.String("member", "m1"))
	l.Info("raft chatter")                                                         // Info: debug, hidden at the default level
	l.Warn("slow fdatasync", zap.Duration("took", 2*time.Second), zap.Int("n", 3)) // Warn stays Warn
	l.Error("failed to update storage version", zap.Error(errors.New("cannot detect storage schema version: missing term information")))
	l.Error("failed to update storage version", zap.Error(errors.New("disk full")))
	// etcd's raft puts the member id before its messages.
	l.Warn("2fe703e8b3ea3feb cannot campaign at term 1 since there are still pending configuration changes to apply")
	l.Warn("2fe703e8b3ea3feb cannot campaign at term 7 since there are still pending configuration changes to apply")
	var recs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		recs = append(recs, rec)
	}
	if len(recs) != 3 {
		t.Fatalf("%d lines, want the warning, the real error and the campaign at term 7:\n%s", len(recs), buf.String())
	}
	w, e := recs[0], recs[1]
	if c := recs[2]; c["level"] != "WARN" || !strings.Contains(c["msg"].(string), "at term 7") {
		t.Errorf("campaign warning past a fresh start = %v", c)
	}
	if w["level"] != "WARN" || w["msg"] != "slow fdatasync" || w["took"] != float64(2*time.Second) || w["n"] != float64(3) ||
		w["member"] != "m1" || w["logger"] != "etcd" || w["instance"] != "n1" {
		t.Errorf("warning = %v", w)
	}
	if e["level"] != "ERROR" || e["error"] != "disk full" {
		t.Errorf("error = %v", e)
	}
}

// TestCountingLoggerSlowAtDebug checks that the embedded etcd's
// slow-request warnings, with their protobuf dumps, go to debug and are
// counted, and that other warnings stay warnings.
func TestCountingLoggerSlowAtDebug(t *testing.T) {
	var buf bytes.Buffer
	var slow Slow
	l := CountingLogger(slog.New(slog.NewTextHandler(&buf, nil)), &slow).Named("etcd")
	l.Warn("apply request took too long", zap.Duration("took", 150*time.Millisecond), zap.String("request", `header:<ID:1 > txn:<compare:<target:MOD key:"governance_ds/reservation/1" > >`))
	l.Warn("request stats", zap.String("request content", "compare:<target:MOD >"))
	l.Warn("request stats", zap.String("response type", "/etcdserverpb.Auth/Authenticate")) // bcrypt: slow by design
	l.Warn("some other warning")
	if got := slow.Count(); got != 2 {
		t.Fatalf("slow = %d, want 2", got)
	}
	if out := buf.String(); strings.Contains(out, "took too long") || strings.Contains(out, "request stats") || !strings.Contains(out, "some other warning") {
		t.Fatalf("log at info:\n%s", out)
	}
	buf.Reset()
	l = CountingLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), &slow)
	l.Warn("apply request took too long")
	if out := buf.String(); !strings.Contains(out, "level=DEBUG") || !strings.Contains(out, "apply request took too long") || slow.Count() != 3 {
		t.Fatalf("log at debug (slow %d):\n%s", slow.Count(), out)
	}
}
