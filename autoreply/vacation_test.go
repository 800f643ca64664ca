package autoreply

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
	"github.com/mailhost/mailhost/sieve"
)

// TestVacation: a script's vacation is answered once per sender within
// its :days, not to a list, and shares its memory with the API's
// auto-reply (TakeAutoReply).
func TestVacation(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	st, err := boltstore.Open(ctx, t.TempDir(), boltstore.Options{})
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
	st, err := boltstore.Open(ctx, t.TempDir(), boltstore.Options{})
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

// TestVacationArguments: each argument of RFC 5230's vacation, as the
// responder carries it out, and the reply's null envelope sender
// (section 5.1).
func TestVacationArguments(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	st, err := boltstore.Open(ctx, t.TempDir(), boltstore.Options{})
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
	if _, err := st.CreateAlias(ctx, p.ID, "a.test", "sales@a.test", "ann@a.test", now); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetVerified(ctx, p.ID, "a.test", true, now); err != nil {
		t.Fatal(err)
	}
	r := New(Config{Store: st, Now: func() time.Time { return now }})
	msg := func(to, subject string) []byte {
		return []byte("From: x@sender.test\r\nTo: " + to + "\r\nSubject: " + subject + "\r\nMessage-ID: <1@sender.test>\r\n\r\nhello\r\n")
	}
	cases := []struct {
		name   string
		sender string
		msg    []byte
		v      sieve.Vacation
		want   []string // in the reply; nil: no reply
	}{
		{"default subject, decoded", "s1@sender.test", msg("ann@a.test", "=?utf-8?q?caf=C3=A9?="),
			sieve.Vacation{Days: 7, Reason: "away", Handle: "h"}, []string{"Subject: =?utf-8?q?Auto:_caf=C3=A9?=", "From: <ann@a.test>"}},
		{"no subject", "s2@sender.test", []byte("From: x@sender.test\r\nTo: ann@a.test\r\n\r\nhello\r\n"),
			sieve.Vacation{Days: 7, Reason: "away", Handle: "h"}, []string{"Subject: Automated reply"}},
		{":from the mailbox may send as", "s3@sender.test", msg("ann@a.test", "q"),
			sieve.Vacation{Days: 7, Reason: "away", From: "Sales <sales@a.test>", Handle: "h"}, []string{`From: "Sales" <sales@a.test>`}},
		{":from it may not, ignored", "s4@sender.test", msg("ann@a.test", "q"),
			sieve.Vacation{Days: 7, Reason: "away", From: "boss@other.test", Handle: "h"}, []string{"From: <ann@a.test>"}},
		{":mime entity", "s5@sender.test", msg("ann@a.test", "q"),
			sieve.Vacation{Days: 7, MIME: true, Reason: "Content-Type: text/html; charset=us-ascii\r\n\r\n<p>away</p>\r\n", Handle: "h"},
			[]string{"Content-Type: text/html; charset=us-ascii\r\n\r\n<p>away</p>"}},
		{":mime entity, 8-bit", "s8@sender.test", msg("ann@a.test", "q"),
			sieve.Vacation{Days: 7, MIME: true, Reason: "Content-Type: text/plain; charset=utf-8\r\n\r\nabsent jusqu'à lundi\r\n", Handle: "h"},
			[]string{"Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\nabsent jusqu'=C3=A0 lundi"}},
		{"not addressed to the user", "s6@sender.test", msg("someone@else.test", "q"),
			sieve.Vacation{Days: 7, Reason: "away", Handle: "h"}, nil},
		{":addresses names the recipient", "s7@sender.test", msg("ann@old.test", "q"),
			sieve.Vacation{Days: 7, Reason: "away", Addresses: []string{"ann@old.test"}, Handle: "h"}, []string{"To: <s7@sender.test>"}},
	}
	seen := 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := sieve.Envelope{From: c.sender, To: "ann@a.test"}
			got := r.Vacation(ctx, mb, env, c.msg, c.v)
			if got != (c.want != nil) {
				t.Fatalf("replied %v, want %v", got, c.want != nil)
			}
			entries, _, err := st.OutboundEntries(ctx, mailstore.Page{Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			if c.want == nil {
				if len(entries) != seen {
					t.Errorf("%d entries, want %d", len(entries), seen)
				}
				return
			}
			seen++
			var e *mailstore.Outbound
			for i := range entries {
				if entries[i].Pending()[0] == c.sender {
					e = &entries[i]
				}
			}
			if e == nil {
				t.Fatalf("no reply queued to %s", c.sender)
			}
			if e.From != "" {
				t.Errorf("envelope sender %q, want <> (RFC 5230 section 5.1)", e.From)
			}
			body, err := st.OutboundBody(ctx, e.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(string(body), w) {
					t.Errorf("reply lacks %q:\n%s", w, body)
				}
			}
		})
	}

	// :handle: another handle is another reply within :days; the same
	// handle is not.
	env := sieve.Envelope{From: "h@sender.test", To: "ann@a.test"}
	for _, s := range []struct {
		handle string
		want   bool
	}{{"one", true}, {"one", false}, {"two", true}} {
		if got := r.Vacation(ctx, mb, env, msg("ann@a.test", "q"), sieve.Vacation{Days: 7, Reason: "away", Handle: s.handle}); got != s.want {
			t.Errorf("handle %q: replied %v, want %v", s.handle, got, s.want)
		}
	}
	// And the API auto-reply's turn for that sender was taken.
	if ok, err := st.TakeAutoReply(ctx, mb.ID, "h@sender.test", now, DefaultInterval); err != nil || ok {
		t.Errorf("TakeAutoReply after a vacation = %v, %v; want false", ok, err)
	}
}
