package console

import (
	"context"
	"errors"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"slices"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/catalog"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
)

// The catalog (internal/catalog) answers the catalog queries of the tools
// people bring: MySQL's information_schema and SHOW ENGINES and the like,
// PostgreSQL's pg_catalog queries of psql's meta-commands. The engine
// hands it a view of what the session may see: its permitted databases
// with their logic tables (logicTables) and the session's variables.

// catalogQuery answers q from the catalog when it is a catalog query of
// s's protocol; ok is false for any other statement.
func (e *Engine) catalogQuery(s *Session, q string) (res *Result, ok bool, err error) {
	if postgres(s) {
		if !catalog.IsPostgreSQL(q) {
			return nil, false, nil
		}
		r, err := catalog.AnswerPostgreSQL(e.catalogView(s), q)
		return fromCatalog(r, err)
	}
	if !catalog.IsMySQL(q) {
		return nil, false, nil
	}
	r, err := catalog.AnswerMySQL(e.catalogView(s), q, e.variableRows(s))
	return fromCatalog(r, err)
}

// catalogSelect answers a SELECT the DistSQL parser could not read (one
// with arithmetic, or FROM a relation other than DUAL) with the catalog's
// evaluator; ok is false when the evaluator cannot read it either, and the
// parser's error stands.
func (e *Engine) catalogSelect(s *Session, q string) (*Result, bool, error) {
	if w := strings.Fields(strings.TrimSpace(q)); len(w) == 0 || !strings.EqualFold(w[0], "SELECT") {
		return nil, false, nil
	}
	var (
		r   *catalog.Result
		err error
	)
	if postgres(s) {
		r, err = catalog.AnswerPostgreSQL(e.catalogView(s), q)
	} else {
		r, err = catalog.AnswerMySQL(e.catalogView(s), q, e.variableRows(s))
	}
	var ce *sqlerr.Error
	if errors.As(err, &ce) && (ce.Code == 1235) {
		return nil, false, nil // not read: the parser's error is clearer
	}
	return fromCatalog(r, err)
}

func fromCatalog(r *catalog.Result, err error) (*Result, bool, error) {
	if err != nil {
		return nil, true, err
	}
	res := &Result{Rows: r.Rows}
	for _, c := range r.Columns {
		typ := Text
		if c.Type == catalog.Int {
			typ = Int64
		}
		res.Columns = append(res.Columns, Column{Name: c.Name, Type: typ})
	}
	return res, true, nil
}

// catalogView is what s may see: its permitted databases with their logic
// tables, at most catalog.MaxTables tables in all.
func (e *Engine) catalogView(s *Session) *catalog.View {
	snap := e.d.Metadata.Current()
	g := e.grant(s)
	v := &catalog.View{Current: s.Database, User: s.User, Host: s.Host, Protocol: s.Protocol,
		Variable: func(name string) (string, bool) { return variable(s, name) }}
	total := 0
	for _, name := range e.databases() {
		if !g.permits(name) {
			continue
		}
		d := catalog.Database{Name: name}
		if total < catalog.MaxTables {
			d.Tables = logicTables(snap.Databases[name])
			if total+len(d.Tables) > catalog.MaxTables {
				d.Tables = d.Tables[:catalog.MaxTables-total]
			}
			total += len(d.Tables)
		}
		v.Databases = append(v.Databases, d)
	}
	if g.users != nil {
		for _, u := range g.users.List() {
			if !slices.Contains(v.Users, u.Name) {
				v.Users = append(v.Users, u.Name)
			}
		}
		slices.Sort(v.Users)
	}
	return v
}

// variableRows are s's SHOW VARIABLES rows.
func (e *Engine) variableRows(s *Session) [][2]string {
	res, _ := e.showVariables(context.Background(), s, &distsql.ShowVariables{})
	out := make([][2]string, 0, len(res.Rows))
	for _, r := range res.Rows {
		out = append(out, [2]string{*r[0], *r[1]})
	}
	return out
}
