package metadata

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// TestDecodeTablesAhead applies one batch of 600 tables, one of them
// corrupt and one written twice in the batch, with the tables decoded
// ahead on several goroutines and with them decoded one by one (one
// goroutine), and wants the same snapshot and the same problems.
func TestDecodeTablesAhead(t *testing.T) {
	var events []registry.Event
	put := func(key string, value []byte) {
		events = append(events, registry.Event{Type: registry.EventPut, KV: registry.KV{Key: key, Value: value, Version: registry.Version(len(events) + 1)}})
	}
	dbKey, err := paths.Database("db_ahead")
	if err != nil {
		t.Fatal(err)
	}
	put(dbKey, nil)
	const n = 600
	for i := range n {
		name := fmt.Sprintf("t_%03d", i)
		node, err := paths.Table("db_ahead", "db_ahead", name)
		if err != nil {
			t.Fatal(err)
		}
		value := encodeTable(datasource.Table{Name: name, Columns: []datasource.Column{
			{Name: "id", DataType: -5, TypeName: "bigint", PrimaryKey: true},
			{Name: fmt.Sprintf("c_%d", i), DataType: 12, TypeName: "varchar(32)", Nullable: true},
		}})
		switch i {
		case 7:
			value = []byte("columns: [unclosed") // reported and skipped
		case 11:
			put(paths.Version(node, 0), []byte("name: t_011\ncolumns: {}\n")) // replaced below, in the same batch
		}
		put(paths.Version(node, 0), value)
		put(paths.ActiveVersion(node), []byte("0"))
	}
	apply := func(procs int) (*Snapshot, []string) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		var problems []string
		a := newApplier(nil, slog.New(slog.NewTextHandler(io.Discard, nil)), func(err error) { problems = append(problems, err.Error()) })
		if procs > 1 {
			for _, ev := range events {
				a.mirror[ev.KV.Key] = ev.KV // as apply does first
			}
			if ahead := a.decodeTablesAhead(events); len(ahead) != n {
				t.Fatalf("decoded ahead %d tables, want %d", len(ahead), n)
			}
			clear(a.mirror)
		}
		d := newDraft(emptySnapshot())
		a.apply(context.Background(), d, events, false)
		return d.s, problems
	}
	one, oneProblems := apply(1)
	many, manyProblems := apply(4)
	tables := many.Databases["db_ahead"].Schemas["db_ahead"].Tables
	if len(tables) != n-1 {
		t.Fatalf("%d tables applied, want %d (all but the corrupt one)", len(tables), n-1)
	}
	if got := tables["t_011"].Columns; len(got) != 2 {
		t.Fatalf("t_011 has columns %+v: want the batch's last write", got)
	}
	if !reflect.DeepEqual(one.Databases, many.Databases) {
		t.Fatal("tables decoded ahead differ from tables decoded one by one")
	}
	if len(manyProblems) != 1 || !strings.Contains(manyProblems[0], "t_007") || !reflect.DeepEqual(oneProblems, manyProblems) {
		t.Fatalf("problems decoded ahead %q, one by one %q: want the one corrupt table", manyProblems, oneProblems)
	}
}

// BenchmarkApplyTables applies a load of 10,000 tables (one batch, as a
// node loading a database does) with the tables decoded one by one
// (GOMAXPROCS 1, the baseline) and decoded ahead on every core.
//
//	go test ./internal/metadata -run '^$' -bench ApplyTables -benchtime 5x
func BenchmarkApplyTables(b *testing.B) {
	const n = 10000
	var events []registry.Event
	for i := range n {
		name := fmt.Sprintf("t_order_%05d", i)
		node, err := paths.Table("big_db", "big_db", name)
		if err != nil {
			b.Fatal(err)
		}
		value := encodeTable(datasource.Table{Name: name, Columns: []datasource.Column{
			{Name: "order_id", DataType: -5, TypeName: "bigint", PrimaryKey: true, Generated: true},
			{Name: "user_id", DataType: 4, TypeName: "int"},
			{Name: "status", DataType: 12, TypeName: "varchar(32)", Nullable: true},
			{Name: "created", DataType: 93, TypeName: "timestamp", Nullable: true},
		}, Indexes: []datasource.Index{{Name: "idx_user", Columns: []string{"user_id"}}}})
		events = append(events,
			registry.Event{Type: registry.EventPut, KV: registry.KV{Key: paths.Version(node, 0), Value: value}},
			registry.Event{Type: registry.EventPut, KV: registry.KV{Key: paths.ActiveVersion(node), Value: []byte("0")}})
	}
	for _, c := range []struct {
		name  string
		procs int
	}{{"one-by-one", 1}, {"ahead", runtime.GOMAXPROCS(0)}} {
		b.Run(c.name, func(b *testing.B) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(c.procs))
			for range b.N {
				a := newApplier(nil, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
				d := newDraft(emptySnapshot())
				a.apply(context.Background(), d, events, false)
				if got := len(d.s.Databases["big_db"].Schemas["big_db"].Tables); got != n {
					b.Fatalf("%d tables applied", got)
				}
			}
		})
	}
}
