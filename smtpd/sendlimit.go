package smtpd

import (
	"sync"
	"time"
)

// sendLimit bounds the recipients each mailbox may submit per hour
// (Config.MaxRecipientsPerHour), as hosting panels bound a mailbox's
// hourly mail: a stolen password then sends a trickle of spam, not a
// flood, while the operator notices. It is a token bucket per mailbox,
// full at perHour and refilled at perHour an hour, so a quiet mailbox may
// send a burst of perHour at once. It lives in memory: a restart forgets
// it, and with several nodes each would count its own sessions.
type sendLimit struct {
	perHour float64
	now     func() time.Time

	// mu guards buckets.
	mu      sync.Mutex
	buckets map[int64]*tokenBucket // by mailbox id
}

type tokenBucket struct {
	tokens float64
	at     time.Time // when tokens was last brought up to date
}

// sweepAt is the map size at which take drops the buckets that have
// refilled: they say no more than a missing one, and without the sweep
// every mailbox that ever sent would keep one.
const sweepAt = 10_000

func newSendLimit(perHour int, now func() time.Time) *sendLimit {
	return &sendLimit{perHour: float64(perHour), now: now, buckets: map[int64]*tokenBucket{}}
}

// take takes one recipient from a mailbox's allowance, and answers false,
// taking nothing, when it has none left; wait is then how long until it
// has one.
func (l *sendLimit) take(mailboxID int64) (ok bool, wait time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[mailboxID]
	if b == nil {
		if len(l.buckets) >= sweepAt {
			l.sweep(now)
		}
		b = &tokenBucket{tokens: l.perHour, at: now}
		l.buckets[mailboxID] = b
	}
	l.refill(b, now)
	if b.tokens < 1 {
		return false, time.Duration((1 - b.tokens) / l.perHour * float64(time.Hour))
	}
	b.tokens--
	return true, 0
}

func (l *sendLimit) refill(b *tokenBucket, now time.Time) {
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(l.perHour, b.tokens+d.Hours()*l.perHour)
		b.at = now
	}
}

// sweep drops the full buckets; l.mu is held.
func (l *sendLimit) sweep(now time.Time) {
	for id, b := range l.buckets {
		if l.refill(b, now); b.tokens >= l.perHour {
			delete(l.buckets, id)
		}
	}
}
