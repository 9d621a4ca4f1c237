package config

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// loadWithin runs Load(ctx, dir) and fails the test when it has not
// returned within limit (a hang on a special file); unblock is called
// then to let the stuck call finish.
func loadWithin(t *testing.T, ctx context.Context, dir string, limit time.Duration, unblock func()) (*Config, error) {
	t.Helper()
	type result struct {
		cfg *Config
		err error
	}
	done := make(chan result, 1)
	go func() {
		cfg, err := Load(ctx, dir)
		done <- result{cfg, err}
	}()
	select {
	case r := <-done:
		return r.cfg, r.err
	case <-time.After(limit):
		if unblock != nil {
			unblock()
		}
		t.Fatalf("Load(%s) still running after %v", dir, limit)
		return nil, nil
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

const standaloneGlobal = "mode:\n  type: Standalone\n"

// TestHostileConfigFromDevZero: a database file that is a link to
// /dev/zero is refused at once with its path, not read until memory runs
// out.
func TestHostileConfigFromDevZero(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "global.yaml"), standaloneGlobal)
	zero := filepath.Join(dir, "database-z.yaml")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	_, err := loadWithin(t, t.Context(), dir, 10*time.Second, nil)
	if err == nil || !strings.Contains(err.Error(), zero) || !strings.Contains(err.Error(), "a character device, not a regular file") {
		t.Fatalf("Load = %v, want an error naming %s as a character device", err, zero)
	}
	_, err = LoadFile(t.Context(), "/dev/zero")
	if err == nil || !strings.Contains(err.Error(), "/dev/zero is a character device") {
		t.Fatalf("LoadFile(/dev/zero) = %v", err)
	}
	if _, err := LoadMode(t.Context(), "/dev"); err == nil {
		t.Fatal("LoadMode(/dev) succeeded")
	}
}

// TestHostileConfigFromFIFO: a global or database file that is a named
// pipe with no writer is refused at once, naming the path; Load does not
// wait for a writer.
func TestHostileConfigFromFIFO(t *testing.T) {
	for _, name := range []string{"global.yaml", "database-f.yaml"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if name != "global.yaml" {
				writeFile(t, filepath.Join(dir, "global.yaml"), standaloneGlobal)
			}
			fifo := filepath.Join(dir, name)
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Fatal(err)
			}
			// A stuck reader is released by a writer that opens and closes.
			unblock := func() {
				if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					f.Close()
				}
			}
			_, err := loadWithin(t, t.Context(), dir, 10*time.Second, unblock)
			if err == nil || !strings.Contains(err.Error(), fifo+" is a named pipe (FIFO), not a regular file") {
				t.Fatalf("Load = %v, want an error naming the FIFO %s", err, fifo)
			}
		})
	}
	t.Run("directory", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, "global.yaml"), 0o755); err != nil {
			t.Fatal(err)
		}
		_, err := loadWithin(t, t.Context(), dir, 10*time.Second, nil)
		if err == nil || !strings.Contains(err.Error(), "global.yaml is a directory, not a regular file") {
			t.Fatalf("Load = %v", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "global.yaml"), standaloneGlobal)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := loadWithin(t, ctx, dir, 10*time.Second, nil)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Load with an ended ctx = %v, want context.Canceled", err)
		}
	})
}

// TestHostileConfigTooLarge: a config file over MaxFileSize is refused with
// its path and the limit, before it is parsed.
func TestHostileConfigTooLarge(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "global.yaml"), standaloneGlobal)
	big := filepath.Join(dir, "database-big.yaml")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxFileSize + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = loadWithin(t, t.Context(), dir, 30*time.Second, nil)
	if err == nil || !strings.Contains(err.Error(), big+" is larger than the 16 MiB limit") {
		t.Fatalf("Load = %v, want the size limit for %s", err, big)
	}
	// A file read through a path that lies about its size (procfs reports
	// 0) is still cut at the limit.
	if _, err := ReadFile(t.Context(), "/proc/self/maps", 16); err == nil || !strings.Contains(err.Error(), "larger than the 16 bytes limit") {
		t.Fatalf("ReadFile(/proc/self/maps, 16) = %v", err)
	}
	if _, err := LoadFile(t.Context(), big); err == nil || !strings.Contains(err.Error(), "16 MiB limit") {
		t.Fatalf("LoadFile = %v", err)
	}
}

// TestHostileGlobalFileSymlinkLoop: a global.yaml or server.yaml that is a
// symbolic link loop is reported as such, not as a missing file.
func TestHostileGlobalFileSymlinkLoop(t *testing.T) {
	for _, c := range []struct{ name, link, target string }{
		{"self", "global.yaml", "global.yaml"},
		{"pair", "server.yaml", "other.yaml"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Symlink(c.target, filepath.Join(dir, c.link)); err != nil {
				t.Fatal(err)
			}
			if c.target != c.link {
				if err := os.Symlink(c.link, filepath.Join(dir, c.target)); err != nil {
					t.Fatal(err)
				}
			}
			want := filepath.Join(dir, c.link) + " is a symbolic link loop"
			if _, err := Load(t.Context(), dir); err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Load = %v, want %q", err, want)
			}
			if _, err := LoadMode(t.Context(), dir); err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("LoadMode = %v, want %q", err, want)
			}
		})
	}
	t.Run("dangling", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Symlink("gone.yaml", filepath.Join(dir, "global.yaml")); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(t.Context(), dir); err == nil || !strings.Contains(err.Error(), "global.yaml is a symbolic link to gone.yaml, which does not exist") {
			t.Fatalf("Load = %v", err)
		}
	})
}

// TestHostileServerLists: malformed server-lists entries are refused when
// the file is loaded, each with file:line, instead of reaching a dialer (or
// a DNS lookup) at start.
func TestHostileServerLists(t *testing.T) {
	global := func(typ, servers string) string {
		return "mode:\n  type: Cluster\n  repository:\n    type: " + typ + "\n    props:\n      namespace: ns\n      server-lists: \"" + servers + "\"\n"
	}
	const at = "global.yaml:7: mode.repository.props.server-lists: "
	for _, c := range []struct{ typ, servers, want string }{
		{"etcd", "http://[::1:2379", `etcd endpoint "http://[::1:2379" is not a valid URL`},
		{"etcd", "http://127.0.0.1:99999", `port "99999" must be a number in [1, 65535]`},
		{"etcd", "http://127.0.0.1:0", `port "0" must be a number in [1, 65535]`},
		{"etcd", "http://lookup-probe.invalid:abc", `etcd endpoint "http://lookup-probe.invalid:abc" is not a valid URL`},
		{"etcd", "http://etcd.example", `has no port`},
		{"etcd", "http://ok:2379, http://bad host:2379", `"http://bad host:2379" is not a valid URL`},
		{"etcd", "http://user:pw@etcd:2379", "must not hold credentials"},
		{"etcd", "http://etcd:2379/v3?x=1", "must end at the port"},
		{"etcd", "http://:2379", "has no host"},
		{"etcd", "http://bad_-.%41:2379", "not a valid URL"},
		{"etcd", "http://-bad.example:2379", "neither an IP address nor a valid host name"},
		{"ZooKeeper", "lookup-probe.invalid:abc", `port "abc" must be a number in [1, 65535]`},
		{"ZooKeeper", "zk:99999", `port "99999" must be a number in [1, 65535]`},
		{"ZooKeeper", ":2181", "has no host"},
		{"ZooKeeper", "zk:", "has an empty port"},
		{"ZooKeeper", "::1:2181", "write an IPv6 address in brackets"},
		{"ZooKeeper", "[::1:2181", "is not host:port"},
		{"ZooKeeper", "zk one:2181", "neither an IP address nor a valid host name"},
		{"ZooKeeper", "http://zk:2181", "must be host:port, not a URL"},
	} {
		_, err := ParseMode("global.yaml", []byte(global(c.typ, c.servers)))
		if err == nil || !strings.Contains(err.Error(), at) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: err = %v, want %q at %q", c.typ, c.servers, err, c.want, at)
		}
		if err != nil && strings.Contains(err.Error(), ":pw@") {
			t.Errorf("%s %q: the error shows the password: %v", c.typ, c.servers, err)
		}
		_, err = RepositoryFromFlags(c.typ, map[string]string{"namespace": "ns", "server-lists": c.servers})
		if err == nil || !strings.Contains(err.Error(), "--server-lists: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("flags %s %q: err = %v, want %q", c.typ, c.servers, err, c.want)
		}
	}
	for _, c := range []struct{ typ, servers string }{
		{"etcd", "http://127.0.0.1:2379, https://etcd-0.etcd.svc.cluster.local.:2379"},
		{"etcd", "http://[::1]:2379/"},
		{"ZooKeeper", "zk1,zk2:2182,[::1]:2181,10.0.0.1:2181,zk_3.example:2181"},
	} {
		m, err := ParseMode("global.yaml", []byte(global(c.typ, c.servers)))
		if err != nil {
			t.Errorf("%s %q: %v", c.typ, c.servers, err)
			continue
		}
		if want := len(strings.Split(c.servers, ",")); len(m.Repository.ServerLists) != want {
			t.Errorf("%s %q: server lists = %q", c.typ, c.servers, m.Repository.ServerLists)
		}
	}
}
