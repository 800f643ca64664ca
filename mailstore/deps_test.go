package mailstore_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestStorageImports keeps the contract apart from its implementations,
// as database/sql is from its drivers: no package of the module depends
// on bbolt or pgx except the two stores and what chooses between them
// (the wiring, the binary, store copy, the benchmark tools, and the
// PostgreSQL test helper). A protocol package that reached a store's
// internals would fail here.
func TestStorageImports(t *testing.T) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		if goBin, err = exec.LookPath("go"); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatal("no go command to list the packages")
			}
			t.Skip("no go command to list the packages")
		}
	}
	cmd := exec.Command(goBin, "list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}", "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const mod = "github.com/mailhost/mailhost/"
	allowed := func(pkg string) bool {
		p := strings.TrimPrefix(pkg, mod)
		switch {
		case p == "service", p == "storecopy", p == "mailstore/boltstore", p == "mailstore/pgstore",
			p == "internal/pgtest",
			strings.HasPrefix(p, "cmd/"), strings.HasPrefix(p, "bench/"):
			return true
		}
		return false
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || allowed(fields[0]) {
			continue
		}
		checked++
		for _, dep := range fields[1:] {
			if dep == "go.etcd.io/bbolt" || strings.HasPrefix(dep, "github.com/jackc/pgx") {
				t.Errorf("%s depends on %s; only the stores and the wiring may", fields[0], dep)
				break
			}
		}
	}
	// The listing must have reached the protocol packages for the test
	// to mean anything.
	if checked < 10 {
		t.Fatalf("go list named %d packages to check, want the module's", checked)
	}
}
