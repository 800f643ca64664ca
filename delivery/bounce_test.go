package delivery

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
)

// recorder is the fixture's store, keeping the deliveries it is asked for.
type recorder struct {
	*boltstore.Store
	got []mailstore.Delivery
}

func (r *recorder) Deliver(ctx context.Context, d mailstore.Delivery) (mailstore.DeliveryResult, error) {
	r.got = append(r.got, d)
	return r.Store.Deliver(ctx, d)
}

// TestBounce: where Agent.Bounce takes a queue's delivery status
// notification, and that it checks neither quota nor cap.
func TestBounce(t *testing.T) {
	f := newFixture(t)
	// full@ is at its quota (the fixture): Deliver would refuse anything
	// else (mailstore.Mail.Deliver), a bounce goes in.
	for _, c := range []struct {
		to        string
		partner   int64
		mailboxes []string
		relays    []relay
		err       error
	}{
		{to: "bob@a.test", partner: f.partner, mailboxes: []string{"bob@a.test"}},
		{to: "full@a.test", partner: f.partner, mailboxes: []string{"full@a.test"}}, // no quota check
		{to: "cap@capped.test", partner: f.partner, mailboxes: []string{"cap@capped.test"}},
		{to: "info@a.test", partner: f.partner, mailboxes: []string{"bob@a.test"}},
		{to: "fwd@a.test", partner: f.partner, relays: []relay{{kind: mailstore.KindBounce, to: []string{"someone@remote.test"}}}},
		{to: "someone@remote.test", partner: f.partner, relays: []relay{{kind: mailstore.KindBounce, to: []string{"someone@remote.test"}}}},
		// Another partner's domain, not verified: it goes out, as the
		// entry's own mail would.
		{to: "eve@other.test", partner: f.partner, relays: []relay{{kind: mailstore.KindBounce, to: []string{"eve@other.test"}}}},
		{to: "nobody@a.test", partner: f.partner, err: ErrBounceUndeliverable},
		{to: "loop1@a.test", partner: f.partner, err: ErrBounceUndeliverable},
	} {
		t.Run(c.to, func(t *testing.T) {
			r := &recorder{Store: f.st}
			a := New(Config{Store: r, SRS: testSRS, Now: func() time.Time { return testNow }})
			err := a.Bounce(context.Background(), c.to, c.partner, []byte("Subject: bounce\r\n\r\nfailed\r\n"), testNow)
			if c.err != nil {
				if !errors.Is(err, c.err) || len(r.got) != 0 {
					t.Fatalf("Bounce = %v with %d deliveries, want %v and none", err, len(r.got), c.err)
				}
				return
			}
			if err != nil || len(r.got) != 1 {
				t.Fatalf("Bounce = %v with %d deliveries, want nil and one", err, len(r.got))
			}
			d := r.got[0]
			var ids []int64
			for _, m := range c.mailboxes {
				ids = append(ids, f.boxes[m].ID)
			}
			if !slices.Equal(d.MailboxIDs, ids) {
				t.Errorf("mailboxes %v, want %v (%v)", d.MailboxIDs, ids, c.mailboxes)
			}
			if want := f.relays(c.relays); !slices.EqualFunc(d.Relay, want, func(a, b mailstore.Relay) bool {
				return a.Kind == b.Kind && a.DomainID == b.DomainID && a.From == b.From && slices.Equal(a.To, b.To)
			}) {
				t.Errorf("relays %+v, want %+v", d.Relay, want)
			}
			if d.SenderDomainID != 0 {
				t.Errorf("a bounce charged domain %d", d.SenderDomainID)
			}
		})
	}
}
