package metadata

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/registry"
)

// A registry's readers are the ShardingSphere nodes registered in its
// namespace: each loads rule items the way its release writes them, and
// nothing else. A shardkeeper node reads every layout, so it is no
// reader here. A reader's release loads an item exactly when its own
// release would write the same item for the same configuration
// (ruleItems of its layout): an item placed elsewhere is not read (its
// field loads as null), and a field its class does not have fails the
// whole rule. So the per-release knowledge stays in one place, the swap
// that writes each layout (upstreamRule and the layout's RuleItem), and
// the checks below only compare what two layouts write.

// Reader is a ShardingSphere node registered in the namespace.
type Reader struct {
	InstanceID string
	Version    string // the version its online value carries
	// Layout is the layout its release loads, meaningful when Known.
	Layout paths.Layout
	// Known is false for a version that names no 5.5.x release: what it
	// loads is not known, and it is not checked.
	Known bool
}

// String names the reader for an operator: "node {id} (ShardingSphere {version})".
func (r Reader) String() string {
	return fmt.Sprintf("node %s (ShardingSphere %s)", r.InstanceID, r.Version)
}

// IsShardkeeper reports whether an online value's version is a
// shardkeeper node's (cluster.Version): such a node reads every layout.
func IsShardkeeper(version string) bool {
	return strings.HasPrefix(version, "shardkeeper")
}

// ReadersOf returns the ShardingSphere nodes among instances, sorted by
// instance id.
func ReadersOf(instances []cluster.Instance) []Reader {
	var out []Reader
	for _, inst := range instances {
		if IsShardkeeper(inst.Version) {
			continue
		}
		r := Reader{InstanceID: inst.ID, Version: inst.Version}
		if l, err := paths.ParseLayout(inst.Version); err == nil {
			r.Layout, r.Known = l, true
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].InstanceID < out[j].InstanceID })
	return out
}

// LoadReaders reads the ShardingSphere nodes registered in repo's
// namespace now.
func LoadReaders(ctx context.Context, repo registry.Repository) ([]Reader, error) {
	instances, err := cluster.LoadInstances(ctx, repo, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, fmt.Errorf("read the registered compute nodes: %w", err)
	}
	return ReadersOf(instances), nil
}

// LayoutRefusalCode is the vendor code of a write refused because a
// registered node could not load it (CheckReaders).
const LayoutRefusalCode = 17020

// CheckRuleReaders returns nil when every ShardingSphere node registered
// in repo's namespace loads rules of database db as a node writing
// layout writes them. Otherwise it returns the refusal of CheckReaders.
// It reads the registered nodes only when the rules are written
// differently by some layout (a rule without default strategies, key
// generate strategies or a sharding cache is written alike by every
// release, and needs no read).
func CheckRuleReaders(ctx context.Context, repo registry.Repository, layout paths.Layout, db string, rules ...config.Rule) error {
	if layoutNeutral(rules) {
		return nil
	}
	readers, err := LoadReaders(ctx, repo)
	if err != nil {
		return err
	}
	return CheckReaders(layout, readers, db, rules...)
}

// layoutNeutral reports whether every layout writes rules alike.
func layoutNeutral(rules []config.Rule) bool {
	for _, r := range rules {
		for _, l := range paths.Layouts {
			if unloadable(paths.DefaultLayout, l, r) != "" {
				return false
			}
		}
	}
	return true
}

// CheckReaders returns nil when each known reader loads rules of database
// db as a node writing layout writes them; otherwise a refusal (an
// *sqlerr.Error, LayoutRefusalCode, of kind Conflict) that names the
// first reader that cannot, its version, the item it cannot load, the
// layout it needs and the ways on.
func CheckReaders(layout paths.Layout, readers []Reader, db string, rules ...config.Rule) error {
	for _, rd := range readers {
		if !rd.Known || rd.Layout == layout {
			continue
		}
		for _, r := range rules {
			what := unloadable(layout, rd.Layout, r)
			if what == "" {
				continue
			}
			return &sqlerr.Error{Code: LayoutRefusalCode, SQLState: "HY000", Kind: sqlerr.Conflict, Message: fmt.Sprintf(
				"%s is registered and needs the %s layout: it cannot load %s of rule %s of database %s as this node writes it (layout %s); nothing was written. "+
					"Migrate the registry to its layout (shardkeeper registry migrate --to %s) and set layoutVersion %s, or change the rule so that it needs nothing only layout %s has",
				rd, rd.Layout, what, r.Type, db, layout, rd.Layout, rd.Layout, layout)}
		}
	}
	return nil
}

// unloadable describes the first item of r, written for layout writer,
// that a release loading layout reader would not load as written; "" when
// it loads every item.
func unloadable(writer, reader paths.Layout, r config.Rule) string {
	if writer == reader {
		return ""
	}
	mine, err := placedItems(writer, r)
	if err != nil {
		return "" // refused by the write itself
	}
	theirs, err := placedItems(reader, r)
	if err != nil {
		return "the rule (" + err.Error() + ")"
	}
	for _, k := range sortedKeys(mine) {
		if v, ok := theirs[k]; !ok || !bytes.Equal(v, mine[k]) {
			return "item " + k
		}
	}
	for _, k := range sortedKeys(theirs) {
		if _, ok := mine[k]; !ok {
			return "item " + k + " (it would be missing)"
		}
	}
	return ""
}

// placedItems returns r's items as layout writes them, by their path
// under the rule ("tables/t_order", "default_strategies/default_table_strategy").
func placedItems(layout paths.Layout, r config.Rule) (map[string][]byte, error) {
	items, err := ruleItems(layout, r)
	if err != nil {
		return nil, err
	}
	root, err := paths.DatabaseRule("db", r.Type)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(items))
	for _, it := range items {
		key, err := layout.RuleItem("db", r.Type, it.Item, it.Name)
		if err != nil {
			return nil, err
		}
		out[strings.TrimPrefix(strings.TrimPrefix(key, root), "/")] = it.Value
	}
	return out, nil
}
