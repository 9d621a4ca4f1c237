package metadata

import (
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/shardkeeper/shardkeeper/internal/datasource"
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
