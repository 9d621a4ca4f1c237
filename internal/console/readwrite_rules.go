package console

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/rule/families"
	"github.com/shardkeeper/shardkeeper/internal/rules"
)

// SHOW STATUS FROM READWRITE_SPLITTING RULE(S), COUNT type RULE and SHOW
// RULES USED STORAGE UNIT, as ShardingSphere's executors answer them; the
// readwrite-splitting rule's own statements are its family's
// (internal/rule/readwrite).

// showReadwriteSplittingStatus lists each read storage unit of each group
// with its state (name, storage_unit, status): ENABLED, or DISABLED where
// /nodes/qualified_data_sources says so, as upstream's executor shows them.
func (e *Engine) showReadwriteSplittingStatus(_ context.Context, s *Session, st *distsql.ShowReadwriteSplittingStatus) (*Result, error) {
	db, err := e.database(s, st.Database)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: textColumns("name", "storage_unit", "status"), Rows: [][]*string{}}
	r, ok := db.Rules["readwrite_splitting"]
	if !ok {
		return res, nil
	}
	states := e.d.Metadata.Current().DataSourceStates
	groups := rules.ReadwriteGroups(r.Content)
	for _, name := range sortedKeys(groups) {
		if st.Name != "" && !strings.EqualFold(st.Name, name) {
			continue
		}
		for _, u := range rule.List(rule.Map(groups[name])["readDataSourceNames"]) {
			status := metadata.StateEnabled
			if states[metadata.QualifiedDataSource{Database: db.Name, Group: name, Unit: u}] == metadata.StateDisabled {
				status = metadata.StateDisabled
			}
			res.Rows = append(res.Rows, []*string{str(name), str(u), str(status)})
		}
	}
	return res, nil
}

var rulesUsedColumns = textColumns("type", "name")

// showRulesUsedStorageUnit lists the rules that use a unit: readwrite-
// splitting groups that read or write it, sharding tables whose data nodes
// are on it (as the usage count has them),
// single tables loaded from it, shadow data sources, in upstream's order
// of rule types.
func (e *Engine) showRulesUsedStorageUnit(ctx context.Context, s *Session, st *distsql.ShowRulesUsedStorageUnit) (*Result, error) {
	db, err := e.database(s, st.Database)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: rulesUsedColumns, Rows: [][]*string{}}
	if _, ok := db.Units[st.Unit]; !ok {
		return nil, unitsMissing(db.Name, st.Unit)
	}
	add := func(typ, name string) { res.Rows = append(res.Rows, []*string{str(typ), str(name)}) }
	view := db.RuleView()
	for _, f := range families.All { // upstream's order: sharding first, single last
		r, ok := db.Rules[f.Type()]
		if !ok {
			continue
		}
		if err := ctx.Err(); err != nil { // KILL, or the client gone
			return nil, err
		}
		for _, u := range f.Units(view, r.Content) {
			if u.Item != "" && slices.Contains(u.Units, st.Unit) {
				add(f.Type(), u.Item)
			}
		}
	}
	return res, nil
}

// countRule answers COUNT type RULE: one row per kind of item of the rule
// as upstream's CountRuleExecutor counts them (the family's Count):
// sharding tables and table references, readwrite-splitting groups,
// single tables, encrypt and mask tables, shadow data sources; none when
// the database has no such rule, but for the single rule, which upstream
// always builds. A type no family has is refused.
func (e *Engine) countRule(ctx context.Context, s *Session, st *distsql.CountRule) (*Result, error) {
	db, err := e.database(s, st.Database)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: countColumns, Rows: [][]*string{}}
	add := func(name string, n int) {
		res.Rows = append(res.Rows, []*string{str(name), str(db.Name), str(fmt.Sprint(n))})
	}
	f, ok := families.ByType(st.Type)
	if !ok {
		return nil, unsupported("COUNT " + strings.ToUpper(st.Type) + " RULE")
	}
	rows, err := f.Count(ctx, rules.View(db, e.d.Introspect), db.Rules[st.Type].Content)
	if err != nil {
		return nil, err
	}
	for _, row := range rows {
		add(row.Rule, row.Count)
	}
	return res, nil
}
