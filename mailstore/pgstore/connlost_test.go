package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// TestConnectionLost: when the database ends the sessions of a store (a
// restart, a failover to a replica, pg_terminate_backend), the store's
// next delivery, write, read, one-statement look-up and FETCH each
// succeed on a new connection instead of failing on a dead one: what was lost before its COMMIT was sent was
// rolled back and is run again. They follow within a second of the last
// use, so that the pool does not ping the connections first.
// openNamed opens a store on u whose sessions carry an application_name
// of their own (prefix and a random tag), answered with it, by which a
// test finds their backends in pg_stat_activity to end them.
func openNamed(t *testing.T, u, prefix string, opt Options) (*Store, string) {
	t.Helper()
	var tag [6]byte
	rand.Read(tag[:])
	app := prefix + "_" + hex.EncodeToString(tag[:])
	s, err := Open(context.Background(), u+"&application_name="+app, opt)
	if err != nil {
		t.Fatalf("Open() = %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, app
}

func TestConnectionLost(t *testing.T) {
	ctx := context.Background()
	admin, ids, u := mailFixtureURL(t, 2)
	s, app := openNamed(t, u, "mhlost", Options{Node: "lost", MaxConns: 4, BodyCacheBytes: -1}) // FETCH reads the database
	delivered := 0
	deliver := func() error {
		_, err := s.Deliver(ctx, mailstore.Delivery{Body: []byte("Subject: x\r\n\r\nx\r\n"), ReceivedAt: benchMailNow, MailboxIDs: []int64{ids[0]}})
		if err == nil {
			delivered++
		}
		return err
	}
	inbox := inboxOf(t, s, ids[0])
	// An IMAP FETCH of bodies or of their summaries, of two messages
	// (one alone is another path), each answered once.
	fetched := func(read func(context.Context, int64, int64, []uint32, func(uint32, []byte) error) error) error {
		seen := map[uint32]int{}
		err := read(ctx, ids[0], inbox, []uint32{1, 2}, func(uid uint32, b []byte) error {
			seen[uid]++
			return nil
		})
		if err == nil && (seen[1] != 1 || seen[2] != 1 || len(seen) != 2) {
			err = fmt.Errorf("answered %v, want UIDs 1 and 2 once each", seen)
		}
		return err
	}
	folders := 0
	for round := range 6 {
		// Use the store's connections, then end every session it has.
		if err := deliver(); err != nil {
			t.Fatalf("round %d: Deliver before = %v", round, err)
		}
		if _, err := s.Folders(ctx, ids[1]); err != nil {
			t.Fatalf("round %d: Folders before = %v", round, err)
		}
		var ended int
		if err := admin.pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&ended); err != nil {
			t.Fatal(err)
		}
		if ended == 0 {
			t.Fatalf("round %d: no session of the store to end", round)
		}
		for deadline := time.Now().Add(500 * time.Millisecond); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			var left int
			if err := admin.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&left); err != nil {
				t.Fatal(err)
			}
			if left == 0 {
				break
			}
		}
		var err error
		switch round {
		case 0:
			err = deliver()
		case 1:
			folders++
			_, err = s.CreateFolder(ctx, ids[1], "Lost"+string(rune('A'+folders)))
		case 2:
			_, err = s.Folders(ctx, ids[1])
		case 3:
			// One statement that reads (an MX's RCPT, a login).
			_, _, err = s.MailboxByEmail(ctx, "u0@bench.example")
		case 4:
			err = fetched(s.Bodies)
		case 5:
			err = fetched(s.Summaries)
		}
		if err != nil {
			t.Errorf("round %d: the first call after the sessions ended = %v, want it run again on a new connection", round, err)
		}
	}
	// Another node hears of a delivery made right after the sessions
	// ended (its listening connection was ended too, and comes back).
	ch, stop := admin.Watch(ids[1])
	defer stop()
	if err := deliver(); err != nil {
		t.Fatalf("Deliver = %v", err)
	}
	var ended int
	if err := admin.pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&ended); err != nil || ended == 0 {
		t.Fatalf("ended %d sessions (%v), want some", ended, err)
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := s.Deliver(ctx, mailstore.Delivery{Body: []byte("Subject: y\r\n\r\ny\r\n"), ReceivedAt: benchMailNow, MailboxIDs: []int64{ids[1]}}); err != nil {
		t.Fatalf("Deliver after the sessions ended = %v", err)
	}
	select {
	case <-ch:
	case <-time.After(2 * time.Second):
		t.Errorf("the other node's watcher of the mailbox was not woken within 2s")
	}
	if msgs, err := s.Messages(ctx, ids[0], inbox); err != nil || len(msgs) != delivered {
		t.Errorf("INBOX holds %d messages (%v), want %d: one per delivery, none twice", len(msgs), err, delivered)
	}
}

// inboxOf is the id of the mailbox's INBOX.
func inboxOf(t *testing.T, s *Store, mailboxID int64) int64 {
	t.Helper()
	fs, err := s.Folders(context.Background(), mailboxID)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		if f.Name == "INBOX" {
			return f.ID
		}
	}
	t.Fatalf("mailbox %d has no INBOX", mailboxID)
	return 0
}
