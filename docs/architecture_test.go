package docs

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/shardkeeper/shardkeeper/"

// TestPackageLayers checks the rule of architecture.md's package table:
// dependencies point down the table, so no package listed in it (itself
// or under a listed folder) imports one listed in a layer above its own.
// Test files, and the test-support packages only tests import (named
// ...test: registrytest, ruletest, metadatatest), are not held to it.
func TestPackageLayers(t *testing.T) {
	layers := tableLayers(t)
	layerOf := func(pkg string) (string, int, bool) {
		best, layer := "", 0
		for p, l := range layers {
			if (pkg == p || strings.HasPrefix(pkg, p+"/")) && len(p) > len(best) {
				best, layer = p, l
			}
		}
		return best, layer, best != ""
	}
	imports := moduleImports(t)
	if len(imports) < len(layers) {
		t.Fatalf("found %d packages, fewer than the table's %d", len(imports), len(layers))
	}
	for pkg, deps := range imports {
		if strings.HasSuffix(pkg, "test") {
			continue // a test-support package
		}
		row, layer, ok := layerOf(pkg)
		if !ok {
			continue // tools, test helpers and checks beside the product
		}
		for _, dep := range deps {
			depRow, depLayer, ok := layerOf(dep)
			if ok && depLayer < layer {
				t.Errorf("%s (layer of %s) imports %s (layer of %s, above it)", pkg, row, dep, depRow)
			}
		}
	}
}

// tableLayers reads architecture.md's package table: each package (or
// folder) named in it, with its layer's index from the top.
func tableLayers(t *testing.T) map[string]int {
	t.Helper()
	data, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile("`([a-z0-9/]+)`")
	layers := map[string]int{}
	layer := -1
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| layer ") {
			continue
		}
		cells := strings.Split(line, "|")[1:]
		if len(cells) < 2 {
			continue
		}
		if strings.TrimSpace(cells[0]) != "" {
			layer++
		}
		for _, m := range name.FindAllStringSubmatch(cells[1], -1) {
			layers[m[1]] = layer
		}
	}
	if len(layers) == 0 {
		t.Fatal("no package table in architecture.md")
	}
	return layers
}

// moduleImports parses the imports of every non-test Go file of the
// module: package path (relative to the module) to the module packages
// it imports.
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	imports := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != ".." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(filepath.Dir(strings.TrimPrefix(path, "../")))
		if _, ok := imports[pkg]; !ok {
			imports[pkg] = nil
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, module) {
				imports[pkg] = append(imports[pkg], strings.TrimPrefix(p, module))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return imports
}
