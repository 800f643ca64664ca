package outbound

import (
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

// A message still deferred DelayWarning after it was queued gets its
// sender one delay notice (Action: delayed, Will-Retry-Until), and only
// one however long it keeps being deferred.
func TestDelayNotice(t *testing.T) {
	for _, tc := range []struct {
		name    string
		warning time.Duration
		notices int
	}{
		{"after 4 hours", 0, 1},
		{"off", -1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			mx := newMX(t, nil)
			mx.rcpt = func(string) error { return smtpErr(451, smtp.EnhancedCode{4, 4, 1}, "no answer from the host") }
			clk := newClock()
			f.queue(clk.Now(), f.submission("x@remote.test"), message("slow going"))
			e := f.start(clk, func(c *Config) {
				c.Resolver = mxFor("remote.test")
				c.Port = mx.port
				c.DelayWarning = tc.warning
			})
			f.waitAttempts(1)
			if n := len(f.inbox("bob@a.test")); n != 0 {
				t.Fatalf("bob got %d messages after the first deferral, want none yet", n)
			}
			for i, step := range []time.Duration{5 * time.Hour, 2 * time.Hour} {
				clk.Add(step)
				e.sender.Wake()
				f.waitAttempts(i + 2)
			}
			got := f.inbox("bob@a.test")
			if len(got) != tc.notices {
				t.Fatalf("bob got %d messages after 7 hours of deferrals, want %d", len(got), tc.notices)
			}
			if tc.notices == 0 {
				return
			}
			d := parseDSN(t, got[0])
			if to, from := d.header.Get("To"), d.header.Get("From"); to != "<bob@a.test>" || !strings.Contains(from, "MAILER-DAEMON@out.a.test") {
				t.Errorf("notice From %q To %q, want MAILER-DAEMON@out.a.test to <bob@a.test>", from, to)
			}
			if !strings.Contains(d.headers, "Subject: slow going") || !strings.Contains(d.text, "will be tried again until") {
				t.Errorf("notice text %q and headers %q, want the retry deadline and the message's headers", d.text, d.headers)
			}
			if s := d.header.Get("Subject"); !strings.Contains(s, "Delayed") {
				t.Errorf("notice Subject = %q, want a delay notice", s)
			}
			if len(d.rcpts) != 1 || d.rcpts[0].Get("Action") != "delayed" || d.rcpts[0].Get("Will-Retry-Until") == "" ||
				!strings.HasPrefix(d.rcpts[0].Get("Status"), "4.") {
				t.Errorf("per-recipient fields %v, want x@remote.test delayed, 4.x.x, with Will-Retry-Until", d.rcpts)
			}
			if es := f.entries(); len(es) != 1 || !es[0].Warned {
				t.Errorf("queue %+v, want the entry still queued, marked warned", es)
			}
		})
	}
}
