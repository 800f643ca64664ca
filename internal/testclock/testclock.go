// Package testclock is a clock that tests move by hand, for the code that
// takes its time from a func() time.Time (a store's, a cache's, a
// limiter's Now).
package testclock

import (
	"sync"
	"time"
)

// Clock stands at the time it was made with until Add moves it. Safe
// for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New is a clock at t.
func New(t time.Time) *Clock { return &Clock{t: t} }

// Now is the clock's time; pass it where a func() time.Time is wanted.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Add moves the clock by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
