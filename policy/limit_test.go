package policy

import (
	"testing"
	"time"
)

var limitNow = time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)

// One a minute, bursts of 60: the hourly sending limit's shape.
func TestLimiterBucket(t *testing.T) {
	now := limitNow
	l := NewLimiter(60.0/3600, 60)
	for i := range 60 {
		if ok, _ := l.Take(1, now); !ok {
			t.Fatalf("take %d of a full bucket of 60 refused", i+1)
		}
	}
	ok, wait := l.Take(1, now)
	if ok || wait != time.Minute {
		t.Fatalf("take 61 = %v, wait %v; want refused, a minute's wait", ok, wait)
	}
	if ok, _ := l.Take(2, now); !ok {
		t.Errorf("another key refused: buckets are per key")
	}
	now = now.Add(30 * time.Second)
	if ok, wait := l.Take(1, now); ok || wait != 30*time.Second {
		t.Errorf("take after 30 s = %v, wait %v; want refused, 30 s to go", ok, wait)
	}
	now = now.Add(30 * time.Second)
	if ok, _ := l.Take(1, now); !ok {
		t.Errorf("take after a minute refused, want one more")
	}
	now = now.Add(10 * time.Hour)
	for i := range 60 {
		if ok, _ := l.Take(1, now); !ok {
			t.Fatalf("take %d after a long pause refused: the bucket holds 60, no more", i+1)
		}
	}
	if ok, _ := l.Take(1, now); ok {
		t.Errorf("take 61 after a long pause allowed: the bucket must not fill past 60")
	}
}

// The map of buckets does not grow with every key that ever took a
// token: refilled buckets are swept once it is large.
func TestLimiterSweep(t *testing.T) {
	now := limitNow
	l := NewLimiter(10.0/3600, 10)
	for key := range int64(limiterSweepAt) {
		l.Take(key, now)
	}
	l.Take(-1, now.Add(time.Hour))
	if n := len(l.buckets); n != 1 {
		t.Errorf("%d buckets after the sweep, want 1 (the new one)", n)
	}
}

// With two live nodes a shared limiter gives each half the burst and half
// the rate; when the other node goes, the whole comes back.
func TestLimiterShared(t *testing.T) {
	share := &Share{}
	share.SetNodes(2)
	l := NewLimiter(2, 10).Shared(share)
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	took := 0
	for range 20 {
		if ok, _ := l.Take(1, now); ok {
			took++
		}
	}
	if took != 5 {
		t.Fatalf("two nodes: took %d of a burst of 10, want 5", took)
	}
	if ok, wait := l.Take(1, now); ok || wait != time.Second {
		t.Fatalf("two nodes, empty bucket: Take = %v, %v; want false, 1s (rate 1/s)", ok, wait)
	}
	share.SetNodes(1)
	for i := range 2 { // a second at the whole rate of 2/s
		if ok, _ := l.Take(1, now.Add(time.Second)); !ok {
			t.Fatalf("one node, a second later: Take %d = false, want true", i+1)
		}
	}
	if ok, wait := l.Take(1, now.Add(time.Second)); ok || wait != 500*time.Millisecond {
		t.Fatalf("one node, empty bucket: Take = %v, %v; want false, 500ms (rate 2/s)", ok, wait)
	}
}
