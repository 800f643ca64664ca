package boltstore_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
	"github.com/mailhost/mailhost/mailstore/storetest"
)

// TestBoltFullDisk fills the file system under a store (a tmpfs made for
// the test) and checks that writes then answer ErrNoSpace or succeed,
// that a failed commit stores nothing and breaks nothing (reads still
// work, later writes succeed once space is freed), and that after a
// restart every write that was answered with success is there, the file
// passes bbolt's consistency check and no counter drifts.
func TestBoltFullDisk(t *testing.T) {
	ctx := context.Background()
	dir := storetest.SmallFS(t, 8<<20)
	s, pid, u, _ := boltMailFixture(t, dir)
	t.Cleanup(func() { s.Close() })
	inbox, err := s.Folder(ctx, u.ID, "INBOX")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

	// acked are the bodies (by digest) of the messages whose write
	// succeeded: they must all be there after the restart.
	acked := map[[32]byte]bool{}
	body := func(i, size int) []byte {
		b := bytes.Repeat([]byte(fmt.Sprintf("message %d ", i)), size/10+1)
		return append([]byte(fmt.Sprintf("Subject: %d\r\n\r\n", i)), b[:size]...)
	}
	deliver := func(i, size int) error {
		b := body(i, size)
		res, err := s.Deliver(ctx, mailstore.Delivery{Body: b, ReceivedAt: at, MailboxIDs: []int64{u.ID}})
		if err == nil {
			if len(res.Delivered) != 1 {
				t.Fatalf("Deliver() = %+v", res)
			}
			acked[sha256.Sum256(b)] = true
		}
		return err
	}
	appendMsg := func(i, size int) error {
		b := body(i, size)
		_, err := s.Append(ctx, u.ID, inbox.ID, b, []string{`\Seen`}, at)
		if err == nil {
			acked[sha256.Sum256(b)] = true
		}
		return err
	}
	noSpaceOrNil := func(what string, err error) bool {
		t.Helper()
		if err != nil && !errors.Is(err, mailstore.ErrNoSpace) {
			t.Fatalf("%s on a full disk = %v, want nil or ErrNoSpace", what, err)
		}
		return err != nil
	}

	for i := range 20 {
		if err := deliver(i, 32<<10); err != nil {
			t.Fatalf("Deliver() with space left = %v", err)
		}
	}
	filler := filepath.Join(dir, "filler")
	storetest.FillFS(t, filler)

	// Large writes need new pages: they fail, again and again, and leave
	// the store as it was.
	refused := 0
	for i := 100; i < 110; i++ {
		if noSpaceOrNil("Deliver", deliver(i, 256<<10)) {
			refused++
		}
		if noSpaceOrNil("Append", appendMsg(i+100, 256<<10)) {
			refused++
		}
	}
	if refused == 0 {
		t.Fatal("no write of 256 KiB failed on a full disk")
	}
	t.Logf("%d of 20 writes of 256 KiB refused on a full disk", refused)
	// Small ones may fit the free pages the file has; those that do not
	// fail the same way.
	for i := range 20 {
		_, err := s.CreateMailbox(ctx, pid, "example.com", fmt.Sprintf("full%d@example.com", i), "hash", at)
		noSpaceOrNil("CreateMailbox", err)
		noSpaceOrNil("Deliver", deliver(200+i, 100))
	}
	// Reads work on a full disk.
	ms, err := s.Messages(ctx, u.ID, inbox.ID)
	if err != nil || len(ms) != len(acked) {
		t.Fatalf("Messages() on a full disk = %d messages, %v; want %d", len(ms), err, len(acked))
	}

	// Space freed: every kind of write works again.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for i := 300; i < 305; i++ {
		if err := deliver(i, 256<<10); err != nil {
			t.Fatalf("Deliver() once space is freed = %v", err)
		}
		if err := appendMsg(i+100, 1000); err != nil {
			t.Fatalf("Append() once space is freed = %v", err)
		}
	}
	if _, err := s.CreateMailbox(ctx, pid, "example.com", "after@example.com", "hash", at); err != nil {
		t.Fatalf("CreateMailbox() once space is freed = %v", err)
	}

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checkBoltFile(t, filepath.Join(dir, boltstore.FileName))
	s = openBolt(t, dir)
	ms, err = s.Messages(ctx, u.ID, inbox.ID)
	if err != nil || len(ms) != len(acked) {
		t.Fatalf("Messages() after restart = %d messages, %v; want %d", len(ms), err, len(acked))
	}
	for _, m := range ms {
		b, err := s.Body(ctx, u.ID, inbox.ID, m.UID)
		if err != nil || !acked[sha256.Sum256(b)] {
			t.Errorf("Body(%d) after restart = %d bytes, %v; not a message acknowledged", m.UID, len(b), err)
		}
		delete(acked, sha256.Sum256(b))
	}
	if len(acked) > 0 {
		t.Errorf("%d acknowledged messages missing after restart", len(acked))
	}
	if drift, err := s.Verify(ctx); err != nil || len(drift) > 0 {
		t.Errorf("Verify() after the full disk = %v, %v; want no drift", drift, err)
	}
}

// checkBoltFile runs bbolt's consistency check on a closed store.
func checkBoltFile(t *testing.T, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			t.Errorf("bbolt check of %s: %v", path, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
