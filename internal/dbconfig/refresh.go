package dbconfig

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/registry"
)

// Refreshed says what a refresh wrote for one database.
type Refreshed struct {
	Database string
	Written  int // tables and views written as new versions
	Dropped  int // tables and views deleted
}

// Refresh runs [FORCE] REFRESH DATABASE METADATA [db]: it reads the real
// schemas of the storage units of db (every database of snap with units
// when db is ""), then writes to the registry each table and view whose
// registry copy in snap differs (every one with force: the node's
// introspection replaces the registry's copy) and deletes those the
// databases no longer have. Tables and views are matched by their node
// names in layout (paths.Layout.NodeName: lower case up to 5.5.3) and
// written there. introspect nil means datasource.Introspect.
// It returns an *UnknownDatabaseError for an unknown database and 10012 when a unit cannot
// be read; nothing of that database is written then.
func Refresh(ctx context.Context, repo registry.Repository, layout paths.Layout, snap *metadata.Snapshot, db string, force bool, introspect func(context.Context, config.Database) ([]datasource.Schema, error)) ([]Refreshed, error) {
	if introspect == nil {
		introspect = datasource.Introspect
	}
	names := []string{db}
	if db == "" {
		names = nil
		for _, n := range slices.Sorted(maps.Keys(snap.Databases)) {
			if len(snap.Databases[n].Units) > 0 {
				names = append(names, n)
			}
		}
	} else if snap.Databases[db] == nil {
		return nil, noDatabase(db)
	}
	var out []Refreshed
	for _, name := range names {
		d := snap.Databases[name]
		if len(d.Units) == 0 {
			out = append(out, Refreshed{Database: name})
			continue
		}
		schemas, err := introspect(ctx, config.Database{Name: name, DataSources: d.Units})
		if err != nil {
			return out, &sqlerr.Error{Code: 10012, SQLState: "HY000", Message: fmt.Sprintf("Load table meta data failed for database '%s': %v", name, err)}
		}
		r := Refreshed{Database: name}
		var changed []datasource.Schema
		// real holds the introspected schemas with their tables and views
		// keyed by node name, as the snapshot keys them.
		node := layout.NodeName
		real := map[string]datasource.Schema{}
		for _, s := range schemas {
			rs := datasource.Schema{Name: s.Name, Tables: map[string]datasource.Table{}, Views: map[string]datasource.View{}}
			for tn, t := range s.Tables {
				rs.Tables[node(tn)] = t
			}
			for vn, v := range s.Views {
				rs.Views[node(vn)] = v
			}
			real[node(s.Name)] = rs
			cur := d.Schemas[node(s.Name)]
			c := datasource.Schema{Name: s.Name, Tables: map[string]datasource.Table{}, Views: map[string]datasource.View{}}
			for tn, t := range s.Tables {
				if force || cur == nil || !reflect.DeepEqual(cur.Tables[node(tn)], t) {
					c.Tables[tn] = t
				}
			}
			for vn, v := range s.Views {
				if force || cur == nil || !reflect.DeepEqual(cur.Views[node(vn)], v) {
					c.Views[vn] = v
				}
			}
			if len(c.Tables)+len(c.Views) > 0 || cur == nil {
				changed = append(changed, c)
				r.Written += len(c.Tables) + len(c.Views)
			}
		}
		if len(changed) > 0 {
			if err := metadata.PersistSchemas(ctx, repo, layout, name, changed); err != nil {
				return out, err
			}
		}
		for sn, cur := range d.Schemas {
			s, ok := real[sn]
			for tn := range cur.Tables {
				if _, still := s.Tables[tn]; !ok || !still {
					if err := metadata.DropTable(ctx, repo, name, sn, tn); err != nil {
						return out, err
					}
					r.Dropped++
				}
			}
			for vn := range cur.Views {
				if _, still := s.Views[vn]; !ok || !still {
					if err := metadata.DropView(ctx, repo, name, sn, vn); err != nil {
						return out, err
					}
					r.Dropped++
				}
			}
		}
		out = append(out, r)
	}
	return out, nil
}
