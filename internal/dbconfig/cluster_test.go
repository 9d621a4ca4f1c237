package dbconfig

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/realtest"
)

func TestExportImportMetadata(t *testing.T) {
	realtest.EachFresh(t, "sk_dbconfig_", func(t *testing.T, fresh func() registry.Repository) {
		ctx := testenv.Context(t)
		src, dir := fresh(), t.TempDir()
		seed(t, src, dir)
		if _, err := Import(ctx, src, "s", configYAML(dir, "sharding_db", ""), Options{ListenerHold: time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		if err := metadatatest.AlterGlobalRule(ctx, src, config.Rule{Type: "transaction", Content: map[string]any{"defaultType": "XA", "providerType": "Atomikos"}}); err != nil {
			t.Fatal(err)
		}
		a := loadSnapshot(ctx, t, src)
		out, err := ExportMetadata(a)
		if err != nil {
			t.Fatal(err)
		}
		var info map[string]map[string]any
		if err := json.Unmarshal(out, &info); err != nil || info["meta_data"]["databases"] == nil || !strings.HasPrefix(info["meta_data"]["props"].(string), "props:\n") || !strings.HasPrefix(info["meta_data"]["rules"].(string), "rules:\n- !TRANSACTION") {
			t.Fatalf("cluster_info is not upstream's shape (%v):\n%s", err, out)
		}
		data, err := DecodeMetadata(base64.StdEncoding.EncodeToString(out))
		if err != nil {
			t.Fatal(err)
		}

		dst := fresh()
		if err := metadata.SetProps(ctx, dst, map[string]string{"sql-simple": "true"}); err != nil {
			t.Fatal(err)
		}
		names, err := ImportMetadata(ctx, dst, data, Options{ListenerHold: time.Millisecond})
		if err != nil || !reflect.DeepEqual(names, []string{"other_db", "sharding_db"}) {
			t.Fatalf("ImportMetadata = %v, %v", names, err)
		}
		b := loadSnapshot(ctx, t, dst)
		if !maps.Equal(a.Props, b.Props) || !reflect.DeepEqual(a.GlobalRules, b.GlobalRules) {
			t.Fatalf("props %v / %v, rules %v / %v", a.Props, b.Props, a.GlobalRules, b.GlobalRules)
		}
		for name, db := range a.Databases {
			got := b.Databases[name]
			if got == nil || !reflect.DeepEqual(db.Rules, got.Rules) || len(db.Units) != len(got.Units) {
				t.Fatalf("database %s: imported %+v, exported %+v", name, got, db)
			}
			for u, ds := range db.Units {
				if !ds.Equal(got.Units[u]) {
					t.Fatalf("unit %s.%s differs", name, u)
				}
			}
		}

		// An error in the last database's rules: nothing is written, the
		// props included.
		other := fresh()
		if err := metadata.SetProps(ctx, other, map[string]string{"sql-simple": "true"}); err != nil {
			t.Fatal(err)
		}
		before := dump(t, other)
		info2 := ClusterInfo{}
		if err := json.Unmarshal(data, &info2); err != nil {
			t.Fatal(err)
		}
		info2.MetaData.Databases["zz_db"] = string(configYAML(dir, "zz_db", badLastRule))
		bad, _ := json.Marshal(info2)
		_, err = ImportMetadata(ctx, other, bad, Options{})
		var e *sqlerr.Error
		if !errors.As(err, &e) || e.Code != 10102 {
			t.Fatalf("import of metadata with a bad rule: %v", err)
		}
		if after := dump(t, other); !reflect.DeepEqual(before, after) {
			t.Fatalf("a refused metadata import changed the registry:\nbefore %v\nafter  %v", before, after)
		}
		if _, err := DecodeMetadata("not base64!"); !errors.As(err, &e) || e.Code != 30001 {
			t.Fatalf("bad Base64: %v", err)
		}
	})
}
