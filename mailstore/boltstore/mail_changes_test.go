package boltstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
)

// rawChanges counts the change log records of a closed store's file.
func rawChanges(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	rawUpdate(t, dir, "count changes", func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("changes"))
		if b == nil {
			return errors.New("no changes bucket")
		}
		n = b.Stats().KeyN
		return nil
	})
	return n
}

// TestBoltChangeLogBounded: the bbolt log keeps exactly Options.ChangeLogKeep
// records of a folder, whatever the number of changes, and none of a
// deleted folder or mailbox.
func TestBoltChangeLogBounded(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, pid, u, v := boltMailFixture(t, dir)
	s.Close()
	s, err := boltstore.Open(ctx, dir, boltstore.Options{ChangeLogKeep: 3})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for range 4 {
		if _, err := s.Deliver(ctx, mailstore.Delivery{Body: []byte("m"), ReceivedAt: at, MailboxIDs: []int64{u.ID, v.ID}}); err != nil {
			t.Fatal(err)
		}
	}
	inbox, err := s.Folder(ctx, u.ID, "INBOX")
	if err != nil {
		t.Fatal(err)
	}
	// One transaction of four changes prunes four records.
	if _, err := s.SetFlags(ctx, u.ID, inbox.ID, []uint32{1, 2, 3, 4}, mailstore.FlagsAdd, []string{`\Seen`}); err != nil {
		t.Fatal(err)
	}
	f, ch, err := s.Changes(ctx, u.ID, inbox.ID, 5)
	if err != nil || len(ch) != 3 || f.HighestModSeq != 8 || ch[0].ModSeq != 6 {
		t.Errorf("Changes(since 5) = %+v, %d changes, %v; want modseq 6-8 of 8", f, len(ch), err)
	}
	if _, _, err := s.Changes(ctx, u.ID, inbox.ID, 4); !errors.Is(err, mailstore.ErrChangesGone) {
		t.Errorf("Changes(since 4) with 3 kept of 8 = %v, want ErrChangesGone", err)
	}
	folder, err := s.CreateFolder(ctx, u.ID, "Gone")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Copy(ctx, u.ID, inbox.ID, []uint32{1, 2}, folder.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteFolder(ctx, u.ID, "Gone"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMailbox(ctx, pid, v.Email); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if got := rawChanges(t, dir); got != 3 {
		t.Errorf("change records = %d, want 3 (u's INBOX; none of the deleted folder and mailbox)", got)
	}
}

// TestBoltUpgradeSchema5: a schema 5 file (before the change log) gains
// an empty log; its folders start at HighestModSeq 0, where Changes
// answers nothing, and their next change is ModSeq 1.
func TestBoltUpgradeSchema5(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, _, u, _ := boltMailFixture(t, dir)
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for range 2 {
		if _, err := s.Deliver(ctx, mailstore.Delivery{Body: []byte("old"), ReceivedAt: at, MailboxIDs: []int64{u.ID}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	asSchema(t, dir, 5, "changes", "subscriptions")
	// Schema 5 folder records had no highest_modseq.
	rawUpdate(t, dir, "strip highest_modseq", func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("folders"))
		var keys, vals [][]byte
		b.ForEach(func(k, v []byte) error {
			var rec map[string]any
			if err := json.Unmarshal(v, &rec); err != nil {
				return err
			}
			delete(rec, "highest_modseq")
			raw, err := json.Marshal(rec)
			keys, vals = append(keys, bytes.Clone(k)), append(vals, raw)
			return err
		})
		for i := range keys {
			if err := b.Put(keys[i], vals[i]); err != nil {
				return err
			}
		}
		return nil
	})
	upgrade(t, dir)
	s = openBolt(t, dir)
	defer s.Close()
	inbox, err := s.Folder(ctx, u.ID, "INBOX")
	if err != nil || inbox.HighestModSeq != 0 || inbox.Messages != 2 {
		t.Fatalf("INBOX after upgrade = %+v, %v; want 2 messages at HighestModSeq 0", inbox, err)
	}
	f, ch, err := s.Changes(ctx, u.ID, inbox.ID, 0)
	if err != nil || len(ch) != 0 || f.HighestModSeq != 0 {
		t.Errorf("Changes(since 0) after upgrade = %+v, %v, %v; want none", f, ch, err)
	}
	if _, err := s.Expunge(ctx, u.ID, inbox.ID, []uint32{1}); err != nil {
		t.Fatal(err)
	}
	f, ch, err = s.Changes(ctx, u.ID, inbox.ID, 0)
	if err != nil || len(ch) != 1 || ch[0].ModSeq != 1 || ch[0].Kind != mailstore.ChangeExpunge || f.HighestModSeq != 1 || f.Messages != 1 {
		t.Errorf("Changes(since 0) after an expunge = %+v, %+v, %v; want the expunge at ModSeq 1", f, ch, err)
	}
}
