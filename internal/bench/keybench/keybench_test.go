package main

import (
	"strings"
	"testing"
	"time"
)

func TestFormatAndMedian(t *testing.T) {
	for _, c := range []struct {
		v    float64
		unit string
		want string
	}{
		{4096000, "keys/s", "4,096,000"},
		{999, "req/s", "999"},
		{1000, "req/s", "1,000"},
		{0.3514, "p99 ms", "0.351"},
	} {
		if got := format(c.v, c.unit); got != c.want {
			t.Errorf("format(%v, %s) = %s, want %s", c.v, c.unit, got, c.want)
		}
	}
	r := &row{}
	for _, v := range []float64{3, 1, 2} {
		r.add(v, "")
	}
	if r.median() != 2 {
		t.Fatalf("median = %v", r.median())
	}
	r.add(10, "")
	if r.median() != 2.5 {
		t.Fatalf("median of 4 = %v", r.median())
	}
	if got := pgArgs("host=127.0.0.1 port=5432 dbname=test"); got != "-h 127.0.0.1 -p 5432 test" {
		t.Fatalf("pgArgs = %q", got)
	}
}

func TestPrintTable(t *testing.T) {
	var b strings.Builder
	a := &row{name: "a", unit: "req/s"}
	a.add(1000, "")
	a.add(3000, "")
	printTable(&b, []*row{a})
	want := "| measurement | unit | round 1 | round 2 | median |"
	if !strings.Contains(b.String(), want) || !strings.Contains(b.String(), "| a | req/s | 1,000 | 3,000 | 2,000 |") {
		t.Fatalf("table:\n%s", b.String())
	}
}

// TestOpenLoopString keeps the figures the README quotes in the summary.
func TestOpenLoopString(t *testing.T) {
	l := latency{Rate: 1000, Achieved: 999, P99: 0.5, P99Sent: 0.2, MaxLag: time.Millisecond.Seconds()}
	if s := l.String(); !strings.Contains(s, "p99 0.500") || !strings.Contains(s, "p99 from the actual send 0.200 ms") {
		t.Fatalf("String() = %s", s)
	}
}
