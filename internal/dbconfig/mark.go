package dbconfig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// ImportMark is the value of an import's mark, paths.Import(db): written
// before the import's first transaction, deleted in its last (or after
// its rollback). A mark that stays says the database is half-written: the
// process that imported it died between its transactions.
type ImportMark struct {
	Database string `json:"database"`
	// Statement is the import as it was run, secrets masked.
	Statement string    `json:"statement"`
	Instance  string    `json:"instance,omitempty"` // the node that ran it
	Started   time.Time `json:"started"`
}

// Advice says that the database is incomplete and which statements drop
// and finish it.
func (m ImportMark) Advice() string {
	return fmt.Sprintf("database %s is incomplete: the import %s started %s on %s has not finished; if it no longer runs, drop the database (shardkeeper databases drop %s, or DELETE /api/v1/databases/%s) and run the import again",
		m.Database, m.Statement, m.Started.UTC().Format(time.RFC3339), m.Instance, m.Database, m.Database)
}

// MaxImportMarks bounds how many marks IncompleteImports reads.
const MaxImportMarks = 1000

// maxMarkSize bounds one mark's value.
const maxMarkSize = 64 << 10

// IncompleteImports returns the marks of the imports that did not finish
// (or are running now), by database, of the databases want accepts (nil:
// all; the callers pass the databases they show, so marks nobody shows are
// never read): at most MaxImportMarks, values over 64 KiB or unreadable
// shown with Database only. ctx bounds the reads.
func IncompleteImports(ctx context.Context, repo registry.Repository, want func(db string) bool) (map[string]ImportMark, error) {
	names, err := repo.Children(ctx, paths.ImportsRoot)
	if errors.Is(err, registry.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if want != nil {
		names = slices.DeleteFunc(names, func(db string) bool { return !want(db) })
	}
	slices.Sort(names)
	out := map[string]ImportMark{}
	for _, db := range names[:min(len(names), MaxImportMarks)] {
		key, err := paths.Import(db)
		if err != nil {
			continue
		}
		kv, err := repo.Get(ctx, key)
		if errors.Is(err, registry.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		m := ImportMark{Database: db}
		if len(kv.Value) <= maxMarkSize {
			_ = json.Unmarshal(kv.Value, &m)
		}
		m.Database = db
		out[db] = m
	}
	return out, nil
}

// readMark returns the mark of database db and its version; version 0
// when there is none.
func readMark(ctx context.Context, repo registry.Repository, db string) (ImportMark, registry.Version, error) {
	key, err := paths.Import(db)
	if err != nil {
		return ImportMark{}, 0, err
	}
	kv, err := repo.Get(ctx, key)
	if errors.Is(err, registry.ErrNotFound) {
		return ImportMark{}, 0, nil
	}
	if err != nil {
		return ImportMark{}, 0, err
	}
	m := ImportMark{Database: db}
	if len(kv.Value) <= maxMarkSize {
		_ = json.Unmarshal(kv.Value, &m)
	}
	m.Database = db
	return m, kv.Version, nil
}
