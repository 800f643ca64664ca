package smtpd

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailauth"
	"github.com/mailhost/mailhost/mailstore"
)

// testSRS is the real SRS of package mailauth on the tests' clock.
func testSRS() *mailauth.SRS {
	return &mailauth.SRS{Secret: []byte("test secret"), Now: func() time.Time { return testNow }}
}

func TestForward(t *testing.T) {
	srs := testSRS()
	var queued atomic.Int32
	e := newEnv(t, func(c *Config) {
		c.SRS = srs
		c.OnQueued = func() { queued.Add(1) }
	})
	a := e.domain(t, "a.test")

	if err := e.send(t, "Sender@Remote.test", []string{"fwd@a.test", "bob@a.test"}, message("forwarded", "x")); err != nil {
		t.Fatalf("send = %v", err)
	}
	q := e.outbound(t)
	if len(q) != 1 {
		t.Fatalf("queue has %d entries, want 1", len(q))
	}
	o := q[0]
	if o.Kind != mailstore.KindForward || o.DomainID != a.ID || o.Destination != "remote.test" ||
		len(o.Recipients) != 1 || o.Recipients[0].Address != "someone@remote.test" {
		t.Errorf("queue entry = %+v, want a forward of a.test to someone@remote.test", o)
	}
	if !strings.HasPrefix(o.From, "SRS0=") || !strings.HasSuffix(o.From, "@a.test") {
		t.Errorf("forward sender = %q, want an SRS0 address at a.test", o.From)
	}
	if orig, err := srs.Reverse(o.From); err != nil || orig != "Sender@Remote.test" {
		t.Errorf("Reverse(%q) = %q, %v, want the sender as it came", o.From, orig, err)
	}
	if n := queued.Load(); n != 1 {
		t.Errorf("OnQueued called %d times, want 1", n)
	}
	// The body is one for bob and the queue: no Return-Path nor
	// Delivered-To goes on to the next server.
	body, err := e.st.OutboundBody(context.Background(), o.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.inbox(t, "bob@a.test"); len(got) != 1 || string(got[0]) != string(body) {
		t.Fatalf("bob's INBOX = %q, want the queued body %q", got, body)
	}
	if !strings.HasPrefix(string(body), "Received: from client.test ([127.0.0.1])") {
		t.Errorf("relayed body starts %q, want the Received field first", body[:min(len(body), 80)])
	}

	t.Run("null sender stays null", func(t *testing.T) {
		if err := e.send(t, "", []string{"fwd@a.test"}, message("bounce forwarded", "x")); err != nil {
			t.Fatalf("send = %v", err)
		}
		q := e.outbound(t)
		if len(q) != 2 || q[1].From != "" || q[1].Kind != mailstore.KindForward {
			t.Fatalf("queue = %+v, want a second forward with the null sender", q)
		}
	})
	t.Run("alias chain across domains forwards for the last alias's domain", func(t *testing.T) {
		ctx := context.Background()
		if _, err := e.st.CreateAlias(ctx, e.partner.ID, "b.test", "out@b.test", "far@remote.test", testNow); err != nil {
			t.Fatal(err)
		}
		if _, err := e.st.CreateAlias(ctx, e.partner.ID, "a.test", "tob@a.test", "out@b.test", testNow); err != nil {
			t.Fatal(err)
		}
		if err := e.send(t, "s@remote.test", []string{"tob@a.test"}, message("chain", "x")); err != nil {
			t.Fatalf("send = %v", err)
		}
		q := e.outbound(t)
		last := q[len(q)-1]
		if b := e.domain(t, "b.test"); last.DomainID != b.ID || !strings.HasSuffix(last.From, "@b.test") {
			t.Errorf("queue entry = %+v, want a forward of b.test with an SRS address there", last)
		}
	})
}

func TestForwardWithoutSRS(t *testing.T) {
	e := newEnv(t, nil)
	err := e.send(t, "s@remote.test", []string{"fwd@a.test"}, message("kept", "x"))
	if got := smtpCode(err); got != "451 4.3.0" {
		t.Errorf("send to a remote alias without SRS = %s, want 451 4.3.0", got)
	}
}

func TestSRSBounce(t *testing.T) {
	srs := testSRS()
	var queued atomic.Int32
	e := newEnv(t, func(c *Config) {
		c.SRS = srs
		c.OnQueued = func() { queued.Add(1) }
	})
	fwd := func(t *testing.T, s *mailauth.SRS, sender, domain string) string {
		t.Helper()
		a, err := s.Forward(sender, domain)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}

	t.Run("routed to the original sender", func(t *testing.T) {
		addr := fwd(t, srs, "Orig@remote.test", "a.test")
		if err := e.send(t, "", []string{strings.ToUpper(addr[:4]) + addr[4:]}, message("bounce", "x")); err != nil {
			t.Fatalf("send from <> = %v", err)
		}
		q := e.outbound(t)
		if len(q) != 1 {
			t.Fatalf("queue has %d entries, want 1", len(q))
		}
		o := q[0]
		d, err := e.st.DomainByName(context.Background(), "a.test")
		if err != nil {
			t.Fatal(err)
		}
		if o.Kind != mailstore.KindBounce || o.DomainID != d.ID || o.From != "" ||
			len(o.Recipients) != 1 || o.Recipients[0].Address != "Orig@remote.test" {
			t.Errorf("queue entry = %+v, want a bounce with the null sender to Orig@remote.test, sent for a.test (%d)", o, d.ID)
		}
		// Counted as a.test's outbound transfer, as its forwards are.
		if tr, err := e.st.Transfer(context.Background(), d.ID, mailstore.Month(testNow)); err != nil || tr.OutBytes != o.Size {
			t.Errorf("a.test's transfer = %+v, %v; want the bounce's %d bytes out", tr, err, o.Size)
		}
		if n := queued.Load(); n != 1 {
			t.Errorf("OnQueued called %d times, want 1", n)
		}
	})
	t.Run("lower-cased by the bouncing server", func(t *testing.T) {
		addr := strings.ToLower(fwd(t, srs, "x@remote.test", "b.test"))
		if err := e.send(t, "", []string{addr}, message("bounce", "x")); err != nil {
			t.Fatalf("send = %v", err)
		}
	})
	t.Run("original sender hosted here", func(t *testing.T) {
		addr := fwd(t, srs, "bob@a.test", "b.test")
		before := len(e.outbound(t))
		if err := e.send(t, "", []string{addr}, message("bounce home", "x")); err != nil {
			t.Fatalf("send = %v", err)
		}
		if got := e.inbox(t, "bob@a.test"); len(got) != 1 {
			t.Errorf("bob has %d messages, want the bounce", len(got))
		}
		if n := len(e.outbound(t)); n != before {
			t.Errorf("queue grew from %d to %d, want the bounce delivered here", before, n)
		}
	})
	// forge replaces the hash of a valid SRS0 address, as a guess would.
	forge := func(addr string) string {
		f := strings.SplitN(addr, "=", 3)
		return f[0] + "=AAAAAAAA=" + f[2]
	}
	old := &mailauth.SRS{Secret: srs.Secret, Now: func() time.Time { return testNow.AddDate(0, -2, 0) }}
	for _, tc := range []struct{ name, rcpt string }{
		{"forged", forge(fwd(t, srs, "x@remote.test", "a.test"))},
		{"another secret", fwd(t, &mailauth.SRS{Secret: []byte("other")}, "x@remote.test", "a.test")},
		{"expired", fwd(t, old, "x@remote.test", "a.test")},
		{"malformed", "SRS0=garbage@a.test"},
		{"malformed in a domain with a catch-all", "srs1=garbage@b.test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.dialRaw(t)
			r.cmd("EHLO client.test", "250 ")
			r.cmd("MAIL FROM:<>", "250 ")
			r.cmd("RCPT TO:<"+tc.rcpt+">", "550 5.1.1 ")
		})
	}
	// The audit's open relay: any sender could have mail queued to the
	// address an SRS address names. Refused before the hash is checked,
	// so that a forged address gets the same answer as a valid one.
	for _, tc := range []struct{ name, rcpt string }{
		{"valid", fwd(t, srs, "victim@remote.test", "a.test")},
		{"valid SRS1", fwd(t, srs, "SRS0=abcd=AA=x.test=v@remote.test", "a.test")},
		{"original sender hosted here", fwd(t, srs, "bob@a.test", "b.test")},
		{"forged", forge(fwd(t, srs, "x@remote.test", "a.test"))},
	} {
		t.Run("non-null sender "+tc.name, func(t *testing.T) {
			before := len(e.outbound(t))
			r := e.dialRaw(t)
			r.cmd("EHLO client.test", "250 ")
			r.cmd("MAIL FROM:<attacker@remote.test>", "250 ")
			if got := r.cmd("RCPT TO:<"+tc.rcpt+">", "550 5.7.1 "); !strings.Contains(got, "bounces") {
				t.Errorf("RCPT reply = %q, want it to say SRS addresses take only bounces", got)
			}
			if n := len(e.outbound(t)); n != before {
				t.Errorf("queue grew from %d to %d, want nothing queued", before, n)
			}
		})
	}
	t.Run("not hosted", func(t *testing.T) {
		r := e.dialRaw(t)
		r.cmd("EHLO client.test", "250 ")
		r.cmd("MAIL FROM:<>", "250 ")
		r.cmd("RCPT TO:<"+fwd(t, srs, "x@remote.test", "elsewhere.test")+">", "554 5.7.1 ")
	})
}

// fakeAuthenticator answers a fixed field and records what it was given.
type fakeAuthenticator struct {
	mu                   sync.Mutex
	ip                   net.IP
	helo, mailFrom, body string
}

func (a *fakeAuthenticator) Check(ctx context.Context, ip net.IP, helo, mailFrom string, msg []byte) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ip, a.helo, a.mailFrom, a.body = ip, helo, mailFrom, string(msg)
	return "Authentication-Results: MX.test;\r\n\tspf=pass smtp.mailfrom=remote.test"
}

func TestAuthenticationResults(t *testing.T) {
	auth := &fakeAuthenticator{}
	e := newEnv(t, func(c *Config) { c.Authenticator = auth })
	msg := "Authentication-Results: mx.test; dkim=pass header.d=a.test\r\n" +
		"Authentication-Results: (comment) MX.TEST;\r\n spf=pass\r\n" +
		"Authentication-Results: upstream.example; spf=fail\r\n" +
		"From: s@remote.test\r\nSubject: forged\r\n\r\nAuthentication-Results: mx.test; in the body stays\r\n"
	if err := e.send(t, "s@remote.test", []string{"bob@a.test"}, msg); err != nil {
		t.Fatalf("send = %v", err)
	}
	got := e.inbox(t, "bob@a.test")
	if len(got) != 1 {
		t.Fatalf("bob has %d messages, want 1", len(got))
	}
	body := string(got[0])
	want := "Return-Path: <s@remote.test>\r\nDelivered-To: bob@a.test\r\n" +
		"Authentication-Results: MX.test;\r\n\tspf=pass smtp.mailfrom=remote.test\r\nReceived: from client.test ([127.0.0.1])\r\n"
	if !strings.HasPrefix(body, want) {
		t.Errorf("stored message starts\n%q\nwant\n%q", body[:min(len(body), len(want)+40)], want)
	}
	if n := strings.Count(body, "Authentication-Results: "); n != 3 {
		t.Errorf("stored message has %d Authentication-Results, want ours, upstream's and the body's:\n%s", n, body)
	}
	if !strings.Contains(body, "\r\nAuthentication-Results: upstream.example; spf=fail\r\nFrom: s@remote.test\r\n") {
		t.Errorf("another ADMD's field was removed:\n%s", body)
	}
	auth.mu.Lock()
	defer auth.mu.Unlock()
	if auth.ip.String() != "127.0.0.1" || auth.helo != "client.test" || auth.mailFrom != "s@remote.test" || auth.body != msg {
		t.Errorf("Check got ip %v, helo %q, mail from %q, body %q; want the connection's and the message as sent", auth.ip, auth.helo, auth.mailFrom, auth.body)
	}
}

func TestRefuseInboundOverCap(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(map[bool]string{false: "off", true: "on"}[on], func(t *testing.T) {
			e := newEnv(t, func(c *Config) { c.RefuseInboundOverCap = on })
			ctx := context.Background()
			if _, err := e.st.SetTransferCap(ctx, e.partner.ID, "a.test", 1); err != nil {
				t.Fatal(err)
			}
			big := message("big", strings.Repeat(strings.Repeat("y", 62)+"\r\n", 17000))
			if err := e.send(t, "s@remote.test", []string{"bob@a.test"}, big); err != nil {
				t.Fatalf("first send = %v, want accepted (the cap was not used before it)", err)
			}
			want := "250 "
			if on {
				want = "451 4.7.1 "
			}
			for _, tc := range []struct{ name, rcpt, want string }{
				{"mailbox", "bob@a.test", want},
				{"alias", "info@a.test", want},
				{"another domain", "dave@b.test", "250 "},
				{"alias into another domain", "x@a.test", "250 "},
				{"unknown user is still unknown", "nobody@a.test", "550 5.1.1 "},
			} {
				t.Run(tc.name, func(t *testing.T) {
					r := e.dialRaw(t)
					r.cmd("EHLO client.test", "250 ")
					r.cmd("MAIL FROM:<s@remote.test>", "250 ")
					r.cmd("RCPT TO:<"+tc.rcpt+">", tc.want)
				})
			}
		})
	}
}
