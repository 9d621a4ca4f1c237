// Package systemd holds the systemd unit of a shardkeeper node
// (shardkeeper.service, with its sysusers.d file) and the test that checks
// them with systemd's own tools.
package systemd

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardkeeper/shardkeeper/internal/daemon"
	"github.com/shardkeeper/shardkeeper/internal/testenv"
)

// maxExposure is the highest overall exposure `systemd-analyze security`
// may give the unit (0 is fully locked down, 10 unprotected; below 2 it
// says "OK").
const maxExposure = 2.0

// TestUnit checks deploy/systemd in a root directory of its own that holds
// the host's system units, the unit, the real binary at its ExecStart path
// and the user systemd-sysusers creates from the sysusers.d file:
// `systemd-analyze verify` accepts the unit without a word (a unit with an
// unknown key, as a control, is reported), `systemd-analyze security
// --offline` rates it at most maxExposure, and the unit runs serve as
// Type=notify under the dedicated user with a stop timeout longer than
// daemon.MaxCloseTime.
func TestUnit(t *testing.T) {
	for _, tool := range []string{"systemd-analyze", "systemd-sysusers"} {
		if _, err := exec.LookPath(tool); err != nil {
			msg := tool + " not installed: run `make test` (scripts/servers.sh installs Debian's systemd package, which ships it)"
			if os.Getenv(testenv.EnvRequireServers) == "1" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	unit, err := os.ReadFile("shardkeeper.service")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	hostUnits := "/usr/lib/systemd/system"
	if _, err := os.Stat(hostUnits); err != nil {
		hostUnits = "/lib/systemd/system"
	}
	copyTree(t, hostUnits, filepath.Join(root, "usr/lib/systemd/system"))
	bin := filepath.Join(root, "usr/local/bin/shardkeeper")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, testenv.ShardkeeperBinary(t), bin, 0o755)
	if err := os.MkdirAll(filepath.Join(root, "etc/systemd/system"), 0o755); err != nil {
		t.Fatal(err)
	}
	sysusers, err := filepath.Abs("shardkeeper.sysusers")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("systemd-sysusers", "--root", root, sysusers).CombinedOutput(); err != nil {
		t.Fatalf("systemd-sysusers shardkeeper.sysusers: %v\n%s", err, out)
	}
	passwd, err := os.ReadFile(filepath.Join(root, "etc/passwd"))
	if err != nil || !regexp.MustCompile(`(?m)^shardkeeper:x:[1-9][0-9]*:[1-9][0-9]*:[^:]*:/var/lib/shardkeeper:`).Match(passwd) {
		t.Fatalf("systemd-sysusers made no non-root shardkeeper user: %v\n%s", err, passwd)
	}

	verify := func(name string, content []byte) string {
		t.Helper()
		if err := os.WriteFile(filepath.Join(root, "etc/systemd/system", name), content, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("systemd-analyze", "verify", "--root", root, name).CombinedOutput()
		if err != nil && len(out) == 0 {
			t.Fatalf("systemd-analyze verify %s: %v", name, err)
		}
		return strings.TrimSpace(string(out))
	}
	if out := verify("shardkeeper.service", unit); out != "" {
		t.Fatalf("systemd-analyze verify shardkeeper.service:\n%s", out)
	}
	control := strings.Replace(string(unit), "[Service]\n", "[Service]\nFrobnicate=yes\n", 1)
	if out := verify("control.service", []byte(control)); !strings.Contains(out, "Unknown key 'Frobnicate'") {
		t.Fatalf("systemd-analyze verify of a unit with an unknown key: %q; the check would not catch a mistake", out)
	}
	if err := os.Remove(filepath.Join(root, "etc/systemd/system/control.service")); err != nil {
		t.Fatal(err)
	}

	out, err := exec.Command("systemd-analyze", "security", "--offline=true", "--root", root, "shardkeeper.service").CombinedOutput()
	m := regexp.MustCompile(`Overall exposure level for shardkeeper\.service: ([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	exposure, _ := strconv.ParseFloat(string(m[1]), 64)
	if exposure > maxExposure {
		t.Fatalf("systemd-analyze security rates the unit %.1f; want at most %.1f\n%s", exposure, maxExposure, out)
	}
	t.Logf("systemd-analyze security --offline: overall exposure %.1f (0 locked down, 10 unprotected)", exposure)

	for _, want := range []string{
		`(?m)^Type=notify$`, `(?m)^NotifyAccess=main$`,
		`(?m)^ExecStart=/usr/local/bin/shardkeeper serve --conf /etc/shardkeeper --instance-id=%H \$SHARDKEEPER_OPTS$`,
		`(?m)^User=shardkeeper$`, `(?m)^StateDirectory=shardkeeper$`, `(?m)^WorkingDirectory=/var/lib/shardkeeper$`,
		`(?m)^ProtectSystem=strict$`, `(?m)^NoNewPrivileges=yes$`, `(?m)^CapabilityBoundingSet=$`,
	} {
		if !regexp.MustCompile(want).Match(unit) {
			t.Errorf("shardkeeper.service has no line matching %s", want)
		}
	}
	// systemd must not kill serve before it has left the cluster.
	if m := regexp.MustCompile(`(?m)^TimeoutStopSec=(\d+)s$`).FindSubmatch(unit); m == nil {
		t.Error("shardkeeper.service sets no TimeoutStopSec=Ns")
	} else if n, _ := strconv.Atoi(string(m[1])); time.Duration(n)*time.Second <= daemon.MaxCloseTime {
		t.Errorf("TimeoutStopSec=%ds: want more than daemon.MaxCloseTime, %v, the longest serve takes to leave", n, daemon.MaxCloseTime)
	}
}

// copyTree copies the regular files and symbolic links under src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type()&os.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case d.Type().IsRegular():
			copyFile(t, path, to, 0o644)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// copyFile copies the regular file src to dst with mode perm.
func copyFile(t *testing.T, src, dst string, perm os.FileMode) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestMain(m *testing.M) { testenv.Main(m) }
