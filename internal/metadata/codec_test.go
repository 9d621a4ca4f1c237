package metadata

import (
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry/memory"
)

func TestTableCodecKeepsNamesThatLookLikeOtherTypes(t *testing.T) {
	tb := datasource.Table{Name: "true", Columns: []datasource.Column{{Name: "123", TypeName: "null", DataType: 4}}, Indexes: []datasource.Index{{Name: "yes", Columns: []string{"1.5", "~"}}}}
	b := encodeTable(tb)
	got, err := decodeTable("true", b)
	if err != nil || got.Name != "true" || got.Columns[0].Name != "123" || got.Columns[0].TypeName != "null" || got.Indexes[0].Columns[1] != "~" {
		t.Fatalf("%s\n%+v %v", b, got, err)
	}
	if !strings.Contains(string(b), "name: \"true\"") {
		t.Fatalf("%s", b)
	}
}

// upstreamUnit is a unit as ShardingSphere writes it
// (DataSourceUnitPersistService with YamlDataSourceConfigurationSwapper's
// swapToMap): every property at the top level, HikariCP's map-valued ones
// included.
const upstreamUnit = `dataSourceClassName: com.zaxxer.hikari.HikariDataSource
url: jdbc:mysql://127.0.0.1:3306/demo_ds_0?useSSL=false
username: root
password: secret
connectionTimeoutMilliseconds: 30000
idleTimeoutMilliseconds: 60000
maxLifetimeMilliseconds: 1800000
maxPoolSize: 50
minPoolSize: 1
readOnly: false
dataSourceProperties:
  cachePrepStmts: true
  prepStmtCacheSize: 250
  nested:
    list: [a, b]
leakDetectionThreshold: 0
poolName: pool-1
initializationFailTimeout: null
`

func TestUnitWithMapValuedPropertiesRoundTrips(t *testing.T) {
	ds, err := decodeUnit("unit ds_0", []byte(upstreamUnit))
	if err != nil {
		t.Fatal(err)
	}
	out := encodeUnit(ds)
	var before, after map[string]any
	if err := yaml.Unmarshal([]byte(upstreamUnit), &before); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(out, &after); err != nil {
		t.Fatal(err)
	}
	// readOnly: false is the default and left out.
	delete(before, "readOnly")
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("rewritten unit differs:\n%s\nwant the properties of\n%s", out, upstreamUnit)
	}
	again, err := decodeUnit("unit ds_0", out)
	if err != nil || !again.Equal(ds) {
		t.Fatalf("read back %v, %v; want %v", again, err, ds)
	}
	// A property changed in code wins over the value read.
	ds.CustomPoolProps["poolName"] = "pool-2"
	if got := ds.Map()["poolName"]; got != "pool-2" {
		t.Fatalf("poolName = %v", got)
	}
}

// upstreamProps is a /props version holding keys this node does not know,
// of every YAML type, next to known ones.
const upstreamProps = `sql-show: false
kernel-executor-size: 16
foo: 3
ratio: 0.5
enabled-somewhere: true
quoted: '3'
list:
- a
- 2
map:
  x: 1
  y: [b]
empty: null
`

func TestSetPropsKeepsUnknownPropsTyped(t *testing.T) {
	ctx := testenv.Context(t)
	repo := memory.New()
	if _, err := putVersioned(ctx, repo, paths.PropsRoot, []byte(upstreamProps)); err != nil {
		t.Fatal(err)
	}
	if err := SetProps(ctx, repo, map[string]string{"sql-show": "TRUE", "foo": "4", "quoted": "5", "new-one": "7"}); err != nil {
		t.Fatal(err)
	}
	av := get(t, repo, paths.ActiveVersion(paths.PropsRoot))
	out := get(t, repo, paths.Version(paths.PropsRoot, atoi([]byte(av))))
	var got, want map[string]any
	if err := yaml.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(upstreamProps), &want); err != nil {
		t.Fatal(err)
	}
	// The changed keys: a known boolean typed, an unknown int stays an
	// int, an unknown string stays a string, a new unknown key is a string.
	want["sql-show"], want["foo"], want["quoted"], want["new-one"] = true, 4, "5", "7"
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("props written back:\n%s\nwant the values of\n%v", out, want)
	}
	s, err := Load(ctx, repo, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	p := s.Current().Props
	if p["foo"] != "4" || p["list"] != "[a, 2]" || p["map"] != "{x: 1, y: [b]}" || p["empty"] != "" || p["sql-show"] != "true" {
		t.Fatalf("loaded props = %v", p)
	}
}

// TestUnitAlteredFromSnapshotKeepsWhatItRead loads a unit ShardingSphere
// wrote, alters one property of the loaded unit and checks that every
// other property is written back with its YAML type.
func TestUnitAlteredFromSnapshotKeepsWhatItRead(t *testing.T) {
	ctx := testenv.Context(t)
	repo := memory.New()
	node, _ := paths.Unit("db", "ds_0")
	if _, err := repo.Put(ctx, "/metadata/db", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := putVersioned(ctx, repo, node, []byte(upstreamUnit)); err != nil {
		t.Fatal(err)
	}
	s, err := Load(ctx, repo, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	ds := s.Current().Databases["db"].Units["ds_0"]
	ds.MaxPoolSize = 20
	if err := AlterUnit(ctx, repo, "db", "ds_0", ds); err != nil {
		t.Fatal(err)
	}
	out := get(t, repo, paths.Version(node, atoi([]byte(get(t, repo, paths.ActiveVersion(node))))))
	var got, want map[string]any
	if err := yaml.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(upstreamUnit), &want); err != nil {
		t.Fatal(err)
	}
	delete(want, "readOnly") // false, the default, is left out
	want["maxPoolSize"] = 20
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("unit written back:\n%s\nwant the values of\n%s", out, upstreamUnit)
	}
}

// TestPropsFromConfigKeepTheirType persists props as the first start does
// (from global.yaml): an unknown "foo: 3" is an int in /props, a list a
// list, and reading them back gives the same props.
func TestPropsFromConfigKeepTheirType(t *testing.T) {
	p := config.Props{"foo": "3", "hosts": "[a, b]", "name": "x", "sql-show": "true"}
	out := encodeProps(p)
	var got map[string]any
	if err := yaml.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"foo": 3, "hosts": []any{"a", "b"}, "name": "x", "sql-show": true}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("/props = %s", out)
	}
	back, err := decodeProps(out)
	if err != nil || !reflect.DeepEqual(back, p) {
		t.Fatalf("read back %v, %v; want %v", back, err, p)
	}
}
