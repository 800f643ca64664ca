package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// queueClaimSpread checks ClaimOptions: a claim passes over skipped
// destinations and takes at most PerDestination of each other one, and
// what it passes over stays due, in its place.
func queueClaimSpread(t *testing.T, open Open) {
	q := newQT(t, open)
	now := mailNow
	var slow []int64
	for i := range 5 {
		slow = append(slow, q.relay("s", now.Add(time.Duration(i-10)*time.Minute), q.a.ID, "x@slow.example")[0])
	}
	f1 := q.relay("f", now.Add(-5*time.Minute), q.a.ID, "x@fast.example")[0]
	f2 := q.relay("f", now.Add(-4*time.Minute), q.a.ID, "y@fast.example")[0]
	o1 := q.relay("o", now.Add(-3*time.Minute), q.a.ID, "x@other.example")[0]
	claim := func(opt mailstore.ClaimOptions) []int64 {
		t.Helper()
		got, err := q.s.ClaimOutbound(q.ctx, now, time.Hour, 10, opt)
		if err != nil {
			t.Fatalf("ClaimOutbound(%+v) = %v, want nil", opt, err)
		}
		return idsOf(got)
	}

	if got, want := claim(mailstore.ClaimOptions{PerDestination: 2}), []int64{slow[0], slow[1], f1, f2, o1}; !slices.Equal(got, want) {
		t.Fatalf("ClaimOutbound(PerDestination 2) = %v, want %v (two of slow.example, then the others in due order)", got, want)
	}
	if got := claim(mailstore.ClaimOptions{Skip: []string{"slow.example"}}); len(got) != 0 {
		t.Errorf("ClaimOutbound(Skip slow.example) = %v, want none: only slow.example is due", got)
	}
	if got, want := claim(mailstore.ClaimOptions{}), slow[2:]; !slices.Equal(got, want) {
		t.Errorf("ClaimOutbound() after passing them over = %v, want %v (still due, in order)", got, want)
	}
	for _, id := range slow[2:] {
		if e := q.entry(id); !e.NextAttempt.Equal(now.Add(time.Hour)) {
			t.Errorf("entry %d NextAttempt = %v, want the lease's end %v", id, e.NextAttempt, now.Add(time.Hour))
		}
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
