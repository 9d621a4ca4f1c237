package dbconfig

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/rule"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/fault"
	"github.com/shardkeeper/shardkeeper/registry/realtest"
)

// importShardingDB imports configYAML of sharding_db, with its SQLite
// units in a fresh temporary directory, into repo, and returns that
// directory.
func importShardingDB(ctx context.Context, t testing.TB, repo registry.Repository) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := Import(ctx, repo, "s", configYAML(dir, "sharding_db", ""), Options{ListenerHold: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// loadSnapshot returns the metadata in repo as a node loads it at start.
func loadSnapshot(ctx context.Context, t testing.TB, repo registry.Repository) *metadata.Snapshot {
	t.Helper()
	s, err := metadata.Load(ctx, repo, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s.Current()
}

// configYAML is a database file with two SQLite units in dir, a sharding
// rule over them, and lastRule appended as the rules' last item.
func configYAML(dir, name, lastRule string) []byte {
	return fmt.Appendf(nil, `databaseName: %s
dataSources:
  ds_0:
    url: jdbc:sqlite:%s
    username: ""
    password: ""
  ds_1:
    url: jdbc:sqlite:%s
    username: ""
    password: ""
rules:
- !SHARDING
  tables:
    t_order:
      actualDataNodes: ds_${0..1}.t_order_${0..1}
      tableStrategy:
        standard:
          shardingColumn: order_id
          shardingAlgorithmName: t_order_inline
      keyGenerateStrategy:
        column: order_id
        keyGeneratorName: snowflake
  defaultDatabaseStrategy:
    standard:
      shardingColumn: user_id
      shardingAlgorithmName: database_inline
  shardingAlgorithms:
    database_inline:
      type: INLINE
      props:
        algorithm-expression: ds_${user_id %% 2}
    t_order_inline:
      type: INLINE
      props:
        algorithm-expression: t_order_${order_id %% 2}
  keyGenerators:
    snowflake:
      type: SNOWFLAKE
- !BROADCAST
  tables:
  - t_address
%s`, name, filepath.Join(dir, "ds0.db"), filepath.Join(dir, "ds1.db"), lastRule)
}

// badLastRule is a readwrite-splitting rule over a unit that does not
// exist: only the rule checks can find it.
const badLastRule = `- !READWRITE_SPLITTING
  dataSourceGroups:
    rw:
      writeDataSourceName: ds_0
      readDataSourceNames:
      - ds_9
`

// dump returns every key of the namespace with its value (but the empty
// parents of import marks).
func dump(t testing.TB, repo registry.Repository) map[string]string {
	t.Helper()
	kvs, err := repo.List(testenv.Context(t), "/")
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		// ZooKeeper keeps the empty parents of a deleted import mark.
		if (kv.Key == "/shardkeeper" || kv.Key == paths.ImportsRoot) && len(kv.Value) == 0 {
			continue
		}
		out[kv.Key] = string(kv.Value)
	}
	return out
}

// seed writes a database that is not imported, so that the namespace is
// not empty.
func seed(t testing.TB, repo registry.Repository, dir string) {
	t.Helper()
	ctx := testenv.Context(t)
	db := config.Database{Name: "other_db", DataSources: map[string]config.DataSource{"ds": config.NewDataSource("jdbc:sqlite:"+filepath.Join(dir, "other.db"), "", "")}}
	if err := metadatatest.CreateDatabase(ctx, repo, paths.DefaultLayout, db); err != nil {
		t.Fatal(err)
	}
	if err := metadata.SetProps(ctx, repo, map[string]string{"sql-show": "true"}); err != nil {
		t.Fatal(err)
	}
}

func TestImportExportRoundTrip(t *testing.T) {
	realtest.Each(t, "sk_dbconfig_", func(t *testing.T, open func(t testing.TB) registry.Repository) {
		ctx := testenv.Context(t)
		repo, dir := open(t), t.TempDir()
		seed(t, repo, dir)
		data := configYAML(dir, "sharding_db", "")
		res, err := Import(ctx, repo, "sharding_db.yaml", data, Options{ListenerHold: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if res.Transactions != 1 {
			t.Errorf("import took %d transactions, want 1", res.Transactions)
		}
		out, err := Export(loadSnapshot(ctx, t, repo), "sharding_db")
		if err != nil {
			t.Fatal(err)
		}
		want, err := config.ParseDatabase("in", data)
		if err != nil {
			t.Fatal(err)
		}
		got, err := config.ParseDatabase("exported", out)
		if err != nil {
			t.Fatalf("the export does not parse: %v\n%s", err, out)
		}
		if !strings.HasPrefix(string(out), "databaseName: sharding_db\ndataSources:\n  ds_0:\n") {
			t.Errorf("export does not start as upstream's:\n%s", out)
		}
		for name, ds := range want.DataSources {
			if !ds.Equal(got.DataSources[name]) {
				t.Errorf("unit %s: exported %v, imported %v", name, got.DataSources[name], ds)
			}
		}
		if len(got.Rules) != 2 {
			t.Fatalf("exported rules %v", got.Rules)
		}
		for _, r := range want.Rules {
			g, _ := got.Rule(r.Type)
			// As persisted in Options' zero layout, 5.5.3: with the fields
			// upstream writes (logicTable).
			if r, err = metadata.RuleAsWritten(paths.Layout553, r); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g.Content, r.Content) {
				t.Errorf("rule %s: exported %v, imported %v", r.Type, g.Content, r.Content)
			}
		}
		// The exported file imports as another database.
		again := bytes.Replace(out, []byte("databaseName: sharding_db"), []byte("databaseName: copy_db"), 1)
		if _, err := Import(ctx, repo, "copy", again, Options{ListenerHold: time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		// The listener coordinator node is gone again.
		if _, err := repo.Get(ctx, mustKey(paths.DefaultLayout.DatabaseListener("copy_db"))); !errors.Is(err, registry.ErrNotFound) {
			t.Errorf("coordinator node left behind: %v", err)
		}
		// A second import of a database with units is refused.
		_, err = Import(ctx, repo, "again", data, Options{})
		var e *sqlerr.Error
		if !errors.As(err, &e) || e.Code != 30001 || !strings.Contains(e.Message, "exists and is not empty") {
			t.Fatalf("re-import: %v", err)
		}
	})
}

// TestImportConvertsLayouts imports a file with 5.5.3's per-table key
// generate strategy into a 5.5.4 registry (a rule-level item), exports it
// and imports the export into a 5.5.3 registry (back to the table), and
// refuses what 5.5.3 cannot hold, writing nothing.
func TestImportConvertsLayouts(t *testing.T) {
	realtest.Each(t, "sk_dbconfig_", func(t *testing.T, open func(t testing.TB) registry.Repository) {
		ctx := testenv.Context(t)
		dir := t.TempDir()
		// One namespace; the 5.5.3 import is a second database in it.
		r554 := open(t)
		r553 := r554
		const root = "/metadata/sharding_db/rules/sharding/"
		const root553 = "/metadata/copy_db/rules/sharding/"
		if _, err := Import(ctx, r554, "in", configYAML(dir, "sharding_db", ""), Options{Layout: paths.Layout554, ListenerHold: time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		tree := dump(t, r554)
		if v := tree[root+"key_generate_strategies/t_order_order_id/versions/0"]; !strings.Contains(v, "keyGenerateColumn: order_id") || !strings.Contains(v, "keyGenerateType: column") {
			t.Fatalf("5.5.4 key generate strategy = %q", v)
		}
		if v := tree[root+"tables/t_order/versions/0"]; strings.Contains(v, "keyGenerateStrategy") {
			t.Fatalf("5.5.4 table kept keyGenerateStrategy:\n%s", v)
		}
		out, err := Export(loadSnapshot(ctx, t, r554), "sharding_db")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), "keyGenerateStrategies:") {
			t.Fatalf("the 5.5.4 export has no keyGenerateStrategies:\n%s", out)
		}
		out = bytes.Replace(out, []byte("databaseName: sharding_db"), []byte("databaseName: copy_db"), 1)
		if _, err := Import(ctx, r553, "export", out, Options{Layout: paths.Layout553, ListenerHold: time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		tree = dump(t, r553)
		if v := tree[root553+"tables/t_order/versions/0"]; !strings.Contains(v, "keyGenerateStrategy:\n  column: order_id\n  keyGeneratorName: snowflake\n") {
			t.Fatalf("5.5.3 table:\n%s", v)
		}
		for k := range tree {
			if strings.HasPrefix(k, root553) && strings.Contains(k, "key_generate_strategies") {
				t.Fatalf("5.5.3 registry holds %s", k)
			}
		}
		// A sequence strategy has no place in 5.5.3: refused, nothing written.
		seq := strings.Replace(string(configYAML(dir, "seq_db", "")), "  keyGenerators:", "  keyGenerateStrategies:\n    order_seq:\n      keyGenerateType: sequence\n      keyGeneratorName: snowflake\n      keyGenerateSequence: seq_order\n  keyGenerators:", 1)
		before := dump(t, r553)
		if _, err := Import(ctx, r553, "seq", []byte(seq), Options{Layout: paths.Layout553, ListenerHold: time.Millisecond}); err == nil || !strings.Contains(err.Error(), "order_seq") {
			t.Fatalf("sequence strategy into 5.5.3: %v", err)
		}
		if after := dump(t, r553); !reflect.DeepEqual(before, after) {
			t.Fatal("the refused import wrote to the registry")
		}
		// 5.5.4 refuses a database name upstream's validator refuses.
		if _, err := Import(ctx, r554, "bad", configYAML(dir, "2nd-db", ""), Options{Layout: paths.Layout554, ListenerHold: time.Millisecond}); err == nil {
			t.Fatal("5.5.4 imported database 2nd-db")
		}
	})
}

func mustKey(k string, err error) string {
	if err != nil {
		panic(err)
	}
	return k
}

// A failed import leaves the registry byte-identical: refused by its
// checks (an error in the last rule, a unit that does not connect), and
// failed half-way through several transactions (rolled back).
func TestFailedImportLeavesRegistryAsItWas(t *testing.T) {
	realtest.Each(t, "sk_dbconfig_", func(t *testing.T, open func(t testing.TB) registry.Repository) {
		ctx := testenv.Context(t)
		repo, dir := open(t), t.TempDir()
		seed(t, repo, dir)
		before := dump(t, repo)

		_, err := Import(ctx, repo, "bad.yaml", configYAML(dir, "sharding_db", badLastRule), Options{})
		var e *sqlerr.Error
		if !errors.As(err, &e) || e.Code != 10102 || !strings.Contains(e.Message, "ds_9") {
			t.Fatalf("import with a bad last rule: %v", err)
		}
		if after := dump(t, repo); !reflect.DeepEqual(before, after) {
			t.Fatalf("a refused import changed the registry:\nbefore %v\nafter  %v", before, after)
		}

		// A mask algorithm whose props upstream's init refuses: an
		// upstream node could not build the rule.
		badMask := "- !MASK\n  maskAlgorithms:\n    phone_mask:\n      type: KEEP_FIRST_N_LAST_M\n      props:\n        last-m: 4\n        replace-char: '*'\n" +
			"  tables:\n    t_user:\n      columns:\n        phone:\n          maskAlgorithm: phone_mask\n"
		_, err = Import(ctx, repo, "bad_mask.yaml", configYAML(dir, "sharding_db", badMask), Options{})
		if !errors.As(err, &e) || e.Code != 10400 || e.Message != "mask algorithm 'phone_mask' of database 'sharding_db': Algorithm 'KeepFirstNLastMMaskAlgorithm' initialization failed, reason is: first-n is required." {
			t.Fatalf("import with a bad mask algorithm: %v", err)
		}
		if after := dump(t, repo); !reflect.DeepEqual(before, after) {
			t.Fatalf("a refused import changed the registry:\nbefore %v\nafter  %v", before, after)
		}

		unreachable := strings.Replace(string(configYAML(dir, "sharding_db", "")), "jdbc:sqlite:"+filepath.Join(dir, "ds1.db"), "jdbc:mysql://127.0.0.1:1/nothing", 1)
		testenv.TCPRefused(t, "127.0.0.1:1")
		_, err = Import(ctx, repo, "unreachable.yaml", []byte(unreachable), Options{})
		if !errors.As(err, &e) || e.Code != 10110 || !strings.Contains(e.Message, "ds_1") {
			t.Fatalf("import with a unit that does not connect: %v", err)
		}
		if after := dump(t, repo); !reflect.DeepEqual(before, after) {
			t.Fatal("an import refused for a unit changed the registry")
		}

		// Valid, but written in transactions of 4 keys, the third of which
		// (the fourth commit, after the import's mark) fails: the first two
		// are rolled back, and the mark is removed (the fifth).
		var commits atomic.Int32
		faulty := fault.Wrap(repo, func(op, key string) fault.Action {
			if op == "commit" && commits.Add(1) == 4 {
				return fault.Action{Err: registry.ErrUnavailable}
			}
			return fault.Action{}
		})
		sess, err := faulty.NewSession(ctx, registry.SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer sess.Close(ctx)
		_, err = Import(ctx, repo, "big.yaml", configYAML(dir, "sharding_db", ""), Options{Session: sess, MaxTxnKeys: 5})
		if !errors.Is(err, registry.ErrUnavailable) || commits.Load() != 5 {
			t.Fatalf("import failing in its third transaction: %v (%d commits)", err, commits.Load())
		}
		if after := dump(t, repo); !reflect.DeepEqual(before, after) {
			t.Fatalf("a rolled-back import changed the registry:\nbefore %v\nafter  %v", before, after)
		}

		// The same in several transactions without a fault succeeds.
		res, err := Import(ctx, repo, "big.yaml", configYAML(dir, "sharding_db", ""), Options{MaxTxnKeys: 5, ListenerHold: time.Millisecond})
		if err != nil || res.Transactions < 3 {
			t.Fatalf("import in small transactions: %+v, %v", res, err)
		}
	})
}

// manyTables is n sharding tables t_0, t_1, ... of a rule's YAML, each
// with actualDataNodes nodes.
func manyTables(n int, nodes string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "    t_%d:\n      actualDataNodes: %s\n", i, nodes)
	}
	return b.String()
}

// TestCheckRulesStopsWhenCancelled: the checks of a statement whose
// context is cancelled (KILL, or its client gone) stop and answer
// context.Canceled, for a rule within the bounds (100,000 names in ten
// tables, data nodes and auto tables' storage units alike), where the
// same rule checked live passes.
func TestCheckRulesStopsWhenCancelled(t *testing.T) {
	var auto strings.Builder
	for i := range 10 {
		fmt.Fprintf(&auto, "    a_%d:\n      actualDataSources: ds_${0..1},u_${0..9997}\n", i)
	}
	units := "  ds_0:\n    url: jdbc:sqlite:/x\n  ds_1:\n    url: jdbc:sqlite:/y\n"
	for i := range 9998 {
		units += fmt.Sprintf("  u_%d:\n    url: jdbc:sqlite:/u\n", i)
	}
	for _, tc := range []struct{ name, rule string }{
		{"data nodes", "- !SHARDING\n  tables:\n" + manyTables(10, "ds_${0..1}.t_${0..4999}")},
		{"storage units", "- !SHARDING\n  autoTables:\n" + auto.String()},
	} {
		db, err := config.ParseDatabase(tc.name, fmt.Appendf(nil, "databaseName: d\ndataSources:\n%srules:\n%s", units, tc.rule))
		if err != nil {
			t.Fatal(err)
		}
		if errs, err := checkRules(context.Background(), *db); len(errs) > 0 || err != nil {
			t.Fatalf("%s, live: %v %v", tc.name, errs, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if errs, err := checkRules(ctx, *db); !errors.Is(err, context.Canceled) || errs != nil {
			t.Errorf("%s, cancelled: %v %v, want context.Canceled and no problems", tc.name, errs, err)
		}
		if errs, err := CheckChange(ctx, *db, RuleChange{Type: "sharding"}); !errors.Is(err, context.Canceled) || errs != nil {
			t.Errorf("%s, cancelled change: %v %v, want context.Canceled and no problems", tc.name, errs, err)
		}
	}
}

func TestCheckRules(t *testing.T) {
	for _, tc := range []struct {
		name, rule string
		code       uint16
		want       string
	}{
		{"unknown algorithm type", "- !SHARDING\n  shardingAlgorithms:\n    a:\n      type: NO_SUCH\n", 10404, "NO_SUCH"},
		{"unregistered algorithm", "- !SHARDING\n  defaultTableStrategy:\n    standard:\n      shardingColumn: id\n      shardingAlgorithmName: missing\n", 10402, "missing"},
		{"unknown unit", "- !SHARDING\n  tables:\n    t:\n      actualDataNodes: ds_${0..2}.t\n", 10102, "ds_2"},
		{"listed units", "- !SHARDING\n  autoTables:\n    t:\n      actualDataSources: ds_0, ds_${['1','x']}\n", 10102, "ds_x"},
		// upstream's $->{} spelling (it panicked): expanded as ${}.
		{"upstream spelling", "- !SHARDING\n  tables:\n    t:\n      actualDataNodes: ds_$->{0..2}.t_ss_$->{0..1}\n", 10102, "'[ds_2]'"},
		{"upstream spelling of units", "- !SHARDING\n  autoTables:\n    t:\n      actualDataSources: ds_$->{[1, 'y']}\n", 10102, "'[ds_y]'"},
		// The bounds, counted before a name is built.
		{"one expression", "- !SHARDING\n  tables:\n    t:\n      actualDataNodes: u0_${0..9999}.t,u1_${0..9999}.t\n", 10200, "more than 10000 names"},
		{"one rule", "- !SHARDING\n  tables:\n" + manyTables(11, "ds_${0..1}.t_${0..4999}"), 10200, "more than 100000 names, the most one rule may"},
		{"unregistered key generator", "- !SHARDING\n  tables:\n    t:\n      actualDataNodes: ds_0.t\n      keyGenerateStrategy:\n        column: id\n        keyGeneratorName: kg\n", 10402, "kg"},
		{"unregistered mask algorithm", "- !MASK\n  maskAlgorithms:\n    md5:\n      type: MD5\n  tables:\n    t:\n      columns:\n        a:\n          maskAlgorithm: md5\n        b:\n          maskAlgorithm: gone\n", 10402, "'Mask' algorithm 'gone' on d.t.b is unregistered."},
		{"bad mask props", "- !MASK\n  maskAlgorithms:\n    m:\n      type: MASK_FROM_X_TO_Y\n      props:\n        from-x: 3\n        to-y: 2\n        replace-char: '*'\n", 10400,
			"mask algorithm 'm' of database 'd': Algorithm 'MaskFromXToYMaskAlgorithm' initialization failed, reason is: fromX must be less than or equal to toY."},
		{"bad encryptor props", "- !ENCRYPT\n  encryptors:\n    like:\n      type: CHAR_DIGEST_LIKE\n      props:\n        delta: x\n", 10400,
			"encrypt algorithm 'like' of database 'd': Algorithm 'CharDigestLikeEncryptAlgorithm' initialization failed, reason is: delta can only be a decimal number."},
		{"unregistered encryptor", "- !ENCRYPT\n  encryptors:\n    aes:\n      type: AES\n      props:\n        aes-key-value: k\n        digest-algorithm-name: SHA-1\n  tables:\n    t:\n      columns:\n        a:\n          cipher:\n            name: a_c\n            encryptorName: aes\n          likeQuery:\n            name: a_l\n            encryptorName: like\n", 10402, "'Like query encrypt' algorithm 'like' on d.t.a is unregistered."},
	} {
		db, err := config.ParseDatabase(tc.name, fmt.Appendf(nil, "databaseName: d\ndataSources:\n  ds_0:\n    url: jdbc:sqlite:/x\n  ds_1:\n    url: jdbc:sqlite:/y\nrules:\n%s", tc.rule))
		if err != nil {
			t.Fatal(err)
		}
		errs, _ := checkRules(context.Background(), *db)
		if len(errs) == 0 || errs[0].Code != tc.code || !strings.Contains(errs[0].Message, tc.want) {
			t.Errorf("%s: %v, want %d naming %s", tc.name, errs, tc.code, tc.want)
		}
	}
	for _, rule := range []string{
		"- !SHARDING\n  tables:\n    t:\n      actualDataNodes: ds_$->{0..1}.t_ss_$->{0..1}\n",
		"- !SHARDING\n  tables:\n" + manyTables(10, "ds_${0..1}.t_${0..4999}"), // 100,000: the bound itself
	} {
		db, err := config.ParseDatabase("ok", fmt.Appendf(nil, "databaseName: d\ndataSources:\n  ds_0:\n    url: jdbc:sqlite:/x\n  ds_1:\n    url: jdbc:sqlite:/y\nrules:\n%s", rule))
		if err != nil {
			t.Fatal(err)
		}
		if errs, err := checkRules(context.Background(), *db); len(errs) > 0 || err != nil {
			t.Errorf("%.80s: %v %v", rule, errs, err)
		}
	}
	db, _ := config.ParseDatabase("ok", configYAML("/tmp", "d", ""))
	if errs, err := checkRules(context.Background(), *db); len(errs) > 0 || err != nil {
		t.Errorf("a valid configuration: %v %v", errs, err)
	}
}

// TestFileDir: files only directly in the directory, created exclusively
// at 0600 (an existing file, link or FIFO is never written through or
// replaced), read only when regular, never through a link, never
// blocking on a FIFO; outside it one generic refusal that tells nothing
// about the file.
func TestFileDir(t *testing.T) {
	testFileDir(t, (*FileDir).ReadFile, (*FileDir).WriteFile)
}

// TestFileDirInRoot runs TestFileDir's cases on the os.Root version that
// the platforms without openat use: the same refusals, here too.
func TestFileDirInRoot(t *testing.T) {
	testFileDir(t, (*FileDir).readFileInRoot, (*FileDir).writeFileInRoot)
}

func testFileDir(t *testing.T, read func(*FileDir, context.Context, string) ([]byte, error), write func(*FileDir, string, []byte) error) {
	ctx := testenv.Context(t)
	root := t.TempDir()
	dir, data := filepath.Join(root, "files"), filepath.Join(root, "data")
	for _, d := range []string{dir, data, filepath.Join(data, "member")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []string{data, filepath.Join(data, "member"), root} {
		if _, err := OpenFileDir(bad, data); err == nil {
			t.Fatalf("OpenFileDir(%s) with data dir %s: accepted", bad, data)
		}
	}
	fd, err := OpenFileDir(dir, data)
	if err != nil {
		t.Fatal(err)
	}
	code := func(err error) int {
		var e *sqlerr.Error
		if !errors.As(err, &e) {
			return 0
		}
		return int(e.Code)
	}
	// A new file: 0600 whatever the umask, readable back.
	if err := write(fd, "x.yaml", []byte("databaseName: x\n")); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "x.yaml")
	if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("exported file mode %v, %v", st.Mode(), err)
	}
	if b, err := read(fd, ctx, p); err != nil || string(b) != "databaseName: x\n" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
	// Never overwritten, never written through a link (to a file outside,
	// or dangling), never a second file name in another directory.
	victim := filepath.Join(root, "authorized_keys")
	if err := os.WriteFile(victim, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "new"), filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	if err := mkfifo(filepath.Join(dir, "fifo")); errors.Is(err, errors.ErrUnsupported) {
		t.Skip("no FIFO on this platform")
	} else if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"x.yaml", "link", "dangling", p, "fifo"} {
		if err := write(fd, name, []byte("evil\n")); code(err) != 30020 {
			t.Errorf("WriteFile(%s): %v", name, err)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep\n" {
		t.Fatalf("the link's target was written: %q", b)
	}
	if _, err := os.Lstat(filepath.Join(root, "new")); err == nil {
		t.Fatal("a dangling link's target was created")
	}
	if b, _ := os.ReadFile(p); string(b) != "databaseName: x\n" {
		t.Fatalf("an existing file was overwritten: %q", b)
	}
	// Reads: no link, no FIFO (answered at once), nothing outside.
	done := make(chan error, 1)
	go func() { _, err := read(fd, ctx, "fifo"); done <- err }()
	select {
	case err := <-done:
		if code(err) != 30020 || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("FIFO: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading a FIFO blocked")
	}
	if _, err := read(fd, ctx, "link"); code(err) != 30020 {
		t.Fatalf("link: %v", err)
	}
	secret := filepath.Join(root, "secret.yaml")
	if err := os.WriteFile(secret, []byte("ssh-ed25519 AAAA key: value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{secret, "../secret.yaml", filepath.Join(dir, "..", "secret.yaml"), "/proc/kmsg", filepath.Join(data, "member")} {
		_, err := read(fd, ctx, path)
		if code(err) != 30020 || strings.Contains(err.Error(), "ssh") || strings.Contains(err.Error(), "key") || strings.Contains(err.Error(), "no such") {
			t.Errorf("ReadFile(%s): %v", path, err)
		}
	}
	// Without a directory: every path refused, the same way.
	var none *FileDir
	if _, err := read(none, ctx, p); code(err) != 30020 || !strings.Contains(err.Error(), "--distsql-file-dir") {
		t.Fatalf("no dir: %v", err)
	}
	if err := write(none, filepath.Join(dir, "y"), nil); code(err) != 30020 {
		t.Fatalf("no dir: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".shardkeeper-*")); len(left) > 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// A database bigger than one transaction allows (etcd's 128 operations)
// is imported with the default limits in several transactions.
func TestImportBigDatabase(t *testing.T) {
	realtest.Each(t, "sk_dbconfig_", func(t *testing.T, open func(t testing.TB) registry.Repository) {
		ctx := testenv.Context(t)
		repo, dir := open(t), t.TempDir()
		var b strings.Builder
		b.WriteString(strings.TrimSuffix(string(configYAML(dir, "big_db", "")), "\n"))
		b.WriteString("\n- !SINGLE\n  tables:\n")
		for i := range 300 {
			fmt.Fprintf(&b, "  - ds_%d.t_single_%d\n", i%2, i)
		}
		b.WriteString("- !ENCRYPT\n  tables:\n")
		for i := range 150 {
			fmt.Fprintf(&b, "    t_user_%d:\n      columns:\n        pwd:\n          cipher:\n            name: pwd_cipher\n            encryptorName: aes\n", i)
		}
		b.WriteString("  encryptors:\n    aes:\n      type: AES\n      props:\n        aes-key-value: \"123456abc\"\n        digest-algorithm-name: SHA-1\n")
		res, err := Import(ctx, repo, "big.yaml", []byte(b.String()), Options{ListenerHold: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if res.Transactions < 3 {
			t.Fatalf("%d keys in %d transactions", res.Keys, res.Transactions)
		}
		d := loadSnapshot(ctx, t, repo).Databases["big_db"]
		if d == nil || len(rule.Map(d.Rules["encrypt"].Content["tables"])) != 150 {
			t.Fatalf("big_db after import: %v", d)
		}
		t.Logf("%d keys in %d transactions", res.Keys, res.Transactions)
	})
}

// TestPropsBoundEveryAlgorithm: an algorithm of every kind, and a global
// rule, with more props than rule.MaxAlgorithmProps is refused with 10200
// naming the bound and where (an IMPORT, a conf or an item another node
// wrote reaches checkRules with any of them); at the bound it passes.
func TestPropsBoundEveryAlgorithm(t *testing.T) {
	props := func(indent string, n int) string {
		var b strings.Builder
		b.WriteString(indent + "props:\n")
		for i := range n {
			fmt.Fprintf(&b, "%s  p%d: v\n", indent, i)
		}
		return b.String()
	}
	for _, tc := range []struct {
		kind, where string
		rule        func(props string) string
	}{
		{"sharding algorithm", "shardingAlgorithms.a", func(p string) string {
			return "- !SHARDING\n  shardingAlgorithms:\n    a:\n      type: MOD\n" + p
		}},
		{"key generator", "keyGenerators.kg", func(p string) string {
			return "- !SHARDING\n  keyGenerators:\n    kg:\n      type: SNOWFLAKE\n" + p
		}},
		{"auditor", "auditors.au", func(p string) string {
			return "- !SHARDING\n  auditors:\n    au:\n      type: DML_SHARDING_CONDITIONS\n" + p
		}},
		{"readwrite-splitting load balancer", "loadBalancers.lb", func(p string) string {
			return "- !READWRITE_SPLITTING\n  dataSourceGroups:\n    rw:\n      writeDataSourceName: ds_0\n      readDataSourceNames:\n      - ds_1\n      loadBalancerName: lb\n  loadBalancers:\n    lb:\n      type: RANDOM\n" + p
		}},
		{"shadow algorithm", "shadowAlgorithms.hint", func(p string) string {
			return "- !SHADOW\n  dataSources:\n    sd:\n      productionDataSourceName: ds_0\n      shadowDataSourceName: ds_1\n  shadowAlgorithms:\n    hint:\n      type: SQL_HINT\n" + p
		}},
		{"mask algorithm", "maskAlgorithms.m", func(p string) string {
			return "- !MASK\n  maskAlgorithms:\n    m:\n      type: MD5\n" + p
		}},
		{"encrypt algorithm", "encryptors.e", func(p string) string {
			return "- !ENCRYPT\n  encryptors:\n    e:\n      type: MD5\n" + p
		}},
	} {
		parse := func(n int) config.Database {
			db, err := config.ParseDatabase(tc.kind, fmt.Appendf(nil, "databaseName: d\ndataSources:\n  ds_0:\n    url: jdbc:sqlite:/x\n  ds_1:\n    url: jdbc:sqlite:/y\nrules:\n%s", tc.rule(props("      ", n))))
			if err != nil {
				t.Fatalf("%s: %v", tc.kind, err)
			}
			return *db
		}
		errs, _ := checkRules(context.Background(), parse(rule.MaxAlgorithmProps+1))
		if len(errs) == 0 || errs[0].Code != 10200 || !strings.Contains(errs[0].Message, "the props of '"+tc.where+"' hold 1001 entries, more than the 1000 one algorithm may have") {
			t.Errorf("%s with 1,001 props: %v, want 10200 naming %s and the bound", tc.kind, errs, tc.where)
		}
		if errs, _ := checkRules(context.Background(), parse(rule.MaxAlgorithmProps)); len(errs) > 0 {
			t.Errorf("%s with 1,000 props: %v", tc.kind, errs)
		}
	}
}
