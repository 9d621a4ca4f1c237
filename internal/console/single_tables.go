package console

import (
	"context"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/rules"
)

// SHOW DEFAULT SINGLE TABLE STORAGE UNIT and SHOW SINGLE TABLE(S), read
// from the single rule and the units as rules.SingleTables reads them;
// LOAD / UNLOAD SINGLE TABLE and SET DEFAULT SINGLE TABLE STORAGE UNIT run
// through internal/rules (applyRule).

func (e *Engine) showSingleTables(ctx context.Context, s *Session, st *distsql.ShowSingleTables) (*Result, error) {
	db, err := e.database(s, st.Database)
	if err != nil {
		return nil, err
	}
	tables, err := rules.SingleTables(ctx, e.d.Introspect, db)
	if err != nil {
		return nil, err
	}
	return singleTableRows(db, tables, func(t rules.SingleTable) bool {
		return (st.Table == "" || strings.EqualFold(st.Table, t.Table)) && (st.Like == nil || matchLike(*st.Like, t.Table))
	}), nil
}

// singleTableRows are upstream's rows of SHOW [UNLOADED] SINGLE TABLES for
// the tables keep accepts: table_name, storage_unit_name and, for a
// database whose units have schemas, schema_name.
func singleTableRows(db *metadata.Database, tables []rules.SingleTable, keep func(rules.SingleTable) bool) *Result {
	withSchema := false
	for _, u := range db.Units {
		withSchema = rules.HasSchemas(u)
		break
	}
	res := &Result{Columns: textColumns("table_name", "storage_unit_name"), Rows: [][]*string{}}
	if withSchema {
		res.Columns = textColumns("table_name", "storage_unit_name", "schema_name")
	}
	for _, t := range tables {
		if !keep(t) {
			continue
		}
		row := []*string{str(t.Table), str(t.Unit)}
		if withSchema {
			row = append(row, str(t.Schema))
		}
		res.Rows = append(res.Rows, row)
	}
	return res
}

func (e *Engine) showDefaultSingleTableStorageUnit(_ context.Context, s *Session, st *distsql.ShowDefaultSingleTableStorageUnit) (*Result, error) {
	db, err := e.database(s, st.Database)
	if err != nil {
		return nil, err
	}
	unit := rule.Text(db.Rules["single"].Content["defaultDataSource"])
	if unit == "" {
		unit = "RANDOM"
	}
	return &Result{Columns: textColumns("storage_unit_name"), Rows: [][]*string{{str(unit)}}}, nil
}
