package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBackupCommand(t *testing.T) {
	dir := t.TempDir()
	if code, _, errs := mh(t, "partner", "create", "acme", "-data", dir); code != 0 {
		t.Fatalf("partner create = %d %s", code, errs)
	}
	file := filepath.Join(t.TempDir(), "b.db")
	code, out, errs := mh(t, "backup", file, "-data", dir)
	if code != 0 || !strings.Contains(out, "from the stopped store's file") {
		t.Fatalf("backup = %d %q %q", code, out, errs)
	}
	// The copy is a store: the CLI reads it as a data directory.
	restored := t.TempDir()
	raw, _ := os.ReadFile(file)
	os.WriteFile(filepath.Join(restored, "mailhost.db"), raw, 0o600)
	if code, out, _ := mh(t, "partner", "list", "-data", restored); code != 0 || !strings.Contains(out, `"acme"`) {
		t.Errorf("partner list of the restored copy = %d %q", code, out)
	}
	for _, tt := range []struct {
		name string
		args []string
		code int
	}{
		{"no file", []string{"backup", "-data", dir}, 2},
		{"two files", []string{"backup", "a", "b", "-data", dir}, 2},
		{"postgres", []string{"backup", file, "-store", "postgres://db/x"}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if code, _, _ := mh(t, tt.args...); code != tt.code {
				t.Errorf("run(%q) = %d, want %d", tt.args, code, tt.code)
			}
		})
	}
}
