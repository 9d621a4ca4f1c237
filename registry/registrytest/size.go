package registrytest

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

// testTooLarge: a write larger than one request of the registry takes
// (4 MiB: etcd's default --max-request-bytes is 1.5 MiB, ZooKeeper's
// jute.maxbuffer 1 MiB) is refused with ErrTooLarge before it is sent,
// whatever writes it: nothing is written, the client and its session stay
// connected and alive, and a 256 KiB value is still stored.
func testTooLarge(t *testing.T, h Harness) {
	e := newEnv(t, h)
	r := e.open()
	s := e.session(r, 0)
	c := testenv.Context(t)
	mustPut(t, r, "/keep", "keep")
	huge := bytes.Repeat([]byte("x"), 4<<20)
	ops := map[string]func() error{
		"Put":    func() error { _, err := r.Put(c, "/big", huge); return err },
		"Create": func() error { _, err := r.Create(c, "/big", huge); return err },
		"Update": func() error {
			_, err := r.Update(c, "/keep", huge, mustGet(t, r, "/keep").Version)
			return err
		},
		"PutEphemeral":             func() error { return s.PutEphemeral(c, "/big", huge) },
		"CreateExclusiveEphemeral": func() error { return s.CreateExclusiveEphemeral(c, "/big", huge) },
		"Commit": func() error {
			_, err := s.Commit(c, registry.Txn{Conds: []registry.Cond{{Key: "/big"}}, Ops: []registry.Op{{Key: "/big", Value: huge}}})
			return err
		},
		"Commit of many keys": func() error {
			var txn registry.Txn
			for _, k := range []string{"/big/a", "/big/b", "/big/c", "/big/d", "/big/e", "/big/f"} {
				txn.Conds = append(txn.Conds, registry.Cond{Key: k})
				txn.Ops = append(txn.Ops, registry.Op{Key: k, Value: huge[:700<<10]})
			}
			_, err := s.Commit(c, txn)
			return err
		},
	}
	if fc, ok := s.(registry.FirstCommitter); ok {
		ops["CommitFirst"] = func() error {
			_, _, err := fc.CommitFirst(c, []registry.Txn{
				{Conds: []registry.Cond{{Key: "/keep"}}, Ops: []registry.Op{{Key: "/keep", Value: []byte("no")}}},
				{Conds: []registry.Cond{{Key: "/big"}}, Ops: []registry.Op{{Key: "/big", Value: huge}}},
			})
			return err
		}
	}
	for name, op := range ops {
		err := op()
		wantErr(t, name+" of 4 MiB", err, registry.ErrTooLarge)
		var oe *registry.OpError
		if !errors.As(err, &oe) {
			t.Fatalf("%s of 4 MiB: %T, want an *OpError", name, err)
		}
	}
	if got := mustGet(t, r, "/keep"); string(got.Value) != "keep" {
		t.Fatalf("a refused write changed /keep to %d bytes", len(got.Value))
	}
	if _, err := r.Get(c, "/big"); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("a refused write left /big: %v", err)
	}
	if kids, err := r.Children(c, "/big"); err != nil || len(kids) != 0 {
		t.Fatalf("a refused write left children of /big: %v %v", kids, err)
	}
	if err := s.Err(); err != nil {
		t.Fatalf("the session ended after the refused writes: %v", err)
	}
	select {
	case <-s.Done():
		t.Fatal("the session ended after the refused writes")
	default:
	}
	fine := bytes.Repeat([]byte("y"), 256<<10)
	if _, err := r.Put(c, "/fine", fine); err != nil {
		t.Fatalf("Put of 256 KiB: %v", err)
	}
	if got := mustGet(t, r, "/fine"); !bytes.Equal(got.Value, fine) {
		t.Fatalf("256 KiB read back as %d bytes", len(got.Value))
	}
	if err := s.PutEphemeral(context.WithoutCancel(c), "/fine-ephemeral", fine); err != nil {
		t.Fatalf("PutEphemeral of 256 KiB: %v", err)
	}
}
