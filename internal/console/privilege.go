package console

import (
	"context"
	"fmt"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"net/netip"
	"strconv"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/authority"
	"github.com/shardkeeper/shardkeeper/internal/distsql"
	"github.com/shardkeeper/shardkeeper/internal/process"
)

// The privilege model (docs/security.md). The user of a session is looked
// up in the authority rule of the node's current metadata at each
// statement that needs it, so a changed rule applies to the next
// statement of every open session:
//
//   - cluster-wide statements, those whose effect is not confined to one
//     database (distsql.Scope's Cluster: LOCK / UNLOCK CLUSTER, ALTER of a
//     global rule, SET DIST VARIABLE, compute node ENABLE / DISABLE /
//     LABEL / UNLABEL, REFRESH of every database, IMPORT, EXPORT METADATA,
//     anything TO FILE or FROM FILE) need `admin: true`;
//   - a database named by a statement (FROM db, USE db, the session's
//     database) must be permitted by the rule's privilege
//     (DATABASE_PERMITTED); SHOW DATABASES lists only those;
//   - SHOW PROCESSLIST shows a non-admin only its own sessions, and KILL
//     ends only its own;
//   - SHOW of a global rule masks its secrets (redact) to a non-admin;
//   - a non-admin's REGISTER or ALTER STORAGE UNIT that cannot connect
//     learns nothing of why, and no sooner than the unit's connection
//     timeout (pingFor);
//   - with no users configured (loopback-only mode), every session is an
//     admin.

// grant is what one session may do.
type grant struct {
	admin bool
	users *authority.Users // nil when every database is permitted
	user  authority.User
	known bool // user is configured
}

// grant resolves session s's user in the current authority rule. A rule
// that cannot be read grants nothing (the front ends refuse new logins
// then too).
func (e *Engine) grant(s *Session) grant {
	r, ok := e.d.Metadata.Current().GlobalRules[authority.RuleType]
	if !ok {
		return grant{admin: true}
	}
	users, err := authority.FromRules(r)
	if err != nil {
		return grant{users: &authority.Users{}}
	}
	if users.Empty() {
		return grant{admin: true}
	}
	addr, _ := netip.ParseAddr(s.Host)
	u, known := users.Lookup(s.User, addr)
	return grant{admin: known && u.Admin, users: users, user: u, known: known}
}

// permits reports whether g may use database db.
func (g grant) permits(db string) bool {
	return g.admin || g.users == nil || g.known && g.users.Permits(g.user, db)
}

// accessDenied is upstream's AccessDeniedException as its DistSQL
// authority check raises it (MySQL's 1045), saying what needs an admin.
// Over PostgreSQL the state is insufficient_privilege (42501).
func accessDenied(s *Session, what string) *sqlerr.Error {
	state := "28000"
	if s.Protocol == "PostgreSQL" {
		state = "42501"
	}
	return &sqlerr.Error{Code: 1045, SQLState: state, Message: fmt.Sprintf(
		"Access denied for user '%s'@'%s' (using password: YES): %s needs an admin user (admin: true in the authority rule)", s.User, s.Host, what)}
}

// databaseDenied is MySQL's ER_DBACCESS_DENIED_ERROR (1044): db is not
// among the databases the authority rule's privilege permits the user.
func databaseDenied(s *Session, db string) *sqlerr.Error {
	state := "42000"
	if s.Protocol == "PostgreSQL" {
		state = "42501"
	}
	return &sqlerr.Error{Code: 1044, SQLState: state, Message: fmt.Sprintf("Access denied for user '%s'@'%s' to database '%s'", s.User, s.Host, db)}
}

// notOwner is MySQL's ER_KILL_DENIED_ERROR (1095): KILL of another
// user's session without admin.
func notOwner(s *Session, id string) *sqlerr.Error {
	state := "HY000"
	if s.Protocol == "PostgreSQL" {
		state = "42501"
	}
	return &sqlerr.Error{Code: 1095, SQLState: state, Message: fmt.Sprintf("You are not owner of thread %s: ending another user's session needs an admin user (admin: true in the authority rule)", id)}
}

// statementDatabase is the database st acts on for session s, the one the
// privilege model checks: the database it names (st.Scope), else the
// session's for statements that act on it; "" for statements of no
// database.
func statementDatabase(s *Session, st distsql.Statement) string {
	sc := st.Scope()
	if sc.Database == "" && sc.Session {
		return s.Database
	}
	return sc.Database
}

// authorize refuses st for session s when the privilege model does not
// let s run it: a cluster-wide statement (st.Scope().Cluster) needs an
// admin, the database st acts on must be permitted. It is the one check
// of every console statement; it reads the authority rule only for
// statements the model restricts.
func (e *Engine) authorize(s *Session, st distsql.Statement) error {
	what := st.Scope().Cluster
	db := statementDatabase(s, st)
	if what == "" && db == "" {
		return nil
	}
	g := e.grant(s)
	if what != "" && !g.admin {
		return accessDenied(s, what)
	}
	if db != "" && !g.permits(db) {
		return databaseDenied(s, db)
	}
	return nil
}

// ownProcess reports whether process p belongs to session s's user (user
// names compare case-insensitively, as logins do).
func ownProcess(s *Session, p process.Process) bool {
	return strings.EqualFold(p.Username, s.User)
}

// processOwner finds the process id (or number) among ps.
func findProcess(ps []process.Process, id string) (process.Process, bool) {
	n, err := strconv.ParseUint(id, 10, 32)
	for _, p := range ps {
		if p.ID == id || err == nil && n != 0 && process.Number(p.ID) == uint32(n) {
			return p, true
		}
	}
	return process.Process{}, false
}

// mayKill refuses KILL of a process that is not the session's own for a
// non-admin: the process is looked up in this node's table, else in the
// cluster's process list.
func (e *Engine) mayKill(ctx context.Context, s *Session, id string) error {
	if e.grant(s).admin {
		return nil
	}
	p, ok := findProcess(e.d.Processes.List(), id)
	if !ok {
		c, err := process.Collect(ctx, e.d.Repo, e.d.ProcessTimeout)
		if err != nil {
			return err
		}
		if p, ok = findProcess(c.Processes(), id); !ok {
			return unknownThread(id)
		}
	}
	if !ownProcess(s, p) {
		return notOwner(s, id)
	}
	return nil
}
