package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/dbconfig"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/distvar"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/rule/families"
	"github.com/shardkeeper/shardkeeper/internal/rules"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

// ruleChange is the answer to a rule statement: whether it changed the
// rule, which nodes confirmed applying it (rules.Outcome), with the
// console's warnings. Database is absent for a global rule.
type ruleChange struct {
	Database        string   `json:"database,omitempty"`
	Rule            string   `json:"rule"`
	Global          bool     `json:"global,omitempty"`
	Changed         bool     `json:"changed"`
	Applied         []string `json:"applied"`
	Pending         []string `json:"pending"`
	Unacknowledging []string `json:"unacknowledging"`
	Warnings        []string `json:"warnings,omitempty"`
}

// handleRuleStatement runs {"statement": "CREATE SHARDING TABLE RULE ..."}
// on database {db} through rules.Apply, as the consoles and the CLI run
// it: the same checks and codes (a refusal is 400 with upstream's code),
// one registry transaction, and the answer comes once every online
// shardkeeper node confirmed applying the new rules, or after
// distvar.DefaultTimeout with the nodes that did not in pending. A
// statement that rules.Apply does not run (rules.Statements()) is 400, and
// so is a global rule statement (handleGlobalRuleStatement's route).
func (s *Server) handleRuleStatement(w http.ResponseWriter, r *http.Request) {
	s.runRuleStatement(w, r, r.PathValue("db"))
}

// handleGlobalRuleStatement runs {"statement": "ALTER TRANSACTION RULE
// ..."}, a global rule statement (rules.IsGlobal), as handleRuleStatement
// runs a database's; any other statement is 400.
func (s *Server) handleGlobalRuleStatement(w http.ResponseWriter, r *http.Request) {
	s.runRuleStatement(w, r, "")
}

// runRuleStatement runs the request's rule statement on database db, or,
// with db "", a global rule statement.
func (s *Server) runRuleStatement(w http.ResponseWriter, r *http.Request, db string) {
	global := db == ""
	body, perr := readBody(w, r)
	if perr != nil {
		s.writeError(w, perr)
		return
	}
	want := `{"statement":"CREATE SHARDING TABLE RULE ..."}`
	if global {
		want = `{"statement":"ALTER TRANSACTION RULE ..."}`
	}
	var v struct {
		Statement *string `json:"statement"`
	}
	if err := decodeObject(body, &v, want); err != nil {
		s.writeError(w, err)
		return
	}
	if v.Statement == nil {
		s.writeError(w, badRequest("missing field statement: want %s", want))
		return
	}
	st, err := families.Parse(*v.Statement)
	if err != nil {
		err = distsql.Coded(err, *v.Statement)
		s.writeError(w, err)
		return
	}
	switch {
	case !rules.Is(st):
		s.writeError(w, badRequest("not a rule statement: the rule endpoints run %s; database rules on POST /api/v1/databases/{db}/rules, global rules on POST /api/v1/rules", rules.Statements()))
		return
	case global && !rules.IsGlobal(st):
		s.writeError(w, badRequest("a database rule statement: run it with POST /api/v1/databases/{db}/rules"))
		return
	case !global && rules.IsGlobal(st):
		s.writeError(w, badRequest("a global rule statement: run it with POST /api/v1/rules"))
		return
	}
	if named := st.Scope().Database; named != "" && named != db {
		s.writeError(w, badRequest("the statement names database %s: run it with POST /api/v1/databases/%s/rules", named, named))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), distvar.DefaultTimeout+10*time.Second)
	defer cancel()
	opts := rules.Options{Layout: s.layout()}
	if s.cfg.Node != nil {
		opts.Session = s.cfg.Node.Session()
	}
	out, err := rules.Apply(ctx, s.cfg.Repo, db, st, opts)
	s.awaitRules(ctx, db, out)
	var unknown *dbconfig.UnknownDatabaseError
	switch {
	case errors.As(err, &unknown):
		s.writeError(w, refuse(sqlerr.NotFound, "Unknown database '%s'.", db))
		return
	case err != nil:
		s.writeError(w, err)
		return
	}
	s.log.Info("rule changed", "database", db, "rule", out.RuleType, "global", out.Global, "changed", out.Changed, "pending", out.Pending)
	s.writeJSON(w, ruleChange{Database: db, Rule: out.RuleType, Global: out.Global, Changed: out.Changed, Applied: out.Applied, Pending: out.Pending,
		Unacknowledging: out.Unacknowledging, Warnings: out.Warnings(db)})
}

// awaitRules waits (at most 3 s) until this node's view holds the rules a
// change wrote, or those a refusal or a no-op was decided on (out.Digest),
// as the consoles do: the answer then agrees with what the node shows
// next (GET /api/v1/databases, its consoles' SHOW), even when the node
// sees the registry's changes late and another node changed the rule just
// before.
func (s *Server) awaitRules(ctx context.Context, db string, out rules.Outcome) {
	if !out.HasDigest {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, _ = s.cfg.Store.Wait(wctx, func(snap *metadata.Snapshot) bool {
		if out.Global {
			return metadata.GlobalRulesDigest(snap.GlobalRules) == out.Digest
		}
		return snap.Databases[db].RulesDigest() == out.Digest
	})
}
