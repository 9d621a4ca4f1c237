package metadata

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/memory"
)

// upstreamWriter persists a registry tree the way a ShardingSphere node
// persists its local configuration at its first start
// (LocalConfigurationMetaDataContextsInitFactory): no lock, global rules
// and props first, then each database's units and rules, then its schemas,
// tables and views. Every versioned node goes through
// VersionPersistService.persist: list versions, next = first listed + 1
// (the backend's own order when at most two are listed: etcd ascending,
// ZooKeeper descending string order; the largest otherwise), plain put of
// versions/{next}, plain put of active_version, then delete the versions
// below next. On etcd every missing ancestor of a key is first written as
// "" (EtcdRepository.buildParentPath).
type upstreamWriter struct {
	repo registry.Repository
	etcd bool
	// active is the active_version the writer put for each node.
	active map[string]int
	// contended counts nodes for which it found versions already there.
	contended int
	// slow makes it wait, between a version and its active_version, until
	// another writer has touched the node (at most slowFor): the schedule
	// in which a writer that deletes the versions it listed below its own
	// leaves this writer's active_version naming a deleted version.
	slow bool
}

// slowFor bounds each of the slow upstream writer's waits.
const slowFor = 100 * time.Millisecond

// waitForOther returns once node has an active_version or a version other
// than mine, or after slowFor.
func (u *upstreamWriter) waitForOther(ctx context.Context, node string, mine int) error {
	deadline := time.Now().Add(slowFor)
	for time.Now().Before(deadline) {
		if _, err := u.repo.Get(ctx, paths.ActiveVersion(node)); err == nil {
			return nil
		} else if !errors.Is(err, registry.ErrNotFound) {
			return err
		}
		vs, err := u.versions(ctx, node)
		if err != nil {
			return err
		}
		for _, v := range vs {
			if v != mine {
				return nil
			}
		}
	}
	return nil
}

func (u *upstreamWriter) put(ctx context.Context, key, value string) error {
	if u.etcd {
		for i := 1; i < len(key); i++ {
			if key[i] != '/' {
				continue
			}
			if _, err := u.repo.Get(ctx, key[:i]); errors.Is(err, registry.ErrNotFound) {
				if _, err := u.repo.Put(ctx, key[:i], nil); err != nil {
					return err
				}
			} else if err != nil {
				return err
			}
		}
	}
	_, err := u.repo.Put(ctx, key, []byte(value))
	return err
}

func (u *upstreamWriter) versions(ctx context.Context, node string) ([]int, error) {
	children, err := u.repo.Children(ctx, node+"/"+paths.VersionsName)
	if err != nil {
		return nil, err
	}
	if u.etcd {
		sort.Strings(children)
	} else {
		sort.Sort(sort.Reverse(sort.StringSlice(children)))
	}
	out := make([]int, 0, len(children))
	for _, c := range children {
		n, err := strconv.Atoi(c)
		if err != nil {
			return nil, fmt.Errorf("%s: version %q", node, c)
		}
		out = append(out, n)
	}
	if len(out) > 2 {
		sort.Sort(sort.Reverse(sort.IntSlice(out)))
	}
	return out, nil
}

func (u *upstreamWriter) persistVersioned(ctx context.Context, node, content string) error {
	vs, err := u.versions(ctx, node)
	if err != nil {
		return err
	}
	next := 0
	if len(vs) > 0 {
		next = vs[0] + 1
		u.contended++
	}
	if err := u.put(ctx, paths.Version(node, next), content); err != nil {
		return err
	}
	if u.slow {
		if err := u.waitForOther(ctx, node, next); err != nil {
			return err
		}
	}
	if err := u.put(ctx, paths.ActiveVersion(node), strconv.Itoa(next)); err != nil {
		return err
	}
	u.active[node] = next
	if next == 0 {
		return nil
	}
	vs, err = u.versions(ctx, node)
	if err != nil {
		return err
	}
	for _, v := range vs {
		if v < next {
			if err := u.repo.Delete(ctx, paths.Version(node, v)); err != nil {
				return err
			}
		}
	}
	return nil
}

// write persists tree in upstream's order.
func (u *upstreamWriter) write(ctx context.Context, tree map[string]string) error {
	rank := func(key string) int {
		switch {
		case strings.HasPrefix(key, paths.GlobalRulesRoot+"/"):
			return 0
		case strings.HasPrefix(key, paths.PropsRoot+"/"):
			return 1
		case strings.Contains(key, "/data_sources/"):
			return 2
		case strings.Contains(key, "/rules/"):
			return 3
		}
		return 4
	}
	keys := sortedKeys(tree)
	sort.SliceStable(keys, func(i, j int) bool { return rank(keys[i]) < rank(keys[j]) })
	for _, key := range keys {
		k, ok := paths.ParseKey(key)
		switch {
		case ok && k.Leaf == paths.ActiveVersionName:
			// Written with its version.
		case ok && k.Leaf == paths.VersionsName:
			if err := u.persistVersioned(ctx, k.Node, tree[key]); err != nil {
				return err
			}
		default:
			if err := u.put(ctx, key, tree[key]); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestFirstStartNextToUpstream starts a shardkeeper node (Bootstrap, with
// the example conf) on an empty registry while a ShardingSphere node
// persists the same conf (its exact 5.5.3 or 5.5.2 tree, written as
// upstream writes it; the node targets the same release), many rounds on
// real etcd and ZooKeeper. The upstream writer always
// persists, as when its check of /metadata ran before anything was written.
// It starts at once, as soon as the shardkeeper node holds its bootstrap
// lock (between the node's check and its writes), or once the node's first
// key is written (in the middle of its persist); in every fourth round it
// starts first, and pauses between each version and its active_version
// until the node has written there too, and the node starts once the
// writer's first version is there (global rules come first and leave
// /metadata empty, so the node persists as well). After both: one database;
// every versioned node the upstream node wrote has an active_version, never
// older than the one the upstream node put, pointing to an existing
// version; the registry loads without problems into the conf's model; and
// the shardkeeper node's own view reaches that model.
func TestFirstStartNextToUpstream(t *testing.T) {
	backends := realBackends(t)
	for _, target := range []struct {
		layout paths.Layout
		rounds int
	}{{paths.Layout553, 24}, {paths.Layout552, 12}, {paths.Layout554, 12}} {
		rounds := target.rounds
		if testing.Short() {
			rounds = 4
		}
		upstreamTree := readTree(t, "shardingsphere-"+target.layout.String()+".yaml")
		want := model(t, loadTree(t, upstreamTree))
		for _, b := range backends {
			t.Run(target.layout.String()+"/"+b.name, func(t *testing.T) {
				var contended, both, nodes int
				for round := range rounds {
					c, two, n := firstStartRound(t, b, target.layout, round, upstreamTree, want)
					if c > 0 {
						contended++
					}
					if two > 0 {
						both++
					}
					nodes += n
				}
				t.Logf("%d rounds, %d versioned nodes: in %d the upstream writer found the node's versions under its own; in %d both kept a version of some node", rounds, nodes, contended, both)
				if contended == 0 {
					t.Fatal("no round overlapped the two writers: the test proved nothing")
				}
			})
		}
	}
}

// firstStartRound runs one round and returns how many nodes the upstream
// writer found versions of, how many nodes hold two versions or more at the
// end (both writers' versions kept) and how many nodes it wrote.
func firstStartRound(t *testing.T, b backend, layout paths.Layout, round int, upstreamTree map[string]string, want any) (contended, both, nodes int) {
	ctx := testenv.Context(t)
	repo := b.open(t)
	up := &upstreamWriter{repo: another(t, repo), etcd: b.name == "etcd", active: map[string]int{}, slow: round%4 == 3}
	lockKey, _ := paths.ExclusiveOperation(BootstrapLock)
	start := make(chan struct{})
	var wg sync.WaitGroup
	var upErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-start
		for {
			var ready bool
			var err error
			switch round % 4 {
			case 0, 3:
				ready = true
			case 1:
				var held []string
				held, err = up.repo.Children(ctx, lockKey)
				ready = len(held) > 0
			case 2:
				var dbs []string
				dbs, err = up.repo.Children(ctx, paths.MetadataRoot)
				ready = len(dbs) > 0
			}
			if err != nil {
				upErr = err
				return
			}
			if ready || ctx.Err() != nil {
				break
			}
		}
		upErr = up.write(ctx, upstreamTree)
	}()
	sess, err := repo.NewSession(ctx, registry.SessionOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(context.Background())
	close(start)
	if up.slow {
		// The node starts once the upstream writer has a version in the
		// registry (under /rules, so /metadata is still empty).
		testenv.Eventually(t, "the upstream writer's first version", func() bool {
			vs, err := repo.Children(ctx, "/rules/authority/versions")
			return err == nil && len(vs) > 0
		})
	}
	cfg := exampleConfig(t)
	cfg.Mode.Repository.Layout = layout
	store, err := Bootstrap(ctx, repo, sess, cfg, Options{Introspect: layoutIntrospect, Logger: quietLog()})
	wg.Wait()
	if err != nil {
		t.Fatalf("round %d: Bootstrap: %v", round, err)
	}
	if upErr != nil {
		t.Fatalf("round %d: upstream writer: %v", round, upErr)
	}
	runStore(t, store)

	dbs, err := repo.Children(ctx, paths.MetadataRoot)
	if err != nil || !slices.Equal(dbs, []string{"sharding_db"}) {
		t.Fatalf("round %d: databases %v, %v", round, dbs, err)
	}
	for node, theirs := range up.active {
		av, err := repo.Get(ctx, paths.ActiveVersion(node))
		if err != nil {
			t.Fatalf("round %d: %s: active_version: %v", round, node, err)
		}
		n := atoi(av.Value)
		if n < theirs {
			t.Errorf("round %d: %s: active_version %d is older than the %d the upstream node put", round, node, n, theirs)
		}
		if _, err := repo.Get(ctx, paths.Version(node, n)); err != nil {
			t.Errorf("round %d: %s: active_version %d names no version: %v", round, node, n, err)
		}
		if vs, _ := repo.Children(ctx, node+"/"+paths.VersionsName); len(vs) > 1 {
			both++
		}
	}
	loaded, err := Load(ctx, repo, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	if p := loaded.Problems(); len(p) > 0 {
		t.Fatalf("round %d: problems loading the registry: %v", round, p)
	}
	if got := model(t, loaded.Current()); !reflect.DeepEqual(got, want) {
		t.Fatalf("round %d: the registry loads as\n%v\nwant the conf's model\n%v", round, got, want)
	}
	testenv.Eventually(t, fmt.Sprintf("round %d: the node's view to reach the registry's", round), func() bool {
		return reflect.DeepEqual(model(t, store.Current()), want)
	})
	return up.contended, both, len(up.active)
}

// TestActiveVersionRewrittenInPlace rewrites the content of the active
// version of /props in place, as ShardingSphere's plain puts do when two
// nodes persist the same node at once: a running Store applies it.
func TestActiveVersionRewrittenInPlace(t *testing.T) {
	ctx := testenv.Context(t)
	repo := memory.New()
	if _, err := putVersioned(ctx, repo, paths.PropsRoot, []byte("sql-show: false\n")); err != nil {
		t.Fatal(err)
	}
	s, err := Load(ctx, repo, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	runStore(t, s)
	if _, err := repo.Put(ctx, paths.Version(paths.PropsRoot, 0), []byte("sql-show: true\n")); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the rewritten version applied", func() bool { return s.Current().Props.Bool("sql-show") })
}
