package outbound

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
)

// fullCopy fills carol@a.test (quota 1 MB) and delivers the message
// subject to carol and bob from from: bob gets it, carol's copy waits in
// a KindLocal entry (mailstore.Mail.Deliver, concurrent deliveries).
func (f *fixture) fullCopy(now time.Time, from, subject string) {
	f.t.Helper()
	ctx := context.Background()
	carol, err := f.st.SetQuota(ctx, f.partner.ID, "carol@a.test", 1)
	if err != nil {
		f.t.Fatal(err)
	}
	bob, _, err := f.st.MailboxByEmail(ctx, "bob@a.test")
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.st.Deliver(ctx, mailstore.Delivery{Body: make([]byte, mailstore.MB), ReceivedAt: now, MailboxIDs: []int64{carol.ID}}); err != nil {
		f.t.Fatal(err)
	}
	res, err := f.st.Deliver(ctx, mailstore.Delivery{Body: []byte(message(subject)), ReceivedAt: now, MailboxIDs: []int64{carol.ID, bob.ID}, From: from})
	if err != nil || len(res.OverQuota) != 1 || len(res.Queued) != 1 {
		f.t.Fatalf("Deliver(full carol, bob) = %+v, %v; want carol's copy queued", res, err)
	}
}

// A KindLocal entry (a copy a full mailbox could not take) that meets
// the mailbox still full stays queued with 452 4.2.2, and is delivered
// once there is room, also while the recipient's domain is suspended
// (it receives mail; the entry is sent on no one's behalf).
func TestLocalRetryOfFullMailbox(t *testing.T) {
	f := newFixture(t)
	clk := newClock()
	f.fullCopy(clk.Now(), "s@remote.test", "waits")
	e := f.start(clk, nil)
	got := f.waitAttempts(1)
	if got.Kind != mailstore.KindLocal || !strings.Contains(got.LastError, "452 4.2.2") || len(got.Pending()) != 1 {
		t.Fatalf("entry after an attempt into the full mailbox = %+v, want it pending with 452 4.2.2", got)
	}
	if n := len(f.inbox("carol@a.test")); n != 1 {
		t.Fatalf("carol has %d messages, want 1 (still full)", n)
	}
	if _, err := f.st.SetQuota(context.Background(), f.partner.ID, "carol@a.test", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.SetSuspended(context.Background(), f.partner.ID, "a.test", true); err != nil {
		t.Fatal(err)
	}
	clk.Add(2 * time.Hour)
	e.sender.Wake()
	f.waitEmpty()
	if got := f.inbox("carol@a.test"); len(got) != 2 || string(got[1]) != message("waits") {
		t.Errorf("carol has %d messages, want the retried one second", len(got))
	}
}

// A KindLocal entry still refused when its lifetime ends bounces to its
// sender.
func TestLocalRetryExpires(t *testing.T) {
	f := newFixture(t)
	clk := newClock()
	f.fullCopy(clk.Now(), "bob@a.test", "never fits")
	e := f.start(clk, func(c *Config) { c.Lifetime = time.Hour })
	f.waitAttempts(1)
	clk.Add(2 * time.Hour)
	e.sender.Wake()
	f.waitEmpty()
	// bob: the message itself, then the bounce of carol's copy.
	d := parseDSN(t, f.waitInbox("bob@a.test", 2)[1])
	d.check(t, "bob@a.test", "never fits")
	if r := d.rcpts[0]; r.Get("Final-Recipient") != "rfc822; carol@a.test" || r.Get("Diagnostic-Code") != "smtp; 452 4.2.2 mailbox full" {
		t.Errorf("DSN recipient %v, want carol@a.test and 452 4.2.2", r)
	}
}

// fillingStore is the fixture's store, whose next Deliver is preceded by
// fill: another delivery committing between a local delivery's
// recipient check and its own write.
type fillingStore struct {
	*boltstore.Store
	fill func()
}

func (s *fillingStore) Deliver(ctx context.Context, d mailstore.Delivery) (mailstore.DeliveryResult, error) {
	if f := s.fill; f != nil {
		s.fill = nil
		f()
	}
	return s.Store.Deliver(ctx, d)
}

// A local delivery whose only mailbox fills up between its recipient
// check and its write (the store refuses it: mailstore.ErrOverQuota)
// stays queued with 452 4.2.2, as a full mailbox at the check does.
func TestLocalDeliveryMailboxFilledMeanwhile(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	carol, err := f.st.SetQuota(ctx, f.partner.ID, "carol@a.test", 1)
	if err != nil {
		t.Fatal(err)
	}
	clk := newClock()
	f.queue(clk.Now(), f.submission("carol@a.test"), message("late"))
	st := &fillingStore{Store: f.st, fill: func() {
		if _, err := f.st.Deliver(ctx, mailstore.Delivery{Body: make([]byte, mailstore.MB), ReceivedAt: clk.Now(), MailboxIDs: []int64{carol.ID}}); err != nil {
			t.Errorf("fill: %v", err)
		}
	}}
	f.start(clk, func(c *Config) { c.Store = st })
	got := f.waitAttempts(1)
	if !strings.Contains(got.LastError, "452 4.2.2") || len(got.Pending()) != 1 {
		t.Errorf("entry = %+v, want carol pending with 452 4.2.2", got)
	}
	if n := len(f.inbox("carol@a.test")); n != 1 {
		t.Errorf("carol has %d messages, want 1 (the one that filled her mailbox)", n)
	}
}
