package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// runQueue checks the outbound queue, transfer counting and caps, DKIM
// keys, and the MTA-STS policies of destinations (sts.go).
func runQueue(t *testing.T, open Open) {
	t.Run("deliver_relay", func(t *testing.T) { queueDeliverRelay(t, open) })
	t.Run("relay_invalid", func(t *testing.T) { queueRelayInvalid(t, open) })
	t.Run("claim", func(t *testing.T) { queueClaim(t, open) })
	t.Run("claim_spread", func(t *testing.T) { queueClaimSpread(t, open) })
	t.Run("claim_invalid", func(t *testing.T) { queueClaimInvalid(t, open) })
	t.Run("record_attempt", func(t *testing.T) { queueRecordAttempt(t, open) })
	t.Run("shared_body", func(t *testing.T) { queueSharedBody(t, open) })
	t.Run("in_flight", func(t *testing.T) { queueInFlight(t, open) })
	t.Run("entries_paging", func(t *testing.T) { queueEntriesPaging(t, open) })
	t.Run("stats", func(t *testing.T) { queueStats(t, open) })
	t.Run("store_size", func(t *testing.T) { storeSize(t, open) })
	t.Run("flush", func(t *testing.T) { queueFlush(t, open) })
	t.Run("flush_domain", func(t *testing.T) { queueFlushDomain(t, open) })
	t.Run("delete", func(t *testing.T) { queueDelete(t, open) })
	t.Run("release_leases", func(t *testing.T) { queueReleaseLeases(t, open) })
	t.Run("warned", func(t *testing.T) { queueWarned(t, open) })
	t.Run("release_held", func(t *testing.T) { queueReleaseHeld(t, open) })
	t.Run("release_deleted_domain", func(t *testing.T) { queueReleaseDeletedDomain(t, open) })
	t.Run("concurrent", func(t *testing.T) { queueConcurrent(t, open) })
	t.Run("dkim", func(t *testing.T) { queueDKIM(t, open) })
	t.Run("context_done", func(t *testing.T) { queueContextDone(t, open) })
	t.Run("sts_round_trip", func(t *testing.T) { stsRoundTrip(t, open) })
	t.Run("sts_expiry", func(t *testing.T) { stsExpiry(t, open) })
	t.Run("sts_replace", func(t *testing.T) { stsReplace(t, open) })
	t.Run("sts_prune", func(t *testing.T) { stsPrune(t, open) })
	t.Run("sts_fold", func(t *testing.T) { stsFold(t, open) })
	t.Run("sts_invalid", func(t *testing.T) { stsInvalid(t, open) })
	t.Run("sts_context_done", func(t *testing.T) { stsContextDone(t, open) })
}

// qt is one queue test's store: partner, domains a.example and b.example
// (mailPlan: cap 100 MB), a mailbox in each.
type qt struct {
	*mt
	a, b   mailstore.Domain
	a1, b1 mailstore.Mailbox
}

func newQT(t *testing.T, open Open) *qt {
	t.Helper()
	m := newMT(t, open)
	q := &qt{mt: m}
	q.b = m.domain(m.pid, "b.example", mailPlan, 0, 0)
	q.a1 = m.mailbox(m.pid, "a.example", "one@a.example")
	q.b1 = m.mailbox(m.pid, "b.example", "one@b.example")
	q.a = m.getDomain(m.pid, "a.example")
	return q
}

func (q *qt) deliverD(d mailstore.Delivery) mailstore.DeliveryResult {
	q.t.Helper()
	r, err := q.s.Deliver(q.ctx, d)
	if err != nil {
		q.t.Fatalf("Deliver(mailboxes %v, sender %d, relays %+v) = %v, want nil", d.MailboxIDs, d.SenderDomainID, d.Relay, err)
	}
	return r
}

// relay delivers body to remote recipients only, as a forward of domainID
// (0: a bounce), received at `at`, and answers the queue ids.
func (q *qt) relay(body string, at time.Time, domainID int64, to ...string) []int64 {
	q.t.Helper()
	kind := mailstore.KindForward
	if domainID == 0 {
		kind = mailstore.KindBounce
	}
	r := q.deliverD(mailstore.Delivery{Body: []byte(body), ReceivedAt: at, Relay: []mailstore.Relay{{Kind: kind, DomainID: domainID, To: to}}})
	return r.Queued
}

func (q *qt) entries() []mailstore.Outbound {
	q.t.Helper()
	es, n, err := q.s.OutboundEntries(q.ctx, mailstore.Page{})
	if err != nil {
		q.t.Fatalf("OutboundEntries() = %v, want nil", err)
	}
	if n != len(es) {
		q.t.Errorf("OutboundEntries() total = %d, want %d (the entries listed)", n, len(es))
	}
	return es
}

func (q *qt) entry(id int64) mailstore.Outbound {
	q.t.Helper()
	for _, e := range q.entries() {
		if e.ID == id {
			return e
		}
	}
	q.t.Fatalf("OutboundEntries() has no entry %d", id)
	return mailstore.Outbound{}
}

func (q *qt) claim(now time.Time, lease time.Duration, limit int) []mailstore.Outbound {
	q.t.Helper()
	es, err := q.s.ClaimOutbound(q.ctx, now, lease, limit, mailstore.ClaimOptions{})
	if err != nil {
		q.t.Fatalf("ClaimOutbound(%v, %v, %d) = %v, want nil", now, lease, limit, err)
	}
	return es
}

func (q *qt) record(id int64, a mailstore.Attempt) mailstore.Outbound {
	q.t.Helper()
	o, err := q.s.RecordAttempt(q.ctx, id, a)
	if err != nil {
		q.t.Fatalf("RecordAttempt(%d, %+v) = %v, want nil", id, a, err)
	}
	return o
}

// done records the delivery of every pending recipient of an entry.
func (q *qt) done(id int64, now time.Time) mailstore.Outbound {
	q.t.Helper()
	return q.record(id, mailstore.Attempt{Now: now, Delivered: q.entry(id).Pending()})
}

func (q *qt) outBody(id int64) string {
	q.t.Helper()
	b, err := q.s.OutboundBody(q.ctx, id)
	if err != nil {
		q.t.Fatalf("OutboundBody(%d) = %v, want nil", id, err)
	}
	return string(b)
}

func (q *qt) transfer(domainID int64, month string) mailstore.Transfer {
	q.t.Helper()
	x, err := q.s.Transfer(q.ctx, domainID, month)
	if err != nil {
		q.t.Fatalf("Transfer(%d, %s) = %v, want nil", domainID, month, err)
	}
	return x
}

func (q *qt) setCap(domain string, mb int64) {
	q.t.Helper()
	if _, err := q.s.SetTransferCap(q.ctx, q.pid, domain, mb); err != nil {
		q.t.Fatalf("SetTransferCap(%s, %d) = %v, want nil", domain, mb, err)
	}
}

func idsOf(es []mailstore.Outbound) []int64 {
	out := []int64{}
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

// rcptStates renders an entry's recipients as "address:state" strings.
func rcptStates(o mailstore.Outbound) []string {
	out := []string{}
	for _, r := range o.Recipients {
		out = append(out, fmt.Sprintf("%s:%s", r.Address, r.State))
	}
	return out
}

func queueDeliverRelay(t *testing.T, open Open) {
	q := newQT(t, open)
	body := "Subject: out\r\n\r\nhello\r\n"
	at := time.Date(2026, 11, 22, 10, 30, 0, 999, time.FixedZone("X", 3600))
	atUTC := at.UTC().Truncate(time.Second)
	res := q.deliverD(mailstore.Delivery{
		Body: []byte(body), ReceivedAt: at, MailboxIDs: []int64{q.a1.ID}, SenderDomainID: q.a.ID,
		Relay: []mailstore.Relay{
			{Kind: mailstore.KindSubmission, DomainID: q.a.ID, From: "one@a.example",
				To: []string{"x@remote.example", "y@Other.Example", "z@REMOTE.example", "x@remote.example"}},
			{Kind: mailstore.KindBounce, To: []string{"bob@third.example"}},
		},
	})
	if !slices.Equal(res.Delivered, []int64{q.a1.ID}) || len(res.Skipped) != 0 {
		t.Errorf("Deliver() = %+v, want delivered to %d", res, q.a1.ID)
	}
	msgs := q.messages(q.a1.ID, q.folder(q.a1.ID, "INBOX").ID)
	if len(msgs) != 1 {
		t.Fatalf("INBOX holds %d messages, want 1", len(msgs))
	}
	es := q.entries()
	if got := idsOf(es); !slices.Equal(got, res.Queued) {
		t.Errorf("OutboundEntries() ids = %v, want Deliver().Queued %v", got, res.Queued)
	}
	want := []struct {
		kind        mailstore.OutboundKind
		domainID    int64
		from        string
		destination string
		rcpts       []string
	}{
		{mailstore.KindSubmission, q.a.ID, "one@a.example", "remote.example", []string{"x@remote.example", "z@REMOTE.example"}},
		{mailstore.KindSubmission, q.a.ID, "one@a.example", "other.example", []string{"y@Other.Example"}},
		{mailstore.KindBounce, 0, "", "third.example", []string{"bob@third.example"}},
	}
	if len(es) != len(want) {
		t.Fatalf("OutboundEntries() = %d entries, want %d", len(es), len(want))
	}
	for i, w := range want {
		e := es[i]
		if e.Kind != w.kind || e.DomainID != w.domainID || e.From != w.from || e.Destination != w.destination {
			t.Errorf("entry %d = %s/%d/%q/%s, want %s/%d/%q/%s", i, e.Kind, e.DomainID, e.From, e.Destination, w.kind, w.domainID, w.from, w.destination)
		}
		if got := e.Pending(); !slices.Equal(got, w.rcpts) {
			t.Errorf("entry %d Pending() = %v, want %v", i, got, w.rcpts)
		}
		for _, r := range e.Recipients {
			if r.State != mailstore.RecipientPending || r.Reply != "" {
				t.Errorf("entry %d recipient %+v, want pending with no reply", i, r)
			}
		}
		if e.Size != int64(len(body)) || e.BlobID != msgs[0].BlobID || e.Attempts != 0 || e.LastError != "" || e.Held {
			t.Errorf("entry %d = %+v, want size %d, blob %d (the local copy's), no attempt, not held", i, e, len(body), msgs[0].BlobID)
		}
		checkUTC(t, fmt.Sprintf("entry %d QueuedAt", i), e.QueuedAt, atUTC)
		checkUTC(t, fmt.Sprintf("entry %d NextAttempt", i), e.NextAttempt, atUTC)
		if got := q.outBody(e.ID); got != body {
			t.Errorf("OutboundBody(%d) = %q, want %q", e.ID, got, body)
		}
	}

	// Only remote recipients, or local ones that are gone: still a success.
	later := mailNow.Add(time.Hour)
	res = q.deliverD(mailstore.Delivery{Body: []byte("r"), ReceivedAt: later,
		Relay: []mailstore.Relay{{Kind: mailstore.KindForward, DomainID: q.b.ID, From: "srs@b.example", To: []string{"f@far.example"}}}})
	if len(res.Delivered) != 0 || len(res.Skipped) != 0 || len(res.Queued) != 1 {
		t.Errorf("Deliver(relay only) = %+v, want one queued, nothing delivered", res)
	}
	res = q.deliverD(mailstore.Delivery{Body: []byte("s"), ReceivedAt: later, MailboxIDs: []int64{9999},
		Relay: []mailstore.Relay{{Kind: mailstore.KindForward, DomainID: q.b.ID, To: []string{"f@far.example"}}}})
	if len(res.Delivered) != 0 || !slices.Equal(res.Skipped, []int64{9999}) || len(res.Queued) != 1 {
		t.Errorf("Deliver(gone mailbox + relay) = %+v, want skipped 9999, one queued", res)
	}
	if got := q.outBody(res.Queued[0]); got != "s" {
		t.Errorf("OutboundBody(relay only) = %q, want s", got)
	}
	// A relay without recipients queues nothing.
	res = q.deliverD(mailstore.Delivery{Body: []byte("t"), ReceivedAt: later, Relay: []mailstore.Relay{{Kind: mailstore.KindForward, DomainID: q.b.ID}}})
	if len(res.Queued) != 0 || len(res.Delivered) != 0 {
		t.Errorf("Deliver(relay with no recipient) = %+v, want nothing", res)
	}
	if n := len(q.entries()); n != 5 {
		t.Errorf("OutboundEntries() = %d entries, want 5", n)
	}
	q.invariants("a.example")
}

func queueRelayInvalid(t *testing.T, open Open) {
	q := newQT(t, open)
	for _, tc := range []struct {
		name  string
		relay mailstore.Relay
	}{
		{"no kind", mailstore.Relay{To: []string{"x@r.example"}}},
		{"unknown kind", mailstore.Relay{Kind: "smtp", To: []string{"x@r.example"}}},
		{"no @", mailstore.Relay{Kind: mailstore.KindBounce, To: []string{"r.example"}}},
		{"no local part", mailstore.Relay{Kind: mailstore.KindBounce, To: []string{"@r.example"}}},
		{"no domain", mailstore.Relay{Kind: mailstore.KindBounce, To: []string{"x@"}}},
		{"one bad among good", mailstore.Relay{Kind: mailstore.KindBounce, To: []string{"x@r.example", "y"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := q.s.Deliver(q.ctx, mailstore.Delivery{Body: []byte("x"), ReceivedAt: mailNow, MailboxIDs: []int64{q.a1.ID}, Relay: []mailstore.Relay{tc.relay}})
			if !errors.Is(err, mailstore.ErrInvalidArgument) {
				t.Errorf("Deliver(relay %+v) = %v, want ErrInvalidArgument", tc.relay, err)
			}
		})
	}
	if n := len(q.entries()); n != 0 {
		t.Errorf("OutboundEntries() after refused deliveries = %d entries, want 0", n)
	}
	if f := q.folder(q.a1.ID, "INBOX"); f.Messages != 0 {
		t.Errorf("INBOX after refused deliveries = %d messages, want 0", f.Messages)
	}
	if x := q.transfer(q.a.ID, "2026-11"); x.InBytes != 0 || x.OutBytes != 0 {
		t.Errorf("Transfer(a) after refused deliveries = %+v, want zero", x)
	}
}

func queueClaim(t *testing.T, open Open) {
	q := newQT(t, open)
	now := mailNow
	t1 := q.relay("1", now.Add(-3*time.Minute), q.a.ID, "x@r.example")[0]
	t3 := q.relay("3", now, q.a.ID, "x@r.example")[0]
	t2 := q.relay("2", now.Add(-2*time.Minute), q.a.ID, "x@r.example")[0]
	future := q.relay("4", now.Add(time.Hour), q.a.ID, "x@r.example")[0]
	lease := 5 * time.Minute

	got := q.claim(now, lease, 2)
	if !slices.Equal(idsOf(got), []int64{t1, t2}) {
		t.Fatalf("ClaimOutbound(now, limit 2) = %v, want %v (earliest first)", idsOf(got), []int64{t1, t2})
	}
	for _, e := range got {
		checkUTC(t, fmt.Sprintf("claimed %d NextAttempt", e.ID), e.NextAttempt, now.Add(lease))
		if e.Attempts != 0 {
			t.Errorf("claimed %d Attempts = %d, want 0 (a claim is not an attempt)", e.ID, e.Attempts)
		}
		if stored := q.entry(e.ID); !stored.NextAttempt.Equal(now.Add(lease)) {
			t.Errorf("entry %d NextAttempt after claim = %v, want %v", e.ID, stored.NextAttempt, now.Add(lease))
		}
	}
	if got := q.claim(now, lease, 10); !slices.Equal(idsOf(got), []int64{t3}) {
		t.Errorf("second ClaimOutbound(now) = %v, want [%d] (the others are leased, %d not due)", idsOf(got), t3, future)
	}
	if got := q.claim(now.Add(lease-time.Second), lease, 10); len(got) != 0 {
		t.Errorf("ClaimOutbound(before the lease ends) = %v, want none", idsOf(got))
	}
	// The lease ran out (the worker crashed): the entries are claimed again.
	// Due at the same time, they come by id.
	again := now.Add(lease)
	if got := q.claim(again, lease, 10); !slices.Equal(idsOf(got), []int64{t1, t3, t2}) {
		t.Errorf("ClaimOutbound(lease end) = %v, want %v", idsOf(got), []int64{t1, t3, t2})
	}
	for _, id := range []int64{t1, t2, t3} {
		q.done(id, again)
	}
	// A lease is never shorter than asked: its end rounds up to the second.
	at := now.Add(time.Hour + 500*time.Millisecond)
	got = q.claim(at, time.Second, 10)
	if !slices.Equal(idsOf(got), []int64{future}) {
		t.Fatalf("ClaimOutbound(%v) = %v, want [%d]", at, idsOf(got), future)
	}
	checkUTC(t, "NextAttempt of a 1s lease from .5s", got[0].NextAttempt, now.Add(time.Hour+2*time.Second))
	if got := q.claim(at.Add(time.Second), time.Second, 10); len(got) != 0 {
		t.Errorf("ClaimOutbound(1s later) = %v, want none: the lease is at least 1s", idsOf(got))
	}
	// Bodies are readable while claimed.
	if got := q.outBody(future); got != "4" {
		t.Errorf("OutboundBody(claimed) = %q, want 4", got)
	}
	if _, err := q.s.OutboundBody(q.ctx, 9999); !ctlIs(err, mailstore.ErrOutboundNotFound) || !errors.Is(err, mailstore.ErrNotFound) {
		t.Errorf("OutboundBody(unknown) = %v, want ErrOutboundNotFound", err)
	}
}

func queueClaimInvalid(t *testing.T, open Open) {
	q := newQT(t, open)
	q.relay("1", mailNow, q.a.ID, "x@r.example")
	for _, tc := range []struct {
		name  string
		lease time.Duration
		limit int
	}{
		{"zero limit", time.Minute, 0},
		{"negative limit", time.Minute, -1},
		{"zero lease", 0, 10},
		{"negative lease", -time.Minute, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := q.s.ClaimOutbound(q.ctx, mailNow, tc.lease, tc.limit, mailstore.ClaimOptions{})
			if !errors.Is(err, mailstore.ErrInvalidArgument) || len(got) != 0 {
				t.Errorf("ClaimOutbound(lease %v, limit %d) = %v, %v, want ErrInvalidArgument", tc.lease, tc.limit, idsOf(got), err)
			}
		})
	}
	if got := q.claim(mailNow, time.Minute, 10); len(got) != 1 {
		t.Errorf("ClaimOutbound() after refused claims = %d entries, want 1 (nothing claimed)", len(got))
	}
}

func queueRecordAttempt(t *testing.T, open Open) {
	q := newQT(t, open)
	now := mailNow
	id := q.relay("body", now, q.a.ID, "a@r.example", "b@r.example", "c@r.example", "d@r.example")[0]
	q.claim(now, time.Minute, 10)
	next := now.Add(10 * time.Minute)
	o := q.record(id, mailstore.Attempt{
		Now: now, Delivered: []string{"a@r.example"}, Failed: map[string]string{"b@r.example": "550 5.1.1 no such user"},
		Deferred: "451 4.4.1 try later", NextAttempt: next,
	})
	wantStates := []string{"a@r.example:delivered", "b@r.example:failed", "c@r.example:pending", "d@r.example:pending"}
	if got := rcptStates(o); !slices.Equal(got, wantStates) {
		t.Errorf("RecordAttempt() recipients = %v, want %v", got, wantStates)
	}
	wantReplies := []string{"", "550 5.1.1 no such user", "451 4.4.1 try later", "451 4.4.1 try later"}
	for i, r := range o.Recipients {
		if r.Reply != wantReplies[i] {
			t.Errorf("recipient %s reply = %q, want %q", r.Address, r.Reply, wantReplies[i])
		}
	}
	if o.Attempts != 1 || o.LastError != "451 4.4.1 try later" || !o.NextAttempt.Equal(next) {
		t.Errorf("RecordAttempt() = attempts %d, last error %q, next %v; want 1, the deferral, %v", o.Attempts, o.LastError, o.NextAttempt, next)
	}
	if stored := q.entry(id); ctlJSON(t, stored) != ctlJSON(t, o) {
		t.Errorf("stored entry = %s, want what RecordAttempt answered, %s", ctlJSON(t, stored), ctlJSON(t, o))
	}
	if got := q.claim(next.Add(-time.Second), time.Minute, 10); len(got) != 0 {
		t.Errorf("ClaimOutbound(before NextAttempt) = %v, want none", idsOf(got))
	}
	got := q.claim(next, time.Minute, 10)
	if !slices.Equal(idsOf(got), []int64{id}) || !slices.Equal(got[0].Pending(), []string{"c@r.example", "d@r.example"}) {
		t.Fatalf("ClaimOutbound(at NextAttempt) = %+v, want entry %d with c and d pending", got, id)
	}
	// The last recipients are done: the entry goes, with its body.
	o = q.record(id, mailstore.Attempt{Now: next, Delivered: []string{"c@r.example", "a@r.example"}, Failed: map[string]string{"d@r.example": "550 5.7.1 refused", "a@r.example": "ignored"}})
	wantStates = []string{"a@r.example:delivered", "b@r.example:failed", "c@r.example:delivered", "d@r.example:failed"}
	if got := rcptStates(o); !slices.Equal(got, wantStates) || o.Attempts != 2 || o.LastError != "550 5.7.1 refused" {
		t.Errorf("last RecordAttempt() = %v, attempts %d, last error %q; want %v, 2, the failure", got, o.Attempts, o.LastError, wantStates)
	}
	if len(o.Pending()) != 0 {
		t.Errorf("last RecordAttempt() Pending() = %v, want none", o.Pending())
	}
	if es := q.entries(); len(es) != 0 {
		t.Errorf("OutboundEntries() after completion = %v, want none", idsOf(es))
	}
	if _, err := q.s.OutboundBody(q.ctx, id); !ctlIs(err, mailstore.ErrOutboundNotFound) {
		t.Errorf("OutboundBody(completed) = %v, want ErrOutboundNotFound", err)
	}
	if _, err := q.s.RecordAttempt(q.ctx, id, mailstore.Attempt{Now: next}); !ctlIs(err, mailstore.ErrOutboundNotFound) || !errors.Is(err, mailstore.ErrNotFound) {
		t.Errorf("RecordAttempt(completed) = %v, want ErrOutboundNotFound", err)
	}
}

// queueAttemptRules: a table of attempt sequences and where they leave
// an entry of recipients a, b and c.
func queueAttemptRules(t *testing.T, open Open) {
	q := newQT(t, open)
	now := mailNow
	later := now.Add(time.Hour)
	for _, tc := range []struct {
		name      string
		attempts  []mailstore.Attempt
		states    []string // after the last attempt
		lastError string
		next      time.Time
		removed   bool
	}{
		{
			name:     "all deferred",
			attempts: []mailstore.Attempt{{Now: now, Deferred: "421 busy", NextAttempt: later}},
			states:   []string{"a@r.example:pending", "b@r.example:pending", "c@r.example:pending"}, lastError: "421 busy", next: later,
		},
		{
			name:     "no next attempt means now",
			attempts: []mailstore.Attempt{{Now: later, Deferred: "421 busy"}},
			states:   []string{"a@r.example:pending", "b@r.example:pending", "c@r.example:pending"}, lastError: "421 busy", next: later,
		},
		{
			name:     "unknown addresses ignored",
			attempts: []mailstore.Attempt{{Now: now, Delivered: []string{"z@r.example"}, Failed: map[string]string{"y@r.example": "550"}, NextAttempt: later}},
			states:   []string{"a@r.example:pending", "b@r.example:pending", "c@r.example:pending"}, next: later,
		},
		{
			name:     "all delivered at once",
			attempts: []mailstore.Attempt{{Now: now, Delivered: []string{"a@r.example", "b@r.example", "c@r.example"}}},
			states:   []string{"a@r.example:delivered", "b@r.example:delivered", "c@r.example:delivered"}, removed: true,
		},
		{
			name:     "all failed at once",
			attempts: []mailstore.Attempt{{Now: now, Failed: map[string]string{"a@r.example": "550 a", "b@r.example": "550 b", "c@r.example": "550 c"}}},
			states:   []string{"a@r.example:failed", "b@r.example:failed", "c@r.example:failed"}, lastError: "550 a", removed: true,
		},
		{
			name: "a done recipient stays done",
			attempts: []mailstore.Attempt{
				{Now: now, Delivered: []string{"a@r.example"}, Failed: map[string]string{"b@r.example": "550 b"}, Deferred: "451 c", NextAttempt: later},
				{Now: later, Failed: map[string]string{"a@r.example": "550 late"}, Delivered: []string{"b@r.example"}, Deferred: "451 again", NextAttempt: later.Add(time.Hour)},
			},
			states: []string{"a@r.example:delivered", "b@r.example:failed", "c@r.example:pending"}, lastError: "451 again", next: later.Add(time.Hour),
		},
		{
			name: "partial then complete",
			attempts: []mailstore.Attempt{
				{Now: now, Delivered: []string{"b@r.example"}, Deferred: "452 full", NextAttempt: later},
				{Now: later, Delivered: []string{"a@r.example", "c@r.example"}},
			},
			states: []string{"a@r.example:delivered", "b@r.example:delivered", "c@r.example:delivered"}, lastError: "452 full", removed: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := q.relay(tc.name, now, q.a.ID, "a@r.example", "b@r.example", "c@r.example")[0]
			var o mailstore.Outbound
			for _, a := range tc.attempts {
				o = q.record(id, a)
			}
			if got := rcptStates(o); !slices.Equal(got, tc.states) {
				t.Errorf("recipients = %v, want %v", got, tc.states)
			}
			if o.Attempts != len(tc.attempts) || o.LastError != tc.lastError {
				t.Errorf("attempts, last error = %d, %q; want %d, %q", o.Attempts, o.LastError, len(tc.attempts), tc.lastError)
			}
			_, err := q.s.OutboundBody(q.ctx, id)
			if tc.removed {
				if !ctlIs(err, mailstore.ErrOutboundNotFound) {
					t.Errorf("OutboundBody(completed entry) = %v, want ErrOutboundNotFound", err)
				}
				return
			}
			if err != nil {
				t.Errorf("OutboundBody(pending entry) = %v, want nil", err)
			}
			checkUTC(t, "NextAttempt", q.entry(id).NextAttempt, tc.next)
		})
	}
}

// queueSharedBody: one stored body serves the local copies and every
// queue entry of a delivery, and stays readable until the last of them
// goes.
func queueSharedBody(t *testing.T, open Open) {
	q := newQT(t, open)
	body := "shared by three"
	res := q.deliverD(mailstore.Delivery{Body: []byte(body), ReceivedAt: mailNow, MailboxIDs: []int64{q.a1.ID},
		Relay: []mailstore.Relay{{Kind: mailstore.KindForward, DomainID: q.a.ID, To: []string{"x@r1.example", "y@r2.example"}}}})
	if len(res.Queued) != 2 {
		t.Fatalf("Deliver() queued %v, want two entries", res.Queued)
	}
	inbox := q.folder(q.a1.ID, "INBOX")
	if _, err := q.s.Expunge(q.ctx, q.a1.ID, inbox.ID, []uint32{1}); err != nil {
		t.Fatalf("Expunge() = %v", err)
	}
	for _, id := range res.Queued {
		if got := q.outBody(id); got != body {
			t.Errorf("OutboundBody(%d) after the local copy's expunge = %q, want %q", id, got, body)
		}
	}
	q.done(res.Queued[0], mailNow)
	if got := q.outBody(res.Queued[1]); got != body {
		t.Errorf("OutboundBody(%d) after its sibling completed = %q, want %q", res.Queued[1], got, body)
	}
	q.done(res.Queued[1], mailNow)
	if _, err := q.s.OutboundBody(q.ctx, res.Queued[1]); !ctlIs(err, mailstore.ErrOutboundNotFound) {
		t.Errorf("OutboundBody(completed) = %v, want ErrOutboundNotFound", err)
	}

	// The other way round: the entries complete first, the copy stays.
	res = q.deliverD(mailstore.Delivery{Body: []byte("kept"), ReceivedAt: mailNow, MailboxIDs: []int64{q.a1.ID, q.b1.ID},
		Relay: []mailstore.Relay{{Kind: mailstore.KindForward, DomainID: q.a.ID, To: []string{"x@r1.example"}}}})
	q.done(res.Queued[0], mailNow)
	for _, mb := range []int64{q.a1.ID, q.b1.ID} {
		f := q.folder(mb, "INBOX")
		ms := q.messages(mb, f.ID)
		if len(ms) == 0 {
			t.Fatalf("mailbox %d INBOX is empty, want the delivered copy", mb)
		}
		if got := q.body(mb, f.ID, ms[len(ms)-1].UID); got != "kept" {
			t.Errorf("Body(mailbox %d) after the entry completed = %q, want kept", mb, got)
		}
	}
	q.invariants("a.example")
	q.invariants("b.example")
}

// queueInFlight: deleting the mailbox or the domain a message came from
// leaves its queue entries, which are mail in flight.
func queueInFlight(t *testing.T, open Open) {
	q := newQT(t, open)
	res := q.deliverD(mailstore.Delivery{Body: []byte("in flight"), ReceivedAt: mailNow, MailboxIDs: []int64{q.a1.ID}, SenderDomainID: q.a.ID,
		Relay: []mailstore.Relay{{Kind: mailstore.KindSubmission, DomainID: q.a.ID, From: "one@a.example", To: []string{"x@r.example"}}}})
	if err := q.s.DeleteMailbox(q.ctx, q.pid, "one@a.example"); err != nil {
		t.Fatalf("DeleteMailbox() = %v", err)
	}
	if got := q.outBody(res.Queued[0]); got != "in flight" {
		t.Errorf("OutboundBody() after DeleteMailbox = %q, want the message", got)
	}
	if err := q.s.DeleteDomain(q.ctx, q.pid, "a.example", true); err != nil {
		t.Fatalf("DeleteDomain(force) = %v", err)
	}
	got := q.claim(mailNow, time.Minute, 10)
	if !slices.Equal(idsOf(got), res.Queued) || got[0].DomainID != q.a.ID {
		t.Fatalf("ClaimOutbound() after DeleteDomain = %+v, want entry %v", got, res.Queued)
	}
	if got := q.outBody(res.Queued[0]); got != "in flight" {
		t.Errorf("OutboundBody() after DeleteDomain = %q, want the message", got)
	}
	if o := q.done(res.Queued[0], mailNow); len(o.Pending()) != 0 {
		t.Errorf("RecordAttempt() after DeleteDomain left %v pending", o.Pending())
	}
	if n := len(q.entries()); n != 0 {
		t.Errorf("OutboundEntries() = %d entries, want 0", n)
	}
}

func queueEntriesPaging(t *testing.T, open Open) {
	q := newQT(t, open)
	var ids []int64
	for i := range 6 {
		ids = append(ids, q.relay(fmt.Sprint(i), mailNow, q.a.ID, fmt.Sprintf("x@r%d.example", i))...)
	}
	// A held entry is listed too.
	q.setCap("b.example", 0)
	ids = append(ids, q.relay("held", mailNow, q.b.ID, "x@r.example")...)
	if e := q.entry(ids[6]); !e.Held {
		t.Fatalf("entry %d = %+v, want held", ids[6], e)
	}
	for _, tc := range []struct {
		p        mailstore.Page
		from, to int
	}{
		{mailstore.Page{}, 0, 7},
		{mailstore.Page{Limit: 3}, 0, 3},
		{mailstore.Page{Limit: 3, Offset: 3}, 3, 6},
		{mailstore.Page{Limit: 3, Offset: 6}, 6, 7},
		{mailstore.Page{Offset: 5}, 5, 7},
		{mailstore.Page{Limit: 3, Offset: 7}, 7, 7},
		{mailstore.Page{Offset: 100}, 7, 7},
	} {
		t.Run(fmt.Sprintf("limit_%d_offset_%d", tc.p.Limit, tc.p.Offset), func(t *testing.T) {
			es, n, err := q.s.OutboundEntries(q.ctx, tc.p)
			if err != nil || n != 7 {
				t.Fatalf("OutboundEntries(%+v) = total %d, %v; want 7, nil", tc.p, n, err)
			}
			if es == nil {
				t.Errorf("OutboundEntries(%+v) = nil, want an empty list", tc.p)
			}
			if got, want := idsOf(es), ids[tc.from:tc.to]; !slices.Equal(got, want) {
				t.Errorf("OutboundEntries(%+v) ids = %v, want %v", tc.p, got, want)
			}
		})
	}
}

func queueFlush(t *testing.T, open Open) {
	q := newQT(t, open)
	now := mailNow
	due := q.relay("due", now.Add(-time.Minute), q.a.ID, "x@r.example")[0]
	deferred := q.relay("deferred", now.Add(-2*time.Minute), q.a.ID, "x@r.example")[0]
	q.record(deferred, mailstore.Attempt{Now: now, Deferred: "421 later", NextAttempt: now.Add(time.Hour)})
	leased := q.relay("leased", now.Add(-3*time.Minute), q.a.ID, "x@r.example")[0]
	q.claim(now.Add(-3*time.Minute), time.Hour, 1)
	q.setCap("b.example", 0)
	held := q.relay("held", now, q.b.ID, "x@r.example")[0]

	n, err := q.s.FlushOutbound(q.ctx, now)
	if err != nil || n != 3 {
		t.Errorf("FlushOutbound() = %d, %v; want 3 (every entry not held), nil", n, err)
	}
	// Entries due already keep their time, so their order holds.
	got := q.claim(now, time.Minute, 10)
	if want := []int64{due, deferred, leased}; !slices.Equal(idsOf(got), want) {
		t.Errorf("ClaimOutbound() after flush = %v, want %v", idsOf(got), want)
	}
	if e := q.entry(held); !e.Held {
		t.Errorf("held entry after flush = %+v, want still held", e)
	}
	if n, err := q.s.FlushOutbound(q.ctx, now); err != nil || n != 3 {
		t.Errorf("FlushOutbound() again = %d, %v; want 3, nil", n, err)
	}
	empty := newQT(t, open)
	if n, err := empty.s.FlushOutbound(empty.ctx, now); err != nil || n != 0 {
		t.Errorf("FlushOutbound(empty queue) = %d, %v; want 0, nil", n, err)
	}
}

// queueFlushDomain: FlushOutboundDomain makes one domain's deferred
// entries due, and leaves other domains' entries, bounces and held
// entries as they were.
func queueFlushDomain(t *testing.T, open Open) {
	q := newQT(t, open)
	now := mailNow
	later := now.Add(time.Hour)
	due := q.relay("due", now.Add(-time.Minute), q.a.ID, "x@r.example")[0]
	deferred := q.relay("deferred", now.Add(-2*time.Minute), q.a.ID, "x@r.example")[0]
	q.record(deferred, mailstore.Attempt{Now: now, Deferred: "451 suspended", NextAttempt: later})
	other := q.relay("other", now.Add(-3*time.Minute), q.b.ID, "x@r.example")[0]
	q.record(other, mailstore.Attempt{Now: now, Deferred: "451 later", NextAttempt: later})
	bounce := q.relay("bounce", now.Add(-4*time.Minute), 0, "x@r.example")[0]
	q.record(bounce, mailstore.Attempt{Now: now, Deferred: "451 later", NextAttempt: later})
	q.setCap("a.example", 0)
	held := q.relay("held", now, q.a.ID, "x@r.example")[0]

	n, err := q.s.FlushOutboundDomain(q.ctx, q.a.ID, now)
	if err != nil || n != 1 {
		t.Errorf("FlushOutboundDomain(a) = %d, %v; want 1 (its deferred entry)", n, err)
	}
	if got, want := idsOf(q.claim(now, time.Minute, 10)), []int64{due, deferred}; !slices.Equal(got, want) {
		t.Errorf("ClaimOutbound() after the flush = %v, want %v (b's entry and the bounce still wait)", got, want)
	}
	if e := q.entry(held); !e.Held {
		t.Errorf("held entry after FlushOutboundDomain = %+v, want still held", e)
	}
	for _, id := range []int64{other, bounce} {
		if e := q.entry(id); !e.NextAttempt.Equal(later) {
			t.Errorf("entry %d NextAttempt = %v, want %v (not a's)", id, e.NextAttempt, later)
		}
	}
	if n, err := q.s.FlushOutboundDomain(q.ctx, 9999, now); err != nil || n != 0 {
		t.Errorf("FlushOutboundDomain(unknown domain) = %d, %v; want 0, nil", n, err)
	}
}

// queueDelete: DeleteOutbound drops one entry, held or not, leaves the
// others of its message and their shared body, and answers not found for
// an entry that is gone.
func queueDelete(t *testing.T, open Open) {
	q := newQT(t, open)
	now := mailNow
	ids := q.relay("shared body", now, q.a.ID, "x@r.example", "y@s.example")
	if len(ids) != 2 {
		t.Fatalf("relay to two domains queued %v, want two entries", ids)
	}
	q.setCap("b.example", 0)
	held := q.relay("held", now, q.b.ID, "h@r.example")[0]

	got, err := q.s.DeleteOutbound(q.ctx, ids[0])
	if err != nil || got.ID != ids[0] || got.Destination != "r.example" {
		t.Fatalf("DeleteOutbound(%d) = %+v, %v; want the entry to r.example", ids[0], got, err)
	}
	if _, err := q.s.DeleteOutbound(q.ctx, ids[0]); !ctlIs(err, mailstore.ErrOutboundNotFound) {
		t.Errorf("DeleteOutbound(%d) again = %v, want ErrOutboundNotFound", ids[0], err)
	}
	if _, err := q.s.OutboundBody(q.ctx, ids[0]); !ctlIs(err, mailstore.ErrOutboundNotFound) {
		t.Errorf("OutboundBody(deleted) = %v, want ErrOutboundNotFound", err)
	}
	if _, err := q.s.RecordAttempt(q.ctx, ids[0], mailstore.Attempt{Now: now, Delivered: []string{"x@r.example"}}); !ctlIs(err, mailstore.ErrOutboundNotFound) {
		t.Errorf("RecordAttempt(deleted) = %v, want ErrOutboundNotFound", err)
	}
	if b := q.outBody(ids[1]); b != "shared body" {
		t.Errorf("OutboundBody(the other entry) = %q, want the shared body", b)
	}
	if got := q.claim(now, time.Minute, 10); !slices.Equal(idsOf(got), ids[1:]) {
		t.Errorf("ClaimOutbound() = %v, want only %v", idsOf(got), ids[1:])
	}
	if _, err := q.s.DeleteOutbound(q.ctx, held); err != nil {
		t.Errorf("DeleteOutbound(held) = %v", err)
	}
	if _, err := q.s.DeleteOutbound(q.ctx, ids[1]); err != nil {
		t.Errorf("DeleteOutbound(claimed) = %v", err)
	}
	if es := q.entries(); len(es) != 0 {
		t.Errorf("OutboundEntries() after deleting all = %v, want none", idsOf(es))
	}
	if n, err := q.s.ReleaseHeld(q.ctx, now); err != nil || n != 0 {
		t.Errorf("ReleaseHeld() after the held entry was deleted = %d, %v; want 0", n, err)
	}
}

func queueDKIM(t *testing.T, open Open) {
	c := newCtl(t, open)
	p := c.partner("p")
	created := time.Date(2026, 11, 22, 10, 0, 0, 500, time.FixedZone("X", 3600))
	keys := []mailstore.DKIMKey{
		{Selector: "ed1", Algorithm: "ed25519", Private: []byte{1, 2, 3}, CreatedAt: created},
		{Selector: "rsa1", Algorithm: "rsa", Private: bytes.Repeat([]byte{9}, 1200), CreatedAt: created},
	}
	d, err := c.s.CreateDomain(c.ctx, p.ID, mailstore.NewDomain{Name: "keys.example", Plan: ctlStarter, DKIMKeys: keys}, ctlNow)
	if err != nil {
		t.Fatalf("CreateDomain(with keys) = %v", err)
	}
	got, err := c.s.DKIMKeys(c.ctx, d.ID)
	if err != nil || len(got) != 2 {
		t.Fatalf("DKIMKeys() = %+v, %v; want two keys", got, err)
	}
	for i, k := range got {
		if k.Selector != keys[i].Selector || k.Algorithm != keys[i].Algorithm || !bytes.Equal(k.Private, keys[i].Private) {
			t.Errorf("DKIMKeys()[%d] = %+v, want %+v", i, k, keys[i])
		}
		checkUTC(t, "DKIM key CreatedAt", k.CreatedAt, created.UTC().Truncate(time.Second))
	}
	// A domain that has keys keeps them.
	other := []mailstore.DKIMKey{{Selector: "new", Algorithm: "ed25519", Private: []byte{7}, CreatedAt: created}}
	if got, err := c.s.EnsureDKIMKeys(c.ctx, d.ID, other); err != nil || len(got) != 2 || got[0].Selector != "ed1" {
		t.Errorf("EnsureDKIMKeys(domain with keys) = %+v, %v; want its own two keys", got, err)
	}
	// A domain made without keys gets the given ones, once.
	bare := c.domain(p.ID, "bare.example", ctlStarter, 0, 0)
	if got, err := c.s.DKIMKeys(c.ctx, bare.ID); err != nil || got == nil || len(got) != 0 {
		t.Errorf("DKIMKeys(domain without keys) = %#v, %v; want an empty list", got, err)
	}
	if got, err := c.s.EnsureDKIMKeys(c.ctx, bare.ID, other); err != nil || len(got) != 1 || got[0].Selector != "new" {
		t.Errorf("EnsureDKIMKeys(domain without keys) = %+v, %v; want the given key", got, err)
	}
	if got, err := c.s.EnsureDKIMKeys(c.ctx, bare.ID, keys); err != nil || len(got) != 1 || got[0].Selector != "new" {
		t.Errorf("EnsureDKIMKeys() again = %+v, %v; want the key it got first", got, err)
	}
	if got, err := c.s.DKIMKeys(c.ctx, bare.ID); err != nil || len(got) != 1 || !bytes.Equal(got[0].Private, []byte{7}) {
		t.Errorf("DKIMKeys() after EnsureDKIMKeys = %+v, %v; want the given key", got, err)
	}
	// Keys without a selector or a private key are refused, and the domain
	// with them.
	for _, bad := range []mailstore.DKIMKey{{Algorithm: "ed25519", Private: []byte{1}}, {Selector: "s", Algorithm: "rsa"}} {
		if _, err := c.s.CreateDomain(c.ctx, p.ID, mailstore.NewDomain{Name: "bad.example", Plan: ctlStarter, DKIMKeys: []mailstore.DKIMKey{bad}}, ctlNow); !errors.Is(err, mailstore.ErrInvalidArgument) {
			t.Errorf("CreateDomain(key %+v) = %v, want ErrInvalidArgument", bad, err)
		}
	}
	if _, err := c.s.DomainByName(c.ctx, "bad.example"); !ctlIs(err, mailstore.ErrDomainNotFound) {
		t.Errorf("DomainByName(bad.example) = %v, want ErrDomainNotFound", err)
	}
	// Keys go with their domain; a domain made again has none.
	if err := c.s.DeleteDomain(c.ctx, p.ID, "keys.example", false); err != nil {
		t.Fatalf("DeleteDomain() = %v", err)
	}
	again := c.domain(p.ID, "keys.example", ctlStarter, 0, 0)
	if got, err := c.s.DKIMKeys(c.ctx, again.ID); err != nil || len(got) != 0 {
		t.Errorf("DKIMKeys(domain made again) = %+v, %v; want none", got, err)
	}
	for name, call := range map[string]func(id int64) error{
		"DKIMKeys":       func(id int64) error { _, err := c.s.DKIMKeys(c.ctx, id); return err },
		"EnsureDKIMKeys": func(id int64) error { _, err := c.s.EnsureDKIMKeys(c.ctx, id, other); return err },
		"Transfer":       func(id int64) error { _, err := c.s.Transfer(c.ctx, id, "2026-11"); return err },
	} {
		for _, id := range []int64{d.ID, 9999} {
			if err := call(id); !ctlIs(err, mailstore.ErrDomainNotFound) {
				t.Errorf("%s(unknown domain %d) = %v, want ErrDomainNotFound", name, id, err)
			}
		}
	}
}

func queueContextDone(t *testing.T, open Open) {
	q := newQT(t, open)
	id := q.relay("x", mailNow, q.a.ID, "x@r.example")[0]
	q.setCap("b.example", 0)
	q.relay("held", mailNow, q.b.ID, "x@r.example")
	q.setCap("b.example", 100)
	before := ctlJSON(t, q.entries())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		do   func() error
	}{
		{"Deliver", func() error {
			_, err := q.s.Deliver(ctx, mailstore.Delivery{Body: []byte("x"), ReceivedAt: mailNow,
				Relay: []mailstore.Relay{{Kind: mailstore.KindBounce, To: []string{"x@r.example"}}}})
			return err
		}},
		{"ClaimOutbound", func() error {
			_, err := q.s.ClaimOutbound(ctx, mailNow, time.Minute, 10, mailstore.ClaimOptions{})
			return err
		}},
		{"OutboundBody", func() error { _, err := q.s.OutboundBody(ctx, id); return err }},
		{"RecordAttempt", func() error {
			_, err := q.s.RecordAttempt(ctx, id, mailstore.Attempt{Now: mailNow, Delivered: []string{"x@r.example"}})
			return err
		}},
		{"ReleaseHeld", func() error { _, err := q.s.ReleaseHeld(ctx, mailNow); return err }},
		{"OutboundEntries", func() error { _, _, err := q.s.OutboundEntries(ctx, mailstore.Page{}); return err }},
		{"FlushOutbound", func() error { _, err := q.s.FlushOutbound(ctx, mailNow); return err }},
		{"Transfer", func() error { _, err := q.s.Transfer(ctx, q.a.ID, "2026-11"); return err }},
		{"DKIMKeys", func() error { _, err := q.s.DKIMKeys(ctx, q.a.ID); return err }},
		{"EnsureDKIMKeys", func() error {
			_, err := q.s.EnsureDKIMKeys(ctx, q.a.ID, []mailstore.DKIMKey{{Selector: "s", Algorithm: "ed25519", Private: []byte{1}}})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.do(); !errors.Is(err, context.Canceled) {
				t.Errorf("%s(done context) = %v, want context.Canceled", tc.name, err)
			}
		})
	}
	if after := ctlJSON(t, q.entries()); after != before {
		t.Errorf("queue after calls with a done context = %s, want %s", after, before)
	}
	if keys, err := q.s.DKIMKeys(q.ctx, q.a.ID); err != nil || len(keys) != 0 {
		t.Errorf("DKIMKeys() after EnsureDKIMKeys with a done context = %+v, %v; want none", keys, err)
	}
}

// queueReleaseLeases: a claim marks its entries leased until their
// attempt is recorded; ReleaseLeases makes the leased entries due at once
// and leaves deferred and held ones as they were.
func queueReleaseLeases(t *testing.T, open Open) {
	q := newQT(t, open)
	now := mailNow
	leased := q.relay("leased", now.Add(-2*time.Minute), q.a.ID, "x@r.example")[0]
	recorded := q.relay("recorded", now.Add(-time.Minute), q.a.ID, "y@r.example")[0]
	got := q.claim(now, time.Hour, 10)
	if len(got) != 2 || !got[0].Leased || !got[1].Leased {
		t.Fatalf("ClaimOutbound() = %+v, want both entries, leased", got)
	}
	if e := q.entry(leased); !e.Leased {
		t.Errorf("stored entry after its claim = %+v, want leased", e)
	}
	q.record(recorded, mailstore.Attempt{Now: now, Deferred: "451 later", NextAttempt: now.Add(time.Hour)})
	if e := q.entry(recorded); e.Leased {
		t.Errorf("entry after its attempt was recorded = %+v, want not leased", e)
	}
	q.setCap("b.example", 0)
	held := q.relay("held", now, q.b.ID, "h@r.example")[0]

	n, err := q.s.ReleaseLeases(q.ctx, now)
	if err != nil || n != 1 {
		t.Fatalf("ReleaseLeases() = %d, %v; want 1", n, err)
	}
	if e := q.entry(leased); e.Leased || !e.NextAttempt.Equal(now) {
		t.Errorf("leased entry after ReleaseLeases = %+v, want due at %v, not leased", e, now)
	}
	if e := q.entry(recorded); !e.NextAttempt.Equal(now.Add(time.Hour)) {
		t.Errorf("deferred entry after ReleaseLeases = %+v, want still due in an hour", e)
	}
	if e := q.entry(held); !e.Held {
		t.Errorf("held entry after ReleaseLeases = %+v, want still held", e)
	}
	if got := idsOf(q.claim(now, time.Minute, 10)); !slices.Equal(got, []int64{leased}) {
		t.Errorf("ClaimOutbound() after ReleaseLeases = %v, want [%d]", got, leased)
	}
	if n, err := q.s.ReleaseLeases(q.ctx, now.Add(30*time.Second)); err != nil || n != 1 {
		t.Errorf("ReleaseLeases() during the new claim's lease = %d, %v; want 1", n, err)
	}
}

// queueWarned: an attempt that sent a delay notice marks its entry
// warned, and later attempts keep the mark.
func queueWarned(t *testing.T, open Open) {
	q := newQT(t, open)
	now := mailNow
	id := q.relay("slow", now, q.a.ID, "x@r.example")[0]
	q.record(id, mailstore.Attempt{Now: now, Deferred: "451 later", NextAttempt: now.Add(time.Hour)})
	if e := q.entry(id); e.Warned {
		t.Errorf("entry after an attempt without a notice = %+v, want not warned", e)
	}
	q.record(id, mailstore.Attempt{Now: now, Deferred: "451 later", NextAttempt: now.Add(time.Hour), Warned: true})
	if e := q.entry(id); !e.Warned {
		t.Errorf("entry after an attempt that warned = %+v, want warned", e)
	}
	q.record(id, mailstore.Attempt{Now: now, Deferred: "451 later", NextAttempt: now.Add(2 * time.Hour)})
	if e := q.entry(id); !e.Warned {
		t.Errorf("entry after a later attempt = %+v, want still warned", e)
	}
}
