package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// The transfer cap and what Deliver and ReleaseHeld count.

const nov, dec = "2026-11", "2026-12"

// figures are the transfer of domains a and b in one month.
type figures struct{ aIn, aOut, bIn, bOut int64 }

func (q *qt) figures(month string) figures {
	q.t.Helper()
	a, b := q.transfer(q.a.ID, month), q.transfer(q.b.ID, month)
	return figures{a.InBytes, a.OutBytes, b.InBytes, b.OutBytes}
}

// queueTransferCounting: what one Deliver counts, domain by domain.
func queueTransferCounting(t *testing.T, open Open) {
	const size = 1000
	sub := func(domainID int64, to ...string) mailstore.Relay {
		return mailstore.Relay{Kind: mailstore.KindSubmission, DomainID: domainID, From: "one@a.example", To: to}
	}
	fwd := func(domainID int64, to ...string) mailstore.Relay {
		return mailstore.Relay{Kind: mailstore.KindForward, DomainID: domainID, From: "srs@example", To: to}
	}
	for _, tc := range []struct {
		name    string
		d       func(q *qt) mailstore.Delivery
		err     error
		want    figures
		entries int
	}{
		{"inbound only", func(q *qt) mailstore.Delivery {
			return mailstore.Delivery{MailboxIDs: []int64{q.a1.ID, q.b1.ID}}
		}, nil, figures{aIn: size, bIn: size}, 0},
		{"submission to another hosted domain", func(q *qt) mailstore.Delivery {
			return mailstore.Delivery{SenderDomainID: q.a.ID, MailboxIDs: []int64{q.b1.ID}}
		}, nil, figures{aOut: size, bIn: size}, 0},
		{"submission to its own domain", func(q *qt) mailstore.Delivery {
			return mailstore.Delivery{SenderDomainID: q.a.ID, MailboxIDs: []int64{q.a1.ID}}
		}, nil, figures{aIn: size, aOut: size}, 0},
		{"submission relayed to two domains counts once", func(q *qt) mailstore.Delivery {
			return mailstore.Delivery{SenderDomainID: q.a.ID, Relay: []mailstore.Relay{sub(q.a.ID, "x@r1.example", "y@r2.example")}}
		}, nil, figures{aOut: size}, 2},
		{"submission relayed for another domain counts both", func(q *qt) mailstore.Delivery {
			return mailstore.Delivery{SenderDomainID: q.a.ID, Relay: []mailstore.Relay{sub(q.b.ID, "x@r1.example")}}
		}, nil, figures{aOut: size, bOut: size}, 1},
		{"forward", func(q *qt) mailstore.Delivery {
			return mailstore.Delivery{MailboxIDs: []int64{q.a1.ID}, Relay: []mailstore.Relay{fwd(q.b.ID, "x@r1.example")}}
		}, nil, figures{aIn: size, bOut: size}, 1},
		{"two forwards of one domain count once", func(q *qt) mailstore.Delivery {
			return mailstore.Delivery{Relay: []mailstore.Relay{fwd(q.b.ID, "x@r1.example"), fwd(q.b.ID, "y@r2.example", "z@r2.example")}}
		}, nil, figures{bOut: size}, 2},
		{"bounce counts nothing", func(q *qt) mailstore.Delivery {
			return mailstore.Delivery{Relay: []mailstore.Relay{{Kind: mailstore.KindBounce, To: []string{"x@r1.example"}}}}
		}, nil, figures{}, 1},
		{"only gone mailboxes count nothing", func(q *qt) mailstore.Delivery {
			return mailstore.Delivery{SenderDomainID: q.a.ID, MailboxIDs: []int64{9999}}
		}, nil, figures{}, 0},
		{"unknown sender domain", func(q *qt) mailstore.Delivery {
			return mailstore.Delivery{SenderDomainID: 9999, MailboxIDs: []int64{q.a1.ID}, Relay: []mailstore.Relay{sub(q.a.ID, "x@r1.example")}}
		}, mailstore.ErrDomainNotFound, figures{}, 0},
		{"unknown relay domain", func(q *qt) mailstore.Delivery {
			return mailstore.Delivery{MailboxIDs: []int64{q.a1.ID}, Relay: []mailstore.Relay{fwd(9999, "x@r1.example")}}
		}, mailstore.ErrDomainNotFound, figures{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newQT(t, open)
			d := tc.d(q)
			d.Body, d.ReceivedAt = bytes.Repeat([]byte{'x'}, size), mailNow
			_, err := q.s.Deliver(q.ctx, d)
			if !ctlIs(err, tc.err) {
				t.Fatalf("Deliver() = %v, want %v", err, tc.err)
			}
			if got := q.figures(nov); got != tc.want {
				t.Errorf("transfer = %+v, want %+v", got, tc.want)
			}
			if n := len(q.entries()); n != tc.entries {
				t.Errorf("OutboundEntries() = %d entries, want %d", n, tc.entries)
			}
			if tc.err != nil {
				if f := q.folder(q.a1.ID, "INBOX"); f.Messages != 0 {
					t.Errorf("INBOX after a refused Deliver = %d messages, want 0", f.Messages)
				}
			}
		})
	}
}

// queueTransferCap: Deliver against a cap of 1 MB, a's figures already at
// `used` bytes (inbound, November).
func queueTransferCap(t *testing.T, open Open) {
	const size = 100
	for _, tc := range []struct {
		name   string
		capMB  int64
		used   int64
		at     time.Time
		d      func(q *qt) mailstore.Delivery
		err    error
		held   []bool // per entry
		want   figures
		month  string
		inboxB int64 // messages b1 has after
	}{
		{
			name: "under the cap a submission goes, and may cross it", capMB: 1, used: mailstore.MB - 1, at: mailNow,
			d: func(q *qt) mailstore.Delivery {
				return mailstore.Delivery{SenderDomainID: q.a.ID, Relay: []mailstore.Relay{{Kind: mailstore.KindSubmission, DomainID: q.a.ID, To: []string{"x@r.example"}}}}
			},
			held: []bool{false}, want: figures{aIn: mailstore.MB - 1, aOut: size}, month: nov,
		},
		{
			name: "at the cap a submission is refused", capMB: 1, used: mailstore.MB, at: mailNow,
			d: func(q *qt) mailstore.Delivery {
				return mailstore.Delivery{SenderDomainID: q.a.ID, MailboxIDs: []int64{q.b1.ID}, Relay: []mailstore.Relay{{Kind: mailstore.KindSubmission, DomainID: q.a.ID, To: []string{"x@r.example"}}}}
			},
			err: mailstore.ErrTransferCapReached, want: figures{aIn: mailstore.MB}, month: nov,
		},
		{
			name: "a cap of 0 admits nothing", capMB: 0, at: mailNow,
			d: func(q *qt) mailstore.Delivery {
				return mailstore.Delivery{SenderDomainID: q.a.ID, MailboxIDs: []int64{q.b1.ID}}
			},
			err: mailstore.ErrTransferCapReached, month: nov,
		},
		{
			name: "at the cap a forward is held, its local copies delivered", capMB: 1, used: mailstore.MB, at: mailNow,
			d: func(q *qt) mailstore.Delivery {
				return mailstore.Delivery{MailboxIDs: []int64{q.b1.ID}, Relay: []mailstore.Relay{{Kind: mailstore.KindForward, DomainID: q.a.ID, To: []string{"x@r1.example", "y@r2.example"}}}}
			},
			held: []bool{true, true}, want: figures{aIn: mailstore.MB, bIn: size}, month: nov, inboxB: 1,
		},
		{
			name: "at the cap inbound mail is received and counted", capMB: 1, used: mailstore.MB, at: mailNow,
			d: func(q *qt) mailstore.Delivery {
				return mailstore.Delivery{MailboxIDs: []int64{q.a1.ID}}
			},
			want: figures{aIn: mailstore.MB + size}, month: nov,
		},
		{
			name: "at the cap a bounce is not held", capMB: 1, used: mailstore.MB, at: mailNow,
			d: func(q *qt) mailstore.Delivery {
				return mailstore.Delivery{Relay: []mailstore.Relay{{Kind: mailstore.KindBounce, To: []string{"x@r.example"}}}}
			},
			held: []bool{false}, want: figures{aIn: mailstore.MB}, month: nov,
		},
		{
			name: "another domain's submission forwarded for a capped one", capMB: 1, used: mailstore.MB, at: mailNow,
			d: func(q *qt) mailstore.Delivery {
				return mailstore.Delivery{SenderDomainID: q.b.ID, Relay: []mailstore.Relay{
					{Kind: mailstore.KindSubmission, DomainID: q.b.ID, To: []string{"x@r.example"}},
					{Kind: mailstore.KindForward, DomainID: q.a.ID, To: []string{"y@r.example"}},
				}}
			},
			held: []bool{false, true}, want: figures{aIn: mailstore.MB, bOut: size}, month: nov,
		},
		{
			name: "the next month starts afresh", capMB: 1, used: mailstore.MB, at: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
			d: func(q *qt) mailstore.Delivery {
				return mailstore.Delivery{SenderDomainID: q.a.ID, Relay: []mailstore.Relay{{Kind: mailstore.KindSubmission, DomainID: q.a.ID, To: []string{"x@r.example"}}}}
			},
			held: []bool{false}, want: figures{aOut: size}, month: dec,
		},
		{
			name: "the month is UTC's", capMB: 1, used: mailstore.MB, at: time.Date(2026, 12, 1, 0, 30, 0, 0, time.FixedZone("CET", 3600)),
			d: func(q *qt) mailstore.Delivery {
				return mailstore.Delivery{SenderDomainID: q.a.ID, MailboxIDs: []int64{q.b1.ID}}
			},
			err: mailstore.ErrTransferCapReached, want: figures{aIn: mailstore.MB}, month: nov,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newQT(t, open)
			q.setCap("a.example", tc.capMB)
			// Room for the month's figures and the message: the quota of
			// concurrent deliveries (Mail.Deliver) is not what is tested.
			if _, err := q.s.SetQuota(q.ctx, q.pid, q.a1.Email, 10); err != nil {
				t.Fatal(err)
			}
			if tc.used > 0 {
				q.deliver(string(bytes.Repeat([]byte{'u'}, int(tc.used))), mailNow, q.a1.ID)
			}
			d := tc.d(q)
			d.Body, d.ReceivedAt = bytes.Repeat([]byte{'x'}, size), tc.at
			res, err := q.s.Deliver(q.ctx, d)
			if !ctlIs(err, tc.err) {
				t.Fatalf("Deliver() = %+v, %v; want %v", res, err, tc.err)
			}
			if got := q.figures(tc.month); got != tc.want {
				t.Errorf("transfer %s = %+v, want %+v", tc.month, got, tc.want)
			}
			es := q.entries()
			var held []bool
			for _, e := range es {
				held = append(held, e.Held)
			}
			if !slices.Equal(held, tc.held) {
				t.Errorf("entries held = %v, want %v", held, tc.held)
			}
			if f := q.folder(q.b1.ID, "INBOX"); f.Messages != tc.inboxB {
				t.Errorf("b1 INBOX = %d messages, want %d", f.Messages, tc.inboxB)
			}
			// Held entries are not claimed.
			var due []int64
			for _, e := range es {
				if !e.Held {
					due = append(due, e.ID)
				}
			}
			if got := idsOf(q.claim(tc.at.Add(time.Hour), time.Minute, 10)); !slices.Equal(got, append([]int64{}, due...)) {
				t.Errorf("ClaimOutbound() = %v, want the entries not held, %v", got, due)
			}
		})
	}
}

// queueReleaseHeld: held forwards go when the cap is raised or the month
// turns, oldest first, counted as they go, while the domain has room.
func queueReleaseHeld(t *testing.T, open Open) {
	q := newQT(t, open)
	const big = 600 * 1024
	q.setCap("a.example", 1)
	q.setCap("b.example", 1)
	q.deliver(string(bytes.Repeat([]byte{'u'}, mailstore.MB)), mailNow, q.a1.ID, q.b1.ID)
	now := mailNow.Add(time.Minute)
	body := string(bytes.Repeat([]byte{'f'}, big))
	m1 := q.relay(body, now, q.a.ID, "x@r1.example", "y@r2.example") // two entries, one message
	m2 := q.relay(body, now, q.a.ID, "z@r1.example")
	m3 := q.relay(body, now, q.a.ID, "w@r1.example")
	mb := q.relay("b's", now, q.b.ID, "v@r1.example")
	for _, id := range slices.Concat(m1, m2, m3, mb) {
		if e := q.entry(id); !e.Held {
			t.Fatalf("entry %d = %+v, want held", id, e)
		}
	}
	if got := q.claim(now.Add(time.Hour), time.Minute, 10); len(got) != 0 {
		t.Errorf("ClaimOutbound() = %v, want nothing: every entry is held", idsOf(got))
	}
	release := func(at time.Time) int {
		t.Helper()
		n, err := q.s.ReleaseHeld(q.ctx, at)
		if err != nil {
			t.Fatalf("ReleaseHeld(%v) = %v, want nil", at, err)
		}
		return n
	}
	if n := release(now); n != 0 {
		t.Errorf("ReleaseHeld(no room) = %d, want 0", n)
	}

	// Raised to 2 MB: a has 1 MB of room. m1 (its two entries, counted
	// once) and m2, which crosses the cap, go; m3 waits. b has no room.
	q.setCap("a.example", 2)
	at := now.Add(time.Minute)
	if n := release(at); n != 3 {
		t.Errorf("ReleaseHeld(cap raised) = %d, want 3", n)
	}
	if got, want := q.figures(nov), (figures{aIn: mailstore.MB, aOut: 2 * big, bIn: mailstore.MB}); got != want {
		t.Errorf("November transfer after release = %+v, want %+v", got, want)
	}
	for _, id := range slices.Concat(m1, m2) {
		if e := q.entry(id); e.Held || !e.NextAttempt.Equal(at) {
			t.Errorf("released entry %d = held %v, next %v; want due at %v", id, e.Held, e.NextAttempt, at)
		}
	}
	for _, id := range slices.Concat(m3, mb) {
		if e := q.entry(id); !e.Held {
			t.Errorf("entry %d = %+v, want still held", id, e)
		}
	}
	if got := idsOf(q.claim(at, time.Minute, 10)); !slices.Equal(got, slices.Concat(m1, m2)) {
		t.Errorf("ClaimOutbound() after release = %v, want %v", got, slices.Concat(m1, m2))
	}
	for _, id := range slices.Concat(m1, m2) {
		q.done(id, at)
	}
	if n := release(at); n != 0 {
		t.Errorf("ReleaseHeld() again = %d, want 0 (a is at its cap again)", n)
	}

	// The month turns: everything goes, counted in December.
	december := time.Date(2026, 12, 1, 0, 0, 5, 0, time.UTC)
	if n := release(december); n != 2 {
		t.Errorf("ReleaseHeld(next month) = %d, want 2", n)
	}
	if got, want := q.figures(dec), (figures{aOut: big, bOut: 3}); got != want {
		t.Errorf("December transfer after release = %+v, want %+v", got, want)
	}
	if got := idsOf(q.claim(december, time.Minute, 10)); !slices.Equal(got, slices.Concat(m3, mb)) {
		t.Errorf("ClaimOutbound(December) = %v, want %v", got, slices.Concat(m3, mb))
	}
	if n := release(december); n != 0 {
		t.Errorf("ReleaseHeld() with nothing held = %d, want 0", n)
	}
	if got := q.outBody(m3[0]); got != body {
		t.Errorf("OutboundBody(released) = %d bytes, want %d", len(got), len(body))
	}
}

// queueReleaseDeletedDomain: a held forward of a domain deleted meanwhile
// is still mail in flight; it is released, counted nowhere.
func queueReleaseDeletedDomain(t *testing.T, open Open) {
	q := newQT(t, open)
	q.setCap("b.example", 0)
	id := q.relay("orphan", mailNow, q.b.ID, "x@r.example")[0]
	if err := q.s.DeleteDomain(q.ctx, q.pid, "b.example", true); err != nil {
		t.Fatalf("DeleteDomain() = %v", err)
	}
	if e := q.entry(id); !e.Held {
		t.Fatalf("entry after DeleteDomain = %+v, want held", e)
	}
	if n, err := q.s.ReleaseHeld(q.ctx, mailNow); err != nil || n != 1 {
		t.Errorf("ReleaseHeld() = %d, %v; want 1, nil", n, err)
	}
	if got := idsOf(q.claim(mailNow, time.Minute, 10)); !slices.Equal(got, []int64{id}) {
		t.Errorf("ClaimOutbound() = %v, want [%d]", got, id)
	}
	if got := q.outBody(id); got != "orphan" {
		t.Errorf("OutboundBody() = %q, want orphan", got)
	}
}

// queueConcurrent: concurrent submissions with relays, then concurrent
// workers claiming and completing: every entry is made once, claimed
// once, and the counters add up.
func queueConcurrent(t *testing.T, open Open) {
	q := newQT(t, open)
	const n = 30
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	var want figures
	for i := range n {
		size := int64(100 + i)
		want.aOut += size
		want.bIn += size
		wg.Go(func() {
			_, err := q.s.Deliver(q.ctx, mailstore.Delivery{
				Body: bytes.Repeat([]byte{'s'}, int(size)), ReceivedAt: mailNow, SenderDomainID: q.a.ID, MailboxIDs: []int64{q.b1.ID},
				Relay: []mailstore.Relay{{Kind: mailstore.KindSubmission, DomainID: q.a.ID, From: "one@a.example",
					To: []string{fmt.Sprintf("x%d@r1.example", i), fmt.Sprintf("y%d@r2.example", i)}}},
			})
			errs <- err
		})
		if i%3 == 0 {
			want.bOut += 10
			wg.Go(func() {
				_, err := q.s.Deliver(q.ctx, mailstore.Delivery{
					Body: bytes.Repeat([]byte{'f'}, 10), ReceivedAt: mailNow,
					Relay: []mailstore.Relay{{Kind: mailstore.KindForward, DomainID: q.b.ID, To: []string{"z@r3.example"}}},
				})
				errs <- err
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent Deliver() = %v, want nil", err)
		}
	}
	es := q.entries()
	if len(es) != 2*n+n/3 {
		t.Fatalf("OutboundEntries() = %d entries, want %d", len(es), 2*n+n/3)
	}
	if got := q.figures(nov); got != want {
		t.Errorf("transfer = %+v, want %+v", got, want)
	}
	q.invariants("b.example")

	// Four workers claim and complete until nothing is due.
	var mu sync.Mutex
	// claimed counts the claims of each entry; guarded by mu.
	claimed := map[int64]int{}
	fail := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			for {
				got, err := q.s.ClaimOutbound(q.ctx, mailNow, time.Hour, 3, mailstore.ClaimOptions{})
				if err != nil || len(got) == 0 {
					fail <- err
					return
				}
				for _, e := range got {
					mu.Lock()
					claimed[e.ID]++
					mu.Unlock()
					body, err := q.s.OutboundBody(q.ctx, e.ID)
					if err == nil && int64(len(body)) != e.Size {
						err = fmt.Errorf("entry %d body is %d bytes, want %d", e.ID, len(body), e.Size)
					}
					if err == nil {
						_, err = q.s.RecordAttempt(q.ctx, e.ID, mailstore.Attempt{Now: mailNow, Delivered: e.Pending()})
					}
					if err != nil {
						fail <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(fail)
	for err := range fail {
		if err != nil {
			t.Errorf("worker: %v", err)
		}
	}
	for _, e := range es {
		if claimed[e.ID] != 1 {
			t.Errorf("entry %d claimed %d times, want once", e.ID, claimed[e.ID])
		}
	}
	if left := q.entries(); len(left) != 0 {
		t.Errorf("OutboundEntries() after the workers = %v, want none", idsOf(left))
	}
	if _, err := q.s.RecordAttempt(q.ctx, es[0].ID, mailstore.Attempt{Now: mailNow}); !errors.Is(err, mailstore.ErrOutboundNotFound) {
		t.Errorf("RecordAttempt(done entry) = %v, want ErrOutboundNotFound", err)
	}
}
