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
