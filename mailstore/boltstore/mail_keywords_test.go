package boltstore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
)

// TestBoltKeywordsCountedLater: a folder whose keyword counts the store
// does not keep (a file from before them) has its keywords counted from
// its messages by the first write that changes one, and the limit holds
// from then on; the counts of a store opened with MaxKeywords follow it.
func TestBoltKeywordsCountedLater(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, _, u, _ := boltMailFixture(t, dir)
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for range 2 {
		if _, err := s.Deliver(ctx, mailstore.Delivery{Body: []byte("m"), ReceivedAt: at, MailboxIDs: []int64{u.ID}}); err != nil {
			t.Fatal(err)
		}
	}
	inbox, err := s.Folder(ctx, u.ID, "INBOX")
	if err != nil {
		t.Fatal(err)
	}
	kws := make([]string, 10)
	for i := range kws {
		kws[i] = fmt.Sprintf("kw%d", i)
	}
	if _, err := s.SetFlags(ctx, u.ID, inbox.ID, []uint32{1}, mailstore.FlagsAdd, kws); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(filepath.Join(dir, boltstore.FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte("folder_keywords")) }); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s, err = boltstore.Open(ctx, dir, boltstore.Options{MaxKeywords: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.SetFlags(ctx, u.ID, inbox.ID, []uint32{2}, mailstore.FlagsAdd, []string{"KW3", `\Seen`}); err != nil {
		t.Errorf("SetFlags(a keyword the folder has) = %v, want nil", err)
	}
	if _, err := s.SetFlags(ctx, u.ID, inbox.ID, []uint32{2}, mailstore.FlagsAdd, []string{"new"}); !errors.Is(err, mailstore.ErrTooManyKeywords) {
		t.Errorf("SetFlags(an 11th keyword, limit 10) = %v, want ErrTooManyKeywords", err)
	}
	if _, err := s.SetFlags(ctx, u.ID, inbox.ID, []uint32{1}, mailstore.FlagsRemove, []string{"kw0"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetFlags(ctx, u.ID, inbox.ID, []uint32{2}, mailstore.FlagsAdd, []string{"new"}); err != nil {
		t.Errorf("SetFlags(a 10th keyword after one left) = %v, want nil", err)
	}
}
