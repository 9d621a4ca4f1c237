package console

import (
	"context"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/distsql"
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
	// upstream adds schema_name for a database type with schemas.
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
		if st.Table != "" && !strings.EqualFold(st.Table, t.Table) {
			continue
		}
		if st.Like != nil && !matchLike(*st.Like, t.Table) {
			continue
		}
		row := []*string{str(t.Table), str(t.Unit)}
		if withSchema {
			row = append(row, str(t.Schema))
		}
		res.Rows = append(res.Rows, row)
	}
	return res, nil
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
