package smtpd

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

// testClock is a clock the test moves.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestSendLimitBucket(t *testing.T) {
	clk := &testClock{t: testNow}
	l := newSendLimit(60, clk.now) // one a minute, bursts of 60
	for i := range 60 {
		if ok, _ := l.take(1); !ok {
			t.Fatalf("take %d of a full bucket of 60 refused", i+1)
		}
	}
	ok, wait := l.take(1)
	if ok || wait != time.Minute {
		t.Fatalf("take 61 = %v, wait %v; want refused, a minute's wait", ok, wait)
	}
	if ok, _ := l.take(2); !ok {
		t.Errorf("another mailbox refused: buckets are per mailbox")
	}
	clk.add(30 * time.Second)
	if ok, wait := l.take(1); ok || wait != 30*time.Second {
		t.Errorf("take after 30 s = %v, wait %v; want refused, 30 s to go", ok, wait)
	}
	clk.add(30 * time.Second)
	if ok, _ := l.take(1); !ok {
		t.Errorf("take after a minute refused, want one more")
	}
	clk.add(10 * time.Hour)
	for i := range 60 {
		if ok, _ := l.take(1); !ok {
			t.Fatalf("take %d after a long pause refused: the bucket holds 60, no more", i+1)
		}
	}
	if ok, _ := l.take(1); ok {
		t.Errorf("take 61 after a long pause allowed: the bucket must not fill past 60")
	}
}

// The map of buckets does not grow with every mailbox that ever sent:
// refilled buckets are swept once it is large.
func TestSendLimitSweep(t *testing.T) {
	clk := &testClock{t: testNow}
	l := newSendLimit(10, clk.now)
	for id := range int64(sweepAt) {
		l.take(id)
	}
	clk.add(time.Hour)
	l.take(-1)
	if n := len(l.buckets); n != 1 {
		t.Errorf("%d buckets after the sweep, want 1 (the new one)", n)
	}
}

// TestSubmissionSendLimit: over MaxRecipientsPerHour, RCPT is answered
// 450 4.7.1; the allowance is per mailbox and refills with time.
func TestSubmissionSendLimit(t *testing.T) {
	clk := &testClock{t: testNow}
	e := newSubmissionEnv(t, func(c *Config) { c.MaxRecipientsPerHour = 2; c.Now = clk.now })
	if err := e.submit(t, "bob@a.test", "bob@a.test", []string{"x@elsewhere.test", "y@elsewhere.test"}, fromMsg("bob@a.test", "two")); err != nil {
		t.Fatalf("two recipients within the limit = %v", err)
	}
	err := e.submit(t, "bob@a.test", "bob@a.test", []string{"z@elsewhere.test"}, fromMsg("bob@a.test", "three"))
	if got := smtpCode(err); got != "450 4.7.1" || !strings.Contains(err.(*smtp.SMTPError).Message, "limit") {
		t.Errorf("third recipient in the hour = %v, want 450 4.7.1 sending limit", err)
	}
	if err := e.submit(t, "dave@b.test", "dave@b.test", []string{"x@elsewhere.test"}, fromMsg("dave@b.test", "other")); err != nil {
		t.Errorf("another mailbox = %v, want it sent", err)
	}
	clk.add(30 * time.Minute) // one recipient's worth
	if err := e.submit(t, "bob@a.test", "bob@a.test", []string{"z@elsewhere.test"}, fromMsg("bob@a.test", "later")); err != nil {
		t.Errorf("after half an hour = %v, want it sent", err)
	}
	if q := e.outbound(t); len(q) != 3 {
		t.Errorf("queue has %d entries, want 3 (two messages of bob, one of dave)", len(q))
	}
}
