package autoreply

import (
	"context"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/sieve"
)

// TestVacation: a script's vacation is answered once per sender within
// its :days, not to a list, and shares its memory with the API's
// auto-reply (TakeAutoReply).
func TestVacation(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	st, err := mailstore.Open(ctx, t.TempDir(), mailstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	p, err := st.CreatePartner(ctx, "acme", now)
	if err != nil {
		t.Fatal(err)
	}
	plan := mailstore.Plan{Name: "test", QuotaMB: 10, RetentionDays: 30, TransferMonthlyMB: 1000}
	if _, err := st.CreateDomain(ctx, p.ID, mailstore.NewDomain{Name: "a.test", Plan: plan}, now); err != nil {
		t.Fatal(err)
	}
	mb, err := st.CreateMailbox(ctx, p.ID, "a.test", "ann@a.test", "not a hash", now)
	if err != nil {
		t.Fatal(err)
	}
	// A domain not verified may not answer outside (policy.MayReach).
	if _, err := st.SetVerified(ctx, p.ID, "a.test", true, now); err != nil {
		t.Fatal(err)
	}
	clock := now
	r := New(Config{Store: st, Now: func() time.Time { return clock }})
	v := sieve.Vacation{Days: 2, Subject: "away", Reason: "Back on Monday."}
	env := sieve.Envelope{From: "x@sender.test", To: "ann@a.test"}
	msg := []byte("From: x@sender.test\r\nTo: ann@a.test\r\nSubject: hi\r\nMessage-ID: <1@sender.test>\r\n\r\nhello\r\n")
	list := []byte("From: x@sender.test\r\nTo: ann@a.test\r\nList-Id: <l.sender.test>\r\nSubject: hi\r\n\r\nhello\r\n")
	queued := func() int {
		t.Helper()
		_, n, err := st.OutboundEntries(ctx, mailstore.Page{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	steps := []struct {
		name  string
		msg   []byte
		after time.Duration
		want  bool
	}{
		{"list", list, 0, false},
		{"first", msg, 0, true},
		{"again within :days", msg, time.Hour, false},
		{"after :days", msg, 49 * time.Hour, true},
	}
	for _, s := range steps {
		clock = clock.Add(s.after)
		if got := r.Vacation(ctx, mb, env, s.msg, v); got != s.want {
			t.Errorf("%s: replied %v, want %v", s.name, got, s.want)
		}
	}
	if n := queued(); n != 2 {
		t.Errorf("%d replies queued, want 2", n)
	}
	// The null envelope sender (RFC 5230 section 5.1): nothing bounces
	// or answers a reply.
	entries, _, err := st.OutboundEntries(ctx, mailstore.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.From != "" {
			t.Errorf("reply queued with envelope sender %q, want <>", e.From)
		}
	}
	// The memory is the API auto-reply's: it takes no turn that the
	// vacation took.
	if ok, err := st.TakeAutoReply(ctx, mb.ID, "x@sender.test", clock, DefaultInterval); err != nil || ok {
		t.Errorf("TakeAutoReply after the vacation's reply = %v, %v; want false", ok, err)
	}
}

// TestAddressedSubaddress: To: ann+news@ is addressed to ann when the
// responder knows the delimiter, and not otherwise.
func TestAddressedSubaddress(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	st, err := mailstore.Open(ctx, t.TempDir(), mailstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	p, err := st.CreatePartner(ctx, "acme", now)
	if err != nil {
		t.Fatal(err)
	}
	plan := mailstore.Plan{Name: "test", QuotaMB: 10, RetentionDays: 30, TransferMonthlyMB: 1000}
	if _, err := st.CreateDomain(ctx, p.ID, mailstore.NewDomain{Name: "a.test", Plan: plan}, now); err != nil {
		t.Fatal(err)
	}
	mb, err := st.CreateMailbox(ctx, p.ID, "a.test", "ann@a.test", "not a hash", now)
	if err != nil {
		t.Fatal(err)
	}
	h := header([]byte("To: Ann <ann+news@a.test>\r\n\r\n"))
	for delim, want := range map[string]bool{"+": true, "": false} {
		ok, err := New(Config{Store: st, Delimiter: delim}).addressed(ctx, h, mb)
		if err != nil || ok != want {
			t.Errorf("delimiter %q: addressed %v, %v; want %v", delim, ok, err, want)
		}
	}
}
