package pgstore

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/mailhost/mailhost/mailstore"
)

// TestSummariesLazy: a message delivered has its summary in its row and
// its body's; one stored without either (before 008: both NULL) has it
// made from the body by Summaries and stored in both; a body only queued
// has none.
func TestSummariesLazy(t *testing.T) {
	s, ids := mailFixture(t, 2)
	ctx := context.Background()
	bodies := []string{"Subject: one\r\nX: 1\r\n\r\n1", "Subject: two\r\n\r\n2"}
	for _, body := range bodies {
		if _, err := s.Deliver(ctx, mailstore.Delivery{Body: []byte(body), ReceivedAt: benchMailNow, MailboxIDs: ids}); err != nil {
			t.Fatal(err)
		}
	}
	count := func(what, table string) (n int) {
		t.Helper()
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM `+table+` WHERE header IS NOT NULL`).Scan(&n); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return n
	}
	if b, m := count("after Deliver", "blobs"), count("after Deliver", "messages"); b != 2 || m != 4 {
		t.Errorf("bodies, messages with a summary after 2 deliveries to 2 = %d, %d, want 2, 4", b, m)
	}
	if _, err := s.pool.Exec(ctx, `UPDATE blobs SET header = NULL`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `UPDATE messages SET header = NULL`); err != nil {
		t.Fatal(err)
	}
	inbox, err := s.Folder(ctx, ids[0], "INBOX")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := s.Summaries(ctx, ids[0], inbox.ID, []uint32{2, 1, 2}, func(_ uint32, h []byte) error {
		got = append(got, string(h))
		return nil
	}); err != nil {
		t.Fatalf("Summaries = %v", err)
	}
	if want := []string{"Subject: two\r\n\r\n", "Subject: one\r\n\r\n", "Subject: two\r\n\r\n"}; !slices.Equal(got, want) {
		t.Errorf("Summaries without stored summaries = %q, want %q", got, want)
	}
	if b, m := count("after Summaries", "blobs"), count("after Summaries", "messages"); b != 2 || m != 2 {
		t.Errorf("bodies, messages with a summary after Summaries of one folder = %d, %d, want 2, 2", b, m)
	}
	checkMailCounters(t, s)
}

// TestSummariesOfBody: a message stored without a summary of its own (by
// a binary older than migration 010, or before it) is answered its
// body's, which Summaries copies into its row; COPY and MOVE give their
// messages their body's.
func TestSummariesOfBody(t *testing.T) {
	s, ids := mailFixture(t, 1)
	ctx := context.Background()
	for _, body := range []string{"Subject: one\r\n\r\n1", "Subject: two\r\n\r\n2", "Subject: three\r\n\r\n3"} {
		if _, err := s.Deliver(ctx, mailstore.Delivery{Body: []byte(body), ReceivedAt: benchMailNow, MailboxIDs: ids}); err != nil {
			t.Fatal(err)
		}
	}
	inbox, err := s.Folder(ctx, ids[0], "INBOX")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `UPDATE messages SET header = NULL WHERE uid IN (1, 3)`); err != nil {
		t.Fatal(err)
	}
	own := func(folder int64) (n int) {
		t.Helper()
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM messages WHERE folder_id = $1 AND header IS NOT NULL`, folder).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	read := func(folder int64, uids []uint32) []string {
		t.Helper()
		var got []string
		if err := s.Summaries(ctx, ids[0], folder, uids, func(uid uint32, h []byte) error {
			got = append(got, fmt.Sprintf("%d %s", uid, h))
			return nil
		}); err != nil {
			t.Fatalf("Summaries(%v) = %v", uids, err)
		}
		return got
	}
	// 1..3 is read as a range, 3, 1 by UID; 4 is not there.
	want := []string{"1 Subject: one\r\n\r\n", "2 Subject: two\r\n\r\n", "3 Subject: three\r\n\r\n"}
	if got := read(inbox.ID, []uint32{1, 2, 3, 4}); !slices.Equal(got, want) {
		t.Errorf("Summaries(1..4) = %q, want %q", got, want)
	}
	if n := own(inbox.ID); n != 3 {
		t.Errorf("messages with a summary of their own after Summaries = %d, want 3", n)
	}
	if got := read(inbox.ID, []uint32{3, 1}); !slices.Equal(got, []string{want[2], want[0]}) {
		t.Errorf("Summaries(3, 1) = %q, want %q", got, []string{want[2], want[0]})
	}

	other, err := s.CreateFolder(ctx, ids[0], "Other")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Copy(ctx, ids[0], inbox.ID, []uint32{1}, other.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Move(ctx, ids[0], inbox.ID, []uint32{3}, other.ID); err != nil {
		t.Fatal(err)
	}
	if n := own(other.ID); n != 2 {
		t.Errorf("messages copied and moved with a summary of their own = %d, want 2", n)
	}
	if got := read(other.ID, []uint32{1, 2}); !slices.Equal(got, []string{"1 Subject: one\r\n\r\n", "2 Subject: three\r\n\r\n"}) {
		t.Errorf("Summaries of the copy and the moved = %q", got)
	}
	checkMailCounters(t, s)
}
