package harness

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/httpapi"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/tools/chaos/distsql"
	"github.com/shardkeeper/shardkeeper/tools/chaos/record"
)

// The DistSQL workload's cluster: what the serve nodes are configured
// with and what the clients use.
const (
	consolePort     = 3307
	httpPort        = 8088
	distsqlDB       = "chaos_db"
	distsqlUser     = "root"
	distsqlPass     = "chaos"
	distsqlToken    = "chaos-harness-token-0123456789abcdef"
	distsqlConf     = "conf"
	distsqlUnit     = "ds_0.db"
	distsqlReadUnit = "ds_1.db" // the readwrite-splitting group's read unit
	distsqlClient   = 2         // clients per node
	distsqlRacers   = 6         // clients racing the same change, two per node (distsql.Config.Racers)
)

// DistSQLStatsName is the file, in a DistSQL run's directory, that holds
// what the workload measured (DistSQLStats).
const DistSQLStatsName = "distsql-stats.json"

// DistSQLStats is what a DistSQL run's workload measured after the faults
// stopped; the checker reads it from DistSQLStatsName.
type DistSQLStats struct {
	// Ops is the number of operations recorded.
	Ops int `json:"ops"`
	// Converged is how long after the workload's end (the faults stopped
	// and healed) one round of reads found every node's view equal.
	Converged time.Duration `json:"converged"`
	// Rounds is the number of read rounds that took.
	Rounds int `json:"rounds"`
	// Settle is the bound on Converged.
	Settle time.Duration `json:"settle"`
	// RegistryAgrees is true when the registry's view, read after the
	// nodes agreed, was theirs.
	RegistryAgrees bool `json:"registryAgrees"`
	// Digests is how long after the workload's end every node
	// acknowledged the digest of the rules the registry holds.
	Digests time.Duration `json:"digests"`
	// Error is what went wrong in the workload ("" when nothing): the
	// views did not agree within Settle, the registry's differed, the
	// history could not be recorded.
	Error string `json:"error,omitempty"`
}

// ReadDistSQLStats reads DistSQLStatsName in the run directory dir.
func ReadDistSQLStats(dir string) (DistSQLStats, error) {
	var st DistSQLStats
	b, err := os.ReadFile(filepath.Join(dir, DistSQLStatsName))
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal(b, &st)
}

// writeServeConf writes the serve nodes' conf dir: the run's registry and
// namespace, the session TTL, and a user the clients log in as from the
// harness (not loopback).
func (r *runner) writeServeConf() error {
	dir := filepath.Join(r.cfg.Dir, distsqlConf)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	typ := map[string]string{"etcd": config.RepositoryEtcd, "zookeeper": config.RepositoryZooKeeper}[r.cfg.Registry]
	ttl := max(1, int(r.cfg.SessionTTL.Round(time.Second)/time.Second))
	servers := slices.Clone(r.ensemble.Endpoints())
	if r.cfg.Registry == "etcd" {
		for i, e := range servers {
			servers[i] = "http://" + e
		}
	}
	global := fmt.Sprintf("mode:\n  type: Cluster\n  repository:\n    type: %s\n    props:\n      namespace: %s\n"+
		"      server-lists: %s\n      timeToLiveSeconds: %d\n"+
		"authority:\n  users:\n    - user: %s@%%\n      password: %s\n      admin: true\n",
		typ, registryNamespace, strings.Join(servers, ","), ttl, distsqlUser, distsqlPass)
	return os.WriteFile(filepath.Join(dir, "global.yaml"), []byte(global), 0o644)
}

// serveArgs are the arguments of a serve node on the node's host.
func (p *nodeProc) serveArgs() []string {
	addr := p.host.Addr.String()
	return []string{"serve", "--conf", filepath.Join(p.r.cfg.Dir, distsqlConf), "--instance-id", p.name,
		"--mysql", net.JoinHostPort(addr, fmt.Sprint(consolePort)), "--port", fmt.Sprint(consolePort),
		"--http", net.JoinHostPort(addr, fmt.Sprint(httpPort)), "--allow-sqlite-units",
		"--reservation", p.r.cfg.Reservation.String()}
}

// serveEnv is the serve nodes' environment beyond the harness's: the API
// token and, in a negative control, the node's unsafe switch
// (config.EnvUnsafeControl).
func (r *runner) serveEnv() []string {
	env := []string{httpapi.EnvToken + "=" + distsqlToken}
	switch r.cfg.Variant {
	case record.VariantUnconditional:
		env = append(env, config.EnvUnsafeControl+"="+config.UnsafeUnconditionalWrites)
	case record.VariantAckBeforeCommit:
		env = append(env, config.EnvUnsafeControl+"="+config.UnsafeAckBeforeCommit)
	}
	return env
}

// consoles are the nodes' console addresses, in node order.
func (r *runner) consoles() []string {
	var out []string
	for _, p := range r.procs {
		out = append(out, net.JoinHostPort(p.host.Addr.String(), fmt.Sprint(consolePort)))
	}
	return out
}

// prepareDistSQL waits until every node's console answers, then creates
// the workload's logical database with two SQLite storage units (ds_0;
// ds_1, the readwrite-splitting group's read unit).
func (r *runner) prepareDistSQL(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	var first *sql.DB
	for i, addr := range r.consoles() {
		mc := mysql.NewConfig()
		mc.User, mc.Passwd, mc.Net, mc.Addr, mc.Timeout = distsqlUser, distsqlPass, "tcp", addr, 5*time.Second
		connector, err := mysql.NewConnector(mc)
		if err != nil {
			return err
		}
		db := sql.OpenDB(connector)
		p := r.procs[i]
		p.mu.Lock()
		done := p.done
		p.mu.Unlock()
		for {
			err = db.PingContext(ctx)
			if err == nil || ctx.Err() != nil {
				break
			}
			select {
			case <-done:
				err = fmt.Errorf("the node exited (see %s)", filepath.Join(r.cfg.Dir, "nodes", p.name))
			case <-time.After(200 * time.Millisecond):
				continue
			}
			break
		}
		if err != nil {
			db.Close()
			return fmt.Errorf("node %s's console %s: %w", r.procs[i].name, addr, err)
		}
		if i == 0 {
			first = db
			defer first.Close()
		} else {
			db.Close()
		}
	}
	unit := filepath.Join(r.cfg.Dir, distsqlUnit)
	readUnit := filepath.Join(r.cfg.Dir, distsqlReadUnit)
	conn, err := first.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	for _, q := range []string{"CREATE DATABASE " + distsqlDB, "USE " + distsqlDB,
		fmt.Sprintf("REGISTER STORAGE UNIT ds_0 (URL='jdbc:sqlite:%s', USER='', PASSWORD=''), ds_1 (URL='jdbc:sqlite:%s', USER='', PASSWORD='')", unit, readUnit)} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// runDistSQL runs the DistSQL workload until ctx is done, lets the views
// settle and records what it measured in DistSQLStatsName. The history
// goes to the run directory (linear.HistoryDir).
func (r *runner) runDistSQL(ctx context.Context, repo registry.Repository) error {
	// The driver logs every broken connection; the history records them.
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
	settle := 30 * time.Second
	cfg := distsql.Config{Consoles: r.consoles(), Database: distsqlDB, User: distsqlUser, Password: distsqlPass,
		ClientsPerNode: distsqlClient, Readers: 1, Racers: distsqlRacers, Seed: r.cfg.Seed, Dir: r.cfg.Dir, Registry: repo, Settle: settle,
		RegistryFinalOnly: r.cfg.Registry == "zookeeper", Token: distsqlToken}
	for _, p := range r.procs {
		cfg.InstanceIDs = append(cfg.InstanceIDs, p.name)
		cfg.HTTP = append(cfg.HTTP, fmt.Sprintf("http://%s", net.JoinHostPort(p.host.Addr.String(), fmt.Sprint(httpPort))))
	}
	cfg.Online = func(ctx context.Context) ([]string, error) {
		kvs, err := repo.List(ctx, paths.OnlineRoot)
		var ids []string
		for _, kv := range kvs {
			if kind, id, _, ok := paths.InstanceIDFrom(kv.Key); ok && kind == "online" {
				ids = append(ids, id)
			}
		}
		return ids, err
	}
	st, err := distsql.Run(ctx, cfg)
	out := DistSQLStats{Ops: st.Ops, Converged: st.Converged, Rounds: st.Rounds, Settle: settle, RegistryAgrees: st.RegistryAgrees, Digests: st.Digests}
	if err != nil {
		out.Error = err.Error()
		r.log.Warn("distsql workload", "err", err)
	}
	b, merr := json.Marshal(out)
	if merr != nil {
		return merr
	}
	return os.WriteFile(filepath.Join(r.cfg.Dir, DistSQLStatsName), b, 0o644)
}
