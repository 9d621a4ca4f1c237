package console_test

import (
	"context"
	"errors"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"log/slog"
	"strings"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/console"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

// panicking is an executor whose statement PANIC panics, as a bug in a
// statement would; any other statement answers OK.
type panicking struct{}

func (panicking) Execute(_ context.Context, s *console.Session, q string) (*console.Result, error) {
	if q == "PANIC" {
		var nodes []string
		_ = nodes[len(q)-9:] // slice bounds out of range [-4:]
	}
	s.Database = q
	return &console.Result{}, nil
}

// TestStatementPanicIsItsError: a statement that panics answers an
// internal error (30000, HY000) naming the panic, which is logged with
// its stack; the session's next statement runs (the process goes on, the
// session is intact).
func TestStatementPanicIsItsError(t *testing.T) {
	var logs testenv.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	s := &console.Session{ID: "p1", Database: "before"}
	res, err := console.ExecuteCancellable(context.Background(), log, panicking{}, s, "PANIC")
	var ce *sqlerr.Error
	if res != nil || !errors.As(err, &ce) || ce.Code != 30000 || ce.SQLState != "HY000" || !strings.Contains(ce.Message, "slice bounds out of range") {
		t.Fatalf("PANIC: %v, %#v; want a 30000 error naming the panic", res, err)
	}
	if got := logs.String(); !strings.Contains(got, "level=ERROR") || !strings.Contains(got, "slice bounds out of range") || !strings.Contains(got, "recover_test.go") {
		t.Errorf("log lacks the panic with its stack:\n%s", got)
	}
	if s.Database != "before" {
		t.Errorf("the panicking statement changed the session: %q", s.Database)
	}
	if _, err := console.ExecuteCancellable(context.Background(), log, panicking{}, s, "after"); err != nil || s.Database != "after" {
		t.Errorf("the next statement: %v, database %q", err, s.Database)
	}
}
