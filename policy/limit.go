package policy

import (
	"math"
	"sync"
	"time"
)

// Limiter is a token bucket per key, in memory: each key (an API key, a
// mailbox) may take burst at once and rate a second after that. The API's
// request limit and submission's hourly sending limit are both one. A
// restart forgets it, and with several nodes each would count its own.
type Limiter struct {
	rate  float64 // tokens a second
	burst float64

	// mu guards buckets.
	mu      sync.Mutex
	buckets map[int64]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time // when tokens was last brought up to date
}

// limiterSweepAt is the number of buckets at which Take drops those that
// have refilled: they say no more than a missing one, and without the
// sweep every key that ever took a token would keep one.
const limiterSweepAt = 10_000

// NewLimiter makes a Limiter of rate tokens a second and burst at once.
func NewLimiter(rate float64, burst int) *Limiter {
	return &Limiter{rate: rate, burst: float64(burst), buckets: map[int64]*bucket{}}
}

// Take takes one token of key's bucket at now; when there is none it
// takes nothing and answers false and how long until there is one.
func (l *Limiter) Take(key int64, now time.Time) (ok bool, wait time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= limiterSweepAt {
			l.sweep(now)
		}
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[key] = b
	}
	l.refill(b, now)
	if b.tokens < 1 {
		return false, time.Duration(math.Round((1 - b.tokens) / l.rate * float64(time.Second)))
	}
	b.tokens--
	return true, 0
}

func (l *Limiter) refill(b *bucket, now time.Time) {
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(l.burst, b.tokens+d.Seconds()*l.rate)
		b.last = now
	}
}

// sweep drops the full buckets; l.mu is held.
func (l *Limiter) sweep(now time.Time) {
	for key, b := range l.buckets {
		if l.refill(b, now); b.tokens >= l.burst {
			delete(l.buckets, key)
		}
	}
}
