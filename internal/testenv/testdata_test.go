package testenv

import (
	"crypto/sha256"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSharedPath: the shared reference is $SHARDKEEPER_SHARED_DIR when set
// and ../shared next to the module root otherwise; a missing path is an
// error naming where it looked and the variable that points elsewhere.
func TestSharedPath(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "reference", "cases"), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := sharedPath(dir, "reference", "cases")
	if err != nil || p != filepath.Join(dir, "reference", "cases") {
		t.Fatalf("sharedPath(%s, reference, cases) = %q, %v", dir, p, err)
	}
	if p, err := sharedPath(" "+dir+" ", "reference"); err != nil || p != filepath.Join(dir, "reference") {
		t.Fatalf("a blank-padded directory: %q, %v", p, err)
	}
	_, err = sharedPath(dir, "testdata", "shardingsphere")
	want := "no shared reference at " + filepath.Join(dir, "testdata", "shardingsphere") + " (looked in $" + EnvSharedDir + "): set " + EnvSharedDir + " to its folder"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("a missing path: %v, want %q", err, want)
	}

	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	next := filepath.Join(filepath.Dir(root), "shared", "no-such-part")
	_, err = sharedPath("", "no-such-part")
	if err == nil || !strings.Contains(err.Error(), "no shared reference at "+next+" (looked in ../shared next to the clone)") {
		t.Fatalf("without %s: %v, want it to look at %s", EnvSharedDir, err, next)
	}
}

// TestSharedSkipsOrFails runs a test that needs a missing shared reference
// in a child process: it skips with the line saying where it looked, and
// fails with the same line under SHARDKEEPER_REQUIRE_SHARED=1.
func TestSharedSkipsOrFails(t *testing.T) {
	if os.Getenv("SHARDKEEPER_TESTENV_CHILD") == "1" {
		Shared(t, "reference", "shardingsphere-e2e")
		t.Log("found")
		return
	}
	missing := filepath.Join(t.TempDir(), "gone")
	line := "no shared reference at " + filepath.Join(missing, "reference", "shardingsphere-e2e")
	for _, c := range []struct {
		require string
		fails   bool
		verdict string
	}{
		{"", false, "--- SKIP: TestSharedSkipsOrFails"},
		{"0", false, "--- SKIP: TestSharedSkipsOrFails"},
		{"1", true, "--- FAIL: TestSharedSkipsOrFails"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSharedSkipsOrFails$", "-test.v")
		cmd.Env = append(os.Environ(), "SHARDKEEPER_TESTENV_CHILD=1", EnvSharedDir+"="+missing, EnvRequireShared+"="+c.require)
		out, err := cmd.CombinedOutput()
		if (err != nil) != c.fails || !strings.Contains(string(out), c.verdict) || !strings.Contains(string(out), line) || strings.Contains(string(out), "found") {
			t.Errorf("%s=%q: err %v, output:\n%s\nwant %s and %q", EnvRequireShared, c.require, err, out, c.verdict, line)
		}
	}
}

// TestNoUpstreamCopies: no file the repository tracks is byte-identical to
// a file of upstream's material in the shared reference (reference/ and
// testdata/shardingsphere/): the project reads that material in place and
// ships none of it.
func TestNoUpstreamCopies(t *testing.T) {
	upstream := map[[sha256.Size]byte]string{}
	for _, dir := range [][]string{{"reference"}, {"testdata", "shardingsphere"}} {
		root := Shared(t, dir...)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if len(data) > 0 {
				upstream[sha256.Sum256(data)] = p
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(upstream) == 0 {
		t.Fatal("the shared reference has no files to compare with")
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("git ls-files in %s: %v: not a git clone, nothing to compare", root, err)
	}
	n := 0
	for _, name := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		data, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			continue // deleted in the work tree, or not a regular file
		}
		n++
		if from, ok := upstream[sha256.Sum256(data)]; ok {
			t.Errorf("%s is a copy of %s: read it from the shared reference instead", name, from)
		}
	}
	if n == 0 {
		t.Fatal("git ls-files lists no readable file")
	}
}
