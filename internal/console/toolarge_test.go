package console

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/dbconfig"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/registry/etcd"
	"github.com/shardkeeper/shardkeeper/registry/etcd/etcdtest"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper"
	"github.com/shardkeeper/shardkeeper/registry/zookeeper/zktest"
)

// TestWritesBeyondTheRequestLimit: every statement whose write passes the
// registry's request limit (here maxRequestBytes 64 KiB, on real etcd and
// ZooKeeper) answers the documented refusal, 30001 naming the limit and
// that nothing was written, never 30000; the registry is byte-identical
// afterwards. SET DIST VARIABLE, storage-unit props, a global rule's
// props and an IMPORT each carry a 100 KB value.
func TestWritesBeyondTheRequestLimit(t *testing.T) {
	const limit = 64 << 10
	big := strings.Repeat("x", 100_000)
	run := func(t *testing.T, repo registry.Repository) {
		dir := t.TempDir()
		fileDir, err := dbconfig.OpenFileDir(dir, "")
		if err != nil {
			t.Fatal(err)
		}
		n := startNode(t, repo, "too-large", nil, func(d *Deps) { d.FileDir = fileDir })
		s := newSession()
		exec(t, n, s, "CREATE DATABASE big_db")
		s.Database = "big_db"
		file := filepath.Join(dir, "imported.yaml")
		yaml := fmt.Sprintf("databaseName: imported\ndataSources:\n  ds_0:\n    url: jdbc:sqlite:%s\nrules:\n- !MASK\n  maskAlgorithms:\n    m:\n      type: MD5\n      props:\n        salt: %s\n",
			filepath.Join(dir, "0.db"), big)
		if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		before := dumpAll(t, repo)
		for _, q := range []string{
			"SET DIST VARIABLE proxy_meta_data_collector_cron = '0 0 0 * * " + big + "'",
			fmt.Sprintf("REGISTER STORAGE UNIT ds_big (URL='jdbc:sqlite:%s', USER='', PROPERTIES('note'='%s'))", filepath.Join(dir, "big.db"), big),
			"ALTER TRANSACTION RULE (DEFAULT='XA', TYPE(NAME='Narayana', PROPERTIES('recoveryStoreUser'='" + big + "')))",
			"IMPORT DATABASE CONFIGURATION FROM FILE '" + file + "'",
		} {
			_, err := n.engine.Execute(testenv.Context(t), s, q)
			var e *sqlerr.Error
			if !errors.As(err, &e) {
				t.Errorf("%.60s...: %.300v, want *sqlerr.Error", q, err)
				continue
			}
			if e.Code != 30001 || e.SQLState != "0A000" || !strings.Contains(e.Message, "too large for one registry request") ||
				!strings.Contains(e.Message, "nothing was written") || !strings.Contains(e.Message, "maxRequestBytes") {
				t.Errorf("%.60s...: %d %s %q, want 30001 0A000 naming the request limit", q, e.Code, e.SQLState, e.Message)
			}
		}
		after := dumpAll(t, repo)
		for k, v := range after {
			if w, ok := before[k]; (!ok && v != "") || (ok && w != v) { // ZooKeeper keeps the empty parents IMPORT's mark made
				t.Errorf("refused writes wrote %s (%d bytes)", k, len(v))
			}
		}
		for k := range before {
			if _, ok := after[k]; !ok {
				t.Errorf("refused writes deleted %s", k)
			}
		}
	}
	t.Run("etcd", func(t *testing.T) {
		s := etcdtest.New(t)
		cfg := s.Config(s.Namespace(t, "too-large"))
		cfg.MaxRequestBytes = limit
		repo, err := etcd.Open(testenv.Context(t), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = repo.Close() })
		run(t, repo)
	})
	t.Run("zookeeper", func(t *testing.T) {
		s := zktest.New(t)
		cfg := s.Config(s.Namespace(t, "too-large"))
		cfg.MaxRequestBytes = limit
		repo, err := zookeeper.Open(testenv.Context(t), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = repo.Close() })
		run(t, repo)
	})
}
