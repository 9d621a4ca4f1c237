package paths

import (
	"errors"
	"testing"

	"github.com/shardkeeper/shardkeeper/registry"
)

func TestQualifiedDataSource(t *testing.T) {
	p, err := QualifiedDataSource("replica_query_db", "readwrite_ds", "replica_ds_0")
	if err != nil || p != "/nodes/qualified_data_sources/replica_query_db.readwrite_ds.replica_ds_0" {
		t.Fatalf("QualifiedDataSource: %q, %v", p, err)
	}
	db, g, u, is, ok := ParseQualifiedDataSource(p)
	if !is || !ok || db != "replica_query_db" || g != "readwrite_ds" || u != "replica_ds_0" {
		t.Errorf("ParseQualifiedDataSource(%s) = %s %s %s %v %v", p, db, g, u, is, ok)
	}
	for _, names := range [][3]string{{"a.b", "g", "u"}, {"db", "..", "u"}, {"db", "g", "x/y"}, {"db", "", "u"}} {
		if _, err := QualifiedDataSource(names[0], names[1], names[2]); !errors.Is(err, registry.ErrBadKey) {
			t.Errorf("QualifiedDataSource%v: %v, want ErrBadKey", names, err)
		}
	}
	for key, want := range map[string][2]bool{
		"/nodes/qualified_data_sources/a.b":       {true, false},
		"/nodes/qualified_data_sources/a.b.c.d":   {true, false},
		"/nodes/qualified_data_sources/a..c":      {true, false},
		"/nodes/qualified_data_sources/a.b.c/x":   {false, false},
		"/nodes/qualified_data_sources":           {false, false},
		"/nodes/compute_nodes/status/a.b.c":       {false, false},
		"/nodes/qualified_data_sources/db.g.unit": {true, true},
	} {
		if _, _, _, is, ok := ParseQualifiedDataSource(key); is != want[0] || ok != want[1] {
			t.Errorf("ParseQualifiedDataSource(%s): is %v ok %v, want %v", key, is, ok, want)
		}
	}
}

func TestParseStatistics(t *testing.T) {
	for key, want := range map[string]StatisticsKey{
		"/statistics/databases/db":                         {Database: "db"},
		"/statistics/databases/db/schemas/s":               {Database: "db", Schema: "s"},
		"/statistics/databases/db/schemas/s/tables/t":      {Database: "db", Schema: "s", Table: "t"},
		"/statistics/databases/db/schemas/s/tables/t/uk_1": {Database: "db", Schema: "s", Table: "t", Row: "uk_1"},
	} {
		if got, ok := ParseStatistics(key); !ok || got != want {
			t.Errorf("ParseStatistics(%s) = %+v %v, want %+v", key, got, ok, want)
		}
	}
	for _, key := range []string{"/statistics/databases", "/statistics/databases/db/schemas", "/statistics/databases/db/x/s",
		"/statistics/databases/db/schemas/s/tables", "/statistics/databases/db/schemas/s/views/t", "/statistics/databases/db/schemas/s/tables/t/r/x",
		"/statistics/job", "/statistics/databases//schemas/s"} {
		if k, ok := ParseStatistics(key); ok {
			t.Errorf("ParseStatistics(%s) = %+v, want not ok", key, k)
		}
	}
}

func TestListenerValue(t *testing.T) {
	if Layout553.ListenerValue(true) != "CREATE" || Layout553.ListenerValue(false) != "DROP" ||
		Layout552.ListenerValue(true) != "CREATE_DATABASE" || Layout552.ListenerValue(false) != "DROP_DATABASE" {
		t.Error("listener values differ from ShardingSphere's")
	}
}

// FuzzParseState: the parsers of qualified data source and statistics keys
// never panic, and what they accept round-trips.
func FuzzParseState(f *testing.F) {
	for _, s := range []string{"/nodes/qualified_data_sources/a.b.c", "/nodes/qualified_data_sources/..", "/statistics/databases/db/schemas/s/tables/t/r",
		"/statistics/databases//", "/statistics/databases/db/schemas", "/nodes/qualified_data_sources/a.b.c/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if db, g, u, _, ok := ParseQualifiedDataSource(key); ok {
			if p, err := QualifiedDataSource(db, g, u); err == nil && p != key {
				t.Errorf("%q parses as %s %s %s, which builds %q", key, db, g, u, p)
			}
		}
		if k, ok := ParseStatistics(key); ok && k.Database == "" {
			t.Errorf("%q parses without a database: %+v", key, k)
		}
	})
}
