package boltstore

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// mappingAdvisedRandom reports whether the kernel holds the mapping of
// path as read at random (the "rr" of its VmFlags in /proc/self/smaps).
func mappingAdvisedRandom(t *testing.T, path string) bool {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("/proc/self/smaps: %v (CI=true: this test must run)", err)
		}
		t.Skipf("no /proc/self/smaps (%v): the kernel's advice cannot be read", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	inFile := false
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		switch {
		case len(fields) > 0 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":"):
			inFile = fields[len(fields)-1] == path
		case inFile && strings.HasPrefix(line, "VmFlags:"):
			return slices.Contains(fields[1:], "rr")
		}
	}
	t.Fatalf("no mapping of %s in smaps (%v)", path, sc.Err())
	return false
}

// TestReadAround: while a bulk read's transaction is open, the file's
// mapping is advised normal, and random again (as bbolt leaves it) when
// the last of two overlapping ones ends.
func TestReadAround(t *testing.T) {
	s, err := Open(context.Background(), t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	path, err := filepath.EvalSymlinks(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if !mappingAdvisedRandom(t, path) {
		t.Fatal("bbolt's mapping is not advised random to begin with")
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		s.readAround.begin(tx)
		s.readAround.begin(tx)
		if mappingAdvisedRandom(t, path) {
			t.Error("advised random during two bulk reads")
		}
		s.readAround.end(tx)
		if mappingAdvisedRandom(t, path) {
			t.Error("advised random while one bulk read is left")
		}
		s.readAround.end(tx)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !mappingAdvisedRandom(t, path) {
		t.Error("not advised random again after the bulk reads")
	}
}
