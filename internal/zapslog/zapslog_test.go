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
	var recs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		recs = append(recs, rec)
	}
	if len(recs) != 2 {
		t.Fatalf("%d lines, want the warning and the real error:\n%s", len(recs), buf.String())
	}
	w, e := recs[0], recs[1]
	if w["level"] != "WARN" || w["msg"] != "slow fdatasync" || w["took"] != float64(2*time.Second) || w["n"] != float64(3) ||
		w["member"] != "m1" || w["logger"] != "etcd" || w["instance"] != "n1" {
		t.Errorf("warning = %v", w)
	}
	if e["level"] != "ERROR" || e["error"] != "disk full" {
		t.Errorf("error = %v", e)
	}
}
