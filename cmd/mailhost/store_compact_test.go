package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mailhost/mailhost/internal/pgtest"
	"github.com/mailhost/mailhost/mailstore/boltstore"
)

func TestStoreCompactAndStats(t *testing.T) {
	dir := t.TempDir()
	if code, _, errs := mh(t, "partner", "create", "acme", "-data", dir); code != 0 {
		t.Fatalf("partner create = %d, stderr %s", code, errs)
	}
	code, out, errs := mh(t, "store", "stats", "-data", dir)
	if code != 0 || !strings.Contains(out, "free: ") || !strings.Contains(out, "partners") {
		t.Errorf("store stats = %d %q, stderr %s", code, out, errs)
	}
	code, out, errs = mh(t, "store", "stats", "-json", "-data", dir)
	var st boltstore.FileStats
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil || st.Size == 0 || len(st.Buckets) == 0 {
		t.Errorf("store stats -json = %d %q (%v), stderr %s", code, out, err, errs)
	}
	code, out, errs = mh(t, "store", "compact", "-data", dir)
	if code != 0 || !strings.Contains(out, " -> ") || !strings.Contains(out, "freed") {
		t.Errorf("store compact = %d %q, stderr %s", code, out, errs)
	}
	if code, out, _ := mh(t, "partner", "list", "-data", dir); code != 0 || !strings.Contains(out, `"acme"`) {
		t.Errorf("partner list after compact = %d %q", code, out)
	}

	// A store in use is refused.
	s, err := boltstore.Open(context.Background(), dir, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, cmd := range []string{"compact", "stats"} {
		if code, _, errs := mh(t, "store", cmd, "-data", dir); code != 1 || !strings.Contains(errs, "stop the server first") {
			t.Errorf("store %s of a store in use = %d, stderr %q; want 1, stop the server first", cmd, code, errs)
		}
	}
	if code, _, errs := mh(t, "store", "compact", "-store", "postgres://nowhere/x"); code != 2 || !strings.Contains(errs, "VACUUM FULL") {
		t.Errorf("store compact of PostgreSQL = %d, stderr %q", code, errs)
	}
}

func TestStoreStatsPostgres(t *testing.T) {
	url := pgtest.URL(t)
	code, out, errs := mh(t, "store", "stats", "-store", url)
	if code != 0 || !strings.Contains(out, "database") || !strings.Contains(out, "messages") {
		t.Errorf("store stats -store postgres = %d %q, stderr %s", code, out, errs)
	}
}
