package outbound

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/mailhost/mailhost/mailstore"
)

const (
	relayUser = "mailhost@relay.test"
	relayPass = "s3cret-relay-pass"
)

// relayAuth sets the Sender to log in to relay.
func relayAuth(relay *relayServer, pass string) func(*Config) {
	return func(c *Config) {
		c.Relay = relay.addr
		c.RelayUsername, c.RelayPassword = relayUser, pass
		c.Workers = 1
	}
}

// The relay offers AUTH only after STARTTLS: the Sender starts TLS, logs
// in with PLAIN once, and sends every message on that session.
func TestRelayAuthPlain(t *testing.T) {
	f := newFixture(t)
	relay := newRelay(t, relayOptions{tls: selfSigned(t), mechs: []string{"PLAIN", "LOGIN"}, user: relayUser, pass: relayPass})
	clk := newClock()
	for i := range 3 {
		f.queue(clk.Now(), f.submission(fmt.Sprintf("u%d@remote.test", i)), message(fmt.Sprintf("m%d", i)))
	}
	e := f.start(clk, relayAuth(relay, relayPass))
	for _, got := range relay.waitMessages(t, 3) {
		if !got.tls {
			t.Errorf("message %q sent without TLS", got.to)
		}
	}
	f.waitEmpty()
	relay.mu.Lock()
	logins := slices.Clone(relay.logins)
	relay.mu.Unlock()
	if want := []string{"PLAIN " + relayUser}; !slices.Equal(logins, want) {
		t.Errorf("logins %q, want %q (one, reused)", logins, want)
	}
	if a := relay.accepted(); a != 1 {
		t.Errorf("%d connections, want 1", a)
	}
	// In plain text the relay saw only EHLO and STARTTLS.
	if got := relay.commands()[0]; !slices.Equal(got, []string{"EHLO", "STARTTLS"}) {
		t.Errorf("plain-text commands %v, want EHLO, STARTTLS", got)
	}
	stopClean(t, e, relay)
	if strings.Contains(e.logs.String(), relayPass) {
		t.Errorf("the log shows the password")
	}
}

// A relay that offers only LOGIN gets LOGIN.
func TestRelayAuthLogin(t *testing.T) {
	f := newFixture(t)
	relay := newRelay(t, relayOptions{tls: selfSigned(t), mechs: []string{"LOGIN"}, user: relayUser, pass: relayPass})
	clk := newClock()
	f.queue(clk.Now(), f.submission("x@remote.test"), message("login"))
	e := f.start(clk, relayAuth(relay, relayPass))
	if got := relay.waitMessages(t, 1)[0]; !got.tls || !strings.Contains(got.body, "Subject: login") {
		t.Errorf("relay got tls=%v %q, want the message over TLS", got.tls, got.body)
	}
	f.waitEmpty()
	relay.mu.Lock()
	logins := slices.Clone(relay.logins)
	relay.mu.Unlock()
	if want := []string{"LOGIN " + relayUser}; !slices.Equal(logins, want) {
		t.Errorf("logins %q, want %q", logins, want)
	}
	stopClean(t, e, relay)
}

// A relay on a loopback address may get the password without TLS.
func TestRelayAuthLoopbackClearText(t *testing.T) {
	f := newFixture(t)
	relay := newRelay(t, relayOptions{insecureAuth: true, mechs: []string{"PLAIN"}, user: relayUser, pass: relayPass})
	clk := newClock()
	f.queue(clk.Now(), f.submission("x@remote.test"), message("local relay"))
	e := f.start(clk, relayAuth(relay, relayPass))
	relay.waitMessages(t, 1)
	f.waitEmpty()
	if got := relay.commands()[0]; !slices.Equal(got[:4], []string{"EHLO", "AUTH", "MAIL", "RCPT"}) {
		t.Errorf("commands %v, want EHLO, AUTH, MAIL, RCPT, ...", got)
	}
	stopClean(t, e, relay)
}

// Failures to log in defer the mail, whatever the reply: nothing
// bounces, the entry waits for its retry, and the attempt is logged as a
// warning that says what to fix, without the password.
func TestRelayAuthFailureDefers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  relayOptions
		pass  string
		reply []string // what the recorded error says
	}{
		{"wrong password", relayOptions{mechs: []string{"PLAIN"}}, "wrong-password",
			[]string{"535 5.7.8", "relay refused the login", relayUser, "relay_password"}},
		{"no AUTH", relayOptions{}, relayPass, []string{"relay offers no AUTH"}},
		{"no PLAIN nor LOGIN", relayOptions{mechs: []string{"CRAM-MD5"}}, relayPass, []string{"neither PLAIN nor LOGIN"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tc.opts.tls = selfSigned(t)
			tc.opts.user, tc.opts.pass = relayUser, relayPass
			relay := newRelay(t, tc.opts)
			clk := newClock()
			f.queue(clk.Now(), f.submission("x@remote.test"), message("held back"))
			e := f.start(clk, relayAuth(relay, tc.pass))
			got := f.waitAttempts(1)
			if got.Recipients[0].State != mailstore.RecipientPending || !got.NextAttempt.After(clk.Now()) {
				t.Errorf("entry %+v, want its recipient pending and a retry later", got)
			}
			for _, want := range tc.reply {
				if !strings.Contains(got.LastError, want) {
					t.Errorf("recorded error %q lacks %q", got.LastError, want)
				}
			}
			waitFor(t, "the attempt's log line", func() bool { return strings.Contains(e.logs.String(), "msg=attempt") })
			line := logLine(e.logs.String(), "msg=attempt")
			if !strings.Contains(line, "level=WARN") || !strings.Contains(line, "result=deferred") {
				t.Errorf("attempt logged as %q, want a warning that it was deferred", line)
			}
			stopClean(t, e, relay)
			if n := len(f.inbox("bob@a.test")); n != 0 {
				t.Errorf("the sender got %d messages (bounces), want none", n)
			}
			if n := len(relay.messages()); n != 0 {
				t.Errorf("relay got %d messages, want none", n)
			}
			if strings.Contains(e.logs.String(), tc.pass) || strings.Contains(got.LastError, tc.pass) {
				t.Errorf("the password shows in the log or the queue")
			}
		})
	}
}

// With no TLS, the password goes only to a loopback address.
func TestClearTextLoginAllowed(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:25", true},
		{"127.1.2.3:587", true},
		{"[::1]:587", true},
		{"[::ffff:127.0.0.1]:25", true},
		{"10.0.0.1:587", false},
		{"192.168.1.10:25", false},
		{"[2001:db8::1]:587", false},
		{"0.0.0.0:25", false},
		{"localhost:25", false},
		{"relay.example.net:587", false},
		{"127.0.0.1", false},
		{"", false},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			if got := clearTextLoginAllowed(tc.addr); got != tc.want {
				t.Errorf("clearTextLoginAllowed(%q) = %v, want %v", tc.addr, got, tc.want)
			}
		})
	}
}

// A session without TLS to a relay that is not on loopback does not log
// in: the password is not sent, and the failure is temporary. (A real
// non-loopback relay is out of a test's reach, so login is called with
// the address the rule sees.)
func TestLoginRefusedInClearText(t *testing.T) {
	relay := newRelay(t, relayOptions{insecureAuth: true, mechs: []string{"PLAIN"}, user: relayUser, pass: relayPass})
	s := New(Config{Relay: "relay.example.net:587", RelayUsername: relayUser, RelayPassword: relayPass, Hostname: "out.a.test"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, nc, err := s.dial(ctx, relay.addr)
	if err != nil {
		t.Fatal(err)
	}
	cs := &clientSession{c: c, nc: nc, key: sessionKey(relay.addr, "relay.example.net", false)}
	r, sane := s.login(ctx, cs, "192.0.2.1:587", "relay.example.net")
	hangUp(cs, time.Second)
	if r == nil || r.permanent() || r.Enhanced != (smtp.EnhancedCode{4, 7, 10}) || !sane || !strings.Contains(r.Text, "clear text") {
		t.Errorf("login = %+v (sane %v), want a temporary 4.7.10 refusal to send the password in clear text", r, sane)
	}
	waitFor(t, "the session to end", func() bool { return relay.open() == 0 })
	if n := relay.count("AUTH"); n != 0 {
		t.Errorf("%d AUTH commands, want none", n)
	}
}

// A refused login ends the attempt: the relay's other addresses would
// refuse it too, and relays lock out accounts that fail too often.
func TestRelayAuthRefusedOncePerAttempt(t *testing.T) {
	f := newFixture(t)
	relay := newRelay(t, relayOptions{tls: selfSigned(t), mechs: []string{"PLAIN"}, user: relayUser, pass: relayPass})
	clk := newClock()
	f.queue(clk.Now(), f.submission("x@remote.test"), message("held back"))
	e := f.start(clk, func(c *Config) {
		relayAuth(relay, "wrong-password")(c)
		c.Relay = fmt.Sprintf("relay.test:%d", relay.port)
		c.Resolver = resolver{addrs: map[string][]net.IPAddr{"relay.test": {loopback[0], loopback[0], loopback[0]}}}
	})
	f.waitAttempts(1)
	stopClean(t, e, relay)
	relay.mu.Lock()
	defer relay.mu.Unlock()
	if len(relay.failed) != 1 || len(relay.logins) != 0 {
		t.Errorf("logins refused %v, accepted %v; want one refused for the attempt, over 3 addresses", relay.failed, relay.logins)
	}
}
