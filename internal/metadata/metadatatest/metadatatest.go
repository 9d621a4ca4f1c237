// Package metadatatest writes metadata for tests of other packages through
// internal/metadata's write side (its *Writes functions), each change
// committed as one registry transaction.
package metadatatest

import (
	"context"
	"fmt"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// Commit commits conds and ops in one registry transaction, on a session
// of its own; nothing when ops is empty. ctx bounds the registry calls.
func Commit(ctx context.Context, repo registry.Repository, conds []registry.Cond, ops []registry.Op) error {
	if len(ops) == 0 {
		return nil
	}
	sess, err := repo.NewSession(ctx, registry.SessionOptions{})
	if err != nil {
		return err
	}
	defer sess.Close(context.WithoutCancel(ctx))
	_, err = sess.Commit(ctx, registry.Txn{Conds: conds, Ops: ops})
	return err
}

// CreateDatabase writes the new logical database db (units and rules, no
// schemas) in layout's places. It returns registry.ErrExists (wrapped)
// when the database exists. ctx bounds the registry calls.
func CreateDatabase(ctx context.Context, repo registry.Repository, layout paths.Layout, db config.Database) error {
	kvs, err := metadata.DatabaseWrites(layout, db)
	if err != nil {
		return err
	}
	var conds []registry.Cond
	var ops []registry.Op
	for _, kv := range kvs {
		conds = append(conds, registry.Cond{Key: kv.Key})
		ops = append(ops, registry.Op{Key: kv.Key, Value: kv.Value})
	}
	if err := Commit(ctx, repo, conds, ops); err != nil {
		return fmt.Errorf("create database %s: %w", db.Name, err)
	}
	return nil
}

// AlterGlobalRule makes r the next version of the global rule of r.Type.
// ctx bounds the registry calls.
func AlterGlobalRule(ctx context.Context, repo registry.Repository, r config.Rule) error {
	conds, ops, err := metadata.GlobalWrites(ctx, repo, []config.Rule{r}, nil)
	if err != nil {
		return err
	}
	return Commit(ctx, repo, conds, ops)
}

// WriteShardingTables writes sharding tables t_scale_{from..to-1} of
// database db (and, with the first of them, the MOD algorithm scale_mod
// they use) into its sharding rule in the default layout, 50 tables per
// transaction, each item conditioned on being new: the large databases
// of the scale tests and of tools/rulescalebench. ctx bounds the registry
// calls.
func WriteShardingTables(ctx context.Context, repo registry.Repository, db string, from, to int) error {
	for lo := from; lo < to; lo += 50 {
		tables := map[string]any{}
		for i := lo; i < min(lo+50, to); i++ {
			name := fmt.Sprintf("t_scale_%05d", i)
			tables[name] = map[string]any{
				"actualDataNodes": "ds_${0..1}." + name + "_${0..1}",
				"tableStrategy":   map[string]any{"standard": map[string]any{"shardingColumn": "order_id", "shardingAlgorithmName": "scale_mod"}},
			}
		}
		content := map[string]any{"tables": tables}
		if lo == 0 {
			content["shardingAlgorithms"] = map[string]any{"scale_mod": map[string]any{"type": "MOD", "props": map[string]any{"sharding-count": 2}}}
		}
		kvs, err := metadata.DatabaseWrites(paths.DefaultLayout, config.Database{Name: db, Rules: []config.Rule{{Type: "sharding", Content: content}}})
		if err != nil {
			return err
		}
		var conds []registry.Cond
		var ops []registry.Op
		for _, kv := range kvs[1:] { // not the database's own key
			conds = append(conds, registry.Cond{Key: kv.Key})
			ops = append(ops, registry.Op{Key: kv.Key, Value: kv.Value})
		}
		if err := Commit(ctx, repo, conds, ops); err != nil {
			return err
		}
	}
	return nil
}
