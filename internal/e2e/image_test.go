package e2e

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/connect"
	"github.com/shardkeeper/shardkeeper/internal/httpapi"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
	"github.com/shardkeeper/shardkeeper/snowflake"
)

// imageUID is the user the image runs as (deploy/container/Containerfile).
const imageUID = "65532"

// podmanRunFlags are the podman run flags this test machine needs: crun,
// podman's default runtime, fails on its cgroups, and runc needs limits
// within the machine's own.
var podmanRunFlags = []string{"--runtime", "runc", "--ulimit", "nofile=20000:20000", "--ulimit", "nproc=4096:4096"}

// TestContainerImage builds the image the way `make image` does and runs
// it with podman:
//   - three containers on the real etcd, with a read-only root file system
//     and no volume (nothing is writable): distinct worker ids, 30,000 keys from all three at once
//     without a duplicate, every process non-root without capabilities, the
//     image's HEALTHCHECK healthy;
//   - `podman stop` of one (SIGTERM to serve as PID 1, then SIGKILL after
//     podman's 10 s grace period): it exits 0 within the grace period and
//     its online, worker_id and reservation nodes are gone from the registry when stop
//     returns, while the other two stay online and issue keys;
//   - SHOW COMPUTE NODES over the MySQL and PostgreSQL consoles lists the
//     three;
//   - the image's default command (embedded registry in the /data volume,
//     read-only root, ports published): healthy, HTTP, Redis-protocol and
//     UDP keys through the published ports, the consoles' refusal of a client from
//     outside the container without users configured, and a restart on the
//     same volume.
//
// It prints the image's size.
func TestContainerImage(t *testing.T) {
	endpoints := testenv.EtcdEndpoints(t)
	if _, err := exec.LookPath("podman"); err != nil {
		msg := "podman not installed: run `make test` (scripts/servers.sh installs podman and runc)"
		if os.Getenv(testenv.EnvRequireServers) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	image := "localhost/shardkeeper:" + testenv.Namespace("e2e-")
	out, err := exec.Command("bash", "../../scripts/image.sh", image).CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/image.sh: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("podman", "rmi", "-f", image).Run() })
	t.Log(strings.TrimSpace(string(out)))

	t.Run("ThreeOnEtcd", func(t *testing.T) { threeContainers(t, image, endpoints) })
	t.Run("EmbeddedOnVolume", func(t *testing.T) { embeddedContainer(t, image) })
}

// threeContainers runs three containers of image on etcd; see
// TestContainerImage.
func threeContainers(t *testing.T, image string, endpoints []string) {
	conf := writeConf(t, "etcd", strings.Join(endpoints, ","))
	// The container's user reads the conf dir through a bind mount.
	if err := os.Chmod(conf, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := testenv.Context(t)
	c, err := config.Load(ctx, conf)
	if err != nil {
		t.Fatal(err)
	}
	repo, err := connect.Open(ctx, c.Mode.Repository, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer repo.Close()

	var ctrs []*container
	var mysqlPorts, pgPorts []int
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("%s-%d", c.Mode.Repository.Namespace, i)
		url := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
		mysqlPorts, pgPorts = append(mysqlPorts, freePort(t)), append(pgPorts, freePort(t))
		ctrs = append(ctrs, runContainer(t, name, url,
			// No volume at all (the image's /data is not mounted): a node on
			// etcd writes nothing. The HEALTHCHECK probes $SHARDKEEPER_SERVER
			// when --http is not 8080.
			[]string{"--network", "host", "--read-only", "--read-only-tmpfs=false", "--image-volume", "ignore",
				"-v", conf + ":/conf:ro", "-e", "SHARDKEEPER_SERVER=" + url},
			image, "serve", "--conf", "/conf", "--instance-id", name, "--http", strings.TrimPrefix(url, "http://"),
			"--mysql", fmt.Sprintf("127.0.0.1:%d", mysqlPorts[i-1]), "--postgresql", fmt.Sprintf("127.0.0.1:%d", pgPorts[i-1])))
	}
	for _, ctr := range ctrs {
		ctr.waitReady(t)
	}

	// Non-root, no capabilities, PID 1, healthy.
	for _, ctr := range ctrs {
		status := ctr.procStatus(t)
		for _, field := range []string{"Uid", "Gid"} {
			if got := strings.Fields(status[field]); len(got) != 4 || got[0] != imageUID || got[1] != imageUID || got[2] != imageUID || got[3] != imageUID {
				t.Fatalf("%s: %s %q in the container's /proc status; want %s for real, effective, saved and file system", ctr.name, field, status[field], imageUID)
			}
		}
		// serve itself is PID 1 of the container (no init): SIGTERM from
		// podman stop below goes to it.
		if nspid := strings.Fields(status["NSpid"]); len(nspid) < 2 || nspid[len(nspid)-1] != "1" {
			t.Fatalf("%s: NSpid %q; want serve as PID 1 of its namespace", ctr.name, status["NSpid"])
		}
		if status["CapEff"] != "0000000000000000" {
			t.Fatalf("%s: effective capabilities %s; want none", ctr.name, status["CapEff"])
		}
		if out, err := exec.Command("podman", "healthcheck", "run", ctr.name).CombinedOutput(); err != nil {
			t.Fatalf("%s: podman healthcheck run: %v\n%s", ctr.name, err, out)
		}
	}

	// Distinct worker ids; 10,000 keys from each container, 1,000 per
	// request, all at once, none twice, each stamped with its container's
	// worker id.
	var mu sync.Mutex
	all := make(map[int64]string, 30000)
	workers := map[int]string{}
	var wg sync.WaitGroup
	errs := make(chan error, 30)
	for _, ctr := range ctrs {
		for range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				b, err := fetchKeys(ctr.url, 1000)
				if err != nil {
					errs <- fmt.Errorf("%s: %w", ctr.name, err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if other, ok := workers[b.WorkerID]; ok && other != ctr.name {
					errs <- fmt.Errorf("worker id %d held by %s and %s", b.WorkerID, other, ctr.name)
					return
				}
				workers[b.WorkerID] = ctr.name
				for _, s := range b.Keys {
					k, err := strconv.ParseInt(s, 10, 64)
					if err != nil || snowflake.Decompose(k).WorkerID != int64(b.WorkerID) {
						errs <- fmt.Errorf("%s: key %s (%v) not of worker id %d", ctr.name, s, err, b.WorkerID)
						return
					}
					if other, dup := all[k]; dup {
						errs <- fmt.Errorf("duplicate key %d from %s and %s", k, other, ctr.name)
						return
					}
					all[k] = ctr.name
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(all) != 30000 || len(workers) != 3 {
		t.Fatalf("%d keys from %d worker ids; want 30000 from 3", len(all), len(workers))
	}
	t.Logf("worker ids %v; 30000 distinct keys", workers)

	// The DistSQL consoles (loopback clients, no users configured): SHOW
	// COMPUTE NODES over the MySQL protocol on the first container and over
	// the PostgreSQL protocol on the second lists the three.
	var names []string
	for _, ctr := range ctrs {
		names = append(names, ctr.name)
	}
	slices.Sort(names)
	db := openMySQL(t, mysqlPorts[0], "root", "", "")
	testenv.Eventually(t, "SHOW COMPUTE NODES over MySQL on "+ctrs[0].name+" to list the three", func() bool {
		got, err := mysqlInstanceIDs(t, db)
		return err == nil && slices.Equal(got, names)
	})
	pg, err := pgx.Connect(ctx, pgDSN(fmt.Sprintf("127.0.0.1:%d", pgPorts[1]), "root", "", "sslmode=disable"))
	if err != nil {
		t.Fatalf("PostgreSQL console of %s: %v", ctrs[1].name, err)
	}
	defer pg.Close(ctx)
	testenv.Eventually(t, "SHOW COMPUTE NODES over PostgreSQL on "+ctrs[1].name+" to list the three", func() bool {
		got, err := pgInstanceIDs(t, pg)
		return err == nil && slices.Equal(got, names)
	})

	// podman stop: SIGTERM to PID 1, SIGKILL after the grace period.
	const grace = 10 * time.Second
	stopped, rest := ctrs[0], ctrs[1:]
	online, err := paths.Online(paths.Proxy, stopped.name)
	if err != nil {
		t.Fatal(err)
	}
	workerNode, err := paths.WorkerID(stopped.name)
	if err != nil {
		t.Fatal(err)
	}
	var reservation string
	for w, name := range workers {
		if name == stopped.name {
			if reservation, err = paths.Reservation(w); err != nil {
				t.Fatal(err)
			}
		}
	}
	gone := []string{online, workerNode, reservation}
	for _, key := range gone {
		if _, err := repo.Get(ctx, key); err != nil {
			t.Fatalf("%s before podman stop: %v", key, err)
		}
	}
	start := time.Now()
	if out, err := exec.Command("podman", "stop", "-t", strconv.Itoa(int(grace/time.Second)), stopped.name).CombinedOutput(); err != nil {
		t.Fatalf("podman stop %s: %v\n%s", stopped.name, err, out)
	}
	took := time.Since(start)
	for _, key := range gone {
		if kv, err := repo.Get(ctx, key); !errors.Is(err, registry.ErrNotFound) {
			t.Fatalf("%s after podman stop: %q, %v; want it gone", key, kv.Value, err)
		}
	}
	if code := stopped.inspect(t, "{{.State.ExitCode}}"); code != "0" || took >= grace {
		t.Fatalf("%s: exit code %s after podman stop, in %v; want 0 within the %v grace period\n%s", stopped.name, code, took, grace, stopped.logs())
	}
	if logs := stopped.logs(); !strings.Contains(logs, "shardkeeper: stopped") {
		t.Fatalf("%s: no \"stopped\" line after podman stop:\n%s", stopped.name, logs)
	}
	t.Logf("podman stop %s: exited 0 in %v, offline in the registry when stop returned", stopped.name, took.Round(time.Millisecond))
	for _, ctr := range rest {
		key, err := paths.Online(paths.Proxy, ctr.name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := repo.Get(ctx, key); err != nil {
			t.Fatalf("%s after stopping %s: %v", key, stopped.name, err)
		}
		if _, err := fetchKeys(ctr.url, 10); err != nil {
			t.Fatalf("%s after stopping %s: %v", ctr.name, stopped.name, err)
		}
	}
}

// embeddedContainer runs image's default command, the embedded registry in
// a volume, with a read-only root and the ports published; see
// TestContainerImage.
func embeddedContainer(t *testing.T, image string) {
	volume := testenv.Namespace("sk-e2e-data-")
	t.Cleanup(func() { _ = exec.Command("podman", "volume", "rm", "-f", volume).Run() })
	httpPort, mysqlPort, pgPort, respPort, udpPort := freePort(t), freePort(t), freePort(t), freePort(t), freePort(t)
	flags := []string{"--read-only", "--read-only-tmpfs=false", "-v", volume + ":/data",
		"-p", fmt.Sprintf("127.0.0.1:%d:8080", httpPort), "-p", fmt.Sprintf("127.0.0.1:%d:3307", mysqlPort),
		"-p", fmt.Sprintf("127.0.0.1:%d:5432", pgPort), "-p", fmt.Sprintf("127.0.0.1:%d:6380", respPort),
		"-p", fmt.Sprintf("127.0.0.1:%d:6381/udp", udpPort)}
	url := fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	for run := 1; run <= 2; run++ {
		ctr := runContainer(t, fmt.Sprintf("%s-%d", volume, run), url, flags, image)
		ctr.waitReady(t)
		// The default command and the HEALTHCHECK agree on the port.
		if out, err := exec.Command("podman", "healthcheck", "run", ctr.name).CombinedOutput(); err != nil {
			t.Fatalf("run %d: podman healthcheck run: %v\n%s", run, err, out)
		}
		if _, err := fetchKeys(url, 10); err != nil {
			t.Fatalf("run %d: HTTP keys through the published port: %v", run, err)
		}
		respIncr(t, fmt.Sprintf("127.0.0.1:%d", respPort))
		testenv.Eventually(t, "a UDP key through the published port", func() bool {
			_, err := udpKey(fmt.Sprintf("127.0.0.1:%d", udpPort), time.Second)
			return err == nil
		})
		// The consoles answer through the published ports and, with no
		// users configured, refuse a client from outside the container,
		// saying why.
		ctx := testenv.Context(t)
		if err := openMySQL(t, mysqlPort, "root", "", "").PingContext(ctx); err == nil || !strings.Contains(err.Error(), "no users are configured") {
			t.Fatalf("run %d: MySQL login through the published port: %v; want a refusal: no users are configured", run, err)
		}
		if _, err := pgx.Connect(ctx, pgDSN(fmt.Sprintf("127.0.0.1:%d", pgPort), "root", "", "sslmode=disable")); err == nil || !strings.Contains(err.Error(), "no users are configured") {
			t.Fatalf("run %d: PostgreSQL login through the published port: %v; want a refusal: no users are configured", run, err)
		}
		if logs := ctr.logs(); run == 2 && !strings.Contains(logs, "reusing registry data in shardkeeper-data") {
			t.Fatalf("run 2 on volume %s: the registry data was not kept:\n%s", volume, logs)
		}
		if out, err := exec.Command("podman", "stop", ctr.name).CombinedOutput(); err != nil {
			t.Fatalf("podman stop %s: %v\n%s", ctr.name, err, out)
		}
		if code := ctr.inspect(t, "{{.State.ExitCode}}"); code != "0" {
			t.Fatalf("%s: exit code %s after podman stop; want 0\n%s", ctr.name, code, ctr.logs())
		}
		if out, err := exec.Command("podman", "rm", ctr.name).CombinedOutput(); err != nil {
			t.Fatalf("podman rm %s: %v\n%s", ctr.name, err, out)
		}
	}
}

// container is one podman container running serve.
type container struct {
	name string
	url  string // its HTTP API as the test reaches it
}

// runContainer starts a detached container named name from image with
// the podman run flags and the command args (none: the image's CMD), and
// removes it when the test ends, printing its logs when the test failed.
func runContainer(t *testing.T, name, url string, flags []string, image string, args ...string) *container {
	t.Helper()
	cmdline := append(append(append([]string{"run", "-d", "--name", name}, podmanRunFlags...), flags...), image)
	if out, err := exec.Command("podman", append(cmdline, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("podman %s: %v\n%s", strings.Join(cmdline, " "), err, out)
	}
	c := &container{name: name, url: url}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs of %s:\n%s", name, c.logs())
		}
		_ = exec.Command("podman", "rm", "-f", "-v", "-t", "0", name).Run()
	})
	return c
}

// waitReady waits until the container's /readyz answers 200.
func (c *container) waitReady(t *testing.T) {
	t.Helper()
	testenv.Eventually(t, c.name+" ready", func() bool {
		resp, err := client.Get(c.url + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// inspect returns podman inspect's answer for the Go template format.
func (c *container) inspect(t *testing.T, format string) string {
	t.Helper()
	out, err := exec.Command("podman", "inspect", "--format", format, c.name).CombinedOutput()
	if err != nil {
		t.Fatalf("podman inspect %s: %v\n%s", c.name, err, out)
	}
	return strings.TrimSpace(string(out))
}

// logs returns the container's standard output and error.
func (c *container) logs() string {
	out, _ := exec.Command("podman", "logs", c.name).CombinedOutput()
	return string(out)
}

// procStatus returns the fields of /proc/PID/status of the container's
// process, read from the host (the image has no shell to run id in).
func (c *container) procStatus(t *testing.T) map[string]string {
	t.Helper()
	pid := c.inspect(t, "{{.State.Pid}}")
	b, err := os.ReadFile(filepath.Join("/proc", pid, "status"))
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	fields := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[k] = strings.TrimSpace(v)
		}
	}
	return fields
}

// fetchKeys asks the node at url for n keys over HTTP.
func fetchKeys(url string, n int) (httpapi.Keys, error) {
	var b httpapi.Keys
	resp, err := client.Get(fmt.Sprintf("%s/api/v1/keys?count=%d", url, n))
	if err != nil {
		return b, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&b); err != nil || resp.StatusCode != http.StatusOK || len(b.Keys) != n {
		return b, fmt.Errorf("GET /api/v1/keys?count=%d: status %d, %d keys, %v", n, resp.StatusCode, len(b.Keys), err)
	}
	return b, nil
}

// mysqlInstanceIDs returns the sorted instance_id column of SHOW COMPUTE
// NODES over db.
func mysqlInstanceIDs(t *testing.T, db *sql.DB) ([]string, error) {
	t.Helper()
	rows, err := db.QueryContext(testenv.Context(t), "SHOW COMPUTE NODES")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	i := slices.Index(cols, "instance_id")
	if i < 0 {
		return nil, fmt.Errorf("no instance_id column in %v", cols)
	}
	var ids []string
	for rows.Next() {
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for j := range vals {
			ptrs[j] = &vals[j]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		ids = append(ids, string(vals[i]))
	}
	slices.Sort(ids)
	return ids, rows.Err()
}

// pgInstanceIDs returns the sorted instance_id column of SHOW COMPUTE
// NODES over c.
func pgInstanceIDs(t *testing.T, c *pgx.Conn) ([]string, error) {
	t.Helper()
	rows, err := c.Query(testenv.Context(t), "SHOW COMPUTE NODES")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	i := slices.IndexFunc(rows.FieldDescriptions(), func(f pgconn.FieldDescription) bool { return f.Name == "instance_id" })
	if i < 0 {
		return nil, fmt.Errorf("no instance_id column")
	}
	var ids []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return nil, err
		}
		ids = append(ids, fmt.Sprint(vals[i]))
	}
	slices.Sort(ids)
	return ids, rows.Err()
}
