package outbound

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/mail"
	"net/textproto"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/mailhost/mailhost/mailstore"
)

func TestDelivered(t *testing.T) {
	f := newFixture(t)
	mx := newMX(t, nil)
	clk := newClock()
	f.queue(clk.Now(), f.submission("x@remote.test", "y@remote.test"), message("hello"))
	e := f.start(clk, func(c *Config) { c.Resolver = mxFor("remote.test"); c.Port = mx.port })

	got := mx.waitMessages(t, 1)[0]
	if got.from != "bob@a.test" || !slices.Equal(got.to, []string{"x@remote.test", "y@remote.test"}) {
		t.Errorf("MX got MAIL %q RCPT %q, want bob@a.test, [x@remote.test y@remote.test]", got.from, got.to)
	}
	if got.body != message("hello") {
		t.Errorf("MX got body %q, want %q", got.body, message("hello"))
	}
	if got.tls {
		t.Errorf("session used TLS with a server that offers none")
	}
	f.waitEmpty()
	waitFor(t, "the attempt's log line", func() bool { return strings.Contains(e.logs.String(), "result=delivered") })
	line := logLine(e.logs.String(), "msg=attempt")
	for _, want := range []string{"id=1", "destination=remote.test", "rcpts=", "result=delivered", "duration_ms=", "host=mx.remote.test"} {
		if !strings.Contains(line, want) {
			t.Errorf("log line %q lacks %q", line, want)
		}
	}
}

// logLine is the first line of logs that contains s.
func logLine(logs, s string) string {
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

func TestRetryWithBackoff(t *testing.T) {
	f := newFixture(t)
	mx := newMX(t, nil)
	var rcpts atomic.Int32
	mx.rcpt = func(string) error {
		if rcpts.Add(1) <= 2 {
			return smtpErr(451, smtp.EnhancedCode{4, 7, 1}, "greylisted, try later")
		}
		return nil
	}
	clk := newClock()
	f.queue(clk.Now(), f.submission("x@remote.test"), message("retry"))
	e := f.start(clk, func(c *Config) {
		c.Resolver = mxFor("remote.test")
		c.Port = mx.port
		c.RetryMin, c.RetryMax = time.Minute, time.Hour
	})

	got := f.waitAttempts(1)
	if want := testNow.Add(time.Minute); !got.NextAttempt.Equal(want) {
		t.Errorf("after attempt 1 NextAttempt = %v, want %v", got.NextAttempt, want)
	}
	if r := got.Recipients[0]; r.State != mailstore.RecipientPending || !strings.Contains(r.Reply, "451 4.7.1 greylisted") {
		t.Errorf("after attempt 1 recipient = %+v, want pending with the 451", r)
	}

	// Not due yet: nothing happens.
	clk.Add(30 * time.Second)
	e.sender.Wake()
	time.Sleep(100 * time.Millisecond)
	f.waitAttempts(1)

	clk.Add(30 * time.Second)
	e.sender.Wake()
	got = f.waitAttempts(2)
	if want := clk.Now().Add(2 * time.Minute); !got.NextAttempt.Equal(want) {
		t.Errorf("after attempt 2 NextAttempt = %v, want %v (doubled)", got.NextAttempt, want)
	}

	clk.Add(2 * time.Minute)
	e.sender.Wake()
	mx.waitMessages(t, 1)
	f.waitEmpty()
	if n := len(f.inbox("bob@a.test")); n != 0 {
		t.Errorf("sender got %d messages (bounces?), want none", n)
	}
}

func TestBounceOnRCPT5xx(t *testing.T) {
	f := newFixture(t)
	mx := newMX(t, nil)
	mx.rcpt = func(to string) error {
		if to == "bad@remote.test" {
			return errNoSuchUser
		}
		return nil
	}
	clk := newClock()
	f.queue(clk.Now(), f.submission("bad@remote.test", "good@remote.test"), message("partly"))
	f.start(clk, func(c *Config) { c.Resolver = mxFor("remote.test"); c.Port = mx.port })

	got := mx.waitMessages(t, 1)[0]
	if !slices.Equal(got.to, []string{"good@remote.test"}) {
		t.Errorf("MX got RCPT %q, want [good@remote.test]", got.to)
	}
	f.waitEmpty()
	d := parseDSN(t, f.waitInbox("bob@a.test", 1)[0])
	d.check(t, "bob@a.test", "partly")
	if len(d.rcpts) != 1 {
		t.Fatalf("DSN has %d recipients, want 1", len(d.rcpts))
	}
	r := d.rcpts[0]
	for field, want := range map[string]string{
		"Final-Recipient": "rfc822; bad@remote.test",
		"Action":          "failed",
		"Status":          "5.1.1",
		"Remote-MTA":      "dns; mx.remote.test",
		"Diagnostic-Code": "smtp; 550 5.1.1 no such user",
	} {
		if got := r.Get(field); got != want {
			t.Errorf("DSN %s = %q, want %q", field, got, want)
		}
	}
	if !strings.Contains(d.text, "bad@remote.test") || strings.Contains(d.text, "good@remote.test") {
		t.Errorf("DSN text names the wrong recipients:\n%s", d.text)
	}
}

func TestBounceOnDATA5xx(t *testing.T) {
	f := newFixture(t)
	mx := newMX(t, nil)
	mx.data = func(int) error { return smtpErr(554, smtp.EnhancedCode{5, 7, 1}, "spam") }
	clk := newClock()
	f.queue(clk.Now(), f.submission("x@remote.test", "y@remote.test"), message("spammy"))
	f.start(clk, func(c *Config) { c.Resolver = mxFor("remote.test"); c.Port = mx.port })

	f.waitEmpty()
	d := parseDSN(t, f.waitInbox("bob@a.test", 1)[0])
	d.check(t, "bob@a.test", "spammy")
	var finals []string
	for _, r := range d.rcpts {
		finals = append(finals, r.Get("Final-Recipient"))
		if r.Get("Status") != "5.7.1" || r.Get("Diagnostic-Code") != "smtp; 554 5.7.1 spam" {
			t.Errorf("DSN recipient %v, want Status 5.7.1 and the 554", r)
		}
	}
	if want := []string{"rfc822; x@remote.test", "rfc822; y@remote.test"}; !slices.Equal(finals, want) {
		t.Errorf("DSN Final-Recipients = %q, want %q", finals, want)
	}
}

func TestBounceOnExpiry(t *testing.T) {
	f := newFixture(t)
	mx := newMX(t, nil)
	mx.rcpt = func(string) error { return smtpErr(452, smtp.EnhancedCode{4, 2, 2}, "mailbox full") }
	clk := newClock()
	f.queue(clk.Now(), f.submission("full@remote.test"), message("late"))
	e := f.start(clk, func(c *Config) {
		c.Resolver = mxFor("remote.test")
		c.Port = mx.port
		c.Lifetime = time.Hour
	})
	f.waitAttempts(1)
	if n := len(f.inbox("bob@a.test")); n != 0 {
		t.Fatalf("bounce after a deferral within the lifetime: %d messages", n)
	}

	clk.Add(2 * time.Hour)
	e.sender.Wake()
	f.waitEmpty()
	d := parseDSN(t, f.waitInbox("bob@a.test", 1)[0])
	d.check(t, "bob@a.test", "late")
	r := d.rcpts[0]
	if r.Get("Status") != "4.4.7" || r.Get("Action") != "failed" || r.Get("Diagnostic-Code") != "smtp; 452 4.2.2 mailbox full" {
		t.Errorf("DSN recipient %v, want failed, 4.4.7 and the last reply", r)
	}
	if !strings.Contains(d.text, "expired") {
		t.Errorf("DSN text does not say the time expired:\n%s", d.text)
	}
}

func TestNoBounceForBounce(t *testing.T) {
	for _, tc := range []struct {
		name string
		kind mailstore.OutboundKind
	}{
		{"bounce", mailstore.KindBounce},
		{"null sender", mailstore.KindForward},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			relay := mailstore.Relay{Kind: tc.kind, To: []string{"x@remote.test"}}
			if tc.kind != mailstore.KindBounce {
				relay.DomainID = f.domain.ID
			}
			mx := newMX(t, nil)
			mx.rcpt = func(string) error { return errNoSuchUser }
			clk := newClock()
			f.queue(clk.Now(), relay, message("dsn"))
			e := f.start(clk, func(c *Config) { c.Resolver = mxFor("remote.test"); c.Port = mx.port })
			f.waitEmpty()
			waitFor(t, "the attempt", func() bool { return strings.Contains(e.logs.String(), "result=failed") })
			e.stop()
			if es := f.entries(); len(es) != 0 {
				t.Errorf("queue holds %+v, want nothing (no bounce of a bounce)", es)
			}
		})
	}
}

// A bounce for a remote sender is queued with an empty envelope sender
// and goes out like any other mail.
func TestBounceToRemoteSender(t *testing.T) {
	f := newFixture(t)
	mx := newMX(t, nil)
	mx.rcpt = func(to string) error {
		if strings.HasSuffix(to, "@remote.test") {
			return errNoSuchUser
		}
		return nil
	}
	clk := newClock()
	// Forwarded for alias fwd@a.test: the envelope sender is the SRS
	// address of alice@orig.test.
	f.queue(clk.Now(), mailstore.Relay{Kind: mailstore.KindForward, DomainID: f.domain.ID,
		From: "SRS0=hash=tt=orig.test=alice@a.test", To: []string{"gone@remote.test"}}, message("fwd"))
	srs := fakeSRS{}
	f.start(clk, func(c *Config) {
		c.Resolver = mxFor("remote.test", "orig.test")
		c.Port = mx.port
		c.SRS = srs
	})
	got := mx.waitMessages(t, 1)[0]
	if got.from != "" || !slices.Equal(got.to, []string{"alice@orig.test"}) {
		t.Errorf("bounce sent as MAIL %q RCPT %q, want <> and the reversed sender alice@orig.test", got.from, got.to)
	}
	d := parseDSN(t, []byte(got.body))
	d.check(t, "alice@orig.test", "fwd")
	f.waitEmpty()
}

// fakeSRS makes and reverses SRS0=hash=tt=domain=local@forwarder.
type fakeSRS struct{}

func (fakeSRS) Forward(sender, forwardDomain string) (string, error) {
	at := strings.LastIndexByte(sender, '@')
	if at < 0 {
		return "", errors.New("no domain")
	}
	return "SRS0=hash=tt=" + sender[at+1:] + "=" + sender[:at] + "@" + forwardDomain, nil
}

func (fakeSRS) Reverse(addr string) (string, error) {
	parts := strings.SplitN(addr[:strings.LastIndexByte(addr, '@')], "=", 5)
	if len(parts) != 5 {
		return "", errors.New("not SRS")
	}
	return parts[4] + "@" + parts[3], nil
}

func TestRelay(t *testing.T) {
	f := newFixture(t)
	relay := newMX(t, nil)
	clk := newClock()
	f.queue(clk.Now(), f.submission("x@one.test", "y@two.test"), message("relayed"))
	f.start(clk, func(c *Config) {
		c.Resolver = resolver{} // no MX anywhere: only the relay works
		c.Relay = relay.addr
	})
	got := relay.waitMessages(t, 2)
	var to []string
	for _, g := range got {
		to = append(to, g.to...)
	}
	slices.Sort(to)
	if want := []string{"x@one.test", "y@two.test"}; !slices.Equal(to, want) {
		t.Errorf("relay got %q, want %q", to, want)
	}
	f.waitEmpty()
}

func TestPerDestinationLimit(t *testing.T) {
	f := newFixture(t)
	mx := newMX(t, nil)
	mx.hold = 50 * time.Millisecond
	clk := newClock()
	const n = 12
	for range n {
		f.queue(clk.Now(), f.submission("x@remote.test"), message("many"))
	}
	f.queue(clk.Now(), f.submission("y@other.test"), message("other"))
	f.start(clk, func(c *Config) {
		c.Resolver = mxFor("remote.test", "other.test")
		c.Port = mx.port
		c.Workers = 8
		c.PerDestination = 2
	})
	mx.waitMessages(t, n+1)
	f.waitEmpty()
	mx.mu.Lock()
	defer mx.mu.Unlock()
	if got := mx.maxByDomain["remote.test"]; got != 2 {
		t.Errorf("%d transactions at once for remote.test, want 2 (PerDestination)", got)
	}
	if got := mx.maxByDomain["other.test"]; got != 1 {
		t.Errorf("%d transactions at once for other.test, want 1", got)
	}
}

// TestPerRelayLimit: with a relay every remote entry counts against it,
// up to PerRelay sessions at once (not PerDestination).
func TestPerRelayLimit(t *testing.T) {
	for _, tc := range []struct {
		name     string
		perRelay int
		want     int
	}{
		{"set", 3, 3},
		{"default: Workers", 0, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			relay := newMX(t, nil)
			relay.hold = 50 * time.Millisecond
			clk := newClock()
			const n = 12
			for range n {
				f.queue(clk.Now(), f.submission("x@remote.test"), message("many"))
			}
			f.start(clk, func(c *Config) {
				c.Relay = relay.addr
				c.Workers = 6
				c.PerDestination = 1
				c.PerRelay = tc.perRelay
			})
			relay.waitMessages(t, n)
			f.waitEmpty()
			relay.mu.Lock()
			defer relay.mu.Unlock()
			if got := relay.maxByDomain["remote.test"]; got != tc.want {
				t.Errorf("%d transactions at once at the relay, want %d", got, tc.want)
			}
		})
	}
}

// A queue where some recipients are done is picked up after a restart by
// a new Sender on the reopened store, which sends only to the rest.
func TestRestart(t *testing.T) {
	f := newFixture(t)
	mx1 := newMX(t, nil)
	mx1.rcpt = func(to string) error {
		if to == "r3@remote.test" {
			return smtpErr(421, smtp.EnhancedCode{4, 3, 0}, "not now")
		}
		return nil
	}
	clk := newClock()
	f.queue(clk.Now(), f.submission("r1@remote.test", "r2@remote.test", "r3@remote.test"), message("half"))
	e := f.start(clk, func(c *Config) { c.Resolver = mxFor("remote.test"); c.Port = mx1.port })
	mx1.waitMessages(t, 1)
	got := f.waitAttempts(1)
	if p := got.Pending(); !slices.Equal(p, []string{"r3@remote.test"}) {
		t.Fatalf("pending after attempt 1 = %q, want [r3@remote.test]", p)
	}
	e.stop()
	if err := f.st.Close(); err != nil {
		t.Fatal(err)
	}

	f.open()
	mx2 := newMX(t, nil)
	clk.Add(time.Hour)
	f.start(clk, func(c *Config) { c.Resolver = mxFor("remote.test"); c.Port = mx2.port })
	if got := mx2.waitMessages(t, 1)[0]; !slices.Equal(got.to, []string{"r3@remote.test"}) {
		t.Errorf("after restart MX got RCPT %q, want only [r3@remote.test]", got.to)
	}
	f.waitEmpty()
	if n := len(mx1.messages()); n != 1 {
		t.Errorf("first MX got %d messages, want 1", n)
	}
}

// An entry whose destination is hosted here is delivered into mailboxes;
// an unknown user there bounces.
func TestLocalDestination(t *testing.T) {
	f := newFixture(t)
	clk := newClock()
	// Queued for a.test as if it were remote (say, before it was added).
	f.queue(clk.Now(), mailstore.Relay{Kind: mailstore.KindSubmission, DomainID: f.domain.ID, From: "someone@remote.test",
		To: []string{"carol@a.test", "info@a.test", "nobody@a.test"}}, message("local"))
	mx := newMX(t, nil)
	f.start(clk, func(c *Config) { c.Resolver = mxFor("remote.test"); c.Port = mx.port })

	for _, who := range []string{"carol@a.test", "bob@a.test"} {
		if got := f.waitInbox(who, 1)[0]; string(got) != message("local") {
			t.Errorf("%s got %q, want the message", who, got)
		}
	}
	bounce := mx.waitMessages(t, 1)[0]
	if bounce.from != "" || !slices.Equal(bounce.to, []string{"someone@remote.test"}) {
		t.Errorf("bounce MAIL %q RCPT %q, want <> to someone@remote.test", bounce.from, bounce.to)
	}
	d := parseDSN(t, []byte(bounce.body))
	d.check(t, "someone@remote.test", "local")
	if len(d.rcpts) != 1 || d.rcpts[0].Get("Final-Recipient") != "rfc822; nobody@a.test" || d.rcpts[0].Get("Status") != "5.1.1" {
		t.Errorf("DSN recipients %v, want nobody@a.test with 5.1.1", d.rcpts)
	}
	f.waitEmpty()
}

// With RefuseInboundOverCap, an entry delivered here to a domain that has
// used its transfer cap waits in the queue (4.7.1, temporary), as the MX
// answers 451 4.7.1 at RCPT for it; without, it is delivered and counted,
// as inbound mail always is by default.
func TestLocalDestinationOverCap(t *testing.T) {
	for _, tc := range []struct {
		name      string
		refuse    bool
		delivered bool
	}{
		{"received by default", false, true},
		{"deferred when inbound is refused over the cap", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			clk := newClock()
			// Queued while a.test had room (a relay for a domain at its
			// cap would be held), then the cap is used.
			f.queue(clk.Now(), mailstore.Relay{Kind: mailstore.KindSubmission, DomainID: f.domain.ID, From: "someone@remote.test",
				To: []string{"carol@a.test"}}, message("over cap"))
			if _, err := f.st.SetTransferCap(ctx, f.partner.ID, "a.test", 1); err != nil {
				t.Fatal(err)
			}
			bob, _, err := f.st.MailboxByEmail(ctx, "bob@a.test")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.st.Deliver(ctx, mailstore.Delivery{Body: bytes.Repeat([]byte("x"), mailstore.MB), ReceivedAt: clk.Now(), MailboxIDs: []int64{bob.ID}}); err != nil {
				t.Fatal(err)
			}
			f.start(clk, func(c *Config) { c.RefuseInboundOverCap = tc.refuse })

			if tc.delivered {
				f.waitInbox("carol@a.test", 1)
				f.waitEmpty()
				return
			}
			e := f.waitAttempts(1)
			if p := e.Pending(); !slices.Equal(p, []string{"carol@a.test"}) || !strings.Contains(e.LastError, "451 4.7.1") {
				t.Errorf("after attempt 1: pending %q, last error %q; want carol@a.test pending with 451 4.7.1", p, e.LastError)
			}
			if n := len(f.inbox("carol@a.test")); n != 0 {
				t.Errorf("carol has %d messages, want none", n)
			}
		})
	}
}

// A local delivery that reaches an alias with a remote destination
// forwards the message on behalf of the alias's domain with an SRS sender,
// as the MX would, and counts it against that domain's transfer cap.
func TestLocalDestinationForwardSRS(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.st.CreateAlias(ctx, f.partner.ID, "a.test", "fwd@a.test", "x@remote.test", testNow); err != nil {
		t.Fatal(err)
	}
	clk := newClock()
	f.queue(clk.Now(), mailstore.Relay{Kind: mailstore.KindSubmission, DomainID: f.domain.ID, From: "someone@orig.test",
		To: []string{"fwd@a.test"}}, message("forwarded"))
	mx := newMX(t, nil)
	f.start(clk, func(c *Config) { c.Resolver = mxFor("remote.test"); c.Port = mx.port; c.SRS = fakeSRS{} })
	got := mx.waitMessages(t, 1)[0]
	if want := "SRS0=hash=tt=orig.test=someone@a.test"; got.from != want || !slices.Equal(got.to, []string{"x@remote.test"}) {
		t.Errorf("forward sent as MAIL %q RCPT %q, want %q to x@remote.test", got.from, got.to, want)
	}
	f.waitEmpty()
	x, err := f.st.Transfer(ctx, f.domain.ID, testNow.Format("2006-01"))
	// Counted twice: queued as a submission, then as the forward.
	if n := int64(len(message("forwarded"))); err != nil || x.OutBytes != 2*n {
		t.Errorf("Transfer(a.test) = %+v, %v; want %d bytes out (the submission and the forward)", x, err, 2*n)
	}
}

func TestSTARTTLS(t *testing.T) {
	f := newFixture(t)
	mx := newMX(t, selfSigned(t))
	clk := newClock()
	f.queue(clk.Now(), f.submission("x@remote.test"), message("secret"))
	e := f.start(clk, func(c *Config) { c.Resolver = mxFor("remote.test"); c.Port = mx.port })
	if got := mx.waitMessages(t, 1)[0]; !got.tls || got.body != message("secret") {
		t.Errorf("MX got tls=%v body %q, want the message over TLS", got.tls, got.body)
	}
	f.waitEmpty()
	waitFor(t, "the log line", func() bool { return strings.Contains(e.logs.String(), "tls=true") })
}

// A server that offers STARTTLS but fails the handshake gets the message
// in plain text on a new connection.
func TestSTARTTLSFallback(t *testing.T) {
	f := newFixture(t)
	broken := selfSigned(t)
	broken.Certificates = nil
	broken.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return nil, errors.New("no certificate") }
	mx := newMX(t, broken)
	clk := newClock()
	f.queue(clk.Now(), f.submission("x@remote.test"), message("plain"))
	e := f.start(clk, func(c *Config) { c.Resolver = mxFor("remote.test"); c.Port = mx.port })
	if got := mx.waitMessages(t, 1)[0]; got.tls || got.body != message("plain") {
		t.Errorf("MX got tls=%v body %q, want the message in plain text", got.tls, got.body)
	}
	f.waitEmpty()
	if !strings.Contains(e.logs.String(), "TLS failed") {
		t.Errorf("the fallback is not logged")
	}
}

// MX routing: preference order and fallback to the next host, the
// implicit MX, and null MX.
func TestRouting(t *testing.T) {
	f := newFixture(t)
	mx := newMX(t, nil)
	clk := newClock()
	r := resolver{
		mx: map[string][]*net.MX{
			// The preferred host has no address; the next one works.
			"pref.test": {{Host: "b.pref.test.", Pref: 20}, {Host: "a.pref.test.", Pref: 10}},
			"null.test": {{Host: ".", Pref: 0}},
		},
		addrs: map[string][]net.IPAddr{
			"b.pref.test":   loopback,
			"implicit.test": loopback,
		},
	}
	f.queue(clk.Now(), f.submission("x@pref.test", "y@implicit.test", "z@null.test", "w@nxdomain.test"), message("routes"))
	f.start(clk, func(c *Config) { c.Resolver = r; c.Port = mx.port })

	got := mx.waitMessages(t, 2)
	var to []string
	for _, g := range got {
		to = append(to, g.to...)
	}
	slices.Sort(to)
	if want := []string{"x@pref.test", "y@implicit.test"}; !slices.Equal(to, want) {
		t.Errorf("MX got %q, want %q", to, want)
	}
	f.waitEmpty()
	// Two entries failed: two bounces.
	status := map[string]string{}
	for _, b := range f.waitInbox("bob@a.test", 2) {
		for _, r := range parseDSN(t, b).rcpts {
			status[r.Get("Final-Recipient")] = r.Get("Status") + " " + r.Get("Diagnostic-Code")
		}
	}
	if got := status["rfc822; z@null.test"]; !strings.HasPrefix(got, "5.1.10 smtp; 556 5.1.10") {
		t.Errorf("null MX: %q, want 5.1.10", got)
	}
	if got := status["rfc822; w@nxdomain.test"]; !strings.HasPrefix(got, "5.1.2 ") {
		t.Errorf("no such domain: %q, want 5.1.2", got)
	}
}

// Run returns soon after its context ends, even with a session stuck, and
// leaves no goroutine behind; the entry cut off is due again at once.
func TestShutdown(t *testing.T) {
	f := newFixture(t)
	mx := newMX(t, nil)
	mx.hold = 5 * time.Second
	clk := newClock()
	f.queue(clk.Now(), f.submission("x@remote.test"), message("stuck"))
	e := f.start(clk, func(c *Config) { c.Resolver = mxFor("remote.test"); c.Port = mx.port })
	waitFor(t, "the session to start DATA", func() bool {
		mx.mu.Lock()
		defer mx.mu.Unlock()
		return mx.active["remote.test"] > 0
	})
	start := time.Now()
	e.stop()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Run took %v to stop", d)
	}
	// An attempt's goroutine may still be returning from its last send
	// to the loop when Run returns: give it a moment, not more.
	deadline := time.Now().Add(time.Second)
	for senderGoroutines() != "" && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if g := senderGoroutines(); g != "" {
		t.Errorf("goroutines left after Run:\n%s", g)
	}
	got := f.waitAttempts(1)
	if !got.NextAttempt.Equal(clk.Now()) || !strings.Contains(got.LastError, "interrupted") {
		t.Errorf("after shutdown the entry is due %v (%q), want now and interrupted", got.NextAttempt, got.LastError)
	}
}

// senderGoroutines lists the goroutines running this package's code
// (not its tests', such as the fake MX).
func senderGoroutines() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, l := range strings.Split(g, "\n") {
			if strings.Contains(l, "/outbound/") && !strings.Contains(l, "_test.go:") {
				out = append(out, g)
				break
			}
		}
	}
	return strings.Join(out, "\n\n")
}

func TestRunTwice(t *testing.T) {
	f := newFixture(t)
	e := f.start(newClock(), nil)
	waitFor(t, "Run to start", e.sender.running.Load)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := e.sender.Run(ctx); !errors.Is(err, ErrRunning) {
		t.Errorf("second Run = %v, want ErrRunning", err)
	}
}

// dsn is a parsed bounce.
type dsn struct {
	header  mail.Header
	text    string
	fields  textproto.MIMEHeader   // per-message fields
	rcpts   []textproto.MIMEHeader // per-recipient fields
	headers string                 // the text/rfc822-headers part
	global  bool                   // message/global-delivery-status (RFC 6533)
}

// parseDSN parses a bounce as RFC 3464 and RFC 6522 lay it out: three
// parts, the second one fields in blocks.
func parseDSN(t *testing.T, body []byte) dsn {
	t.Helper()
	m, err := mail.ReadMessage(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("read bounce: %v\n%s", err, body)
	}
	d := dsn{header: m.Header}
	mt, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/report" || params["report-type"] != "delivery-status" {
		t.Fatalf("bounce Content-Type %q, want multipart/report; report-type=delivery-status", m.Header.Get("Content-Type"))
	}
	mr := multipart.NewReader(m.Body, params["boundary"])
	var types []string
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("bounce part: %v", err)
		}
		b, err := io.ReadAll(p)
		if err != nil {
			t.Fatal(err)
		}
		ct, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type"))
		types = append(types, ct)
		switch ct {
		case "text/plain":
			d.text = string(b)
		case "message/delivery-status", "message/global-delivery-status":
			types[len(types)-1] = "message/delivery-status"
			d.global = ct == "message/global-delivery-status"
			r := textproto.NewReader(bufio.NewReader(bytes.NewReader(b)))
			if d.fields, err = r.ReadMIMEHeader(); err != nil {
				t.Fatalf("per-message fields: %v", err)
			}
			for {
				h, err := r.ReadMIMEHeader()
				if len(h) > 0 {
					d.rcpts = append(d.rcpts, h)
				}
				if err != nil {
					break
				}
			}
		case "text/rfc822-headers":
			d.headers = string(b)
		}
	}
	if want := []string{"text/plain", "message/delivery-status", "text/rfc822-headers"}; !slices.Equal(types, want) {
		t.Fatalf("bounce parts %q, want %q", types, want)
	}
	return d
}

// check asserts what every bounce has: who it is to, who it is from, the
// reporting MTA, and the original headers (the message's subject).
func (d dsn) check(t *testing.T, to, subject string) {
	t.Helper()
	if got := d.header.Get("To"); got != "<"+to+">" {
		t.Errorf("bounce To = %q, want <%s>", got, to)
	}
	if got := d.header.Get("From"); !strings.Contains(got, "MAILER-DAEMON@out.a.test") {
		t.Errorf("bounce From = %q, want MAILER-DAEMON@out.a.test", got)
	}
	if got := d.header.Get("Auto-Submitted"); got != "auto-replied" {
		t.Errorf("bounce Auto-Submitted = %q", got)
	}
	if got := d.fields.Get("Reporting-MTA"); got != "dns; out.a.test" {
		t.Errorf("Reporting-MTA = %q, want dns; out.a.test", got)
	}
	if d.fields.Get("Arrival-Date") == "" {
		t.Errorf("no Arrival-Date")
	}
	if len(d.rcpts) == 0 {
		t.Errorf("no per-recipient fields")
	}
	for _, r := range d.rcpts {
		if r.Get("Action") != "failed" {
			t.Errorf("Action = %q, want failed", r.Get("Action"))
		}
	}
	if !strings.Contains(d.headers, "Subject: "+subject+"\r\n") || strings.Contains(d.headers, "Hello.") {
		t.Errorf("returned headers %q, want the original's headers alone", d.headers)
	}
}

// A forward held for its domain's transfer cap goes out once the cap is
// raised: the Sender releases held entries at each poll.
func TestHeldReleased(t *testing.T) {
	f := newFixture(t)
	mx := newMX(t, nil)
	clk := newClock()
	ctx := context.Background()
	if _, err := f.st.SetTransferCap(ctx, f.partner.ID, "a.test", 1); err != nil {
		t.Fatal(err)
	}
	big := message("big") + strings.Repeat("x", mailstore.MB) + "\r\n"
	bob, _, err := f.st.MailboxByEmail(ctx, "bob@a.test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.Deliver(ctx, mailstore.Delivery{Body: []byte(big), ReceivedAt: clk.Now(), MailboxIDs: []int64{bob.ID}}); err != nil {
		t.Fatal(err)
	}
	f.queue(clk.Now(), mailstore.Relay{Kind: mailstore.KindForward, DomainID: f.domain.ID, From: "someone@remote.test", To: []string{"x@remote.test"}}, message("held"))
	if es := f.entries(); len(es) != 1 || !es[0].Held {
		t.Fatalf("queue = %+v, want one held entry", es)
	}
	e := f.start(clk, func(c *Config) { c.Resolver = mxFor("remote.test"); c.Port = mx.port })
	time.Sleep(100 * time.Millisecond)
	if n := len(mx.messages()); n != 0 {
		t.Fatalf("a held entry was sent")
	}
	if _, err := f.st.SetTransferCap(ctx, f.partner.ID, "a.test", 100); err != nil {
		t.Fatal(err)
	}
	mx.waitMessages(t, 1)
	f.waitEmpty()
	if !strings.Contains(e.logs.String(), "released held entries") {
		t.Errorf("the release is not logged")
	}
}

// A recipient with a non-ASCII address fails for good at a server
// without SMTPUTF8 (RFC 6531 section 3.2).
func TestSMTPUTF8Needed(t *testing.T) {
	f := newFixture(t)
	mx := newMX(t, nil)
	clk := newClock()
	f.queue(clk.Now(), f.submission("jösé@remote.test", "ascii@remote.test"), message("utf8"))
	f.start(clk, func(c *Config) { c.Resolver = mxFor("remote.test"); c.Port = mx.port })
	f.waitEmpty()
	d := parseDSN(t, f.waitInbox("bob@a.test", 1)[0])
	if len(d.rcpts) != 2 || d.rcpts[0].Get("Status") != "5.6.7" || !d.global ||
		d.rcpts[1].Get("Final-Recipient") != "utf-8; jösé@remote.test" {
		t.Errorf("DSN recipients %v (global %v), want both failed with 5.6.7, in a global report", d.rcpts, d.global)
	}
	if n := len(mx.messages()); n != 0 {
		t.Errorf("MX got %d messages, want none", n)
	}
}

// An entry of one partner's domain for a domain another partner hosts
// and has not verified goes out to that domain's MX, as for any domain
// not hosted here, not into the other partner's mailbox; so
// does the bounce of an entry whose sender is in that domain. A verified
// domain of the other partner gets its mail here.
func TestLocalDestinationOfAnotherPartner(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	other, err := f.st.CreatePartner(ctx, "other", testNow)
	if err != nil {
		t.Fatal(err)
	}
	plan := mailstore.Plan{Name: "starter", QuotaMB: 1024, RetentionDays: 30, TransferMonthlyMB: 5120}
	for _, d := range []string{"other.test", "verified.test"} {
		if _, err := f.st.CreateDomain(ctx, other.ID, mailstore.NewDomain{Name: d, Plan: plan}, testNow); err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.CreateMailbox(ctx, other.ID, d, "eve@"+d, "unused-hash", testNow); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.st.SetVerified(ctx, other.ID, "verified.test", true, testNow); err != nil {
		t.Fatal(err)
	}
	clk := newClock()
	f.queue(clk.Now(), f.submission("eve@other.test"), message("to other"))
	f.queue(clk.Now(), f.submission("eve@verified.test"), message("to verified"))
	// Sent as eve@other.test (say, a forward without SRS), refused.
	f.queue(clk.Now(), mailstore.Relay{Kind: mailstore.KindForward, DomainID: f.domain.ID, From: "eve@other.test",
		To: []string{"nobody@remote.test"}}, message("refused"))
	mx := newMX(t, nil)
	mx.rcpt = func(to string) error {
		if to == "nobody@remote.test" {
			return smtpErr(550, smtp.EnhancedCode{5, 1, 1}, "no such user")
		}
		return nil
	}
	f.start(clk, func(c *Config) { c.Resolver = mxFor("other.test", "remote.test"); c.Port = mx.port })

	if got := f.waitInbox("eve@verified.test", 1)[0]; string(got) != message("to verified") {
		t.Errorf("eve@verified.test got %q, want the message", got)
	}
	got := mx.waitMessages(t, 2)
	slices.SortFunc(got, func(a, b received) int { return strings.Compare(a.from, b.from) })
	if got[0].from != "" || !slices.Equal(got[0].to, []string{"eve@other.test"}) {
		t.Errorf("MX got MAIL %q RCPT %q, want the bounce to eve@other.test", got[0].from, got[0].to)
	}
	if got[1].from != "bob@a.test" || !slices.Equal(got[1].to, []string{"eve@other.test"}) || got[1].body != message("to other") {
		t.Errorf("MX got MAIL %q RCPT %q %q, want bob's message to eve@other.test", got[1].from, got[1].to, got[1].body)
	}
	f.waitEmpty()
	if n := len(f.inbox("eve@other.test")); n != 0 {
		t.Errorf("eve@other.test holds %d messages, want 0", n)
	}
}

// A body with bare CR and LF (queued before smtpd normalised them, say)
// leaves with every line ended by CRLF and dot-stuffed: "\r.\r" and
// "\n.\n" are a line holding "." to the next hop, never its end of data
// (SMTP smuggling). go-smtp's writer alone passes a bare CR
// through.
func TestDataLineEnds(t *testing.T) {
	f := newFixture(t)
	clk := newClock()
	body := "Subject: s\r\n\r\na\r.\rMAIL FROM:<evil@x.test>\rb\n.\nc\r\n.d\r\n"
	f.queue(clk.Now(), f.submission("joe@remote.test"), body)
	mx := newMX(t, nil)
	f.start(clk, func(c *Config) { c.Resolver = mxFor("remote.test"); c.Port = mx.port })
	got := mx.waitMessages(t, 1)[0]
	if want := "Subject: s\r\n\r\na\r\n.\r\nMAIL FROM:<evil@x.test>\r\nb\r\n.\r\nc\r\n.d\r\n"; got.body != want {
		t.Errorf("MX got %q, want %q", got.body, want)
	}
	f.waitEmpty()
}
