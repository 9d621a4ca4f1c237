package metadata

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// GlobalRulesName and PropsName name the global rules and /props in
// CaughtUp's error, where the databases not caught up are listed; no
// database has them (they are not registry path segments).
const (
	GlobalRulesName = "/"
	PropsName       = "/props"
)

// catchUpReread is how long CaughtUp waits for the snapshot to reach the
// registry's digests before it reads them again (a change committed
// meanwhile moves the target).
const catchUpReread = 500 * time.Millisecond

// CaughtUp returns nil once s's current snapshot holds the rules the
// registry holds: each database's rules digest (Database.RulesDigest,
// "" for a database the snapshot or the registry lacks) and the global
// rules' (GlobalRulesDigest) equal to those of the rules read from the
// registry (ReadDatabase, ReadGlobalRules), and its Snapshot.PropsVersion
// at least the registry's /props active version. It checks again each time s
// publishes, and reads the registry again every half second while they
// differ. A compute node calls it before it registers online again after
// a lost session (cluster.Node.SetCatchUp): the changes acknowledged
// while it was offline did not wait for it. It needs Run to be running.
// ctx bounds the wait: when ctx ends first, CaughtUp returns an error that
// wraps ctx's and names the databases whose digests still differ
// (GlobalRulesName for the global rules, PropsName for /props); registry
// errors are returned
// as they come. Safe for concurrent use.
func (s *Store) CaughtUp(ctx context.Context) error {
	var behind []string
	for {
		want, err := s.registryDigests(ctx)
		if err != nil {
			if ctx.Err() != nil && behind != nil {
				return fmt.Errorf("metadata: not caught up with the registry: %v: %w", behind, ctx.Err())
			}
			return fmt.Errorf("metadata: read the registry's rules: %w", err)
		}
		c, cancel := context.WithTimeout(ctx, catchUpReread)
		_, err = s.Wait(c, func(snap *Snapshot) bool { return len(differing(snap, want)) == 0 })
		cancel()
		if err == nil {
			return nil
		}
		behind = differing(s.Current(), want)
		if ctx.Err() != nil {
			return fmt.Errorf("metadata: not caught up with the registry: %v: %w", behind, ctx.Err())
		}
	}
}

// registryDigests reads the rules digest of every database in the
// registry, and under GlobalRulesName the global rules', leaving out "";
// and under PropsName the /props active version, when there is one.
func (s *Store) registryDigests(ctx context.Context) (map[string]string, error) {
	dbs, err := s.repo.Children(ctx, paths.MetadataRoot)
	if err != nil {
		return nil, fmt.Errorf("list databases: %w", err)
	}
	want := map[string]string{}
	for _, db := range dbs {
		d, _, err := ReadDatabase(ctx, s.repo, db)
		if errors.Is(err, ErrNoDatabase) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read database %s: %w", db, err)
		}
		if dg := d.RulesDigest(); dg != "" {
			want[db] = dg
		}
	}
	global, _, err := ReadGlobalRules(ctx, s.repo)
	if err != nil {
		return nil, fmt.Errorf("read the global rules: %w", err)
	}
	if dg := GlobalRulesDigest(global); dg != "" {
		want[GlobalRulesName] = dg
	}
	switch kv, err := s.repo.Get(ctx, paths.ActiveVersion(paths.PropsRoot)); {
	case errors.Is(err, registry.ErrNotFound):
	case err != nil:
		return nil, fmt.Errorf("read the /props version: %w", err)
	default:
		want[PropsName] = string(kv.Value)
	}
	return want, nil
}

// differing returns, sorted, the databases (GlobalRulesName for the
// global rules) whose digest in snap differs from want's, and PropsName
// when snap's /props version is behind want's.
func differing(snap *Snapshot, want map[string]string) []string {
	var out []string
	for db, dg := range want {
		switch db {
		case GlobalRulesName:
			if GlobalRulesDigest(snap.GlobalRules) != dg {
				out = append(out, db)
			}
			continue
		case PropsName:
			// A version that does not parse is the Store's problem to
			// report; it cannot be waited for.
			if v, err := strconv.Atoi(strings.TrimSpace(dg)); err == nil && snap.PropsVersion < v {
				out = append(out, db)
			}
			continue
		}
		if snap.Databases[db].RulesDigest() != dg {
			out = append(out, db)
		}
	}
	for db, d := range snap.Databases {
		if _, ok := want[db]; !ok && d.RulesDigest() != "" {
			out = append(out, db)
		}
	}
	if _, ok := want[GlobalRulesName]; !ok && GlobalRulesDigest(snap.GlobalRules) != "" {
		out = append(out, GlobalRulesName)
	}
	slices.Sort(out)
	return out
}
