package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Environment variables for the shared reference: the material from public
// repositories (ShardingSphere's example configuration and end-to-end
// cases) that the project reads in place and does not ship.
const (
	EnvSharedDir     = "SHARDKEEPER_SHARED_DIR"     // the shared reference; default ../shared next to the clone
	EnvRequireShared = "SHARDKEEPER_REQUIRE_SHARED" // "1": fail, do not skip, when it is missing
)

// Shared returns the path of elem (slash-separated parts such as
// "reference/shardingsphere-e2e") inside the shared reference:
// $SHARDKEEPER_SHARED_DIR when set, else the folder shared next to the
// module root (../shared from the clone). When that path does not exist the
// test is skipped with one line that says where it looked and how to point
// at it; under SHARDKEEPER_REQUIRE_SHARED=1 (scripts/test.sh, and so CI) it
// fails instead.
func Shared(t testing.TB, elem ...string) string {
	t.Helper()
	p, err := sharedPath(os.Getenv(EnvSharedDir), elem...)
	if err != nil {
		if os.Getenv(EnvRequireShared) == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return p
}

// sharedPath is Shared's lookup: dir when not blank, else ../shared next
// to the module root, joined with elem, with an error saying where it
// looked when that does not exist.
func sharedPath(dir string, elem ...string) (string, error) {
	from := "$" + EnvSharedDir
	if dir = strings.TrimSpace(dir); dir == "" {
		root, err := moduleRoot()
		if err != nil {
			return "", fmt.Errorf("no shared reference: no go.mod above the working directory to find ../shared from (%v): set %s to its folder", err, EnvSharedDir)
		}
		dir, from = filepath.Join(filepath.Dir(root), "shared"), "../shared next to the clone"
	}
	p := filepath.Join(append([]string{dir}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("no shared reference at %s (looked in %s): set %s to its folder, or put it at ../shared next to the clone", p, from, EnvSharedDir)
	}
	return p, nil
}

// moduleRoot walks up from the working directory to the go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}
