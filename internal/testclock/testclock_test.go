package testclock

import (
	"sync"
	"testing"
	"time"
)

func TestClock(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	c := New(t0)
	if got := c.Now(); !got.Equal(t0) {
		t.Fatalf("Now() = %v, want %v", got, t0)
	}
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() { c.Add(time.Second); c.Now() })
	}
	wg.Wait()
	if got, want := c.Now(), t0.Add(10*time.Second); !got.Equal(want) {
		t.Errorf("Now() after 10 x Add(1s) = %v, want %v", got, want)
	}
}
