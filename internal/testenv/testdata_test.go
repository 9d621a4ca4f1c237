package testenv

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSharedCopiesMatch checks the repository's copies of the shared test
// data against the originals, when those are reachable.
func TestSharedCopiesMatch(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	shared := filepath.Join(root, "..", "shared")
	if d := os.Getenv("SHARDKEEPER_SHARED_DIR"); d != "" {
		shared = d
	}
	orig := filepath.Join(shared, "testdata")
	if _, err := os.Stat(orig); err != nil {
		t.Skipf("the shared test data is not reachable at %s (set SHARDKEEPER_SHARED_DIR): nothing to compare", orig)
	}
	copies := filepath.Join(root, "testdata")
	n := 0
	err = filepath.WalkDir(copies, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Name() == "README.md" {
			return err
		}
		if d.IsDir() {
			if d.Name() == "registry" {
				return filepath.SkipDir // the project's own registry trees, with no original
			}
			return nil
		}
		rel, _ := filepath.Rel(copies, p)
		from := filepath.Join(orig, rel)
		if strings.HasPrefix(rel, "shardingsphere-e2e"+string(filepath.Separator)) {
			// ShardingSphere's e2e cases are a reference copy.
			from = filepath.Join(shared, "reference", rel)
		}
		want, err := os.ReadFile(from)
		if err != nil {
			t.Errorf("%s has no original: %v", rel, err)
			return nil
		}
		got, _ := os.ReadFile(p)
		if !bytes.Equal(got, want) {
			t.Errorf("testdata/%s differs from %s", rel, from)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no test data copies found")
	}
}
