package rules

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/dbconfig"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule/families"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry/memory"
)

// TestStoredRuleOverTheBounds is a sharding rule another node wrote (an
// upstream node, which has no bound) whose data nodes stand for more
// names than one rule may (110,000) and one table's for more than one
// expression may: the units it names are in use all the same, counted
// from the data source parts without expanding them (u_7 only through
// u_${0..20000}); a statement on another rule of the database works; a
// sharding statement that adds names to it is refused with 10200 naming
// the bound, and DROPs that shrink it are not.
func TestStoredRuleOverTheBounds(t *testing.T) {
	ctx := testenv.Context(t)
	repo := memory.New()
	tables := map[string]any{"big": map[string]any{"actualDataNodes": "u_${0..20000}.t"}}
	for i := range 11 {
		tables[fmt.Sprintf("t%d", i)] = map[string]any{"actualDataNodes": "ds_${0..1}.t_${0..4999}"}
	}
	units := map[string]config.DataSource{}
	for _, u := range []string{"ds_0", "ds_1", "u_7", "spare"} {
		units[u] = config.NewDataSource("jdbc:mysql://127.0.0.1:3306/"+u, "root", "")
	}
	if err := metadatatest.CreateDatabase(ctx, repo, paths.DefaultLayout, config.Database{Name: "db", DataSources: units,
		Rules: []config.Rule{{Type: "sharding", Content: map[string]any{"tables": tables}}}}); err != nil {
		t.Fatal(err)
	}
	d, _, err := metadata.ReadDatabase(ctx, repo, "db")
	if err != nil {
		t.Fatal(err)
	}
	inUse := dbconfig.UnitsInUse(d, false, false)
	for _, u := range []string{"ds_0", "ds_1", "u_7"} {
		if !slices.Contains(inUse[u], "ShardingRule") {
			t.Errorf("unit %s is not in use by the rule that names it: %v", u, inUse)
		}
	}
	if len(inUse["spare"]) > 0 {
		t.Errorf("unit spare, which no rule names, is in use: %v", inUse["spare"])
	}

	apply := func(q string) error {
		st, err := families.Parse(q)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Apply(ctx, repo, "db", st, Options{})
		return err
	}
	if err := apply("CREATE MASK RULE t_user (COLUMNS((NAME=phone, TYPE(NAME='MD5'))))"); err != nil {
		t.Errorf("a mask rule next to the over-bound sharding rule: %v", err)
	}
	err = apply("CREATE SHARDING TABLE RULE t_new (DATANODES('ds_0.t_new'))")
	var se *sqlerr.Error
	if !errors.As(err, &se) || se.Code != 10200 || !strings.Contains(se.Message, "more than 100000 names, the most one rule may") {
		t.Errorf("a sharding statement that adds to the over-bound rule: %v, want 10200 naming the bound", err)
	}
	// A change that adds no names may shrink it.
	if err := apply("DROP SHARDING TABLE RULE big"); err != nil {
		t.Fatalf("DROP of the table beyond the bound: %v", err)
	}
	if err := apply("DROP SHARDING TABLE RULE t0, t1"); err != nil {
		t.Fatalf("DROP of tables of the rule still beyond the bound: %v", err)
	}
	if err := apply("CREATE SHARDING TABLE RULE t_new (DATANODES('ds_0.t_new'))"); err != nil {
		t.Errorf("a sharding statement once the rule is within the bound: %v", err)
	}
	d, _, err = metadata.ReadDatabase(ctx, repo, "db")
	if err != nil {
		t.Fatal(err)
	}
	if inUse := dbconfig.UnitsInUse(d, false, false); len(inUse["u_7"]) > 0 || !slices.Contains(inUse["ds_0"], "ShardingRule") {
		t.Errorf("after the DROP: units in use %v", inUse)
	}
}
