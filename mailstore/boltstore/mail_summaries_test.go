package boltstore_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
)

// rawSummaries opens the closed store's file and lists the blob ids that
// have a summary; with drop, it deletes them all first (a store from
// before summaries).
func rawSummaries(t *testing.T, dir string, drop bool) []int {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, boltstore.FileName), 0o600, nil)
	if err != nil {
		t.Fatalf("bolt.Open() = %v", err)
	}
	defer db.Close()
	var ids []int
	err = db.Update(func(tx *bolt.Tx) error {
		if drop {
			return tx.DeleteBucket([]byte("blob_summaries"))
		}
		b := tx.Bucket([]byte("blob_summaries"))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, _ []byte) error {
			ids = append(ids, int(k[7]))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestBoltSummariesLazy checks what the public interface cannot see: a
// summary per stored body, written with it and deleted with it, and
// those of bodies stored before summaries made on the first Summaries
// and stored.
func TestBoltSummariesLazy(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, _, u, v := boltMailFixture(t, dir)
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	bodies := []string{"Subject: one\r\nX: 1\r\n\r\n1", "Subject: two\r\n\r\n2"}
	for _, body := range bodies {
		if _, err := s.Deliver(ctx, mailstore.Delivery{Body: []byte(body), ReceivedAt: at, MailboxIDs: []int64{u.ID, v.ID}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := rawSummaries(t, dir, false); len(got) != 2 {
		t.Fatalf("summaries after 2 deliveries = %v, want 2", got)
	}
	rawSummaries(t, dir, true)

	s = openBolt(t, dir)
	inbox, err := s.Folder(ctx, u.ID, "INBOX")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := s.Summaries(ctx, u.ID, inbox.ID, []uint32{1, 2}, func(_ uint32, h []byte) error {
		got = append(got, string(h))
		return nil
	}); err != nil {
		t.Fatalf("Summaries = %v", err)
	}
	if want := []string{"Subject: one\r\n\r\n", "Subject: two\r\n\r\n"}; !slices.Equal(got, want) {
		t.Errorf("Summaries without stored summaries = %q, want %q", got, want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := rawSummaries(t, dir, false); len(got) != 2 {
		t.Errorf("summaries stored by Summaries = %v, want 2", got)
	}

	// A body's summary goes with its last message.
	s = openBolt(t, dir)
	for _, mb := range []int64{u.ID, v.ID} {
		f, err := s.Folder(ctx, mb, "INBOX")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Expunge(ctx, mb, f.ID, []uint32{1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := rawSummaries(t, dir, false); len(got) != 1 {
		t.Errorf("summaries after body one's last message went = %v, want 1", got)
	}
}
