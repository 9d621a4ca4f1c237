package rules

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/dbconfig"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

// Introspector reads the real schemas of database db's units.
type Introspector func(ctx context.Context, db config.Database) ([]datasource.Schema, error)

// View is database d as the rule families' changes, queries and counts
// read it (rule.Database): d.RuleView with the rules that name each data
// source (InUse, dbconfig.UnitsInUse) and the units' tables, read from
// the units through introspect (nil means datasource.Introspect, which
// connects to the units from this process).
func View(d *metadata.Database, introspect Introspector) rule.Database {
	if introspect == nil {
		introspect = datasource.Introspect
	}
	view := d.RuleView()
	view.InUse = func() map[string][]string { return dbconfig.UnitsInUse(d, false, true) }
	view.Tables = func(ctx context.Context, units []string) (map[string][]string, error) {
		return unitTables(ctx, introspect, d, units)
	}
	for _, u := range d.Units {
		view.Schemas = view.Schemas || HasSchemas(u)
	}
	return view
}

// unitTables returns the tables of each of units, storage units of d,
// read from the unit (introspect on a database of that one unit), as
// "table" or, for a database with schemas (PostgreSQL), "schema.table". A
// unit it cannot read is upstream's 10502.
func unitTables(ctx context.Context, introspect Introspector, d *metadata.Database, units []string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, u := range units {
		schemas, err := introspect(ctx, config.Database{Name: d.Name, DataSources: map[string]config.DataSource{u: d.Units[u]}})
		if err != nil {
			return nil, &sqlerr.Error{Code: 10502, SQLState: "HY000", Message: fmt.Sprintf("Can not load table with database name '%s' and data source name '%s', reason is: %v", d.Name, u, err)}
		}
		withSchema := HasSchemas(d.Units[u])
		for _, s := range schemas {
			for t := range s.Tables {
				if withSchema {
					t = s.Name + "." + t
				}
				out[u] = append(out[u], t)
			}
		}
		slices.Sort(out[u])
	}
	return out, nil
}

// HasSchemas reports whether a unit's database type has schemas, for
// which upstream shows a single table's schema_name.
func HasSchemas(ds config.DataSource) bool {
	return strings.HasPrefix(ds.URL, "jdbc:postgresql:") || strings.HasPrefix(ds.URL, "jdbc:opengauss:")
}
