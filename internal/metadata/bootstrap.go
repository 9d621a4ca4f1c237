package metadata

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/authority"
	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// Introspector reads the schemas of a logical database from its data
// sources (see datasource.Introspect). An error names the unit and host.
type Introspector func(ctx context.Context, db config.Database) ([]datasource.Schema, error)

// BootstrapLock is the exclusive-operation lock two nodes starting on an
// empty registry serialise on.
const BootstrapLock = "metadata_bootstrap"

// Options tune Bootstrap. The zero value is usable.
type Options struct {
	// Introspect reads each database's schemas on the first start; nil
	// persists no schemas.
	Introspect Introspector
	// Logger receives warnings (corrupt values, lost watches); nil means
	// slog.Default().
	Logger *slog.Logger
	// ApplyAuthority writes the local configuration's authority rule to
	// the registry, as a new version every node follows, when it differs
	// from the registry's (serve --apply-authority); it is logged. Without
	// it such a difference fails Bootstrap with an *AuthorityError. With
	// it and no local authority rule, Bootstrap fails: there is nothing
	// to apply.
	ApplyAuthority bool
}

// AuthorityError is Bootstrap's refusal to start when the local
// configuration's authority rule (global.yaml's users and privilege)
// differs from the registry's, which the node would otherwise run with:
// a security setting the operator wrote is never dropped with a warning.
type AuthorityError struct {
	// Differences name the users that differ by name@host (never a
	// password) and whether the privilege differs.
	Differences []string
}

func (e *AuthorityError) Error() string {
	return "metadata bootstrap: the authority rule of the local configuration (global.yaml: authority) differs from the registry's, " +
		"which holds the cluster's configuration and which this node would run with instead: " + strings.Join(e.Differences, "; ") +
		". Either start once with --apply-authority to write the local authority rule to the registry for every node (the node logs it), " +
		"or remove the authority rule from the local global.yaml to keep the registry's users (change those with IMPORT METADATA as an admin)"
}

// Bootstrap builds the node's metadata, ShardingSphere's way (reference
// 5.4): holding the BootstrapLock through sess, if the registry already has
// databases (children of /metadata) it loads everything from the registry,
// props and global rules included (path B), and warns once, listing
// NotApplied, where cfg differs from it; otherwise it persists cfg's
// global rules, props and databases, then the schemas opts.Introspect reads
// from the real data sources (path A), in the layout of
// cfg.Mode.Repository.Layout, and loads the result. So two nodes
// starting together on an empty registry end with one consistent copy. A
// ShardingSphere node takes no lock and may persist at the same time: a
// node another writer reached first keeps that writer's active version,
// active_version only moves up, and nothing is deleted, so every
// active_version names an existing version (docs/guarantees.md, "First
// start next to ShardingSphere nodes").
// sess may be nil only when nothing else can write the registry
// (standalone). The returned Store is loaded; call its Run to follow
// changes. ctx bounds the whole bootstrap.
func Bootstrap(ctx context.Context, repo registry.Repository, sess registry.Session, cfg *config.Config, opts Options) (*Store, error) {
	if cfg == nil {
		cfg = &config.Config{Props: config.Props{}}
	}
	if sess != nil {
		key, err := paths.ExclusiveOperation(BootstrapLock)
		if err != nil {
			return nil, err
		}
		lock, err := sess.Lock(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("metadata bootstrap: take the lock %s: %w", key, err)
		}
		defer func() { _ = lock.Unlock(context.WithoutCancel(ctx)) }()
	}
	dbs, err := repo.Children(ctx, paths.MetadataRoot)
	if err != nil {
		return nil, fmt.Errorf("metadata bootstrap: list databases: %w", err)
	}
	if len(dbs) == 0 {
		if err := persistLocal(ctx, repo, sess, cfg, opts.Introspect); err != nil {
			return nil, err
		}
	}
	s := newStore(repo, opts.Logger)
	if err := s.load(ctx); err != nil {
		return nil, fmt.Errorf("metadata bootstrap: load: %w", err)
	}
	if err := reconcileAuthority(ctx, repo, s, cfg, opts.ApplyAuthority); err != nil {
		return nil, err
	}
	if len(dbs) > 0 {
		if ignored := NotApplied(cfg, s.Current()); len(ignored) > 0 {
			s.log.Warn("metadata bootstrap: the registry already holds the cluster's configuration, so this node loaded it and left out where its local configuration differs; "+
				"change the cluster's configuration with DistSQL (ALTER ... RULE, SET DIST VARIABLE, IMPORT DATABASE CONFIGURATION) or the HTTP API",
				"not_applied", strings.Join(ignored, "; "))
		}
	}
	return s, nil
}

// NotApplied lists what of the local configuration cfg differs from the
// cluster's configuration in snap, which a node that found databases in
// the registry loads instead of cfg: each global rule cfg sets that the
// registry holds otherwise ("global rule authority"), each prop
// ("props sql-show: local true, registry false") and each database cfg
// names that the registry does not hold. Rules compare as a node decodes
// them (defaults filled in), props in their canonical form.
func NotApplied(cfg *config.Config, snap *Snapshot) []string {
	var out []string
	for _, r := range cfg.GlobalRules {
		node, err := paths.GlobalRule(r.Type)
		if err != nil {
			continue
		}
		local := DecodeGlobalRules([]registry.KV{
			{Key: paths.ActiveVersion(node), Value: []byte("0")},
			{Key: paths.Version(node, 0), Value: encodeGlobalRule(r)},
		})
		if !sameGlobalRule(local, snap, r.Type) {
			out = append(out, "global rule "+r.Type)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.Props)) {
		local, _ := config.CheckProp(k, cfg.Props[k])
		cluster, _ := config.CheckProp(k, snap.Props.Value(k))
		if local != cluster {
			out = append(out, fmt.Sprintf("props %s: local %q, registry %q", k, local, cluster))
		}
	}
	for _, d := range cfg.Databases {
		if _, ok := snap.Databases[d.Name]; !ok {
			out = append(out, "database "+d.Name+" (not in the registry)")
		}
	}
	return out
}

// sameGlobalRule reports whether local (rules decoded as a node decodes
// them) holds the rule of type typ that snap holds.
func sameGlobalRule(local map[string]config.Rule, snap *Snapshot, typ string) bool {
	cluster, ok := snap.GlobalRules[typ]
	return ok && GlobalRulesDigest(map[string]config.Rule{typ: local[typ]}) == GlobalRulesDigest(map[string]config.Rule{typ: cluster})
}

// reconcileAuthority compares cfg's authority rule with the one loaded
// into s: the same, or none in cfg (without apply), is nil; otherwise an
// *AuthorityError naming the difference, or, with apply, the local rule
// written to the registry as a new version (logged) and s reloaded.
func reconcileAuthority(ctx context.Context, repo registry.Repository, s *Store, cfg *config.Config, apply bool) error {
	i := slices.IndexFunc(cfg.GlobalRules, func(r config.Rule) bool { return r.Type == authority.RuleType })
	if i < 0 {
		if apply {
			return errors.New("metadata bootstrap: --apply-authority: the local configuration has no authority rule to apply (global.yaml: authority.users)")
		}
		return nil
	}
	r := cfg.GlobalRules[i]
	node, err := paths.GlobalRule(r.Type)
	if err != nil {
		return err
	}
	local := DecodeGlobalRules([]registry.KV{
		{Key: paths.ActiveVersion(node), Value: []byte("0")},
		{Key: paths.Version(node, 0), Value: encodeGlobalRule(r)},
	})
	if sameGlobalRule(local, s.Current(), r.Type) {
		return nil
	}
	want, err := authority.FromRules(local[r.Type])
	if err != nil {
		return fmt.Errorf("metadata bootstrap: the local authority rule: %w", err)
	}
	var diff []string
	have, err := authority.FromRules(s.Current().GlobalRules[r.Type])
	if err != nil {
		diff = append(diff, "the registry's authority rule cannot be read ("+err.Error()+")")
	} else {
		diff = authority.Diff(want, have, "the local configuration", "the registry")
		if have.Empty() {
			diff = append(diff, "the registry has no users (only loopback clients, each an admin)")
		}
	}
	if len(diff) == 0 {
		diff = []string{"the rule's other settings (authenticators, defaultAuthenticator) differ"}
	}
	if !apply {
		return &AuthorityError{Differences: diff}
	}
	s.log.Warn("metadata bootstrap: applying the local authority rule to the registry (--apply-authority): every node of the cluster now takes its users",
		"node", node, "differences", strings.Join(diff, "; "))
	if _, err := putVersioned(ctx, repo, node, encodeGlobalRule(r)); err != nil {
		var ce *CleanupError
		if !errors.As(err, &ce) {
			return fmt.Errorf("metadata bootstrap: apply the local authority rule: %w", err)
		}
		s.log.Warn("metadata bootstrap: the local authority rule is applied; older versions are left for the next write", "err", err)
	}
	if err := s.load(ctx); err != nil {
		return fmt.Errorf("metadata bootstrap: load: %w", err)
	}
	if !sameGlobalRule(local, s.Current(), r.Type) {
		return errors.New("metadata bootstrap: --apply-authority: another writer changed the registry's authority rule at the same time; start again")
	}
	return nil
}

// Load returns a Store loaded from the registry, without persisting
// anything (a reader such as the admin CLI).
func Load(ctx context.Context, repo registry.Repository, log *slog.Logger) (*Store, error) {
	s := newStore(repo, log)
	if err := s.load(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// persistLocal writes cfg and the introspected schemas to an empty registry;
// with a session (nil is allowed) the new nodes go in batched Commits.
func persistLocal(ctx context.Context, repo registry.Repository, sess registry.Session, cfg *config.Config, introspect Introspector) error {
	// Introspect first, so that an unreachable data source fails the start
	// before anything is written.
	schemas := make([][]datasource.Schema, len(cfg.Databases))
	var errs []error
	for i, db := range cfg.Databases {
		if introspect == nil || len(db.DataSources) == 0 {
			continue
		}
		s, err := introspect(ctx, db)
		if err != nil {
			errs = append(errs, fmt.Errorf("database %s: %w", db.Name, err))
		}
		schemas[i] = s
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, db := range cfg.Databases {
		if err := CheckRuleReaders(ctx, repo, cfg.Mode.Repository.Layout, db.Name, db.Rules...); err != nil {
			return err
		}
	}
	w := newWriter(ctx, repo, true)
	w.sess = sess
	w.layout = cfg.Mode.Repository.Layout
	if err := persistGlobal(w, cfg.GlobalRules, cfg.Props); err != nil {
		return err
	}
	for i, db := range cfg.Databases {
		if err := persistDatabase(w, db); err != nil {
			return err
		}
		if err := persistSchemas(w, db.Name, schemas[i]); err != nil {
			return err
		}
	}
	return nil
}
