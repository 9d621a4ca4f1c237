package httpapi

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/dbconfig"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/redact"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

// dbSummary is one row of GET /api/v1/databases.
type dbSummary struct {
	Name    string `json:"name"`
	Units   int    `json:"units"`
	Tables  int    `json:"tables"`
	Version uint64 `json:"version"` // the metadata snapshot sequence of its last change on this node
	// Incomplete, when set, says that an import left the database
	// half-written (or is writing it now) and how to drop and finish it.
	Incomplete string `json:"incomplete,omitempty"`
}

// summaries lists snap's databases, those an import left half-written
// marked (dbconfig.ImportMark; marks that cannot be read are ignored).
func (s *Server) summaries(ctx context.Context, snap *metadata.Snapshot) []dbSummary {
	out := make([]dbSummary, 0, len(snap.Databases))
	var marks map[string]dbconfig.ImportMark
	if s.cfg.Repo != nil {
		mctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		marks, _ = dbconfig.IncompleteImports(mctx, s.cfg.Repo, func(db string) bool { return snap.Databases[db] != nil })
		cancel()
	}
	for _, name := range slices.Sorted(maps.Keys(snap.Databases)) {
		db := snap.Databases[name]
		n := 0
		for _, sc := range db.Schemas {
			n += len(sc.Tables)
		}
		var v uint64
		if x, ok := s.dbVers.Load(name); ok {
			v = x.(uint64)
		}
		sum := dbSummary{Name: name, Units: len(db.Units), Tables: n, Version: v}
		if m, ok := marks[name]; ok {
			sum.Incomplete = m.Advice()
		}
		out = append(out, sum)
	}
	return out
}

func (s *Server) handleDatabases(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, struct {
		Databases []dbSummary `json:"databases"`
	}{s.summaries(r.Context(), s.cfg.Store.Current())})
}

type ruleJSON struct {
	Type    string         `json:"type"`
	Content map[string]any `json:"content"`
}

type columnJSON struct {
	Name       string `json:"name"`
	DataType   int    `json:"dataType"`
	TypeName   string `json:"typeName,omitempty"`
	PrimaryKey bool   `json:"primaryKey"`
	Nullable   bool   `json:"nullable"`
	Generated  bool   `json:"generated"`
	Unsigned   bool   `json:"unsigned"`
}

type indexJSON struct {
	Name    string   `json:"name"`
	Columns []string `json:"columns"`
	Unique  bool     `json:"unique"`
}

type tableJSON struct {
	Name    string       `json:"name"`
	Columns []columnJSON `json:"columns"`
	Indexes []indexJSON  `json:"indexes"`
}

type viewJSON struct {
	Name       string `json:"name"`
	Definition string `json:"definition"`
}

type schemaJSON struct {
	Tables []tableJSON `json:"tables"`
	Views  []viewJSON  `json:"views"`
}

type databaseJSON struct {
	Name    string                    `json:"name"`
	Version uint64                    `json:"version"`
	Units   map[string]map[string]any `json:"units"`
	Rules   []ruleJSON                `json:"rules"`
	Schemas map[string]schemaJSON     `json:"schemas"`
}

// unitJSON is a storage unit's properties with its secrets masked: the
// password, the secrets of its URL and of its custom pool props.
func unitJSON(ds config.DataSource) map[string]any {
	return redact.Map(ds.Map())
}

func (s *Server) handleDatabase(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("db")
	snap := s.cfg.Store.Current()
	db := snap.Databases[name]
	if db == nil {
		s.writeError(w, refuse(sqlerr.NotFound, "Unknown database '%s'.", name))
		return
	}
	out := databaseJSON{Name: db.Name, Units: map[string]map[string]any{}, Rules: []ruleJSON{}, Schemas: map[string]schemaJSON{}}
	if x, ok := s.dbVers.Load(name); ok {
		out.Version = x.(uint64)
	}
	for n, ds := range db.Units {
		out.Units[n] = unitJSON(ds)
	}
	for _, typ := range slices.Sorted(maps.Keys(db.Rules)) {
		out.Rules = append(out.Rules, ruleJSON{Type: typ, Content: redact.Map(jsonable(db.Rules[typ].Content))})
	}
	for sn, sc := range db.Schemas {
		sj := schemaJSON{Tables: []tableJSON{}, Views: []viewJSON{}}
		for _, tn := range slices.Sorted(maps.Keys(sc.Tables)) {
			t := sc.Tables[tn]
			tj := tableJSON{Name: t.Name, Columns: []columnJSON{}, Indexes: []indexJSON{}}
			for _, c := range t.Columns {
				tj.Columns = append(tj.Columns, columnJSON{c.Name, c.DataType, c.TypeName, c.PrimaryKey, c.Nullable, c.Generated, c.Unsigned})
			}
			for _, ix := range t.Indexes {
				tj.Indexes = append(tj.Indexes, indexJSON{ix.Name, ix.Columns, ix.Unique})
			}
			sj.Tables = append(sj.Tables, tj)
		}
		for _, vn := range slices.Sorted(maps.Keys(sc.Views)) {
			sj.Views = append(sj.Views, viewJSON{vn, sc.Views[vn].Definition})
		}
		out.Schemas[sn] = sj
	}
	s.writeJSON(w, out)
}

// jsonable turns YAML-decoded values (which may hold map[any]any) into
// values encoding/json accepts.
func jsonable[T any](v T) T {
	out, _ := convert(any(v)).(T)
	return out
}

func convert(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = convert(e)
		}
		return m
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[strings.TrimSpace(toString(k))] = convert(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = convert(e)
		}
		return l
	}
	return v
}

func toString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}
