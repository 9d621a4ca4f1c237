package metadata

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// persistParallelism bounds the concurrent registry writes of one persist.
const persistParallelism = 32

// putVersioned writes content as the next version of node, makes it active,
// then deletes the older versions it listed (reference 1.5). Versions are
// created exclusively, so concurrent writers never overwrite each other's
// version, and active_version only moves up: it is a compare-and-set from
// the value read, skipped when another writer has made a newer version
// active meanwhile (its view is newer than ours; our version stays until
// the node's next write). It returns the version active when it is done; a
// failure to delete the older versions afterwards is a *CleanupError.
func putVersioned(ctx context.Context, repo registry.Repository, node string, content []byte) (int, error) {
	children, err := repo.Children(ctx, node+"/"+paths.VersionsName)
	if err != nil {
		return 0, err
	}
	next, old := 0, make([]int, 0, len(children))
	for _, c := range children {
		if n, err := strconv.Atoi(c); err == nil && n >= 0 {
			old = append(old, n)
			next = max(next, n+1)
		}
	}
	next, err = createVersion(ctx, repo, node, next, content)
	if err != nil {
		return 0, err
	}
	active, err := raiseActive(ctx, repo, node, next)
	if err != nil || active != next {
		return active, err
	}
	return next, cleanVersions(ctx, repo, node, old, next)
}

// CleanupError is what a versioned write returns when its new version is
// written and active but deleting older versions failed: the change is
// made (Version is active), only the leftover versions remain, and the
// next write of the node deletes them. Callers report it as a warning,
// never as a failed change.
type CleanupError struct {
	Node    string // the versioned node, e.g. "/props"
	Version int    // the version written and active
	Err     error
}

func (e *CleanupError) Error() string {
	return fmt.Sprintf("%s: version %d is active, but deleting older versions failed (the next write retries): %v", e.Node, e.Version, e.Err)
}

func (e *CleanupError) Unwrap() error { return e.Err }

// cleanVersions deletes node's versions in old below active, trying each;
// a failure is a *CleanupError.
func cleanVersions(ctx context.Context, repo registry.Repository, node string, old []int, active int) error {
	var errs []error
	for _, n := range old {
		if n < active {
			if err := repo.Delete(ctx, paths.Version(node, n)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return &CleanupError{Node: node, Version: active, Err: errors.Join(errs...)}
}

// createVersion creates {node}/versions/{n} for the first n >= from that
// does not exist yet and returns n.
func createVersion(ctx context.Context, repo registry.Repository, node string, from int, content []byte) (int, error) {
	for n := from; ; n++ {
		_, err := repo.Create(ctx, paths.Version(node, n), content)
		if errors.Is(err, registry.ErrExists) {
			continue
		}
		return n, err
	}
}

// raiseActive sets node's active_version to n unless it already holds n or
// a larger version, by compare-and-set from the value it reads, retried
// when another writer changes it in between. It returns the active version
// it leaves (n, or the larger one found).
func raiseActive(ctx context.Context, repo registry.Repository, node string, n int) (int, error) {
	key, val := paths.ActiveVersion(node), []byte(strconv.Itoa(n))
	for {
		kv, err := repo.Get(ctx, key)
		switch {
		case errors.Is(err, registry.ErrNotFound):
			_, err = repo.Create(ctx, key, val)
		case err != nil:
			return 0, err
		default:
			if cur := atoi(kv.Value); cur >= n {
				return cur, nil
			}
			_, err = repo.Update(ctx, key, val, kv.Version)
		}
		if errors.Is(err, registry.ErrExists) || errors.Is(err, registry.ErrBadVersion) || errors.Is(err, registry.ErrNotFound) {
			continue
		}
		if err != nil {
			return 0, err
		}
		return n, nil
	}
}

// putContended writes content as node's first version when another writer
// (a ShardingSphere node persisting its local configuration at its first
// start, which takes no lock) may be writing the same node: if node already
// has an active version the other writer's is kept; otherwise a new version
// is created exclusively and made active only if no newer one is. Nothing
// is deleted: a version the other writer listed may still become its
// active_version (upstream writes the version, then active_version, then
// deletes the older ones, with plain puts).
func putContended(ctx context.Context, repo registry.Repository, node string, content []byte) error {
	if _, err := repo.Get(ctx, paths.ActiveVersion(node)); err == nil {
		return nil
	} else if !errors.Is(err, registry.ErrNotFound) {
		return err
	}
	children, err := repo.Children(ctx, node+"/"+paths.VersionsName)
	if err != nil {
		return err
	}
	next := 0
	for _, c := range children {
		if n, err := strconv.Atoi(c); err == nil && n >= 0 {
			next = max(next, n+1)
		}
	}
	n, err := createVersion(ctx, repo, node, next, content)
	if err != nil {
		return err
	}
	_, err = raiseActive(ctx, repo, node, n)
	return err
}

// putFirst writes version 0 of a node known to be new (an empty registry
// under the bootstrap lock): two writes instead of four.
func putFirst(ctx context.Context, repo registry.Repository, node string, content []byte) error {
	if _, err := repo.Put(ctx, paths.Version(node, 0), content); err != nil {
		return err
	}
	_, err := repo.Put(ctx, paths.ActiveVersion(node), []byte("0"))
	return err
}

// casVersioned replaces node's content with fn(old) only if nobody changed
// its active_version meanwhile, retrying otherwise. old is nil when the node
// has no active version. A failure to delete the older versions after the
// switch is a *CleanupError with the version written.
func casVersioned(ctx context.Context, repo registry.Repository, node string, fn func(old []byte) ([]byte, error)) (int, error) {
	for {
		var old []byte
		av, err := repo.Get(ctx, paths.ActiveVersion(node))
		switch {
		case errors.Is(err, registry.ErrNotFound):
		case err != nil:
			return 0, err
		default:
			kv, err := repo.Get(ctx, paths.Version(node, atoi(av.Value)))
			if err != nil && !errors.Is(err, registry.ErrNotFound) {
				return 0, err
			}
			old = kv.Value
		}
		content, err := fn(old)
		if err != nil {
			return 0, err
		}
		children, err := repo.Children(ctx, node+"/"+paths.VersionsName)
		if err != nil {
			return 0, err
		}
		next := 0
		for _, c := range children {
			if n, err := strconv.Atoi(c); err == nil {
				next = max(next, n+1)
			}
		}
		if _, err := repo.Create(ctx, paths.Version(node, next), content); errors.Is(err, registry.ErrExists) {
			continue
		} else if err != nil {
			return 0, err
		}
		val := []byte(strconv.Itoa(next))
		if av.Key == "" {
			_, err = repo.Create(ctx, paths.ActiveVersion(node), val)
		} else {
			_, err = repo.Update(ctx, paths.ActiveVersion(node), val, av.Version)
		}
		if errors.Is(err, registry.ErrExists) || errors.Is(err, registry.ErrBadVersion) || errors.Is(err, registry.ErrNotFound) {
			_ = repo.Delete(ctx, paths.Version(node, next))
			continue
		}
		if err != nil {
			return 0, err
		}
		olds := make([]int, 0, len(children))
		for _, c := range children {
			if n, err := strconv.Atoi(c); err == nil {
				olds = append(olds, n)
			}
		}
		return next, cleanVersions(ctx, repo, node, olds, next)
	}
}

func atoi(b []byte) int {
	n, err := strconv.Atoi(string(b))
	if err != nil {
		return -1
	}
	return n
}

// freshBatch is how many new versioned nodes one Commit writes (two keys
// each), under etcd's default limit of 128 operations per transaction.
const freshBatch = 60

// writer runs versioned writes with bounded parallelism and collects the
// first error. With a session and fresh nodes it writes them in batches, one
// conditional Commit (every key absent) per freshBatch nodes, instead of two
// round trips per node.
type writer struct {
	ctx    context.Context
	repo   registry.Repository
	layout paths.Layout     // where rule items go
	sess   registry.Session // optional: enables batched fresh writes
	fresh  bool             // the nodes are known to be absent: putFirst
	sem    chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex
	err    error
	batch  []versionedNode
}

type versionedNode struct {
	node    string
	content []byte
}

func newWriter(ctx context.Context, repo registry.Repository, fresh bool) *writer {
	return &writer{ctx: ctx, repo: repo, fresh: fresh, sem: make(chan struct{}, persistParallelism)}
}

func (w *writer) fail(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
}

func (w *writer) versioned(node string, content []byte, err error) {
	if err != nil {
		w.fail(err)
		return
	}
	if w.fresh && w.sess != nil {
		w.mu.Lock()
		w.batch = append(w.batch, versionedNode{node, content})
		var full []versionedNode
		if len(w.batch) >= freshBatch {
			full, w.batch = w.batch, nil
		}
		w.mu.Unlock()
		if full != nil {
			w.commit(full)
		}
		return
	}
	w.sem <- struct{}{}
	w.wg.Add(1)
	go func() {
		defer func() { <-w.sem; w.wg.Done() }()
		var err error
		if w.fresh {
			err = putFirst(w.ctx, w.repo, node, content)
		} else {
			_, err = putVersioned(w.ctx, w.repo, node, content)
		}
		if err != nil {
			w.fail(err)
		}
	}()
}

func (w *writer) put(key string, err error) {
	if err != nil {
		w.fail(err)
		return
	}
	if _, err := w.repo.Put(w.ctx, key, nil); err != nil {
		w.fail(err)
	}
}

// commit writes version 0 and active_version of every node in one Commit
// conditioned on all of them being absent; if one exists after all
// (another node persisted meanwhile), it falls back to putContended for
// each node.
func (w *writer) commit(batch []versionedNode) {
	w.sem <- struct{}{}
	w.wg.Add(1)
	go func() {
		defer func() { <-w.sem; w.wg.Done() }()
		var txn registry.Txn
		for _, b := range batch {
			v, a := paths.Version(b.node, 0), paths.ActiveVersion(b.node)
			txn.Conds = append(txn.Conds, registry.Cond{Key: v}, registry.Cond{Key: a})
			txn.Ops = append(txn.Ops, registry.Op{Key: v, Value: b.content}, registry.Op{Key: a, Value: []byte("0")})
		}
		_, err := w.sess.Commit(w.ctx, txn)
		if errors.Is(err, registry.ErrExists) {
			for _, b := range batch {
				if err := putContended(w.ctx, w.repo, b.node, b.content); err != nil {
					w.fail(err)
					return
				}
			}
			return
		}
		if err != nil {
			w.fail(err)
		}
	}()
}

func (w *writer) wait() error {
	w.mu.Lock()
	rest := w.batch
	w.batch = nil
	w.mu.Unlock()
	if len(rest) > 0 {
		w.commit(rest)
	}
	w.wg.Wait()
	return w.err
}

// persistDatabase writes db to the registry with w (a first start's
// bootstrap): /metadata/{db}, then each data source unit and each rule item
// as a new version, placed as w.layout places them.
func persistDatabase(w *writer, db config.Database) error {
	// Everything that can be refused is checked before the first write.
	if err := w.layout.CheckDatabaseName(db.Name); err != nil {
		return fmt.Errorf("persist database %s: %w", db.Name, err)
	}
	var items [][]ruleItem
	for _, r := range db.Rules {
		it, err := ruleItems(w.layout, r)
		if err != nil {
			return fmt.Errorf("persist database %s: %w", db.Name, err)
		}
		items = append(items, it)
	}
	w.put(paths.Database(db.Name))
	for _, name := range sortedKeys(db.DataSources) {
		node, err := paths.Unit(db.Name, name)
		w.versioned(node, encodeUnit(db.DataSources[name]), err)
	}
	for i, r := range db.Rules {
		for _, it := range items[i] {
			node, err := w.layout.RuleItem(db.Name, r.Type, it.Item, it.Name)
			w.versioned(node, it.Value, err)
		}
	}
	if err := w.wait(); err != nil {
		return fmt.Errorf("persist database %s: %w", db.Name, err)
	}
	return nil
}

// PersistGlobal writes the global rules under /rules and props to /props as
// new versions.
func PersistGlobal(ctx context.Context, repo registry.Repository, rules []config.Rule, props config.Props) error {
	return persistGlobal(newWriter(ctx, repo, false), rules, props)
}

func persistGlobal(w *writer, rules []config.Rule, props config.Props) error {
	for _, r := range rules {
		node, err := paths.GlobalRule(r.Type)
		w.versioned(node, encodeGlobalRule(r), err)
	}
	w.versioned(paths.PropsRoot, encodeProps(props), nil)
	if err := w.wait(); err != nil {
		return fmt.Errorf("persist global rules and props: %w", err)
	}
	return nil
}

// PersistSchemas writes schemas (empty schema nodes, then every table and
// view as a new version) under /metadata/{db}, their nodes named as layout
// names them (paths.Layout.NodeName).
func PersistSchemas(ctx context.Context, repo registry.Repository, layout paths.Layout, db string, schemas []datasource.Schema) error {
	w := newWriter(ctx, repo, false)
	w.layout = layout
	return persistSchemas(w, db, schemas)
}

func persistSchemas(w *writer, db string, schemas []datasource.Schema) error {
	name := w.layout.NodeName
	for _, s := range schemas {
		w.put(paths.Schema(db, name(s.Name)))
		for _, tn := range sortedKeys(s.Tables) {
			node, err := paths.Table(db, name(s.Name), name(tn))
			w.versioned(node, encodeTable(s.Tables[tn]), err)
		}
		for _, vn := range sortedKeys(s.Views) {
			node, err := paths.View(db, name(s.Name), name(vn))
			w.versioned(node, encodeView(s.Views[vn]), err)
		}
	}
	if err := w.wait(); err != nil {
		return fmt.Errorf("persist schemas of %s: %w", db, err)
	}
	return nil
}
