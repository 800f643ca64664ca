package service

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestArchitectureDocPackages keeps docs/architecture.md's package map
// true: every package of the module is named there (a benchmark helper
// under bench/ by its last element), and every package it names exists.
func TestArchitectureDocPackages(t *testing.T) {
	doc, err := os.ReadFile("../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	pkgs := map[string]bool{}
	err = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != ".." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "third_party" || name == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			rel, _ := filepath.Rel("..", filepath.Dir(path))
			pkgs[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 20 {
		t.Fatalf("found %d packages, want the whole module", len(pkgs))
	}
	for p := range pkgs {
		want := "`" + p + "`"
		if rest, ok := strings.CutPrefix(p, "bench/"); ok {
			want = "`" + rest + "`"
		}
		if !strings.Contains(text, want) {
			t.Errorf("docs/architecture.md does not name package %s", p)
		}
	}
	// The map's first column names packages; each must exist.
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		name := strings.Trim(strings.SplitN(line, "|", 3)[1], " `")
		if strings.Contains(name, " ") || strings.Contains(name, "...") || strings.HasPrefix(name, "third_party/") {
			continue
		}
		if !pkgs[name] {
			t.Errorf("docs/architecture.md names %s, which is not a package", name)
		}
	}
}
