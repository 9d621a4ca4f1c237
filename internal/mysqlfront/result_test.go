package mysqlfront

import (
	"bytes"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/shardkeeper/shardkeeper/internal/console"
)

// appendLengthEncodedString encodes as go-mysql's PutLengthEncodedString at
// every length-prefix size.
func TestAppendLengthEncodedString(t *testing.T) {
	for _, n := range []int{0, 1, 250, 251, 1<<16 - 1, 1 << 16, 1<<24 - 1, 1 << 24} {
		s := strings.Repeat("x", n)
		got := appendLengthEncodedString([]byte{0xaa}, s)
		want := append([]byte{0xaa}, mysql.PutLengthEncodedString([]byte(s))...)
		if !bytes.Equal(got, want) {
			t.Errorf("length %d: prefix %x, want %x", n, got[:min(len(got), 10)], want[:min(len(want), 10)])
		}
	}
}

// resultOf reuses a shared result's encoding only for the very rows it
// was made of: other shared rows (another membership view), a shorter
// slice of the same rows, and rows that are not shared are encoded
// afresh, and every encoding is the rows' own.
func TestResultOfShared(t *testing.T) {
	s, err := New(Config{Executor: echoExecutor{}})
	if err != nil {
		t.Fatal(err)
	}
	cols := []console.Column{{Name: "id"}, {Name: "n", Type: console.Int64}}
	rows := func(vals ...string) [][]*string {
		var out [][]*string
		for _, v := range vals {
			id, n := v, "1"
			out = append(out, []*string{&id, &n})
		}
		return out
	}
	encode := func(r *console.Result) *mysql.Resultset {
		t.Helper()
		res, err := s.resultOf(r)
		if err != nil {
			t.Fatal(err)
		}
		plain, _ := toResult(r)
		if len(res.RowDatas) != len(plain.RowDatas) {
			t.Fatalf("%d rows, want %d", len(res.RowDatas), len(plain.RowDatas))
		}
		for i := range res.RowDatas {
			if !bytes.Equal(res.RowDatas[i], plain.RowDatas[i]) {
				t.Fatalf("row %d: %q, want %q", i, res.RowDatas[i], plain.RowDatas[i])
			}
		}
		for i, f := range res.Fields {
			if !bytes.Equal(f.Dump(), plain.Fields[i].Dump()) {
				t.Fatalf("field %d: %q, want %q", i, f.Dump(), plain.Fields[i].Dump())
			}
		}
		return res.Resultset
	}
	view1 := rows("a", "b")
	first := encode(&console.Result{Columns: cols, Rows: view1, Shared: true})
	if again := encode(&console.Result{Columns: cols, Rows: view1, Shared: true}); again != first {
		t.Error("the same shared rows were encoded again")
	}
	if part := encode(&console.Result{Columns: cols, Rows: view1[:1], Shared: true}); part == first {
		t.Error("a shorter slice of the shared rows got their encoding")
	}
	view2 := rows("a", "c")
	if next := encode(&console.Result{Columns: cols, Rows: view2, Shared: true}); next == first {
		t.Error("another view's rows got the first view's encoding")
	}
	if plain := encode(&console.Result{Columns: cols, Rows: view2}); plain == s.shared.Load().rs {
		t.Error("rows that are not shared got the shared encoding")
	}
}
