package policy

import (
	"math"
	"sync"
	"time"
)

// Limiter is a token bucket per key, in memory: each key (an API key, a
// mailbox) may take burst at once and rate a second after that. The API's
// request limit and submission's hourly sending limit are both one. A
// restart forgets it; with several nodes, each enforces its Share of it.
type Limiter struct {
	rate  float64 // tokens a second, for the whole cluster
	burst float64
	// share, when set, scales rate and burst to this node's part.
	share *Share

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

// Shared makes the limiter enforce share's part of its rate and burst,
// as the number of live nodes changes, and answers it.
func (l *Limiter) Shared(share *Share) *Limiter {
	l.mu.Lock()
	l.share = share
	l.mu.Unlock()
	return l
}

// limits are this node's rate and burst now; l.mu is held.
func (l *Limiter) limits() (rate, burst float64) {
	return l.share.Float(l.rate), max(1, l.burst/float64(l.share.Nodes()))
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
		_, burst := l.limits()
		b = &bucket{tokens: burst, last: now}
		l.buckets[key] = b
	}
	l.refill(b, now)
	if b.tokens < 1 {
		rate, _ := l.limits()
		return false, time.Duration(math.Round((1 - b.tokens) / rate * float64(time.Second)))
	}
	b.tokens--
	return true, 0
}

func (l *Limiter) refill(b *bucket, now time.Time) {
	rate, burst := l.limits()
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(burst, b.tokens+d.Seconds()*rate)
		b.last = now
	}
	// A node that joined the cluster lowered this node's burst.
	b.tokens = min(burst, b.tokens)
}

// sweep drops the full buckets; l.mu is held.
func (l *Limiter) sweep(now time.Time) {
	for key, b := range l.buckets {
		_, burst := l.limits()
		if l.refill(b, now); b.tokens >= burst {
			delete(l.buckets, key)
		}
	}
}
