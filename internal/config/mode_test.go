package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/paths"
)

func TestLoadModeShardingSphereExample(t *testing.T) {
	m, err := LoadMode(t.Context(), shardingSphereConf(t))
	if err != nil {
		t.Fatal(err)
	}
	r := m.Repository
	if m.Type != ModeCluster || r.Type != RepositoryZooKeeper || r.Namespace != "governance_ds_o8" ||
		strings.Join(r.ServerLists, ",") != "localhost:2181" || r.TimeToLive != 60*time.Second ||
		r.RetryInterval != 500*time.Millisecond || r.MaxRetries != 3 || r.OperationTimeout != 500*time.Millisecond {
		t.Fatalf("mode = %+v", m)
	}
}

func TestParseModeDefaults(t *testing.T) {
	for _, doc := range []string{"", "props:\n  sql-show: true\n", "mode:\n"} {
		m, err := ParseMode("global.yaml", []byte(doc))
		if err != nil {
			t.Fatalf("%q: %v", doc, err)
		}
		if !reflect.DeepEqual(m, DefaultMode()) {
			t.Fatalf("%q: mode = %+v, want the default", doc, m)
		}
	}
	m, err := ParseMode("g.yaml", []byte("mode:\n  type: Cluster\n  repository:\n    type: ETCD\n    props:\n      namespace: ns\n      server-lists: http://127.0.0.1:2379, http://127.0.0.2:2379\n"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Repository.Type != RepositoryEtcd || m.Repository.TimeToLive != DefaultEtcdTTL || len(m.Repository.ServerLists) != 2 {
		t.Fatalf("etcd mode = %+v", m)
	}
}

func TestParseModeReportsEveryProblemWithLine(t *testing.T) {
	doc := `mode:
  type: Clustr
  repository:
    type: Consul
    props:
      namespace: ../escape
      timeToLiveSeconds: soon
      maxRetries: -1
      color: blue
`
	_, err := ParseMode("conf/global.yaml", []byte(doc))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"conf/global.yaml:2: mode.type: \"Clustr\" is not a mode",
		"conf/global.yaml:4: mode.repository.type: \"Consul\" is not a repository type",
		"conf/global.yaml:6: mode.repository.props.namespace: must not contain \"..\"",
		"conf/global.yaml:7: mode.repository.props.timeToLiveSeconds: \"soon\" must be an integer",
		"conf/global.yaml:8: mode.repository.props.maxRetries",
		"conf/global.yaml:9: mode.repository.props.color: unknown repository prop",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestParseModeClusterNeedsRepository(t *testing.T) {
	_, err := ParseMode("global.yaml", []byte("mode:\n  type: Cluster\n"))
	if err == nil || !strings.Contains(err.Error(), "Cluster persist repository configuration is required.") {
		t.Fatalf("err = %v", err)
	}
	_, err = ParseMode("global.yaml", []byte("mode:\n  type: Cluster\n  repository:\n    type: ZooKeeper\n    props:\n      namespace: ns\n"))
	if err == nil || !strings.Contains(err.Error(), "global.yaml:6: mode.repository.props.server-lists: required") {
		t.Fatalf("err = %v", err)
	}
	_, err = ParseMode("global.yaml", []byte("mode:\n  type: Cluster\n  repository:\n    type: etcd\n    props:\n      namespace: ns\n      server-lists: 127.0.0.1:2379\n"))
	if err == nil || !strings.Contains(err.Error(), "must be a URL such as http://127.0.0.1:2379") {
		t.Fatalf("err = %v", err)
	}
}

func TestFindGlobalFileFallsBackToServerYAML(t *testing.T) {
	dir := t.TempDir()
	if _, err := FindGlobalFile(dir); err == nil || !strings.Contains(err.Error(), "neither global.yaml nor server.yaml") {
		t.Fatalf("empty dir: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "server.yaml"), []byte("mode:\n  type: Standalone\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := FindGlobalFile(dir)
	if err != nil || filepath.Base(p) != "server.yaml" {
		t.Fatalf("FindGlobalFile = %s, %v", p, err)
	}
}

func TestParseModeBadYAML(t *testing.T) {
	_, err := ParseMode("global.yaml", []byte("mode:\n  type: [unclosed\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "global.yaml: yaml: line") {
		t.Fatalf("err = %v", err)
	}
}

func TestRepositoryFromFlags(t *testing.T) {
	r, err := RepositoryFromFlags("zookeeper", map[string]string{"namespace": "ns", "server-lists": "127.0.0.1:2181"})
	if err != nil || r.Type != RepositoryZooKeeper || r.Namespace != "ns" || r.TimeToLive != DefaultZooKeeperTTL {
		t.Fatalf("RepositoryFromFlags = %+v, %v", r, err)
	}
	_, err = RepositoryFromFlags("etcd", map[string]string{"namespace": "ns"})
	if err == nil || !strings.Contains(err.Error(), "--server-lists: required") {
		t.Fatalf("err = %v", err)
	}
	_, err = RepositoryFromFlags("mysql", map[string]string{"namespace": "ns", "server-lists": "x:1"})
	if err == nil || !strings.Contains(err.Error(), `--repository-type: "mysql" is not a repository type`) {
		t.Fatalf("err = %v", err)
	}
}

func TestParseModeLayoutVersion(t *testing.T) {
	doc := "mode:\n  type: Cluster\n  repository:\n    type: etcd\n    props:\n      namespace: ns\n      server-lists: http://127.0.0.1:2379\n"
	m, err := ParseMode("g.yaml", []byte(doc))
	if err != nil || m.Repository.Layout != paths.DefaultLayout || m.Repository.Layout.String() != "5.5.4" || m.Repository.LayoutSet {
		t.Fatalf("default layout = %v, %v", m.Repository.Layout, err)
	}
	m, err = ParseMode("g.yaml", []byte(doc+"      layoutVersion: 5.5.2\n"))
	if err != nil || m.Repository.Layout != paths.Layout552 {
		t.Fatalf("5.5.2 layout = %v, %v", m.Repository.Layout, err)
	}
	_, err = ParseMode("g.yaml", []byte(doc+"      layoutVersion: 5.4.1\n"))
	if err == nil || !strings.Contains(err.Error(), "g.yaml:8: mode.repository.props.layoutVersion") {
		t.Fatalf("err = %v", err)
	}
}

// TestConnectionPropsRefusedOnEmbedded: the retry and timeout props act
// on a connection to etcd or ZooKeeper; the embedded etcd has none, so
// setting them there is an error at their line, not a value shown and
// ignored.
func TestConnectionPropsRefusedOnEmbedded(t *testing.T) {
	doc := `mode:
  type: Standalone
  repository:
    type: Embedded
    props:
      dataDir: data
      retryIntervalMilliseconds: 500
      maxRetries: 3
      operationTimeoutMilliseconds: 500
`
	if r := DefaultMode().Repository; r.RetryInterval != 0 || r.MaxRetries != 0 || r.OperationTimeout != 0 {
		t.Errorf("the default Embedded repository carries connection props that cannot act (and would be shown): %+v", r)
	}
	_, err := ParseMode("conf/global.yaml", []byte(doc))
	for _, want := range []string{
		"conf/global.yaml:7: mode.repository.props.retryIntervalMilliseconds: has no effect on the Embedded repository",
		"conf/global.yaml:8: mode.repository.props.maxRetries: has no effect",
		"conf/global.yaml:9: mode.repository.props.operationTimeoutMilliseconds: has no effect",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	for _, typ := range []string{"etcd", "ZooKeeper"} {
		doc := "mode:\n  type: Cluster\n  repository:\n    type: " + typ + "\n    props:\n      namespace: ns\n      server-lists: " +
			map[string]string{"etcd": "http://127.0.0.1:2379", "ZooKeeper": "127.0.0.1:2181"}[typ] +
			"\n      retryIntervalMilliseconds: 250\n      maxRetries: 5\n      operationTimeoutMilliseconds: 900\n"
		m, err := ParseMode("global.yaml", []byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		if r := m.Repository; r.RetryInterval != 250*time.Millisecond || r.MaxRetries != 5 || r.OperationTimeout != 900*time.Millisecond {
			t.Errorf("%s: %+v", typ, r)
		}
	}
}

// TestMaxRequestBytesProp: maxRequestBytes sets the registry's request
// limit on etcd and ZooKeeper; a value outside [64 KiB, 1 GiB] is refused
// with its line.
func TestMaxRequestBytesProp(t *testing.T) {
	for _, typ := range []string{"etcd", "ZooKeeper"} {
		doc := func(v string) string {
			return "mode:\n  type: Cluster\n  repository:\n    type: " + typ + "\n    props:\n      namespace: ns\n      server-lists: " +
				map[string]string{"etcd": "http://127.0.0.1:2379", "ZooKeeper": "127.0.0.1:2181"}[typ] +
				"\n      maxRequestBytes: " + v + "\n"
		}
		m, err := ParseMode("global.yaml", []byte(doc("4194304")))
		if err != nil || m.Repository.MaxRequestBytes != 4<<20 {
			t.Fatalf("%s: maxRequestBytes 4194304: %+v %v", typ, m.Repository, err)
		}
		for _, bad := range []string{"0", "-1", "1000", "x"} {
			if _, err := ParseMode("global.yaml", []byte(doc(bad))); err == nil || !strings.Contains(err.Error(), "global.yaml:8: mode.repository.props.maxRequestBytes") {
				t.Errorf("%s: maxRequestBytes %s: %v", typ, bad, err)
			}
		}
	}
}
