package keyserver

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestStandardLibraryIO: the key service does its I/O through the
// standard library's net package only. No file of the package (tests
// aside) imports unsafe, syscall or golang.org/x/sys: no hand-written
// event loop or system call comes back without this test being changed.
func TestStandardLibraryIO(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if path == "unsafe" || path == "syscall" || strings.HasPrefix(path, "golang.org/x/sys/") {
				t.Errorf("%s imports %s: serve with the net package instead", name, path)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no source file found")
	}
}
