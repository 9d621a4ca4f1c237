package metadata

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// StaleRuleError is RuleWrites' answer when the registry's rule is not the
// base the change was made from (the caller's view is behind, or another
// node changed the rule): nothing may be written from that base. Current
// is the rule's content in the registry, as a Snapshot holds it. It wraps
// registry.ErrBadVersion.
type StaleRuleError struct {
	Database, Type string
	Current        map[string]any
}

func (e *StaleRuleError) Error() string {
	return fmt.Sprintf("the %s rule of database %s in the registry is not the one the change was made from", e.Type, e.Database)
}

func (e *StaleRuleError) Unwrap() error { return registry.ErrBadVersion }

// RuleWrites returns the conditions and writes of one registry transaction
// that makes r database db's whole rule of type r.Type, as layout's
// release persists it: each item whose content differs gets its next
// version (active_version moves to it, older versions are deleted), each
// item the rule no longer has is deleted with its versions, and items that
// did not change are left alone. An r with empty content removes the rule.
// base is the rule's content the change was made from (as the caller's
// Snapshot holds it): when the registry's items hold another content, it
// returns a *StaleRuleError, so that a change made from a stale view never
// undoes another. Every write is conditioned on the version read here, so
// that the transaction fails (ErrBadVersion, ErrExists) when anything
// changed meanwhile. No ops means nothing to change. ctx bounds the reads.
func RuleWrites(ctx context.Context, repo registry.Repository, layout paths.Layout, db string, base map[string]any, r config.Rule) ([]registry.Cond, []registry.Op, error) {
	root, err := paths.DatabaseRule(db, r.Type)
	if err != nil {
		return nil, nil, err
	}
	want := map[string][]byte{}
	if len(r.Content) > 0 {
		items, err := ruleItems(layout, r)
		if err != nil {
			return nil, nil, err
		}
		for _, it := range items {
			node, err := layout.RuleItem(db, r.Type, it.Item, it.Name)
			if err != nil {
				return nil, nil, err
			}
			want[node] = it.Value
		}
	}
	kvs, err := repo.List(ctx, root)
	if err != nil && !errors.Is(err, registry.ErrNotFound) {
		return nil, nil, err
	}
	// The versioned nodes there are now, with their keys.
	have := map[string][]registry.KV{}
	for _, kv := range kvs {
		if k, ok := paths.ParseKey(kv.Key); ok && k.Kind == paths.KindRuleItem && k.Node != "" && k.Leaf != "" {
			have[k.Node] = append(have[k.Node], kv)
		}
	}
	// The rule as the registry holds it must be the base.
	current := map[string]any{}
	for _, node := range sortedKeys(have) {
		content, ok := activeContent(have[node], node)
		k, parsed := paths.ParseKey(paths.ActiveVersion(node))
		if !ok || !parsed {
			continue
		}
		if current, err = applyRuleItem(r.Type, current, k.RuleItem, k.ItemName, content, false); err != nil {
			return nil, nil, err
		}
	}
	if !reflect.DeepEqual(current, base) && (len(current) > 0 || len(base) > 0) {
		return nil, nil, &StaleRuleError{Database: db, Type: r.Type, Current: current}
	}
	var conds []registry.Cond
	var ops []registry.Op
	for _, node := range sortedKeys(want) {
		if cur, ok := activeContent(have[node], node); ok && bytes.Equal(cur, want[node]) {
			continue
		}
		c, o, err := ReplaceWrites(ctx, repo, node, want[node])
		if err != nil {
			return nil, nil, err
		}
		conds, ops = append(conds, c...), append(ops, o...)
	}
	// Items the rule no longer has: every key under them, deepest first
	// (a ZooKeeper node with children cannot be deleted).
	var gone []registry.KV
	for _, kv := range kvs {
		for node := range have {
			if _, keep := want[node]; !keep && (kv.Key == node || registry.IsUnder(kv.Key, node)) {
				gone = append(gone, kv)
				break
			}
		}
	}
	slices.SortFunc(gone, func(a, b registry.KV) int {
		if d := strings.Count(b.Key, "/") - strings.Count(a.Key, "/"); d != 0 {
			return d
		}
		return strings.Compare(a.Key, b.Key)
	})
	for _, kv := range gone {
		conds = append(conds, registry.Cond{Key: kv.Key, Version: kv.Version})
		ops = append(ops, registry.Op{Key: kv.Key, Delete: true})
	}
	return conds, ops, nil
}

// activeContent is the content of the active version of node among its
// keys kvs.
func activeContent(kvs []registry.KV, node string) ([]byte, bool) {
	av := ""
	for _, kv := range kvs {
		if kv.Key == paths.ActiveVersion(node) {
			av = strings.TrimSpace(string(kv.Value))
		}
	}
	n, err := strconv.Atoi(av)
	if err != nil {
		return nil, false
	}
	for _, kv := range kvs {
		if kv.Key == paths.Version(node, n) {
			return kv.Value, true
		}
	}
	return nil, false
}

// AppliedRuleContent returns the content of database rule r as a node's
// Snapshot holds it once the node applied every item RuleWrites writes
// for r with layout: nil when r has none (the rule is then absent).
func AppliedRuleContent(layout paths.Layout, r config.Rule) (map[string]any, error) {
	if len(r.Content) == 0 {
		return nil, nil
	}
	items, err := ruleItems(layout, r)
	if err != nil {
		return nil, err
	}
	content := map[string]any{}
	for _, it := range items {
		if content, err = applyRuleItem(r.Type, content, it.Item, it.Name, it.Value, false); err != nil {
			return nil, err
		}
	}
	if len(content) == 0 {
		return nil, nil
	}
	return content, nil
}

// AppliedGlobalRuleContent returns the content of global rule r as a
// node's Snapshot holds it once the node applied what GlobalWrites writes
// for r.
func AppliedGlobalRuleContent(r config.Rule) (map[string]any, error) {
	d, err := decodeRuleContent(r.Type, encodeGlobalRule(r))
	return d.Content, err
}
