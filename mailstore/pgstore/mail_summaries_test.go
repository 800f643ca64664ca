package pgstore

import (
	"context"
	"slices"
	"testing"

	"github.com/mailhost/mailhost/mailstore"
)

// TestSummariesLazy: a body stored with its summary (Deliver), and one
// stored without (before 008: header NULL) whose summary Summaries makes
// from the body and stores; a body only queued has none.
func TestSummariesLazy(t *testing.T) {
	s, ids := mailFixture(t, 2)
	ctx := context.Background()
	bodies := []string{"Subject: one\r\nX: 1\r\n\r\n1", "Subject: two\r\n\r\n2"}
	for _, body := range bodies {
		if _, err := s.Deliver(ctx, mailstore.Delivery{Body: []byte(body), ReceivedAt: benchMailNow, MailboxIDs: ids}); err != nil {
			t.Fatal(err)
		}
	}
	count := func(what string) (n int) {
		t.Helper()
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM blobs WHERE header IS NOT NULL`).Scan(&n); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return n
	}
	if n := count("after Deliver"); n != 2 {
		t.Errorf("bodies with a summary after 2 deliveries = %d, want 2", n)
	}
	if _, err := s.pool.Exec(ctx, `UPDATE blobs SET header = NULL`); err != nil {
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
	if n := count("after Summaries"); n != 2 {
		t.Errorf("bodies with a summary after Summaries = %d, want 2", n)
	}
	checkMailCounters(t, s)
}
