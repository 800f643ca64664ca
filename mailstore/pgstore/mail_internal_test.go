package pgstore

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/mailhost/mailhost/mailstore"
)

// checkMailCounters compares every counter of the mail plane with what it
// counts, in SQL: folders, mailboxes, domains, blob references, UIDs
// dense, and the change log's modseqs.
func checkMailCounters(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	checks := []struct{ what, sql string }{
		{"folder counters", `SELECT count(*) FROM folders f WHERE (f.messages, f.size, f.unseen) <>
			(SELECT count(*), coalesce(sum(size), 0), count(*) FILTER (WHERE NOT '\Seen' = ANY(flags)) FROM messages m WHERE m.folder_id = f.id)`},
		{"mailbox counters", `SELECT count(*) FROM mailboxes b WHERE (b.message_count, b.used_bytes) <>
			(SELECT count(*), coalesce(sum(size), 0) FROM messages m WHERE m.mailbox_id = b.id)`},
		{"domain counters", `SELECT count(*) FROM domains d WHERE
			(d.message_count + (SELECT coalesce(sum(u.message_count), 0) FROM domain_usage u WHERE u.domain_id = d.id),
			 d.used_bytes + (SELECT coalesce(sum(u.used_bytes), 0) FROM domain_usage u WHERE u.domain_id = d.id)) <>
			(SELECT count(*), coalesce(sum(size), 0) FROM messages m WHERE m.domain_id = d.id)`},
		{"blob refs", `SELECT count(*) FROM blobs b WHERE b.refs <>
			(SELECT count(*) FROM messages m WHERE m.blob_id = b.id) + (SELECT count(*) FROM queue q WHERE q.blob_id = b.id)`},
		{"dangling blobs", `SELECT count(*) FROM messages m WHERE NOT EXISTS (SELECT 1 FROM blobs b WHERE b.id = m.blob_id)`},
		{"uid_next", `SELECT count(*) FROM folders f WHERE f.uid_next <= (SELECT coalesce(max(uid), 0) FROM messages m WHERE m.folder_id = f.id)`},
		{"modseq", `SELECT count(*) FROM folders f WHERE f.highest_modseq <> (SELECT coalesce(max(modseq), 0) FROM changes c WHERE c.folder_id = f.id)`},
	}
	for _, c := range checks {
		var n int
		if err := s.pool.QueryRow(ctx, c.sql).Scan(&n); err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if n != 0 {
			t.Errorf("%s: %d rows disagree", c.what, n)
		}
	}
}

func TestDeliverGroupCommit(t *testing.T) {
	s, ids := mailFixture(t, 5)
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range 20 {
		wg.Go(func() {
			for i := range 20 {
				to := []int64{ids[(g+i)%5], ids[(g+i+1)%5], 9999}
				res, err := s.Deliver(ctx, mailstore.Delivery{Body: []byte(fmt.Sprintf("g%d m%d", g, i)), ReceivedAt: benchMailNow, MailboxIDs: to})
				if err != nil {
					t.Error(err)
					return
				}
				if len(res.Delivered) != 2 || len(res.Skipped) != 1 {
					t.Errorf("Deliver() = %+v", res)
				}
			}
		})
	}
	wg.Wait()
	var n, in int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM messages`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if err := s.pool.QueryRow(ctx, `SELECT sum(in_bytes) FROM transfer`).Scan(&in); err != nil {
		t.Fatal(err)
	}
	if n != 800 {
		t.Errorf("messages = %d, want 800", n)
	}
	var want int64
	for g := range 20 {
		for i := range 20 {
			want += int64(len(fmt.Sprintf("g%d m%d", g, i)))
		}
	}
	if in != want {
		t.Errorf("transfer in = %d, want %d", in, want)
	}
	checkMailCounters(t, s)
	// UIDs are dense.
	var gaps int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM folders f WHERE f.uid_next - 1 <> f.messages`).Scan(&gaps); err != nil || gaps != 0 {
		t.Errorf("folders with UID gaps = %d, %v", gaps, err)
	}
}
