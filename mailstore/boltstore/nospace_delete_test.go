package boltstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
	"github.com/mailhost/mailhost/mailstore/storetest"
)

// TestBoltDeleteOnFullDisk: on a full file system, with a store whose
// file has no free page to reuse (just compacted), every deletion
// commits (the space reserve, reserve.go) while other writes are
// still refused with ErrNoSpace; the file passes bbolt's check after.
// Without the reserve, the same deletion fails: a delete in bbolt needs
// new pages too.
func TestBoltDeleteOnFullDisk(t *testing.T) {
	for _, reserve := range []int64{-1, 1 << 20} {
		t.Run(fmt.Sprintf("reserve=%d", reserve), func(t *testing.T) {
			ctx := context.Background()
			dir := storetest.SmallFS(t, 8<<20)
			s, pid, u, v := boltMailFixture(t, dir)
			inbox, err := s.Folder(ctx, u.ID, "INBOX")
			if err != nil {
				t.Fatal(err)
			}
			work, err := s.CreateFolder(ctx, u.ID, "Work")
			if err != nil {
				t.Fatal(err)
			}
			at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
			for i := range 30 {
				b := []byte(fmt.Sprintf("Subject: %d\r\n\r\n%s", i, make([]byte, 32<<10)))
				if _, err := s.Deliver(ctx, mailstore.Delivery{Body: b, ReceivedAt: at, MailboxIDs: []int64{u.ID, v.ID}}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Copy(ctx, u.ID, inbox.ID, []uint32{1, 2, 3}, work.ID); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := boltstore.Compact(ctx, dir, boltstore.Options{}); err != nil {
				t.Fatal(err)
			}
			s, err = boltstore.Open(ctx, dir, boltstore.Options{SpaceReserve: reserve})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			filler := filepath.Join(dir, "filler")
			storetest.FillFS(t, filler)

			_, err = s.Deliver(ctx, mailstore.Delivery{Body: []byte("Subject: x\r\n\r\nx"), ReceivedAt: at, MailboxIDs: []int64{u.ID}})
			if !errors.Is(err, mailstore.ErrNoSpace) {
				t.Fatalf("Deliver() on a full disk = %v, want ErrNoSpace", err)
			}
			_, err = s.SetFlags(ctx, u.ID, inbox.ID, []uint32{1, 2}, mailstore.FlagsAdd, []string{`\Deleted`})
			if reserve < 0 {
				if !errors.Is(err, mailstore.ErrNoSpace) {
					t.Fatalf("SetFlags(\\Deleted) on a full disk without a reserve = %v, want ErrNoSpace (else the test shows nothing)", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("SetFlags(\\Deleted) on a full disk = %v, want nil", err)
			}
			if got, err := s.Expunge(ctx, u.ID, inbox.ID, nil); err != nil || !slices.Equal(got, []uint32{1, 2}) {
				t.Errorf("Expunge(\\Deleted) on a full disk = %v, %v; want [1 2]", got, err)
			}
			if got, err := s.Expunge(ctx, u.ID, inbox.ID, []uint32{3, 4}); err != nil || len(got) != 2 {
				t.Errorf("Expunge(3, 4) on a full disk = %v, %v; want both", got, err)
			}
			trash, err := s.Folder(ctx, u.ID, "Trash")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Move(ctx, u.ID, inbox.ID, []uint32{5}, trash.ID); err != nil {
				t.Errorf("Move(to Trash) on a full disk = %v, want nil", err)
			}
			if err := s.DeleteFolder(ctx, u.ID, "Work"); err != nil {
				t.Errorf("DeleteFolder() on a full disk = %v, want nil", err)
			}
			if err := s.DeleteMailbox(ctx, pid, "v@example.com"); err != nil {
				t.Errorf("DeleteMailbox() on a full disk = %v, want nil", err)
			}
			if _, err := s.SetFlags(ctx, u.ID, inbox.ID, []uint32{6}, mailstore.FlagsAdd, []string{`\Deleted`}); err != nil {
				t.Errorf("SetFlags(\\Deleted) after the reserve went = %v, want nil (pages freed by the deletions)", err)
			}
			if got, err := s.Expunge(ctx, u.ID, inbox.ID, nil); err != nil || len(got) != 1 {
				t.Errorf("Expunge() after the reserve went = %v, %v; want one", got, err)
			}
			ms, err := s.Messages(ctx, u.ID, inbox.ID)
			if err != nil || len(ms) != 30-6 {
				t.Errorf("INBOX after the deletions = %d messages, %v; want %d", len(ms), err, 30-6)
			}

			// Space back: the reserve is made again (at Open, or by a
			// deletion).
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			checkBoltFile(t, filepath.Join(dir, boltstore.FileName))
			s, err = boltstore.Open(ctx, dir, boltstore.Options{SpaceReserve: reserve})
			if err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Stat(filepath.Join(dir, boltstore.FileName+".reserve")); err != nil || fi.Size() != reserve {
				t.Errorf("reserve after reopening with room = %v, %v; want %d bytes", fi, err, reserve)
			}
			if ms, err := s.Messages(ctx, u.ID, inbox.ID); err != nil || len(ms) != 30-6 {
				t.Errorf("INBOX after restart = %d messages, %v; want %d", len(ms), err, 30-6)
			}
			if drift, err := s.Verify(ctx); err != nil || len(drift) > 0 {
				t.Errorf("Verify() after the full disk = %v, %v; want no drift", drift, err)
			}
		})
	}
}
