package boltstore

import (
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestSeqReader: seqReader.get answers Bucket.Get for keys in order, with
// gaps near and far, missing keys, and keys out of order.
func TestSeqReader(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "t.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("b"))
		if err != nil {
			return err
		}
		for i := int64(0); i < 3000; i += 3 { // keys 0, 3, 6, ...
			if err := b.Put(id8(i), id8(i*10)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	keys := []int64{0, 1, 3, 6, 9, 12, 30, 31, 33, 600, 603, 2997, 2998, 3000, 5, 6, 2400, -1, 9}
	db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("b"))
		r := newSeqReader(b)
		for _, k := range keys {
			got, want := r.get(id8(k)), b.Get(id8(k))
			if string(got) != string(want) {
				t.Errorf("get(%d) = %x, want %x", k, got, want)
			}
		}
		if v := newSeqReader(nil).get(id8(3)); v != nil {
			t.Errorf("get on no bucket = %x, want nil", v)
		}
		return nil
	})
}
