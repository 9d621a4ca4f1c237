package deploy

import (
	"bufio"
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
// token and answers the ServiceMonitor's, and SIGTERM makes it leave (no
// online node) well within terminationGracePeriodSeconds.
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
	var global struct {
		Mode struct {
			Type       string `json:"type"`
			Repository struct {
				Type  string            `json:"type"`
				Props map[string]string `json:"props"`
			} `json:"repository"`
		} `json:"mode"`
	}
	if err := yaml.UnmarshalStrict([]byte(m.secret.StringData["global.yaml"]), &global); err != nil {
		t.Fatalf("the example Secret's global.yaml: %v", err)
	}
	props := global.Mode.Repository.Props
	props["server-lists"], props["namespace"] = strings.Join(endpoints, ","), ns
	delete(props, "username")
	delete(props, "password")
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
	httpAddr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		re := regexp.MustCompile(`HTTP API and status page on http://([^/]+)/`)
		for sc.Scan() {
			if mm := re.FindStringSubmatch(sc.Text()); mm != nil {
				httpAddr <- mm[1]
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
	var base string
	select {
	case a := <-httpAddr:
		base = "http://" + a
	case err := <-exited:
		t.Fatalf("serve %s exited: %v\n%s", strings.Join(args, " "), err, stderr.LastLines(20))
	case <-ctx.Done():
		t.Fatalf("serve did not start: %s", stderr.LastLines(20))
	}
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

	repo, err := connect.Open(ctx, config.Repository{Type: config.RepositoryEtcd, ServerLists: endpoints, Namespace: ns, ConnectTimeout: 10 * time.Second})
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
