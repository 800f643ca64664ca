package metrics

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mailhost/mailhost/mailstore"
)

// fakeStore answers fixed figures: the store's own methods are tested
// by mailstore/storetest.
type fakeStore struct {
	q  mailstore.QueueStats
	sz mailstore.StoreSize
}

func (f fakeStore) QueueStats(context.Context) (mailstore.QueueStats, error) { return f.q, nil }
func (f fakeStore) StoreSize(context.Context) (mailstore.StoreSize, error)   { return f.sz, nil }

// TestObservers: each observer's call lands in its series, and every
// series passes client_golang's lint of names and units (counters end in
// _total, base units).
func TestObservers(t *testing.T) {
	s := New()
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	s.WatchStore(fakeStore{
		q:  mailstore.QueueStats{Entries: 5, Held: 2, Oldest: now.Add(-90 * time.Second)},
		sz: mailstore.StoreSize{Bytes: 1 << 20, FreePages: 3, FreeBytes: 3 * 4096},
	}, func() time.Time { return now }, nil)
	s.SMTP().Session("smtp", false)
	s.SMTP().Session("smtp", true)
	s.SMTP().Recipient("smtp", "over_quota")
	s.SMTP().Message("submission", "delivered", 20*time.Millisecond)
	s.SMTP().Message("submission", "over_cap", 0)
	s.SMTP().Login("throttled")
	s.IMAP().Session(false)
	s.IMAP().Session(false)
	s.IMAP().SessionClosed()
	s.IMAP().Login("success")
	s.API().Request("GET /domains/{$}", 200, time.Millisecond)
	s.API().Request("", 404, time.Millisecond)
	s.Outbound().Attempt("partial", 1, 1, 2, time.Second)
	s.RetentionDeleted(7, 7000)
	s.ManageSieve().Session(false)
	s.ManageSieve().Session(true)
	s.ManageSieve().Command("PUTSCRIPT", "ok")
	s.ManageSieve().Command("X-MADE-UP", "no")
	s.ManageSieve().Login("invalid")

	for _, tc := range []struct {
		name string
		got  float64
		want float64
	}{
		{"smtp accepted", testutil.ToFloat64(s.smtpSessions.WithLabelValues("smtp", "accepted")), 1},
		{"smtp refused", testutil.ToFloat64(s.smtpSessions.WithLabelValues("smtp", "refused")), 1},
		{"smtp open", testutil.ToFloat64(s.smtpOpen.WithLabelValues("smtp")), 1},
		{"rcpt over quota", testutil.ToFloat64(s.smtpRecipients.WithLabelValues("smtp", "over_quota")), 1},
		{"submission delivered", testutil.ToFloat64(s.smtpMessages.WithLabelValues("submission", "delivered")), 1},
		{"submission over cap", testutil.ToFloat64(s.smtpMessages.WithLabelValues("submission", "over_cap")), 1},
		{"submission throttled", testutil.ToFloat64(s.logins.WithLabelValues("submission", "throttled")), 1},
		{"imap open", testutil.ToFloat64(s.imapOpen), 1},
		{"imap success", testutil.ToFloat64(s.logins.WithLabelValues("imap", "success")), 1},
		{"api 200", testutil.ToFloat64(s.apiRequests.WithLabelValues("GET /domains/{$}", "200")), 1},
		{"api unmatched", testutil.ToFloat64(s.apiRequests.WithLabelValues("unmatched", "404")), 1},
		{"attempt partial", testutil.ToFloat64(s.outboundAttempts.WithLabelValues("partial")), 1},
		{"rcpts deferred", testutil.ToFloat64(s.outboundRcpts.WithLabelValues("deferred")), 2},
		{"retention messages", testutil.ToFloat64(s.retentionMsgs), 7},
		{"retention bytes", testutil.ToFloat64(s.retentionBytes), 7000},
		{"managesieve accepted", testutil.ToFloat64(s.sieveSessions.WithLabelValues("accepted")), 1},
		{"managesieve refused", testutil.ToFloat64(s.sieveSessions.WithLabelValues("refused")), 1},
		{"managesieve open", testutil.ToFloat64(s.sieveOpen), 1},
		{"managesieve putscript", testutil.ToFloat64(s.sieveCommands.WithLabelValues("PUTSCRIPT", "ok")), 1},
		{"managesieve unknown command", testutil.ToFloat64(s.sieveCommands.WithLabelValues("unknown", "no")), 1},
		{"managesieve login invalid", testutil.ToFloat64(s.logins.WithLabelValues("managesieve", "invalid")), 1},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	want := `
# HELP mailhost_outbound_queue_entries Entries in the outbound queue (one per message and destination domain), held ones included.
# TYPE mailhost_outbound_queue_entries gauge
mailhost_outbound_queue_entries 5
# HELP mailhost_outbound_queue_held_entries Entries of the outbound queue held for their domain's transfer cap.
# TYPE mailhost_outbound_queue_held_entries gauge
mailhost_outbound_queue_held_entries 2
# HELP mailhost_outbound_queue_oldest_age_seconds Age of the oldest entry of the outbound queue; 0 when it is empty.
# TYPE mailhost_outbound_queue_oldest_age_seconds gauge
mailhost_outbound_queue_oldest_age_seconds 90
# HELP mailhost_store_free_pages Pages of the bbolt file free for reuse (not served with PostgreSQL).
# TYPE mailhost_store_free_pages gauge
mailhost_store_free_pages 3
# HELP mailhost_store_size_bytes Size of the store: the bbolt file, or the PostgreSQL schema's tables with their indexes.
# TYPE mailhost_store_size_bytes gauge
mailhost_store_size_bytes 1.048576e+06
`
	if err := testutil.GatherAndCompare(s.Registry(), strings.NewReader(want),
		"mailhost_outbound_queue_entries", "mailhost_outbound_queue_held_entries", "mailhost_outbound_queue_oldest_age_seconds",
		"mailhost_store_free_pages", "mailhost_store_size_bytes"); err != nil {
		t.Error(err)
	}
	problems, err := testutil.GatherAndLint(s.Registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "mailhost_") {
			t.Errorf("lint: %s: %s", p.Metric, p.Text)
		}
	}
}

// TestStoreWithoutFreePages: a store with no free-page figure (-1,
// PostgreSQL) serves its size and no free pages.
func TestStoreWithoutFreePages(t *testing.T) {
	s := New()
	s.WatchStore(fakeStore{sz: mailstore.StoreSize{Bytes: 10, FreePages: -1, FreeBytes: -1}}, nil, nil)
	if n, err := testutil.GatherAndCount(s.Registry(), "mailhost_store_free_pages", "mailhost_store_free_bytes"); err != nil || n != 0 {
		t.Errorf("free page series = %d, %v; want none", n, err)
	}
	if n, err := testutil.GatherAndCount(s.Registry(), "mailhost_store_size_bytes", "mailhost_outbound_queue_oldest_age_seconds"); err != nil || n != 2 {
		t.Errorf("size and oldest age series = %d, %v; want 2", n, err)
	}
}
