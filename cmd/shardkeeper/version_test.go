package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/shardkeeper/shardkeeper/internal/version"
)

// TestVersionBinary builds the binary with `make build` and checks that
// `shardkeeper --version` and `shardkeeper version` print the release,
// the module version, the commit of this checkout and the Go version.
func TestVersionBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "shardkeeper")
	if out, err := exec.Command("make", "-s", "-C", "../..", "build", "BIN="+bin).CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	commit := strings.TrimSpace(string(head))[:12]
	for _, args := range [][]string{{"--version"}, {"version"}} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("shardkeeper %v: %v\n%s", args, err, out)
		}
		re := regexp.MustCompile(`^shardkeeper \d+\.\d+\.\d+\nmodule  \S+\ncommit  ` + commit + `(\+dirty)?( \(\S+\))?\ngo      ` + regexp.QuoteMeta(runtime.Version()) + `\n$`)
		if !re.Match(out) {
			t.Errorf("shardkeeper %v =\n%s\nwant to match %s", args, out, re)
		}
	}
	out, err := exec.Command(bin, "version", "-o", "json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var in version.Info
	if err := json.Unmarshal(out, &in); err != nil || !strings.HasPrefix(in.Commit, commit) || in.Module == version.Unknown {
		t.Fatalf("version -o json = %s (%v)", out, err)
	}
}

func TestVersionCommand(t *testing.T) {
	out := mustRun(t, "version")
	if !strings.HasPrefix(out, "shardkeeper "+version.Read().Release+"\nmodule  ") || !strings.Contains(out, "\ngo      go") {
		t.Fatalf("version = %q", out)
	}
	if got := mustRun(t, "--version"); got != out {
		t.Fatalf("--version = %q, want %q", got, out)
	}
	if _, err := run(t, t.Context(), "version", "-o", "yaml"); err == nil || exitCode(err) != 2 {
		t.Fatalf("version -o yaml: %v", err)
	}
}
