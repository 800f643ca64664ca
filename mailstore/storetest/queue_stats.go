package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// queueStats: QueueStats counts every entry, held ones apart too, and
// names the oldest's QueuedAt; an entry that ends leaves the count, and
// the oldest is then the next one.
func queueStats(t *testing.T, open Open) {
	q := newQT(t, open)
	stats := func() mailstore.QueueStats {
		t.Helper()
		st, err := q.s.QueueStats(q.ctx)
		if err != nil {
			t.Fatalf("QueueStats() = %v, want nil", err)
		}
		return st
	}
	if got := stats(); got != (mailstore.QueueStats{}) {
		t.Errorf("QueueStats(empty) = %+v, want zero", got)
	}
	first := mailNow.Add(-2 * time.Hour)
	second := mailNow.Add(-time.Hour)
	a := q.relay("first", first, q.a.ID, "x@r1.example", "y@r2.example") // two entries
	q.relay("second", second, q.a.ID, "z@r1.example")
	q.setCap("b.example", 0)
	q.relay("held", mailNow, q.b.ID, "w@r1.example")
	want := mailstore.QueueStats{Entries: 4, Held: 1, Oldest: first}
	if got := stats(); got.Entries != want.Entries || got.Held != want.Held || !got.Oldest.Equal(want.Oldest) {
		t.Errorf("QueueStats() = %+v, want %+v", got, want)
	}
	for _, id := range a {
		q.done(id, mailNow)
	}
	want = mailstore.QueueStats{Entries: 2, Held: 1, Oldest: second}
	if got := stats(); got.Entries != want.Entries || got.Held != want.Held || !got.Oldest.Equal(want.Oldest) {
		t.Errorf("QueueStats(first delivered) = %+v, want %+v", got, want)
	}
}

// storeSize: StoreSize answers a size that grows with a large message,
// and free pages only as a count (bbolt) or -1 (none).
func storeSize(t *testing.T, open Open) {
	q := newQT(t, open)
	size := func() mailstore.StoreSize {
		t.Helper()
		sz, err := q.s.StoreSize(q.ctx)
		if err != nil {
			t.Fatalf("StoreSize() = %v, want nil", err)
		}
		if sz.Bytes <= 0 || sz.FreePages < -1 || sz.FreeBytes < -1 || (sz.FreePages == -1) != (sz.FreeBytes == -1) {
			t.Fatalf("StoreSize() = %+v, want a positive size and free figures both counts or both -1", sz)
		}
		return sz
	}
	before := size()
	q.relay(strings.Repeat("x", 4*mailstore.MB), mailNow, q.a.ID, "x@r1.example")
	if after := size(); after.Bytes <= before.Bytes {
		t.Errorf("StoreSize() after a 4 MB message = %d bytes, want more than %d", after.Bytes, before.Bytes)
	}
}
