package boltstore_test

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mailhost/mailhost/mailstore/boltstore"
)

// noFreelist is bbolt's "no freelist written" page id in a meta page: the
// file's free pages must then be found by walking every page at open.
const noFreelist = ^uint64(0)

// metaFreelist reads the file's current meta page (of the two, the one
// with the higher transaction id) and answers its freelist page id. The
// offsets are bbolt's page header (16 bytes) and meta layout: magic,
// version, page size, flags (4 bytes each), root bucket (16), freelist
// (8), high-water page id (8), txid (8).
func metaFreelist(t *testing.T, path string) uint64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head := make([]byte, 80)
	if _, err := f.ReadAt(head, 0); err != nil {
		t.Fatal(err)
	}
	pageSize := int64(binary.LittleEndian.Uint32(head[24:]))
	var best, freelist uint64
	for i := int64(0); i < 2; i++ {
		m := make([]byte, 80)
		if _, err := f.ReadAt(m, i*pageSize); err != nil {
			t.Fatal(err)
		}
		if binary.LittleEndian.Uint32(m[16:]) != 0xED0CDAED {
			t.Fatalf("meta page %d of %s: no bbolt magic", i, path)
		}
		if txid := binary.LittleEndian.Uint64(m[64:]); i == 0 || txid > best {
			best, freelist = txid, binary.LittleEndian.Uint64(m[48:])
		}
	}
	return freelist
}

// TestOpenWritesFreelist: a store written by Open has its freelist on
// disk, so that the next open reads one page instead of walking the file;
// a file last written without one (NoFreelistSync) gets it at its first
// open, and keeps its data.
func TestOpenWritesFreelist(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	path := filepath.Join(dir, boltstore.FileName)
	s := openBolt(t, dir)
	if _, err := s.CreatePartner(ctx, "p", now); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := metaFreelist(t, path); got == noFreelist {
		t.Fatalf("after a write through Open the meta page's freelist is %#x (none written), want a page", got)
	}

	// Written without a freelist (NoFreelistSync).
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists([]byte("written-without-freelist"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if got := metaFreelist(t, path); got != noFreelist {
		t.Fatalf("after a write with NoFreelistSync the freelist is %#x, want %#x: the test does not make the old format", got, noFreelist)
	}

	s = openBolt(t, dir)
	if got := metaFreelist(t, path); got == noFreelist {
		t.Errorf("after Open of a file without a freelist the meta page still names none: it is not converted")
	}
	if _, err := s.PartnerByName(ctx, "p"); err != nil {
		t.Errorf("PartnerByName(p) after the conversion = %v, want the partner", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// The tools' open (verify, stats, compact) keeps it too.
	if _, err := boltstore.StatFile(ctx, dir, boltstore.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := boltstore.Compact(ctx, dir, boltstore.Options{}); err != nil {
		t.Fatal(err)
	}
	if got := metaFreelist(t, path); got == noFreelist {
		t.Errorf("after Compact the meta page's freelist is none, want a page: the next open would walk the file")
	}
}
