package smtpd

import (
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/mailhost/mailhost/internal/testclock"
)

// TestSubmissionSendLimit: over MaxRecipientsPerHour, RCPT is answered
// 450 4.7.1; the allowance is per mailbox and refills with time.
func TestSubmissionSendLimit(t *testing.T) {
	clk := testclock.New(testNow)
	e := newSubmissionEnv(t, func(c *Config) { c.MaxRecipientsPerHour = 2; c.Now = clk.Now })
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
	clk.Add(30 * time.Minute) // one recipient's worth
	if err := e.submit(t, "bob@a.test", "bob@a.test", []string{"z@elsewhere.test"}, fromMsg("bob@a.test", "later")); err != nil {
		t.Errorf("after half an hour = %v, want it sent", err)
	}
	if q := e.outbound(t); len(q) != 3 {
		t.Errorf("queue has %d entries, want 3 (two messages of bob, one of dave)", len(q))
	}
}
