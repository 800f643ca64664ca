package storetest

import (
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/mailhost/mailhost/mailstore"
)

// mailDeliverQuotaConcurrent starts concurrent deliveries into one 1 MB
// mailbox, as MX sessions that all passed RCPT while it was empty end
// their DATA at once (Mail.Deliver, the quota of concurrent deliveries):
// they share group commits, and the mailbox goes past its quota by one
// message at most; the others are ErrOverQuota with nothing stored or
// queued, and the counters and the month's transfer are what is stored.
func mailDeliverQuotaConcurrent(t *testing.T, open Open) {
	for _, tc := range []struct {
		name string
		n    int
		size int
	}{
		{"about 1 MB each", 20, mailstore.MB - 4<<10},
		{"300 KB each", 20, 300 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMT(t, open)
			mb := m.mailbox(m.pid, "a.example", "u@a.example")
			start := make(chan struct{})
			errs := make([]error, tc.n)
			var wg sync.WaitGroup
			for i := range tc.n {
				wg.Go(func() {
					<-start
					_, errs[i] = m.s.Deliver(m.ctx, mailstore.Delivery{
						Body: make([]byte, tc.size), ReceivedAt: mailNow, MailboxIDs: []int64{mb.ID}, From: "s@far.example",
					})
				})
			}
			close(start)
			wg.Wait()
			delivered := 0
			for i, err := range errs {
				switch {
				case err == nil:
					delivered++
				case !errors.Is(err, mailstore.ErrOverQuota):
					t.Errorf("Deliver #%d = %v, want nil or ErrOverQuota", i, err)
				}
			}
			size, quota := int64(tc.size), int64(mailstore.MB)
			// Each message stored found the mailbox below its quota: what
			// fits below it, and the one that takes it past.
			most := int((quota-1)/size) + 1
			if delivered == 0 || delivered > most {
				t.Errorf("%d concurrent deliveries of %d bytes into %d: %d delivered, want 1 to %d (one past the quota at most)",
					tc.n, size, quota, delivered, most)
			}
			inbox := m.folder(mb.ID, "INBOX")
			if got := len(m.messages(mb.ID, inbox.ID)); got != delivered {
				t.Errorf("INBOX holds %d messages, %d deliveries answered nil", got, delivered)
			}
			full := m.getMailbox(m.pid, mb.Email)
			if full.UsedBytes != int64(delivered)*size || full.UsedBytes-size >= quota {
				t.Errorf("used bytes = %d after %d deliveries of %d, want them counted and at most one message past %d",
					full.UsedBytes, delivered, size, quota)
			}
			m.invariants("a.example")
			if got := m.transferIn("a.example", "2026-11"); got != int64(delivered)*size {
				t.Errorf("transfer in = %d, want %d (the messages stored)", got, int64(delivered)*size)
			}
			// A refusal of every local recipient queues nothing.
			if es, total, err := m.s.OutboundEntries(m.ctx, mailstore.Page{}); err != nil || total != 0 {
				t.Errorf("OutboundEntries = %d entries (%v), %v; want none", total, es, err)
			}
		})
	}
}

// mailDeliverQuotaPartial delivers to a full mailbox and one with room:
// the one with room gets the message, the full one's copy waits in a
// KindLocal queue entry (same transaction), counted for no transfer. A
// delivery whose every local recipient is full is ErrOverQuota, relays
// or not, with nothing stored; IgnoreQuota delivers anyway.
func mailDeliverQuotaPartial(t *testing.T, open Open) {
	m := newMT(t, open)
	full := m.mailbox(m.pid, "a.example", "full@a.example")
	room := m.mailbox(m.pid, "a.example", "room@a.example")
	// Exactly the quota: reached.
	m.deliver(string(make([]byte, mailstore.MB)), mailNow, full.ID)
	msg := "Subject: hi\r\n\r\nbody\r\n"
	res, err := m.s.Deliver(m.ctx, mailstore.Delivery{
		Body: []byte(msg), ReceivedAt: mailNow, MailboxIDs: []int64{full.ID, room.ID}, From: "s@far.example",
	})
	if err != nil {
		t.Fatalf("Deliver(full, room) = %v, want nil", err)
	}
	if !slices.Equal(res.Delivered, []int64{room.ID}) || !slices.Equal(res.OverQuota, []int64{full.ID}) || len(res.Queued) != 1 || len(res.Skipped) != 0 {
		t.Fatalf("Deliver(full, room) = %+v, want delivered [%d], over quota [%d], one entry queued", res, room.ID, full.ID)
	}
	if got := len(m.messages(full.ID, m.folder(full.ID, "INBOX").ID)); got != 1 {
		t.Errorf("full mailbox holds %d messages, want 1 (the one that filled it)", got)
	}
	if ms := m.messages(room.ID, m.folder(room.ID, "INBOX").ID); len(ms) != 1 || m.body(room.ID, ms[0].FolderID, ms[0].UID) != msg {
		t.Errorf("mailbox with room holds %v, want the message", ms)
	}
	m.invariants("a.example")
	dom := m.getDomain(m.pid, "a.example")
	u, err := m.s.DomainUsage(m.ctx, m.pid, "a.example", "2026-11")
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(mailstore.MB + len(msg)); u.Transfer.InBytes != want || u.Transfer.OutBytes != 0 {
		t.Errorf("transfer = %d in, %d out; want %d in (the copy stored, once), 0 out", u.Transfer.InBytes, u.Transfer.OutBytes, want)
	}
	es, total, err := m.s.OutboundEntries(m.ctx, mailstore.Page{})
	if err != nil || total != 1 || len(es) != 1 {
		t.Fatalf("OutboundEntries = %v, %d, %v; want the full mailbox's entry", es, total, err)
	}
	e := es[0]
	if e.ID != res.Queued[0] || e.Kind != mailstore.KindLocal || e.DomainID != dom.ID || e.From != "s@far.example" ||
		e.Destination != "a.example" || e.Size != int64(len(msg)) || e.Held || !e.QueuedAt.Equal(mailNow) ||
		!slices.Equal(e.Recipients, []mailstore.OutboundRecipient{{Address: "full@a.example", State: mailstore.RecipientPending}}) {
		t.Errorf("entry = %+v, want KindLocal of domain %d from s@far.example to full@a.example, not held", e, dom.ID)
	}
	if body, err := m.s.OutboundBody(m.ctx, e.ID); err != nil || string(body) != msg {
		t.Errorf("OutboundBody = %q, %v; want the message", body, err)
	}

	// Every local recipient full: nothing stored, nothing queued, the
	// remote part included (the sender retries the whole message).
	for _, d := range []mailstore.Delivery{
		{MailboxIDs: []int64{full.ID}},
		{MailboxIDs: []int64{full.ID}, Relay: []mailstore.Relay{{Kind: mailstore.KindBounce, To: []string{"x@r.example"}}}},
	} {
		d.Body, d.ReceivedAt, d.From = []byte("again"), mailNow, "s@far.example"
		if res, err := m.s.Deliver(m.ctx, d); !errors.Is(err, mailstore.ErrOverQuota) {
			t.Errorf("Deliver(%+v) = %+v, %v; want ErrOverQuota", d.Relay, res, err)
		}
	}
	if _, total, _ := m.s.OutboundEntries(m.ctx, mailstore.Page{}); total != 1 {
		t.Errorf("queue entries after refusals = %d, want 1", total)
	}
	if got := m.getMailbox(m.pid, full.Email); got.MessageCount != 1 {
		t.Errorf("full mailbox after refusals: %d messages, want 1", got.MessageCount)
	}
	if got := m.transferIn("a.example", "2026-11"); got != int64(mailstore.MB+len(msg)) {
		t.Errorf("transfer in after refusals = %d, want unchanged", got)
	}
	m.invariants("a.example")

	// The queue's bounces are delivered whatever the quota.
	res, err = m.s.Deliver(m.ctx, mailstore.Delivery{Body: []byte("dsn"), ReceivedAt: mailNow, MailboxIDs: []int64{full.ID}, IgnoreQuota: true})
	if err != nil || !slices.Equal(res.Delivered, []int64{full.ID}) || len(res.OverQuota) != 0 {
		t.Errorf("Deliver(IgnoreQuota) = %+v, %v; want delivered", res, err)
	}
	// The body is referenced by the copy stored and the entry.
	if v, ok := m.s.(mailstore.Verifier); ok {
		if drift, err := v.Verify(m.ctx); err != nil || len(drift) != 0 {
			t.Errorf("Verify() = %v, %v; want no drift", drift, err)
		}
	}
	// Only the store makes KindLocal entries.
	if _, err := m.s.Deliver(m.ctx, mailstore.Delivery{Body: []byte("x"), ReceivedAt: mailNow,
		Relay: []mailstore.Relay{{Kind: mailstore.KindLocal, DomainID: dom.ID, To: []string{"room@a.example"}}}}); !errors.Is(err, mailstore.ErrInvalidArgument) {
		t.Errorf("Deliver(KindLocal relay) = %v, want ErrInvalidArgument", err)
	}
	m.invariants("a.example")
}
