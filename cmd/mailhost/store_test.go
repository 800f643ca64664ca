package main

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestStoreCopyAndVerify(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "copy")
	if code, _, errs := mh(t, "partner", "create", "acme", "-data", src); code != 0 {
		t.Fatalf("partner create = %d, stderr %s", code, errs)
	}
	code, out, errs := mh(t, "store", "copy", "--from", src, "--to", dst)
	if code != 0 || !strings.Contains(out, "copied") || !strings.Contains(out, "1 partners") || !strings.Contains(out, "counts and checksums match") {
		t.Fatalf("store copy = %d %q, stderr %s", code, out, errs)
	}
	if code, _, errs := mh(t, "store", "copy", "--from", src, "--to", dst); code != 1 || !strings.Contains(errs, "not empty") {
		t.Errorf("store copy again = %d, stderr %s; want 1 and 'not empty'", code, errs)
	}
	if code, out, errs := mh(t, "store", "verify", "-data", dst); code != 0 || !strings.Contains(out, "no drift") {
		t.Errorf("store verify = %d %q, stderr %s", code, out, errs)
	}
	if code, out, _ := mh(t, "store", "verify", "-data", dst); code != 0 || !strings.Contains(out, "no drift") {
		t.Errorf("store verify -data = %d %q", code, out)
	}
	if code, _, _ := mh(t, "store", "copy", "--from", src); code != 2 {
		t.Errorf("store copy without --to = %d, want 2", code)
	}
}
