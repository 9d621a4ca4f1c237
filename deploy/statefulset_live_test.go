package deploy

import (
	"bufio"
	"database/sql"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"sigs.k8s.io/yaml"

	"github.com/shardkeeper/shardkeeper/internal/config"
	"github.com/shardkeeper/shardkeeper/internal/connect"
	"github.com/shardkeeper/shardkeeper/internal/paths"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
	"github.com/shardkeeper/shardkeeper/registry"
)

// TestStatefulSetCommandRuns runs the StatefulSet's container command, as
// the kubelet would, with the real binary on real etcd: the downward API's
// values filled in, the Secret's files laid out as a Secret volume
// (symlinks through ..data), the example Secret's global.yaml pointed at the
// test's etcd without credentials (the test server has no authentication),
// and every listening address on loopback port 0. The node starts as the
// pod's name, /readyz answers 200, /metrics refuses a scrape without the
// token and answers the ServiceMonitor's, the DistSQL console takes the
// Secret's authority user with its password only, and SIGTERM makes it
// leave (no online node) well within terminationGracePeriodSeconds.
func TestStatefulSetCommandRuns(t *testing.T) {
	endpoints := testenv.EtcdEndpoints(t)
	m := loadManifests(t)
	c := container(t, m.statefulSet)
	bin := testenv.ShardkeeperBinary(t)
	ctx := testenv.Context(t)
	const podName = "shardkeeper-0"
	ns := testenv.Namespace("sk_deploy_sts_")

	// The Secret volumes, as the kubelet lays them out.
	root := t.TempDir()
	var global map[string]any
	if err := yaml.Unmarshal([]byte(m.secret.StringData["global.yaml"]), &global); err != nil {
		t.Fatalf("the example Secret's global.yaml: %v", err)
	}
	props, ok := dig(global, "mode", "repository", "props").(map[string]any)
	if !ok {
		t.Fatalf("the example Secret's global.yaml has no mode.repository.props: %v", global)
	}
	props["server-lists"], props["namespace"] = strings.Join(endpoints, ","), ns
	delete(props, "username")
	delete(props, "password")
	users, _ := dig(global, "authority", "users").([]any)
	if len(users) == 0 {
		t.Fatal("the example Secret's global.yaml has no authority users: the DistSQL console would take loopback clients only")
	}
	user, _ := users[0].(map[string]any)
	consoleUser, _ := user["user"].(string)
	consoleUser, _, _ = strings.Cut(consoleUser, "@")
	consolePassword, _ := user["password"].(string)
	globalYAML, err := yaml.Marshal(global)
	if err != nil {
		t.Fatal(err)
	}
	token := "sts-test-token"
	mount := func(v string) string { return filepath.Join(root, strings.TrimPrefix(v, "/")) }
	for _, vm := range c.VolumeMounts {
		dir := mount(vm.MountPath)
		data := filepath.Join(dir, "..2026_01_01_00_00_00.000000000")
		if err := os.MkdirAll(data, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Base(data), filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
		for _, v := range m.statefulSet.Spec.Template.Spec.Volumes {
			if v.Name != vm.Name || v.Secret == nil {
				continue
			}
			for _, it := range v.Secret.Items {
				content := map[string][]byte{"global.yaml": globalYAML, "token": []byte(token)}[it.Key]
				if content == nil {
					t.Fatalf("no test content for Secret key %s", it.Key)
				}
				if err := os.WriteFile(filepath.Join(data, it.Path), content, 0o440); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(filepath.Join("..data", it.Path), filepath.Join(dir, it.Path)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}

	// The args, as the kubelet expands them, with paths under root and
	// addresses on loopback.
	env := map[string]string{"POD_NAME": podName, "POD_IP": "127.0.0.1"}
	expand := regexp.MustCompile(`\$\(([A-Z_]+)\)`)
	var args []string
	for _, a := range c.Args {
		a = expand.ReplaceAllStringFunc(a, func(s string) string {
			v, ok := env[s[2:len(s)-1]]
			if !ok {
				t.Fatalf("arg %q uses %s, which the test does not set", a, s)
			}
			return v
		})
		name, val, _ := strings.Cut(a, "=")
		switch name {
		case "--conf", "--token-file":
			a = name + "=" + mount(val)
		case "--http", "--resp", "--udp", "--mysql", "--postgresql":
			a = name + "=127.0.0.1:0"
		}
		args = append(args, a)
	}
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr testenv.SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	started := make(chan string, 1)
	go func() {
		var out strings.Builder
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if strings.HasPrefix(sc.Text(), "shardkeeper: running") {
				started <- out.String()
			}
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	var out string
	select {
	case out = <-started:
	case err := <-exited:
		t.Fatalf("serve %s exited: %v\n%s", strings.Join(args, " "), err, stderr.LastLines(20))
	case <-ctx.Done():
		t.Fatalf("serve did not start: %s", stderr.LastLines(20))
	}
	addr := func(re string) string {
		t.Helper()
		mm := regexp.MustCompile(re).FindStringSubmatch(out)
		if mm == nil {
			t.Fatalf("serve printed no line matching %q:\n%s", re, out)
		}
		return mm[1]
	}
	base := "http://" + addr(`HTTP API and status page on http://([^/]+)/`)
	mysqlAddr := addr(`DistSQL console over the MySQL protocol on (\S+) `)
	testenv.Eventually(t, "/readyz to answer 200", func() bool { code, _ := httpGet(t, base+"/readyz"); return code == http.StatusOK })
	if code, _ := httpGet(t, base+"/metrics"); code != http.StatusForbidden {
		t.Errorf("/metrics without the token = %d, want 403 (--open-reads=false)", code)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics with the ServiceMonitor's token = %d", resp.StatusCode)
	}

	// The DistSQL console takes the Secret's authority user, and only with
	// its password.
	nodes := 0
	db := mysqlDB(t, mysqlAddr, consoleUser, consolePassword)
	rows, err := db.QueryContext(ctx, "SHOW COMPUTE NODES")
	if err != nil {
		t.Fatalf("SHOW COMPUTE NODES as %s: %v", consoleUser, err)
	}
	for rows.Next() {
		var id string
		cols, _ := rows.Columns()
		dst := make([]any, len(cols))
		dst[0] = &id
		for i := 1; i < len(dst); i++ {
			dst[i] = new(sql.RawBytes)
		}
		if err := rows.Scan(dst...); err != nil {
			t.Fatal(err)
		}
		if id == podName {
			nodes++
		}
	}
	if err := rows.Close(); err != nil || nodes != 1 {
		t.Fatalf("SHOW COMPUTE NODES lists %s %d times (%v), want once", podName, nodes, err)
	}
	if err := mysqlDB(t, mysqlAddr, consoleUser, consolePassword+"-wrong").PingContext(ctx); mysqlErrNumber(err) != 1045 {
		t.Fatalf("login with a wrong password: %v, want error 1045", err)
	}

	repo, err := connect.Open(ctx, config.Repository{Type: config.RepositoryEtcd, ServerLists: endpoints, Namespace: ns, ConnectTimeout: 10 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer repo.Close()
	online, err := paths.Online(paths.Proxy, podName)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Get(ctx, online); err != nil {
		t.Fatalf("online node of %s: %v", podName, err)
	}

	grace := time.Duration(*m.statefulSet.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("serve after SIGTERM: %v\n%s", err, stderr.LastLines(20))
		}
	case <-time.After(grace):
		t.Fatalf("serve still running %v after SIGTERM (terminationGracePeriodSeconds)", grace)
	}
	t.Logf("left %v after SIGTERM (grace period %v)", time.Since(start).Round(time.Millisecond), grace)
	if _, err := repo.Get(ctx, online); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("online node after SIGTERM: %v, want it gone", err)
	}
}

// dig returns the value at the path of keys in nested maps, or nil.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func mysqlDB(t *testing.T, addr, user, password string) *sql.DB {
	t.Helper()
	c := gomysql.NewConfig()
	c.User, c.Passwd, c.Net, c.Addr, c.Timeout = user, password, "tcp", addr, 10*time.Second
	db, err := sql.Open("mysql", c.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func mysqlErrNumber(err error) uint16 {
	var me *gomysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}
