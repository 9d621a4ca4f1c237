package linear

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// op builds an operation of client c on key k over [call, ret].
func op(k string, c int, kind Kind, value string, out Outcome, call, ret int64) Op {
	return Op{Key: k, Client: c, Kind: kind, Value: value, Outcome: out, Call: call, Return: ret}
}

func read(k string, c int, value string, call, ret int64) Op {
	return Op{Key: k, Client: c, Kind: Read, Value: value, Present: true, Outcome: OK, Call: call, Return: ret}
}

func readAbsent(k string, c int, call, ret int64) Op {
	return Op{Key: k, Client: c, Kind: Read, Outcome: OK, Call: call, Return: ret}
}

func onNode(node string, o Op) Op {
	o.Node = node
	return o
}

func TestCheckVerdicts(t *testing.T) {
	const k = "sharding/tables/t_order"
	cases := []struct {
		name string
		ops  []Op
		ok   bool
	}{
		{"empty", nil, true},
		{"concurrent creates, one wins", []Op{
			op(k, 0, Create, "a", Refused, 0, 20),
			op(k, 1, Create, "b", OK, 5, 15),
			read(k, 2, "b", 30, 40),
		}, true},
		{"concurrent creates, both acknowledged (plain overwrite)", []Op{
			op(k, 0, Create, "a", OK, 0, 20),
			op(k, 1, Create, "b", OK, 5, 15),
		}, false},
		{"acknowledged create lost", []Op{
			op(k, 0, Create, "a", OK, 0, 10),
			readAbsent(k, 1, 20, 30),
		}, false},
		{"stale read after alter", []Op{
			op(k, 0, Create, "a", OK, 0, 10),
			op(k, 0, Alter, "b", OK, 20, 30),
			read(k, 1, "a", 40, 50),
		}, false},
		{"read concurrent with alter may see either", []Op{
			op(k, 0, Create, "a", OK, 0, 10),
			op(k, 0, Alter, "b", OK, 20, 50),
			read(k, 1, "b", 25, 30),
			read(k, 2, "a", 22, 45),
		}, true},
		{"new value then old value while the alter is pending", []Op{
			op(k, 0, Create, "a", OK, 0, 10),
			op(k, 0, Alter, "b", OK, 20, 100),
			read(k, 1, "b", 30, 40),
			read(k, 2, "a", 50, 60),
		}, false},
		{"views of two nodes differ while the alter is pending", []Op{
			op(k, 0, Create, "a", OK, 0, 10),
			op(k, 0, Alter, "b", OK, 20, 100),
			onNode("n1", read(k, 1, "b", 30, 40)),
			onNode("n2", read(k, 2, "a", 50, 60)),
		}, true},
		{"one node's view goes back while the alter is pending", []Op{
			op(k, 0, Create, "a", OK, 0, 10),
			op(k, 0, Alter, "b", OK, 20, 100),
			onNode("n1", read(k, 1, "b", 30, 40)),
			onNode("n1", read(k, 2, "a", 50, 60)),
		}, false},
		{"a node's view misses an acknowledged alter", []Op{
			op(k, 0, Create, "a", OK, 0, 10),
			op(k, 0, Alter, "b", OK, 20, 30),
			onNode("n1", read(k, 1, "b", 40, 50)),
			onNode("n2", read(k, 2, "a", 40, 50)),
		}, false},
		{"alter of an absent item refused", []Op{
			op(k, 0, Alter, "a", Refused, 0, 10),
			op(k, 0, Drop, "", Refused, 20, 30),
			op(k, 0, Drop, "", OK, 40, 50),
		}, false},
		{"lenient create and drop", []Op{
			op(k, 0, Create, "a", OK, 0, 10),
			{Key: k, Kind: Create, Lenient: true, Value: "b", Outcome: OK, Call: 20, Return: 30},
			read(k, 1, "a", 40, 50),
			op(k, 0, Drop, "", OK, 60, 70),
			{Key: k, Kind: Drop, Lenient: true, Outcome: OK, Call: 80, Return: 90},
			readAbsent(k, 1, 100, 110),
		}, true},
		{"set is unconditional", []Op{
			op("props/sql-show", 0, Set, "true", OK, 0, 10),
			op("props/sql-show", 1, Set, "false", OK, 20, 30),
			read("props/sql-show", 2, "false", 40, 50),
		}, true},
		{"unknown create applied late", []Op{
			op(k, 0, Create, "a", Unknown, 0, 0),
			readAbsent(k, 1, 20, 30),
			read(k, 1, "a", 40, 50),
			read(k, 2, "a", 60, 70),
		}, true},
		{"unknown create never applied", []Op{
			op(k, 0, Create, "a", Unknown, 0, 0),
			readAbsent(k, 1, 20, 30),
			op(k, 2, Create, "b", OK, 40, 50),
			read(k, 1, "b", 60, 70),
		}, true},
		{"unknown create applied twice", []Op{
			op(k, 0, Create, "a", Unknown, 0, 0),
			read(k, 1, "a", 20, 30),
			readAbsent(k, 1, 40, 50),
			read(k, 1, "a", 60, 70),
		}, false},
		{"unknown read says nothing", []Op{
			op(k, 0, Create, "a", OK, 0, 10),
			{Key: k, Client: 1, Kind: Read, Outcome: Unknown, Call: 20},
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Check(tc.ops, 0, "")
			if err != nil {
				t.Fatal(err)
			}
			if res.Linearizable != tc.ok || res.Undecided {
				t.Fatalf("Check = %s, want linearizable %v", res, tc.ok)
			}
			if !tc.ok && (res.Key != k || len(res.Offending)+len(res.Changes) == 0) {
				t.Fatalf("Check = %s with offending %v and changes %v, want key %s and a witness", res, res.Offending, res.Changes, k)
			}
			if !tc.ok {
				checkWitness(t, tc.ops, res)
			}
		})
	}
}

// TestCheckShrinksAndVisualises: a long legal history of two keys with one
// stale read of one of them is reported on that key: the read that saw the
// item, with the acknowledged DROP before it among the changes, and the visualisation is written.
func TestCheckShrinksAndVisualises(t *testing.T) {
	var ops []Op
	at := int64(0)
	for i := 0; i < 40; i++ {
		for _, k := range []string{"broadcast/t_dict", "readwrite_splitting/ds"} {
			ops = append(ops,
				op(k, 0, Create, "v", OK, at, at+5),
				read(k, 1, "v", at+10, at+15),
				op(k, 0, Drop, "", OK, at+20, at+25),
				readAbsent(k, 1, at+30, at+35))
			at += 40
		}
	}
	stale := read("readwrite_splitting/ds", 2, "v", at+10, at+20)
	ops = append(ops, stale, op("props/x", 0, Set, "1", Unknown, at, 0))

	html := filepath.Join(t.TempDir(), "linear.html")
	res, err := Check(ops, 0, html)
	if err != nil {
		t.Fatal(err)
	}
	if res.Linearizable || res.Key != "readwrite_splitting/ds" {
		t.Fatalf("Check = %s, want NOT linearizable on readwrite_splitting/ds", res)
	}
	if res.Ops != len(ops) || res.Unknown != 1 {
		t.Fatalf("Check counted %d operations (%d unknown), want %d (1)", res.Ops, res.Unknown, len(ops))
	}
	same := func(a, b Op) bool { return a.String() == b.String() }
	if len(res.Offending) != 1 || !same(res.Offending[0], stale) || !slices.ContainsFunc(res.Changes, func(o Op) bool { return same(o, ops[len(ops)-4]) }) {
		t.Fatalf("offending %v with changes %v, want the stale read with the last drop among the changes", res.Offending, res.Changes)
	}
	checkWitness(t, ops, res)
	if !strings.Contains(res.String(), "NOT linearizable: key readwrite_splitting/ds") {
		t.Fatalf("report line %q", res)
	}
	b, err := os.ReadFile(html)
	if err != nil || !strings.Contains(string(b), "<html") {
		t.Fatalf("visualisation: %v, %d bytes", err, len(b))
	}
}

// checkWitness checks res.Offending against ops: with every change of
// res.Key, the offending observations are not linearizable together, and
// each is needed.
func checkWitness(t *testing.T, ops []Op, res Result) {
	t.Helper()
	var changes []Op
	for _, o := range ops {
		if o.Key == res.Key && o.Kind != Read && o.Outcome != Refused {
			changes = append(changes, o)
		}
	}
	with := func(obs []Op) bool {
		r, err := Check(append(append([]Op(nil), changes...), obs...), 0, "")
		if err != nil {
			t.Fatal(err)
		}
		return r.Linearizable
	}
	if with(res.Offending) {
		t.Fatalf("the changes of %s with the offending observations %v are linearizable", res.Key, res.Offending)
	}
	for i := range res.Offending {
		rest := append(append([]Op(nil), res.Offending[:i]...), res.Offending[i+1:]...)
		if len(res.Offending) > 0 && !with(rest) {
			t.Errorf("offending observation %v is not needed", res.Offending[i])
		}
	}
}

// TestCheckNamesNoViewForConflictingChanges: two acknowledged CREATEs of
// one item (a plain overwrite) conflict whatever a view observed, so the
// report names the key alone, not the first view checked.
func TestCheckNamesNoViewForConflictingChanges(t *testing.T) {
	const k = "broadcast/t_b0"
	res, err := Check([]Op{
		op(k, 0, Create, "1", OK, 0, 20),
		op(k, 1, Create, "1", OK, 5, 15),
		onNode("n1", read(k, 2, "1", 30, 40)),
	}, 0, "")
	if err != nil || res.Linearizable || res.Key != k || res.Node != "" || len(res.Offending) != 0 {
		t.Fatalf("Check = %+v, %v; want NOT linearizable on %s, no view, no offending observation", res, err, k)
	}
	if got := res.String(); !strings.HasSuffix(got, "NOT linearizable: key "+k) {
		t.Errorf("report line %q", got)
	}
}

func TestCheckRejectsBadOps(t *testing.T) {
	for _, o := range []Op{
		{Kind: Read, Outcome: OK},
		{Key: "k", Kind: 0, Outcome: OK},
		{Key: "k", Kind: Set, Outcome: 0},
		{Key: "k", Kind: Set, Outcome: OK, Call: 10, Return: 5},
		{Key: "k", Kind: Read, Outcome: Refused},
	} {
		if _, err := Check([]Op{o}, 0, ""); !errors.Is(err, ErrBadOp) {
			t.Errorf("Check(%+v) = %v, want ErrBadOp", o, err)
		}
	}
}

// TestPendingViews checks that an acknowledged change whose warnings name
// a node as not confirming it lets that node's view show it late, and
// only that node's.
func TestPendingViews(t *testing.T) {
	const k = "broadcast/t_b0"
	create := op(k, 0, Create, "1", OK, 0, 10)
	create.Pending = []string{"n2"}
	for _, tc := range []struct {
		name string
		ops  []Op
		ok   bool
	}{
		{"the pending node shows it late", []Op{create, onNode("n2", readAbsent(k, 1, 20, 30)), onNode("n2", read(k, 1, "1", 40, 50))}, true},
		{"another node does not show it", []Op{create, onNode("n3", readAbsent(k, 1, 20, 30))}, false},
		{"the pending node goes back", []Op{create, onNode("n2", read(k, 1, "1", 20, 30)), onNode("n2", readAbsent(k, 1, 40, 50))}, false},
	} {
		res, err := Check(tc.ops, 0, "")
		if err != nil || res.Linearizable != tc.ok {
			t.Errorf("%s: linearizable %v, %v; want %v", tc.name, res.Linearizable, err, tc.ok)
		}
	}
}

// TestOnline checks which observations Online keeps: those made while
// every sample around them lists the node, changes and the registry's
// observations always.
func TestOnline(t *testing.T) {
	const k = "broadcast/t_b0"
	samples := []OnlineSample{{0, 5, []string{"n1", "n2"}}, {20, 25, []string{"n1"}}, {40, 45, []string{"n1", "n2"}},
		{60, 65, []string{"n1", "n2"}}}
	ops := []Op{
		op(k, 0, Create, "1", OK, 0, 10),                  // a change: kept
		onNode("n1", readAbsent(k, 1, 10, 15)),            // n1 online around it: kept
		onNode("n2", readAbsent(k, 2, 10, 15)),            // the sample after it misses n2: dropped
		onNode("n2", readAbsent(k, 2, 46, 55)),            // n2 online at 40-45 and 60-65: kept
		onNode("n1", readAbsent(k, 1, 66, 70)),            // no sample after it: dropped
		onNode(RegistryView, readAbsent(k, 3, 66, 70)),    // the registry's: kept
		onNode("n2", op(k, 2, Drop, "", Refused, 10, 30)), // a refusal while n2 was not listed: dropped
	}
	kept, dropped := Online(ops, samples, RegistryView)
	if dropped != 3 || len(kept) != 4 || kept[1].Client != 1 || kept[2].Call != 46 || kept[3].Node != RegistryView {
		t.Errorf("Online kept %v, dropped %d; want the change, n1's first read, n2's read at 46 and the registry's, 3 dropped", kept, dropped)
	}
	if kept, dropped := Online(ops, nil, RegistryView); dropped != 0 || len(kept) != len(ops) {
		t.Errorf("Online without samples dropped %d", dropped)
	}
}
