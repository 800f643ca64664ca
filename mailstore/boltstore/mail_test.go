package boltstore_test

import (
	"context"
	"encoding/binary"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
)

// boltMailFixture is a store with one partner, domain and two mailboxes.
func boltMailFixture(t *testing.T, dir string) (*boltstore.Store, int64, mailstore.Mailbox, mailstore.Mailbox) {
	t.Helper()
	ctx := context.Background()
	now := time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)
	s := openBolt(t, dir)
	p, err := s.CreatePartner(ctx, "acme", now)
	if err != nil {
		t.Fatal(err)
	}
	plan := mailstore.Plan{Name: "business", QuotaMB: 2048, RetentionDays: 60, TransferMonthlyMB: 10240}
	if _, err := s.CreateDomain(ctx, p.ID, mailstore.NewDomain{Name: "example.com", Plan: plan}, now); err != nil {
		t.Fatal(err)
	}
	u, err := s.CreateMailbox(ctx, p.ID, "example.com", "u@example.com", "hash", now)
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.CreateMailbox(ctx, p.ID, "example.com", "v@example.com", "hash", now)
	if err != nil {
		t.Fatal(err)
	}
	return s, p.ID, u, v
}

// rawCounts opens the closed store's file with bbolt and counts what the
// mail buckets hold: blobs, the sum of their refcounts, message records
// and retention entries.
func rawCounts(t *testing.T, dir string) (blobs, refs, messages, retention int) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, boltstore.FileName), 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("bolt.Open() = %v", err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		blobs = tx.Bucket([]byte("blobs")).Stats().KeyN
		tx.Bucket([]byte("blob_refs")).ForEach(func(k, v []byte) error {
			refs += int(binary.BigEndian.Uint64(v))
			if tx.Bucket([]byte("blobs")).Get(k) == nil {
				t.Errorf("refcount for blob %x without its blob", k)
			}
			return nil
		})
		messages = tx.Bucket([]byte("messages")).Stats().KeyN
		retention = tx.Bucket([]byte("retention")).Stats().KeyN
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return
}

// TestBoltBlobRefcounts checks what the public interface cannot see: one
// stored body per delivery and per shared copy, refcounts that equal the
// messages naming each body, bodies gone with their last message, and a
// retention entry for each message and no other.
func TestBoltBlobRefcounts(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, pid, u, v := boltMailFixture(t, dir)
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for _, body := range []string{"one", "two", "three"} {
		if _, err := s.Deliver(ctx, mailstore.Delivery{Body: []byte(body), ReceivedAt: at, MailboxIDs: []int64{u.ID, v.ID}}); err != nil {
			t.Fatal(err)
		}
	}
	uin, err := s.Folder(ctx, u.ID, "INBOX")
	if err != nil {
		t.Fatal(err)
	}
	arch, err := s.Folder(ctx, u.ID, "Archive")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Copy(ctx, u.ID, uin.ID, []uint32{1, 2}, arch.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Move(ctx, u.ID, uin.ID, []uint32{3}, arch.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Expunge(ctx, u.ID, uin.ID, []uint32{1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// u: INBOX 2; Archive copies of 1, 2 and the moved 3. v: 1, 2, 3.
	if b, r, m, ret := rawCounts(t, dir); b != 3 || r != 7 || m != 7 || ret != 7 {
		t.Errorf("raw counts = %d blobs, %d refs, %d messages, %d retention; want 3, 7, 7, 7", b, r, m, ret)
	}

	s = openBolt(t, dir)
	if err := s.DeleteMailbox(ctx, pid, "v@example.com"); err != nil {
		t.Fatal(err)
	}
	// Body one goes with its last message; u keeps two (twice) and three.
	if _, err := s.Expunge(ctx, u.ID, arch.ID, []uint32{1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if b, r, m, ret := rawCounts(t, dir); b != 2 || r != 3 || m != 3 || ret != 3 {
		t.Errorf("raw counts = %d blobs, %d refs, %d messages, %d retention; want 2, 3, 3, 3", b, r, m, ret)
	}

	s = openBolt(t, dir)
	if _, err := s.PurgeBefore(ctx, at.AddDate(0, 0, 61)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if b, r, m, ret := rawCounts(t, dir); b != 0 || r != 0 || m != 0 || ret != 0 {
		t.Errorf("raw counts after purge = %d blobs, %d refs, %d messages, %d retention; want none", b, r, m, ret)
	}
}

// TestBoltMailRestart: messages, bodies, flags and UIDNext survive a
// restart, and UIDs go on from where they were.
func TestBoltMailRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, _, u, _ := boltMailFixture(t, dir)
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	if _, err := s.Deliver(ctx, mailstore.Delivery{Body: []byte("kept"), ReceivedAt: at, MailboxIDs: []int64{u.ID}}); err != nil {
		t.Fatal(err)
	}
	inbox, err := s.Folder(ctx, u.ID, "INBOX")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetFlags(ctx, u.ID, inbox.ID, []uint32{1}, mailstore.FlagsAdd, []string{`\Answered`, "Work"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openBolt(t, dir)
	defer s.Close()
	ms, err := s.Messages(ctx, u.ID, inbox.ID)
	if err != nil || len(ms) != 1 || len(ms[0].Flags) != 2 || !ms[0].ReceivedAt.Equal(at) {
		t.Fatalf("Messages() after restart = %+v, %v", ms, err)
	}
	if b, err := s.Body(ctx, u.ID, inbox.ID, 1); err != nil || string(b) != "kept" {
		t.Errorf("Body() after restart = %q, %v", b, err)
	}
	m, err := s.Append(ctx, u.ID, inbox.ID, []byte("next"), nil, at)
	if err != nil || m.UID != 2 {
		t.Errorf("Append() after restart = %+v, %v; want UID 2", m, err)
	}
}
