package rules

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/rule/families"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry/memory"
)

// maskStatement is CREATE MASK RULE table with one KEEP_FIRST_N_LAST_M
// column whose algorithm has n props besides its own three.
func maskStatement(table string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE MASK RULE %s (COLUMNS((NAME=phone, TYPE(NAME='KEEP_FIRST_N_LAST_M', PROPERTIES('first-n'=3, 'last-m'=4, 'replace-char'='*'", table)
	for i := range n {
		fmt.Fprintf(&b, ", 'extra-%d'='value-%d'", i, i)
	}
	b.WriteString(")))))")
	return b.String()
}

// TestHostileMaskProps: an algorithm of more props than
// rule.MaxAlgorithmProps (the 249 KB statement of 20,000 props that
// cost seconds on every node) is refused with 10200 naming the bound and
// writes nothing; one at the bound is written.
func TestHostileMaskProps(t *testing.T) {
	repo := memory.New()
	apply, content := oneUnitDatabase(t, repo, "mask")
	st, err := families.Parse(maskStatement("t_big", 20000))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Apply(testenv.Context(t), repo, "db", st, Options{})
	var se *sqlerr.Error
	if !errors.As(err, &se) || se.Code != 10200 || !strings.Contains(se.Message, "more than the 1000 one algorithm may have") {
		t.Fatalf("20,000 props: %v, want 10200 naming the bound", err)
	}
	if c := content(); c != nil {
		t.Errorf("a refused statement wrote %v", c)
	}
	apply(maskStatement("t_ok", 1000-3))
	if n := len(rule.Map(rule.Map(rule.Map(content()["maskAlgorithms"])["t_ok_phone_keep_first_n_last_m"])["props"])); n != 1000 {
		t.Errorf("at the bound: %d props written", n)
	}
}

// BenchmarkMaskProps runs CREATE MASK RULE (parse, checks, YAML, registry
// writes, the digest's decode) with algorithms of 250 and of 1,000 props
// and reports the time ratio: about 4 when the path is linear, 16 when
// quadratic.
func BenchmarkMaskProps(b *testing.B) {
	var ts, tl time.Duration
	for i := 0; b.Loop(); i++ {
		for _, n := range []int{250, 1000 - 3} {
			apply, _ := oneUnitDatabase(b, memory.New(), "mask")
			q := maskStatement(fmt.Sprintf("t_%d", i), n)
			start := time.Now()
			apply(q)
			if n == 250 {
				ts += time.Since(start)
			} else {
				tl += time.Since(start)
			}
		}
	}
	b.ReportMetric(float64(tl)/float64(ts), "ratio-4x")
}

// TestHostilePropsEveryStatement: the props bound holds for every
// statement that takes props, not only the mask algorithms': a
// readwrite-splitting load balancer, a sharding algorithm, a key
// generator and a global rule (ALTER TRANSACTION RULE) of 1,001 props are
// refused with 10200 naming the bound, and nothing is written.
func TestHostilePropsEveryStatement(t *testing.T) {
	many := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "'p%d'='v'", i)
		}
		return b.String()
	}(1001)
	repo := memory.New()
	oneUnitDatabase(t, repo, "sharding")
	ctx := testenv.Context(t)
	before, err := repo.List(ctx, "/")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ db, q string }{
		{"db", "CREATE READWRITE_SPLITTING RULE rw (WRITE_STORAGE_UNIT=ds_0, READ_STORAGE_UNITS(ds_0), TYPE(NAME='random', PROPERTIES(" + many + ")))"},
		{"db", "CREATE SHARDING TABLE RULE t (STORAGE_UNITS(ds_0), SHARDING_COLUMN=id, TYPE(NAME='mod', PROPERTIES('sharding-count'='2', " + many + ")))"},
		{"db", "CREATE SHARDING TABLE RULE t (DATANODES('ds_0.t'), KEY_GENERATE_STRATEGY(COLUMN=id, TYPE(NAME='snowflake', PROPERTIES(" + many + "))))"},
		{"", "ALTER TRANSACTION RULE (DEFAULT='XA', TYPE(NAME='Narayana', PROPERTIES(" + many + ")))"},
	} {
		st, err := families.Parse(tc.q)
		if err != nil {
			t.Fatalf("%.60s: %v", tc.q, err)
		}
		_, err = Apply(ctx, repo, tc.db, st, Options{})
		var se *sqlerr.Error
		if !errors.As(err, &se) || se.Code != 10200 || !strings.Contains(se.Message, "more than the 1000 one algorithm may have") {
			t.Errorf("%.60s...: %.300v, want 10200 naming the bound", tc.q, err)
		}
	}
	after, err := repo.List(ctx, "/")
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("refused statements wrote: %d keys before, %d after", len(before), len(after))
	}
}
