package boltstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
)

// TestBoltCompact: deleting a mailbox with its mail leaves the file's
// size and its pages free (FileStats says so); Compact gives them back,
// and the store afterwards has everything it had, its id sequences
// included.
func TestBoltCompact(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, pid, u, v := boltMailFixture(t, dir)
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	body := func(i int) []byte { return bytes.Repeat([]byte(fmt.Sprintf("message %d\r\n", i)), 6000) }
	for i := range 100 {
		if _, err := s.Deliver(ctx, mailstore.Delivery{Body: body(i), ReceivedAt: at, MailboxIDs: []int64{u.ID}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Deliver(ctx, mailstore.Delivery{Body: []byte("kept"), ReceivedAt: at, MailboxIDs: []int64{v.ID}}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMailbox(ctx, pid, u.Email); err != nil {
		t.Fatal(err)
	}

	// Both refuse a store in use.
	if _, err := boltstore.Compact(ctx, dir, boltstore.Options{}); !errors.Is(err, mailstore.ErrLocked) {
		t.Errorf("Compact() of an open store = %v, want ErrLocked", err)
	}
	if _, err := boltstore.StatFile(ctx, dir, boltstore.Options{}); !errors.Is(err, mailstore.ErrLocked) {
		t.Errorf("StatFile() of an open store = %v, want ErrLocked", err)
	}
	online, err := s.FileStats(ctx)
	if err != nil || online.FreePages == 0 {
		t.Errorf("FileStats() after deleting 7 MB = %+v, %v; want free pages", online, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	st, err := boltstore.StatFile(ctx, dir, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st.FreeBytes < st.Used/2 || st.Size < st.Used || st.PageSize == 0 {
		t.Errorf("StatFile() = size %d, used %d, free %d (%d pages): want more than half of it free", st.Size, st.Used, st.FreeBytes, st.FreePages)
	}
	var mailboxes *boltstore.BucketStats
	for i, b := range st.Buckets {
		if b.Name == "mailboxes" {
			mailboxes = &st.Buckets[i]
		}
	}
	if mailboxes == nil || mailboxes.Keys != 1 {
		t.Errorf("StatFile() buckets %+v: want mailboxes with 1 key", st.Buckets)
	}

	res, err := boltstore.Compact(ctx, dir, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Before != st.Size || res.After >= res.Before/2 {
		t.Errorf("Compact() = %d -> %d bytes, want less than half of %d", res.Before, res.After, st.Size)
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, "*.compact")); len(matches) > 0 {
		t.Errorf("Compact() left %v", matches)
	}
	checkBoltFile(t, filepath.Join(dir, boltstore.FileName))
	again, err := boltstore.StatFile(ctx, dir, boltstore.Options{})
	if err != nil || again.FreePages > 2 || len(again.Buckets) != len(st.Buckets) {
		t.Errorf("StatFile() after Compact() = %+v, %v; want no free pages and the same buckets", again, err)
	}

	s = openBolt(t, dir)
	defer s.Close()
	inbox, err := s.Folder(ctx, v.ID, "INBOX")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := s.Body(ctx, v.ID, inbox.ID, 1); err != nil || string(b) != "kept" {
		t.Errorf("Body() after Compact() = %q, %v", b, err)
	}
	w, err := s.CreateMailbox(ctx, pid, "example.com", "w@example.com", "hash", at)
	if err != nil || w.ID <= v.ID || w.ID == u.ID {
		t.Errorf("CreateMailbox() after Compact() = id %d, %v; want a new id above %d", w.ID, err, v.ID)
	}
	if drift, err := s.Verify(ctx); err != nil || len(drift) > 0 {
		t.Errorf("Verify() after Compact() = %v, %v", drift, err)
	}
}
