package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/cluster"
	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/datasource"
	"github.com/shardkeeper/shardkeeper/internal/metadata"
	"github.com/shardkeeper/shardkeeper/internal/metadata/metadatatest"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
)

// TestAdminOnRegistry runs the --conf paths against real etcd and
// ZooKeeper with a real node online.
func TestAdminOnRegistry(t *testing.T) {
	for _, reg := range realRegistries(t) {
		t.Run(reg.name, func(t *testing.T) { adminOnRegistry(t, reg) })
	}
}

func adminOnRegistry(t *testing.T, reg realRegistry) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conf := clusterConf(t, reg, "sk_admin_", "", nil)
	repo := openConf(ctx, t, conf, "/nodes", "/reservation", "/metadata", "/props")
	node, err := cluster.Open(ctx, repo, cluster.Config{InstanceID: "admin-test", Port: 3399,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = node.Close(context.Background())
		}
	}()
	db := config.Database{Name: "sharding_db", DataSources: map[string]config.DataSource{
		"ds_0": config.NewDataSource("jdbc:postgresql://127.0.0.1:5432/demo_ds_0", "postgres", "hunter2"),
	}}
	if err := metadatatest.CreateDatabase(ctx, repo, paths.DefaultLayout, db); err != nil {
		t.Fatal(err)
	}
	if err := metadata.PersistSchemas(ctx, repo, paths.DefaultLayout, "sharding_db", []datasource.Schema{{Name: "public",
		Tables: map[string]datasource.Table{"t_order": {Name: "t_order", Columns: []datasource.Column{{Name: "order_id", DataType: 4, TypeName: "int4"}}}}}}); err != nil {
		t.Fatal(err)
	}

	cli := cliExpect(t, "--conf", conf)
	wid := strconv.Itoa(node.WorkerID())
	cli(0, "admin-test   PROXY           127.0.0.1   3399   OK       Cluster     "+wid, "nodes", "list")
	cli(0, `"worker_id": `+wid, "nodes", "show", "admin-test", "-o", "json")
	cli(1, `compute node "nobody" is not online`, "nodes", "show", "nobody")
	cli(2, "nodes show needs an INSTANCE_ID", "nodes", "show")
	cli(0, "compute node admin-test disabled (status CIRCUIT_BREAK)", "nodes", "disable", "admin-test")
	cli(0, "CIRCUIT_BREAK", "nodes", "list")
	cli(1, "Unsupported SQL operation: `admin-test` compute node has been disabled. (code 30001)", "nodes", "disable", "admin-test")
	cli(1, "Unsupported SQL operation: `nobody` does not exist. (code 30001)", "nodes", "disable", "nobody")
	cli(0, "compute node admin-test enabled (status OK)", "nodes", "enable", "admin-test")
	cli(0, "status: OK", "nodes", "show", "admin-test", "-o", "yaml")

	cli(0, "sql_show                                          false", "props", "get")
	cli(0, "sql_show = true", "props", "set", "sql_show", "TRUE")
	cli(0, "proxy_frontend_max_connections = 10", "props", "set", "proxy_frontend_max_connections", "10")
	cli(1, "Can not support variable 'proxy-frontend-max-connections'. (code 12010", "props", "set", "proxy-frontend-max-connections", "10")
	cli(0, `"variable_value": "true"`, "props", "get", "SQL_SHOW", "-o", "json")
	cli(1, "Invalid variable value 'lots'. (code 12011", "props", "set", "kernel_executor_size", "lots")
	cli(1, "Can not support variable 'worker_id'. (code 12010", "props", "set", "worker_id", "1")
	snap, err := metadata.Load(ctx, repo, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := snap.Current().Props; p["sql-show"] != "true" || p["proxy-frontend-max-connections"] != "10" {
		t.Fatalf("registry props after set: %v", p)
	}

	cli(0, "sharding_db   1               1", "databases", "list")
	out := cli(0, "ds_0   PostgreSQL   127.0.0.1   5432   demo_ds_0", "databases", "show", "sharding_db")
	if !strings.Contains(strings.Join(strings.Fields(out), " "), "public t_order TABLE") {
		t.Fatalf("databases show:\n%s", out)
	}
	out = cli(0, `"password": "******"`, "databases", "show", "sharding_db", "-o", "json")
	if strings.Contains(out, "hunter2") {
		t.Fatalf("password shown:\n%s", out)
	}
	cli(1, "Unknown database 'nope'.", "databases", "show", "nope")
	cli(2, "keys next needs a running node", "keys", "next")

	// The status written by disable/enable still belongs to the node: it
	// goes away when the node leaves.
	status, _ := paths.Status("admin-test")
	if _, err := repo.Get(ctx, status); err != nil {
		t.Fatal(err)
	}
	closed = true
	if err := node.Close(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := repo.Get(ctx, status)
		if errors.Is(err, registry.ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status node outlived its node after disable/enable: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	cli(0, "instance_id   instance_type", "nodes", "list")
}
