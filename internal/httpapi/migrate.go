package httpapi

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
)

// migrationTimeout bounds a migration through the API: the cluster lock's
// wait and the reads and commits of every database.
const migrationTimeout = metadata.MigrationLockWait + time.Minute

// migrationStep is one key of a migration in the answer.
type migrationStep struct {
	Action string `json:"action"` // add, change or remove
	Key    string `json:"key"`
}

// migrationDatabase is one database of a migration in the answer.
type migrationDatabase struct {
	Database string `json:"database"`
	// From is the release before 5.5 whose layout the database was
	// read in ("5.4.x", "5.3.x"), absent for a 5.5.x one.
	From     string          `json:"from,omitempty"`
	Steps    []migrationStep `json:"steps"`
	Migrated bool            `json:"migrated"`
}

// handleMigrate is POST /api/v1/registry/migrate with
// {"to":"5.5.2|5.5.3|5.5.4","dryRun":bool}: metadata.MigrateTree. It
// answers every database's steps and whether it was migrated; a migration
// that would lose something is refused with 409 before anything is
// written.
func (s *Server) handleMigrate(w http.ResponseWriter, r *http.Request) {
	body, perr := readBody(w, r)
	if perr != nil {
		s.writeError(w, perr)
		return
	}
	const want = `{"to":"5.5.4"} or {"to":"5.5.4","dryRun":true}`
	var v struct {
		To     *string `json:"to"`
		DryRun bool    `json:"dryRun"`
	}
	if err := decodeObject(body, &v, want); err != nil {
		s.writeError(w, err)
		return
	}
	if v.To == nil {
		s.writeError(w, badRequest("missing field to: want %s", want))
		return
	}
	to, err := paths.ParseLayout(*v.To)
	if err != nil {
		s.writeError(w, badRequest("to: %v", err))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), migrationTimeout)
	defer cancel()
	plan, done, err := metadata.MigrateTree(ctx, s.cfg.Repo, to, v.DryRun)
	var me *metadata.MigrationError
	if errors.As(err, &me) {
		s.writeError(w, refuse(sqlerr.Conflict, "%v", err))
		return
	}
	out := struct {
		To        string              `json:"to"`
		DryRun    bool                `json:"dryRun"`
		Databases []migrationDatabase `json:"databases"`
		Error     string              `json:"error,omitempty"`
	}{To: to.String(), DryRun: v.DryRun, Databases: []migrationDatabase{}}
	for _, m := range plan {
		md := migrationDatabase{Database: m.Database, From: m.From, Steps: []migrationStep{}, Migrated: slices.Contains(done, m.Database)}
		for _, st := range m.Steps {
			md.Steps = append(md.Steps, migrationStep{Action: st.Action, Key: st.Node})
		}
		out.Databases = append(out.Databases, md)
	}
	if err != nil {
		if len(done) == 0 {
			s.writeError(w, err)
			return
		}
		// Some databases were migrated: say which, and what failed.
		out.Error = err.Error()
		s.writeJSONStatus(w, http.StatusConflict, out)
		return
	}
	s.writeJSON(w, out)
}
