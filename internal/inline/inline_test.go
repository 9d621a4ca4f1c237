package inline

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestExpand(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"ds_${0..1}.t_${0..1}", []string{"ds_0.t_0", "ds_0.t_1", "ds_1.t_0", "ds_1.t_1"}},
		// upstream's second spelling means the same, alone or mixed.
		{"ds_$->{0..1}.t_$->{0..1}", []string{"ds_0.t_0", "ds_0.t_1", "ds_1.t_0", "ds_1.t_1"}},
		{"ds_$->{0..1}.t_${['a','b']}", []string{"ds_0.t_a", "ds_0.t_b", "ds_1.t_a", "ds_1.t_b"}},
		{"$->{0..1}", []string{"0", "1"}},
		{"ds_${['a', \"b\"]}.t", []string{"ds_a.t", "ds_b.t"}},
		{"ds_${-1..0}", []string{"ds_-1", "ds_0"}},
		{" ds_0.t , ds_${1..2}.t ", []string{"ds_0.t", "ds_1.t", "ds_2.t"}},
		{"plain", []string{"plain"}},
		{"${[a]}${[b]}${[c]}", []string{"abc"}},
	} {
		got, err := Expand(tc.in, MaxNames)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Expand(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
		if n, err := Count(tc.in, MaxNames); err != nil || n != len(tc.want) {
			t.Errorf("Count(%q) = %d, %v; want %d", tc.in, n, err, len(tc.want))
		}
	}
}

// TestExpandRefuses: what is not a range or a list, and the forms whose
// indexes crashed the old expander ($->{ with nothing after it), are
// ErrSyntax; nothing panics.
func TestExpandRefuses(t *testing.T) {
	for _, in := range []string{
		"ds_${user_id % 2}", "ds_$->{", "ds_${", "ds_$->{0..1", "ds_}", "ds_{0..1}", "ds_$", "$-", "$->",
		"ds_${1..0}", "ds_${a..b}", "ds_${99999999999999999999..1}", "ds_${[a}]", "ds_${${0..1}}", "ds_$->{$->{0}}",
	} {
		if got, err := Expand(in, MaxNames); !errors.Is(err, ErrSyntax) {
			t.Errorf("Expand(%q) = %q, %v; want ErrSyntax", in, got, err)
		}
	}
}

// TestHostileExpansionBounds replays the expressions of a few bytes that
// stood for millions of names: each is refused with ErrTooMany after
// counting, before a name is built (no allocation proportional to the
// count).
func TestHostileExpansionBounds(t *testing.T) {
	parts := make([]string, 8)
	for i := range parts {
		parts[i] = fmt.Sprintf("u%d_${0..9999}.t", i)
	}
	for _, in := range []string{
		strings.Join(parts, ","),                 // 8 parts of 10,000: 80,000
		"ds_${0..9999}.t_${0..9999}",             // 100,000,000
		"ds_${0..1000000000000}",                 // 10^12
		strings.Repeat("${0..9}", 40),            // 10^40: overflows an int
		"x" + strings.Repeat("${[a,b]}", 64),     // 2^64
		"ds_${0..10000}",                         // one past the bound
		"${0..99}" + strings.Repeat("x", 50_000), // 100 names of 50 KB: more than MaxBytes
	} {
		var err error
		allocs := testing.AllocsPerRun(1, func() { _, err = Expand(in, MaxNames) })
		if !errors.Is(err, ErrTooMany) {
			t.Errorf("Expand(%.60q) = %v; want ErrTooMany", in, err)
		}
		if allocs > 100 {
			t.Errorf("Expand(%.60q) allocated %.0f times before refusing", in, allocs)
		}
	}
	if names, err := Expand("ds_${0..9999}", MaxNames); err != nil || len(names) != MaxNames {
		t.Errorf("the bound itself: %d names, %v", len(names), err)
	}
	if _, err := Count("a_${0..59999}, b_${0..59999}", MaxRuleNames); !errors.Is(err, ErrTooMany) {
		t.Errorf("two parts over MaxRuleNames together: %v", err)
	}
}

// BenchmarkExpandChained is a stored string that chains one-value lists
// after a range of 4,096 (the form that made SHOW quadratic): expanding
// it is linear in its output. It runs the chain at 200 and 800 lists and
// reports the time ratio (about 4 when linear, 16 when quadratic).
func BenchmarkExpandChained(b *testing.B) {
	chain := func(n int) string { return "${0..4095}" + strings.Repeat("${[a]}", n) }
	small, large := chain(200), chain(800)
	var ts, tl float64
	for b.Loop() {
		ts += measure(b, small)
		tl += measure(b, large)
	}
	b.ReportMetric(tl/ts, "ratio-4x")
}

// BenchmarkExpandParts is a list of N parts of 100 names each at N = 25
// and 100 (2,500 and 10,000 names): the ratio is about 4 when linear.
func BenchmarkExpandParts(b *testing.B) {
	parts := func(n int) string {
		p := make([]string, n)
		for i := range p {
			p[i] = fmt.Sprintf("ds_%d.t_${0..99}", i)
		}
		return strings.Join(p, ",")
	}
	small, large := parts(25), parts(100)
	var ts, tl float64
	for b.Loop() {
		ts += measure(b, small)
		tl += measure(b, large)
	}
	b.ReportMetric(tl/ts, "ratio-4x")
}

func measure(b *testing.B, expr string) float64 {
	start := time.Now()
	if _, err := Expand(expr, MaxNames); err != nil {
		b.Fatal(err)
	}
	return float64(time.Since(start))
}

// TestPattern: the pattern of an expression matches every name Expand
// gives for it, and not a name with other literal text or another list
// item; for an expression of far too many names it is built all the same.
// errAfter is a context whose Err is nil for its first n calls and
// context.Canceled from then on: a statement killed in the middle of its
// work.
type errAfter struct {
	context.Context
	n int
}

func (c *errAfter) Err() error {
	if c.n > 0 {
		c.n--
		return nil
	}
	return context.Canceled
}

// TestExpandContextStops: a killed statement (its context cancelled) stops
// an expansion within bounds, before the first name or in the middle, and
// gets no names and context.Canceled; a live one gets every name.
func TestExpandContextStops(t *testing.T) {
	const expr = "ds_${0..9}.t_${0..999}" // 10,000 names, within MaxNames
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
	}{
		{"cancelled before", cancelled},
		{"cancelled after the first 4,096 names", &errAfter{Context: context.Background(), n: 2}},
	} {
		names, err := ExpandContext(tc.ctx, expr, MaxNames)
		if !errors.Is(err, context.Canceled) || names != nil {
			t.Errorf("%s: got %d names, %v; want none, context.Canceled", tc.name, len(names), err)
		}
	}
	names, err := ExpandContext(context.Background(), expr, MaxNames)
	if err != nil || len(names) != 10_000 || names[9_999] != "ds_9.t_999" {
		t.Fatalf("live context: got %d names, %v", len(names), err)
	}
}

func TestPattern(t *testing.T) {
	for _, expr := range []string{"ds_${0..3}", "ds_$->{0..1}.t_${['a', 'b']}, other", "u_${[x, 'y']}_${10..12}"} {
		p, err := Pattern(expr)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		names, err := Expand(expr, MaxNames)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if !p.MatchString(n) {
				t.Errorf("%s: pattern %s misses %s", expr, p, n)
			}
		}
		for _, n := range []string{"", "ds_", "dsx0", "ds_0.t_c", "u_z_10", "other2", "xother"} {
			if p.MatchString(n) {
				t.Errorf("%s: pattern %s matches %q", expr, p, n)
			}
		}
	}
	p, err := Pattern("u_${0..999999999}.t_${0..999999999}")
	if err != nil || !p.MatchString("u_7.t_123456") {
		t.Errorf("a pattern of 10^18 names: %v, %v", p, err)
	}
	if _, err := Pattern("ds_${x}"); !errors.Is(err, ErrSyntax) {
		t.Errorf("a pattern of ds_${x}: %v, want ErrSyntax", err)
	}
}
