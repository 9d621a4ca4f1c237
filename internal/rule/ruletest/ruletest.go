// Package ruletest is the conformance suite every rule family runs (Run),
// in the manner of registrytest: each case's statements are parsed
// (families.Parse), applied on a memory registry through the one change
// path (rules.Apply), written in upstream's form and read back
// (metadata.ReadDatabase), and the rule then answers the family's SHOW,
// units in use and COUNT as the case expects; a refused statement writes
// nothing. No server is needed: a family's suite runs in milliseconds.
package ruletest

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/rule/families"
	"github.com/shardkeeper/shardkeeper/internal/rules"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry/memory"
)

// Case is one scenario of a family's suite, run on a fresh database "db"
// with storage units Units.
type Case struct {
	Name  string
	Units []string
	// Tables are the tables each unit holds, which the family's changes
	// and queries read from the units (rule.Database.Tables); a unit not
	// in it holds none.
	Tables map[string][]string
	// Statements run in order, each must change the rule.
	Statements []string
	// Refused, run after Statements, must each be refused with the code
	// given, writing nothing.
	Refused map[string]int
	// Show is a query of the family; Rows its expected answer.
	Show string
	Rows [][]string
	// Uses is what Family.Units answers for the rule afterwards.
	Uses []rule.Use
	// Count is what Family.Count answers, its rows' counts added up.
	Count int
	// Gone is true when the statements leave no rule of the family.
	Gone bool
}

// Run runs the cases of family f on the memory registry of each layout
// (release) a node writes.
func Run(t *testing.T, f rule.Family, cases []Case) {
	if _, ok := families.ByType(f.Type()); !ok {
		t.Fatalf("family %s is not in families.All", f.Type())
	}
	for _, layout := range []paths.Layout{paths.Layout553, paths.Layout554} {
		for _, c := range cases {
			t.Run(layout.String()+"/"+c.Name, func(t *testing.T) { run(t, f, layout, c) })
		}
	}
}

func run(t *testing.T, f rule.Family, layout paths.Layout, c Case) {
	ctx := testenv.Context(t)
	repo := memory.New()
	units := map[string]config.DataSource{}
	for _, u := range c.Units {
		units[u] = config.NewDataSource("jdbc:mysql://127.0.0.1:3306/"+u, "root", "")
	}
	if err := metadatatest.CreateDatabase(ctx, repo, layout, config.Database{Name: "db", DataSources: units}); err != nil {
		t.Fatal(err)
	}
	introspect := func(_ context.Context, db config.Database) ([]datasource.Schema, error) {
		var out []datasource.Schema
		for u := range db.DataSources {
			s := datasource.Schema{Name: u, Tables: map[string]datasource.Table{}}
			for _, tb := range c.Tables[u] {
				s.Tables[tb] = datasource.Table{Name: tb}
			}
			out = append(out, s)
		}
		return out, nil
	}
	apply := func(q string) (rules.Outcome, error) {
		st, err := families.Parse(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if sc := st.Scope(); sc.Cluster != "" || !sc.Session {
			t.Errorf("%s: scope %+v, want the session's database", q, sc)
		}
		checkChange(t, ctx, repo, layout, introspect, q, st)
		return rules.Apply(ctx, repo, "db", st, rules.Options{Layout: layout, Introspect: introspect})
	}
	for _, q := range c.Statements {
		if out, err := apply(q); err != nil || !out.Changed || out.RuleType != f.Type() {
			t.Fatalf("%s: %+v %v", q, out, err)
		}
	}
	var view rule.Database
	read := func() map[string]any {
		d, _, err := metadata.ReadDatabase(ctx, repo, "db")
		if err != nil {
			t.Fatal(err)
		}
		view = rules.View(d, introspect)
		r, ok := d.Rules[f.Type()]
		if !ok {
			return nil
		}
		return r.Content
	}
	content := read()
	d := view
	checkRefused(t, c.Refused, func(q string) error { _, err := apply(q); return err }, read, content)
	if c.Gone {
		if content != nil {
			t.Errorf("rule left: %v", content)
		}
		return
	}
	if content == nil {
		t.Fatal("no rule written")
	}
	// What the registry holds is upstream's form, which decodes back to it.
	written, err := metadata.RuleAsWritten(layout, config.Rule{Type: f.Type(), Content: content})
	if err != nil {
		t.Fatal(err)
	}
	upstream := config.CloneContent(content)
	if err := f.Upstream(layout, upstream); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(written.Content, upstream) {
		t.Errorf("upstream form:\n got %v\nwant %v", written.Content, upstream)
	}
	if errs, err := f.Check(ctx, families.Database("db", c.Units, map[string]map[string]any{f.Type(): content}), content); err != nil || len(errs) > 0 {
		t.Errorf("the rule a statement wrote fails its check: %v %v", errs, err)
	}
	if c.Show != "" {
		st, err := families.Parse(c.Show)
		if err != nil {
			t.Fatal(err)
		}
		rows, ok, err := f.Show(ctx, st, func() (rule.Database, map[string]any, error) { return d, content, nil })
		if !ok || err != nil {
			t.Fatalf("%s is not a query of %s: %v", c.Show, f.Type(), err)
		}
		if !reflect.DeepEqual(rows.Rows, c.Rows) && (len(rows.Rows) > 0 || len(c.Rows) > 0) {
			t.Errorf("%s:\n got %q\nwant %q", c.Show, rows.Rows, c.Rows)
		}
		for i, r := range rows.Rows {
			if len(r) != len(rows.Columns) {
				t.Errorf("%s: row %d has %d values for %d columns", c.Show, i, len(r), len(rows.Columns))
			}
		}
	}
	if got := f.Units(d, content); !reflect.DeepEqual(got, c.Uses) && (len(got) > 0 || len(c.Uses) > 0) {
		t.Errorf("units: got %v, want %v", got, c.Uses)
	}
	counted, err := f.Count(ctx, d, content)
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for _, row := range counted {
		got += row.Count
	}
	if got != c.Count {
		t.Errorf("count: got %d, want %d", got, c.Count)
	}
}

// checkChange runs the change of statement q (st) on the database as the
// registry holds it the way the change path does, on config.CopyFields of
// the rule, and checks the change path's two promises: the change leaves
// the rules it read as they were (it replaces the entries it changes:
// the path tells them apart by identity), and metadata.RuleChangeWrites,
// which converts and compares only what changed, writes exactly what
// metadata.RuleWritesFrom, which converts the whole rule, writes.
func checkChange(t *testing.T, ctx context.Context, repo *memory.Repo, layout paths.Layout, introspect rules.Introspector, q string, st distsql.Statement) {
	t.Helper()
	f, change := families.Of(st)
	if change == nil {
		return
	}
	d, kvs, err := metadata.ReadDatabase(ctx, repo, "db")
	if err != nil {
		t.Fatal(err)
	}
	before := map[string]map[string]any{}
	for typ, r := range d.Rules {
		before[typ] = config.CloneContent(r.Content)
	}
	old := d.Rules[f.Type()]
	old.Type = f.Type()
	next, err := change(ctx, rules.View(d, introspect), config.CopyFields(old.Content))
	for typ, r := range d.Rules {
		if !reflect.DeepEqual(r.Content, before[typ]) {
			t.Fatalf("%s: the change modified rule %s as read, in place:\n got %v\nwant %v", q, typ, r.Content, before[typ])
		}
	}
	if err != nil {
		return
	}
	nextRule := config.Rule{Type: f.Type(), Content: next}
	if len(next) == 0 {
		nextRule.Content = nil
	}
	conds, ops, err := metadata.RuleChangeWrites(layout, "db", kvs, old, nextRule)
	wantConds, wantOps, wantErr := metadata.RuleWritesFrom(layout, "db", kvs, old, nextRule)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("%s: RuleChangeWrites: %v, RuleWritesFrom: %v", q, err, wantErr)
	}
	if err == nil && (!sameSet(conds, wantConds) || !sameSet(ops, wantOps)) {
		t.Fatalf("%s: RuleChangeWrites wrote\n %v\n %v\nRuleWritesFrom\n %v\n %v", q, conds, ops, wantConds, wantOps)
	}
}

// sameSet reports whether a and b hold the same elements, in any order.
func sameSet[T any](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	used := make([]bool, len(b))
next:
	for _, x := range a {
		for i, y := range b {
			if !used[i] && reflect.DeepEqual(x, y) {
				used[i] = true
				continue next
			}
		}
		return false
	}
	return true
}

// Parses checks that each statement (the map's keys) parses, with read
// as the only family, into the value.
func Parses(t *testing.T, read distsql.Reader, cases map[string]distsql.Statement) {
	t.Helper()
	for sql, want := range cases {
		got, err := distsql.Parse(sql, read)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %#v, %v\nwant %#v", sql, got, err, want)
		}
	}
}

// ParseErrors checks that each statement (the map's keys) is refused,
// with read as the only family, with a message holding the value.
func ParseErrors(t *testing.T, read distsql.Reader, cases map[string]string) {
	t.Helper()
	for sql, want := range cases {
		if _, err := distsql.Parse(sql, read); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", sql, err, want)
		}
	}
}

// GlobalCase is one scenario of a global rule's suite, run on a fresh
// registry.
type GlobalCase struct {
	Name string
	// Statements run in order, each must change the rule.
	Statements []string
	// Refused, run after Statements, must each be refused with the code
	// given, writing nothing.
	Refused map[string]int
	// Show is the rule's query; Rows its expected answer.
	Show string
	Rows [][]string
}

// RunGlobal runs the cases of global rule g on the memory registry: each
// case's statements are parsed (families.Parse), applied through the one
// change path (rules.Apply), read back as the registry holds them
// (metadata.ReadGlobalRules: upstream's form, which g.Upstream keeps as
// it is), and the rule then answers its SHOW as the case expects; a
// refused statement writes nothing.
func RunGlobal(t *testing.T, g rule.Global, cases []GlobalCase) {
	if _, ok := families.GlobalByType(g.Type()); !ok {
		t.Fatalf("global rule %s is not in families.Globals", g.Type())
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) { runGlobal(t, g, c) })
	}
}

func runGlobal(t *testing.T, g rule.Global, c GlobalCase) {
	ctx := testenv.Context(t)
	repo := memory.New()
	apply := func(q string) (rules.Outcome, error) {
		st, err := families.Parse(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if sc := st.Scope(); sc.Cluster == "" || sc.Database != "" {
			t.Errorf("%s: scope %+v, want the cluster's", q, sc)
		}
		return rules.Apply(ctx, repo, "", st, rules.Options{})
	}
	for _, q := range c.Statements {
		if out, err := apply(q); err != nil || !out.Changed || !out.Global || out.RuleType != g.Type() {
			t.Fatalf("%s: %+v %v", q, out, err)
		}
	}
	read := func() map[string]any {
		rs, _, err := metadata.ReadGlobalRules(ctx, repo)
		if err != nil {
			t.Fatal(err)
		}
		r, ok := rs[g.Type()]
		if !ok {
			return nil
		}
		return r.Content
	}
	content := read()
	checkRefused(t, c.Refused, func(q string) error { _, err := apply(q); return err }, read, content)
	if len(c.Statements) > 0 {
		if content == nil {
			t.Fatal("no rule written")
		}
		// What the registry holds is upstream's form already.
		upstream := config.CloneContent(content)
		g.Upstream(upstream)
		if !reflect.DeepEqual(content, upstream) {
			t.Errorf("upstream form:\n got %v\nwant %v", content, upstream)
		}
	}
	if c.Show != "" {
		st, err := families.Parse(c.Show)
		if err != nil {
			t.Fatal(err)
		}
		if sc := st.Scope(); sc != (distsql.Scope{}) {
			t.Errorf("%s: scope %+v, want none", c.Show, sc)
		}
		rows, ok := g.Show(st, content)
		if !ok {
			t.Fatalf("%s is not the query of %s", c.Show, g.Type())
		}
		if !reflect.DeepEqual(rows.Rows, c.Rows) {
			t.Errorf("%s:\n got %q\nwant %q", c.Show, rows.Rows, c.Rows)
		}
		for i, r := range rows.Rows {
			if len(r) != len(rows.Columns) {
				t.Errorf("%s: row %d has %d values for %d columns", c.Show, i, len(r), len(rows.Columns))
			}
		}
	}
}

// checkRefused runs each statement of refused with apply and checks that
// it is refused with the code given and that the rule read returns is
// still content.
func checkRefused(t *testing.T, refused map[string]int, apply func(q string) error, read func() map[string]any, content map[string]any) {
	t.Helper()
	for q, code := range refused {
		err := apply(q)
		var se *sqlerr.Error
		if !errors.As(err, &se) || int(se.Code) != code {
			t.Errorf("%s: %v, want code %d", q, err, code)
		}
		if after := read(); !reflect.DeepEqual(after, content) {
			t.Errorf("%s: refused, but the rule changed:\n%v\nto\n%v", q, content, after)
		}
	}
}
