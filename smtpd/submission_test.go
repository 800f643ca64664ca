package smtpd

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/mailhost/mailhost/credential"
	"github.com/mailhost/mailhost/mailstore"
)

const password = "correct horse battery"

// subEnv is a running submission server over a fixture's store, on a
// STARTTLS listener (addr) and an implicit TLS one (tlsAddr).
type subEnv struct {
	*env
	tlsAddr string
	client  *tls.Config // trusts the server's certificate
	queued  *atomic.Int32
}

// newSubmissionEnv starts NewSubmission with a certificate for mx.test,
// Logins over the store and an OnQueued counter; cfg may change the
// Config.
func newSubmissionEnv(t *testing.T, cfg func(*Config)) *subEnv {
	t.Helper()
	f := newFixture(t, t.TempDir())
	logs := &syncBuffer{}
	cert := selfSigned(t, "mx.test")
	queued := &atomic.Int32{}
	c := Config{
		Store:    f.st,
		Hostname: "mx.test",
		TLS:      &tls.Config{Certificates: []tls.Certificate{cert}},
		Logins:   credential.NewLogins(credential.LoginConfig{Accounts: f.st}),
		Logger:   slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:      func() time.Time { return testNow },
		OnQueued: func() { queued.Add(1) },
	}
	if cfg != nil {
		cfg(&c)
	}
	srv := NewSubmission(c)
	lns := make([]net.Listener, 2)
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
	}
	served := make(chan error, 2)
	go func() { served <- srv.Serve(lns[0]) }()
	go func() { served <- srv.ServeTLS(lns[1]) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown = %v", err)
		}
		for range 2 {
			if err := <-served; err != nil {
				t.Errorf("Serve = %v, want nil after Shutdown", err)
			}
		}
		if err := f.st.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	pool := x509.NewCertPool()
	pool.AddCert(cert.Leaf)
	return &subEnv{
		env:     &env{fixture: f, srv: srv, addr: lns[0].Addr().String(), logs: logs},
		tlsAddr: lns[1].Addr().String(),
		client:  &tls.Config{ServerName: "mx.test", RootCAs: pool},
		queued:  queued,
	}
}

// startTLS dials the STARTTLS listener with go-smtp's client and says EHLO
// inside TLS.
func (e *subEnv) startTLS(t *testing.T) *smtp.Client {
	t.Helper()
	c, err := smtp.DialStartTLS(e.addr, e.client)
	if err != nil {
		t.Fatalf("STARTTLS: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Hello("client.test"); err != nil {
		t.Fatalf("EHLO: %v", err)
	}
	return c
}

// login is startTLS then AUTH PLAIN as user.
func (e *subEnv) login(t *testing.T, user string) *smtp.Client {
	t.Helper()
	c := e.startTLS(t)
	if err := c.Auth(sasl.NewPlainClient("", user, password)); err != nil {
		t.Fatalf("AUTH PLAIN %s: %v", user, err)
	}
	return c
}

// submit sends one message as user on a new authenticated connection.
func (e *subEnv) submit(t *testing.T, user, from string, to []string, msg string) error {
	t.Helper()
	c := e.login(t, user)
	err := c.SendMail(from, to, strings.NewReader(msg))
	c.Quit()
	return err
}

// rawTLS connects to the implicit TLS listener and reads the greeting.
func (e *subEnv) rawTLS(t *testing.T) *raw {
	t.Helper()
	c, err := tls.Dial("tcp", e.tlsAddr, e.client)
	if err != nil {
		t.Fatalf("dial TLS: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	r := &raw{t: t, c: c, r: newReader(c)}
	r.expect("220 ")
	return r
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// outbound lists the whole queue.
func (f *fixture) outbound(t *testing.T) []mailstore.Outbound {
	t.Helper()
	q, _, err := f.st.OutboundEntries(context.Background(), mailstore.Page{})
	if err != nil {
		t.Fatalf("queue: %v", err)
	}
	return q
}

func (f *fixture) domain(t *testing.T, name string) mailstore.Domain {
	t.Helper()
	d, err := f.st.DomainByName(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// fromMsg is a message from the given From: header.
func fromMsg(from, subject string) string {
	return "From: " + from + "\r\nTo: someone\r\nSubject: " + subject + "\r\n\r\nbody\r\n"
}

func TestSubmissionAuth(t *testing.T) {
	e := newSubmissionEnv(t, nil)

	t.Run("PLAIN over STARTTLS", func(t *testing.T) {
		c := e.startTLS(t)
		if ok, mechs := c.Extension("AUTH"); !ok || mechs != "PLAIN LOGIN" {
			t.Fatalf("AUTH inside TLS = %v %q, want PLAIN LOGIN offered", ok, mechs)
		}
		if err := c.Auth(sasl.NewPlainClient("", "bob@a.test", password)); err != nil {
			t.Fatalf("AUTH PLAIN = %v", err)
		}
	})
	t.Run("PLAIN with the same authorization identity", func(t *testing.T) {
		c := e.startTLS(t)
		if err := c.Auth(sasl.NewPlainClient("BOB@a.test", "bob@a.test", password)); err != nil {
			t.Fatalf("AUTH PLAIN = %v", err)
		}
	})
	t.Run("PLAIN for another identity", func(t *testing.T) {
		c := e.startTLS(t)
		err := c.Auth(sasl.NewPlainClient("carol@a.test", "bob@a.test", password))
		if got := smtpCode(err); got != "535 5.7.8" {
			t.Errorf("AUTH PLAIN as carol with bob's password = %s, want 535 5.7.8", got)
		}
	})
	t.Run("LOGIN over STARTTLS", func(t *testing.T) {
		c := e.startTLS(t)
		if err := c.Auth(sasl.NewLoginClient("carol@a.test", password)); err != nil {
			t.Fatalf("AUTH LOGIN = %v", err)
		}
	})
	t.Run("PLAIN over implicit TLS", func(t *testing.T) {
		c, err := smtp.DialTLS(e.tlsAddr, e.client)
		if err != nil {
			t.Fatalf("dial TLS: %v", err)
		}
		defer c.Close()
		if err := c.Auth(sasl.NewPlainClient("", "dave@b.test", password)); err != nil {
			t.Fatalf("AUTH PLAIN = %v", err)
		}
		if err := c.SendMail("dave@b.test", []string{"bob@a.test"}, strings.NewReader(fromMsg("dave@b.test", "over 465"))); err != nil {
			t.Fatalf("send = %v", err)
		}
		got := e.inbox(t, "bob@a.test")
		if len(got) != 1 || !bytes.Contains(got[0], []byte("by mx.test with ESMTPSA id ")) {
			t.Fatalf("bob's INBOX = %q, want one message received with ESMTPSA", got)
		}
	})
	t.Run("LOGIN over implicit TLS, raw, without initial response", func(t *testing.T) {
		r := e.rawTLS(t)
		if got := r.cmd("EHLO client.test", "250 "); !strings.Contains(got, "AUTH PLAIN LOGIN") || strings.Contains(got, "STARTTLS") {
			t.Fatalf("EHLO over TLS = %q, want AUTH and no STARTTLS", got)
		}
		r.cmd("AUTH LOGIN", "334 "+b64("Username:"))
		r.cmd(b64("erin@b.test"), "334 "+b64("Password:"))
		r.cmd(b64(password), "235 2.0.0 ")
		r.cmd("MAIL FROM:<erin@b.test>", "250 ")
		r.cmd("AUTH PLAIN "+b64("\x00erin@b.test\x00"+password), "503 ")
	})
	t.Run("cancelled LOGIN", func(t *testing.T) {
		r := e.rawTLS(t)
		r.cmd("EHLO client.test", "250 ")
		r.cmd("AUTH LOGIN", "334 ")
		r.cmd("*", "501 ")
		r.cmd("MAIL FROM:<bob@a.test>", "530 5.7.0 ")
	})
	t.Run("unknown mechanism", func(t *testing.T) {
		r := e.rawTLS(t)
		r.cmd("EHLO client.test", "250 ")
		r.cmd("AUTH CRAM-MD5", "504 5.7.4 ")
	})
	t.Run("wrong password", func(t *testing.T) {
		c := e.startTLS(t)
		err := c.Auth(sasl.NewPlainClient("", "bob@a.test", "not-the-password-42"))
		if got := smtpCode(err); got != "535 5.7.8" {
			t.Errorf("AUTH with a wrong password = %s, want 535 5.7.8", got)
		}
		if strings.Contains(e.logs.String(), "not-the-password-42") {
			t.Errorf("the log holds the password:\n%s", e.logs.String())
		}
		if !strings.Contains(e.logs.String(), `"mechanism":"PLAIN","user":"bob@a.test","code":"535 5.7.8","err":"login bob@a.test: wrong password`) {
			t.Errorf("the log does not record the failed AUTH:\n%s", e.logs.String())
		}
	})
	t.Run("unknown user", func(t *testing.T) {
		c := e.startTLS(t)
		err := c.Auth(sasl.NewPlainClient("", "nobody@a.test", password))
		if got := smtpCode(err); got != "535 5.7.8" {
			t.Errorf("AUTH of an unknown user = %s, want 535 5.7.8", got)
		}
	})
	t.Run("MAIL before AUTH", func(t *testing.T) {
		c := e.startTLS(t)
		err := c.Mail("bob@a.test", nil)
		if got := smtpCode(err); got != "530 5.7.0" {
			t.Errorf("MAIL before AUTH = %s, want 530 5.7.0", got)
		}
	})
}

func TestSubmissionAuthBeforeTLS(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		e := newSubmissionEnv(t, nil)
		r := e.dialRaw(t)
		got := r.cmd("EHLO client.test", "250 ")
		if strings.Contains(got, "AUTH") || !strings.Contains(got, "STARTTLS") {
			t.Fatalf("EHLO before TLS = %q, want STARTTLS and no AUTH", got)
		}
		r.cmd("AUTH PLAIN "+b64("\x00bob@a.test\x00"+password), "538 5.7.11 ")
		r.cmd("AUTH LOGIN", "538 5.7.11 ")
		r.cmd("MAIL FROM:<bob@a.test>", "530 5.7.0 ")
	})
	t.Run("allowed", func(t *testing.T) {
		e := newSubmissionEnv(t, func(c *Config) { c.AllowInsecureAuth = true })
		r := e.dialRaw(t)
		if got := r.cmd("EHLO client.test", "250 "); !strings.Contains(got, "AUTH PLAIN LOGIN") {
			t.Fatalf("EHLO with insecure auth allowed = %q, want AUTH offered", got)
		}
		r.cmd("AUTH PLAIN "+b64("\x00bob@a.test\x00"+password), "235 ")
		r.cmd("MAIL FROM:<bob@a.test>", "250 ")
		r.cmd("RCPT TO:<carol@a.test>", "250 ")
		r.cmd("DATA", "354 ")
		r.send("From: bob@a.test", "Subject: plain", "", "x", ".")
		r.expect("250 ")
		got := e.inbox(t, "carol@a.test")
		if len(got) != 1 || !bytes.Contains(got[0], []byte("with ESMTPA id ")) {
			t.Fatalf("carol's INBOX = %q, want one message received with ESMTPA", got)
		}
	})
}

func TestSubmissionThrottled(t *testing.T) {
	e := newSubmissionEnv(t, func(c *Config) {
		c.Logins = credential.NewLogins(credential.LoginConfig{Accounts: c.Store, Guesses: credential.GuessLimits{
			Pair: credential.Budget{Burst: 2, PerHour: 1},
		}})
	})
	r := e.rawTLS(t)
	r.cmd("EHLO client.test", "250 ")
	// Distinct passwords: one sent again is not a new guess.
	for i := range 2 {
		r.cmd("AUTH PLAIN "+b64(fmt.Sprintf("\x00bob@a.test\x00wrong password %d", i)), "535 5.7.8 ")
	}
	// Throttled, even with the right password: 454, temporary.
	r.cmd("AUTH PLAIN "+b64("\x00bob@a.test\x00"+password), "454 4.7.0 ")
	// Another address from the same IP is not locked out yet.
	r.cmd("AUTH PLAIN "+b64("\x00carol@a.test\x00"+password), "235 ")
}

// TestSubmissionAuthSyntax: a SASL response that is not base64 is 501
// 5.5.2 (RFC 4954 section 4: MUST), not 454, which tells the client to
// try again later; AUTH without a mechanism is a syntax error, 501, not
// 502 (found by a protocol audit).
func TestSubmissionAuthSyntax(t *testing.T) {
	e := newSubmissionEnv(t, nil)
	r := e.rawTLS(t)
	r.cmd("EHLO client.test", "250 ")
	r.cmd("AUTH PLAIN !!!!", "501 5.5.2 ")
	r.cmd("AUTH PLAIN", "334 ")
	r.cmd("not base64!", "501 5.5.2 ")
	r.cmd("AUTH", "501 5.5.4 ")
	r.cmd("AUTH PLAIN", "334 ")
	r.cmd("*", "501 ")
	r.cmd("AUTH PLAIN "+b64("\x00bob@a.test\x00"+password), "235 ")
}

func TestSubmissionAccount(t *testing.T) {
	e := newSubmissionEnv(t, nil)
	ctx := context.Background()

	t.Run("suspended domain cannot log in", func(t *testing.T) {
		if _, err := e.st.SetSuspended(ctx, e.partner.ID, "b.test", true); err != nil {
			t.Fatal(err)
		}
		defer e.st.SetSuspended(ctx, e.partner.ID, "b.test", false)
		c := e.startTLS(t)
		err := c.Auth(sasl.NewPlainClient("", "dave@b.test", password))
		if got := smtpCode(err); got != "535 5.7.8" {
			t.Errorf("AUTH in a suspended domain = %s, want 535 5.7.8", got)
		}
	})
	t.Run("suspended after AUTH", func(t *testing.T) {
		c := e.login(t, "dave@b.test")
		if _, err := e.st.SetSuspended(ctx, e.partner.ID, "b.test", true); err != nil {
			t.Fatal(err)
		}
		defer e.st.SetSuspended(ctx, e.partner.ID, "b.test", false)
		if got := smtpCode(c.Mail("dave@b.test", nil)); got != "550 5.7.1" {
			t.Errorf("MAIL after the domain was suspended = %s, want 550 5.7.1", got)
		}
	})
	t.Run("mailbox deleted after AUTH", func(t *testing.T) {
		c := e.login(t, "erin@b.test")
		if err := e.st.DeleteMailbox(ctx, e.partner.ID, "erin@b.test"); err != nil {
			t.Fatal(err)
		}
		if got := smtpCode(c.Mail("erin@b.test", nil)); got != "550 5.7.1" {
			t.Errorf("MAIL after the mailbox was deleted = %s, want 550 5.7.1", got)
		}
	})
	t.Run("last login recorded", func(t *testing.T) {
		e.login(t, "carol@a.test")
		m, _, err := e.st.MailboxByEmail(ctx, "carol@a.test")
		if err != nil {
			t.Fatal(err)
		}
		if !m.LastLogin.Equal(testNow) {
			t.Errorf("carol's last login = %v, want %v", m.LastLogin, testNow)
		}
	})
}

// TestSenderOwnership checks the rule of policy.MaySendAs as the server
// applies it, to MAIL FROM and to the From: header. The fixture: info@a.test
// is bob's alias, @b.test is dave's catch-all, x@a.test reaches dave
// through it.
func TestSenderOwnership(t *testing.T) {
	e := newSubmissionEnv(t, nil)
	for _, tc := range []struct {
		name, user, addr string
		ok               bool
	}{
		{"own address", "bob@a.test", "bob@a.test", true},
		{"own address, other case", "bob@a.test", "Bob@A.TEST", true},
		{"alias source", "bob@a.test", "info@a.test", true},
		{"alias through a catch-all", "dave@b.test", "x@a.test", true},
		{"another user", "bob@a.test", "carol@a.test", false},
		{"another user's alias", "carol@a.test", "info@a.test", false},
		{"a user of another domain", "bob@a.test", "dave@b.test", false},
		{"a remote address", "bob@a.test", "someone@remote.test", false},
		{"alias to a remote address", "bob@a.test", "fwd@a.test", false},
		{"address taken only by the catch-all", "dave@b.test", "ceo@b.test", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := "553 5.7.1 "
			if tc.ok {
				want = "250 "
			}
			t.Run("MAIL FROM", func(t *testing.T) {
				r := e.rawTLS(t)
				r.cmd("EHLO client.test", "250 ")
				r.cmd("AUTH PLAIN "+b64("\x00"+tc.user+"\x00"+password), "235 ")
				r.cmd("MAIL FROM:<"+tc.addr+">", want)
			})
			t.Run("From header", func(t *testing.T) {
				// The envelope is the user's own; only the header differs.
				err := e.submit(t, tc.user, tc.user, []string{"carol@a.test"}, fromMsg("Someone <"+tc.addr+">", tc.name))
				if tc.ok && err != nil {
					t.Errorf("From: %s as %s = %v, want accepted", tc.addr, tc.user, err)
				}
				if got := smtpCode(err); !tc.ok && got != "553 5.7.1" {
					t.Errorf("From: %s as %s = %s, want 553 5.7.1", tc.addr, tc.user, got)
				}
			})
		})
	}

	for _, tc := range []struct{ name, msg, want string }{
		{"every address of the list is checked", fromMsg("bob@a.test, carol@a.test", "two"), "553 5.7.1"},
		{"every From field is checked", "From: bob@a.test\r\n" + fromMsg("carol@a.test", "two fields"), "553 5.7.1"},
		{"encoded display name", fromMsg("=?utf-8?q?B=C3=B6b?= <bob@a.test>", "name"), ""},
		{"folded field", "From: Bob\r\n <bob@a.test>\r\nSubject: folded\r\n\r\nx\r\n", ""},
		{"no From", "Subject: none\r\n\r\nx\r\n", "550 5.6.0"},
		{"unparseable From", fromMsg("bob@", "broken"), "550 5.6.0"},
		// The audit's case: a line that is neither a field nor a
		// continuation ended the header here, but not for the DKIM
		// signer, which then covered the hidden From.
		{"From hidden after a line that is not a field",
			"From: bob@a.test\r\nX-Break\r\nFrom: ceo@a.test\r\nSubject: x\r\n\r\nbody\r\n", "550 5.6.0"},
		{"line that is not a field in the header", "From: bob@a.test\r\nX-Break\r\nSubject: x\r\n\r\nbody\r\n", "550 5.6.0"},
		{"body without the empty line", "From: bob@a.test\r\nSubject: x\r\nbody\r\n", "550 5.6.0"},
		{"header only", "From: bob@a.test\r\nSubject: no body\r\n", ""},
		// A parser that breaks lines at a bare CR would see a second From.
		{"From hidden after a bare CR", "From: bob@a.test\r\nX-A: 1\rFrom: ceo@a.test\r\nSubject: x\r\n\r\nbody\r\n", "550 5.6.0"},
		{"bare CR at the end of a field", "From: bob@a.test\r\nSubject: x\r\rFrom: ceo@a.test\r\n\r\nbody\r\n", "550 5.6.0"},
		{"bare CR in the body", "From: bob@a.test\r\nSubject: x\r\n\r\nbo\rdy\r\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := e.submit(t, "bob@a.test", "bob@a.test", []string{"carol@a.test"}, tc.msg)
			if tc.want == "" && err != nil {
				t.Errorf("send = %v, want accepted", err)
			}
			if got := smtpCode(err); tc.want != "" && got != tc.want {
				t.Errorf("send = %s, want %s", got, tc.want)
			}
		})
	}

	t.Run("null sender", func(t *testing.T) {
		if err := e.submit(t, "bob@a.test", "", []string{"carol@a.test"}, fromMsg("bob@a.test", "receipt")); err != nil {
			t.Errorf("send with MAIL FROM:<> = %v, want accepted", err)
		}
	})
}

// fakeSigner prepends a field naming the domain it signed for.
type fakeSigner struct{ fail bool }

func (s fakeSigner) Sign(ctx context.Context, d mailstore.Domain, msg []byte) ([]byte, error) {
	if s.fail {
		return nil, errors.New("no key")
	}
	return append([]byte("DKIM-Signature: v=1; d="+d.Name+"; test\r\n"), msg...), nil
}

func TestSubmissionLocalAndRemote(t *testing.T) {
	e := newSubmissionEnv(t, func(c *Config) { c.Signer = fakeSigner{} })
	msg := "From: Bob <info@a.test>\r\nTo: carol@a.test, x@elsewhere.test\r\n" +
		"Authentication-Results: mx.test; dkim=pass (forged)\r\nSubject: mixed\r\n\r\nhello\r\n"
	rcpts := []string{"carol@a.test", "x@elsewhere.test", "y@elsewhere.test", "z@other.test", "fwd@a.test"}
	if err := e.submit(t, "bob@a.test", "bob@a.test", rcpts, msg); err != nil {
		t.Fatalf("send = %v", err)
	}

	got := e.inbox(t, "carol@a.test")
	if len(got) != 1 {
		t.Fatalf("carol has %d messages, want 1", len(got))
	}
	body := string(got[0])
	head, _, _ := strings.Cut(body, "\r\n\r\n")
	for _, want := range []string{
		"DKIM-Signature: v=1; d=a.test; test\r\nReceived: by mx.test with ESMTPSA id ",
		";\r\n\tSun, 22 Nov 2026 09:30:00 +0000\r\nFrom: Bob <info@a.test>\r\n",
		"\r\nDate: Sun, 22 Nov 2026 09:30:00 +0000\r\n",
		"\r\nMessage-ID: <",
	} {
		if !strings.Contains(head, want) {
			t.Errorf("stored header lacks %q:\n%s", want, head)
		}
	}
	for _, unwanted := range []string{"127.0.0.1", "client.test", "Return-Path", "Authentication-Results"} {
		if strings.Contains(head, unwanted) {
			t.Errorf("stored header holds %q:\n%s", unwanted, head)
		}
	}
	if !strings.HasPrefix(body, "DKIM-Signature: ") {
		t.Errorf("stored body does not start with the signature:\n%s", head)
	}

	a := e.domain(t, "a.test")
	q := e.outbound(t)
	if len(q) != 3 {
		t.Fatalf("queue has %d entries, want 3 (one per destination domain): %+v", len(q), q)
	}
	want := map[string][]string{"elsewhere.test": {"x@elsewhere.test", "y@elsewhere.test"}, "other.test": {"z@other.test"}, "remote.test": {"someone@remote.test"}}
	for _, o := range q {
		if o.Kind != mailstore.KindSubmission || o.DomainID != a.ID || o.From != "bob@a.test" || o.Held {
			t.Errorf("queue entry %+v, want a submission of a.test from bob@a.test", o)
		}
		if got := strings.Join(o.Pending(), ","); got != strings.Join(want[o.Destination], ",") {
			t.Errorf("queue entry for %s has %s, want %v", o.Destination, got, want[o.Destination])
		}
		b, err := e.st.OutboundBody(context.Background(), o.ID)
		if err != nil || string(b) != body {
			t.Errorf("queued body of %d = %v, want the body stored for carol", o.ID, err)
		}
	}
	if n := e.queued.Load(); n != 1 {
		t.Errorf("OnQueued called %d times, want 1", n)
	}
	tr, err := e.st.Transfer(context.Background(), a.ID, mailstore.Month(testNow))
	if err != nil {
		t.Fatal(err)
	}
	if tr.OutBytes != int64(len(body)) {
		t.Errorf("a.test outbound transfer = %d, want %d", tr.OutBytes, len(body))
	}

	t.Run("local only, nothing queued", func(t *testing.T) {
		if err := e.submit(t, "bob@a.test", "bob@a.test", []string{"carol@a.test"}, fromMsg("bob@a.test", "local")); err != nil {
			t.Fatalf("send = %v", err)
		}
		if n := e.queued.Load(); n != 1 {
			t.Errorf("OnQueued called %d times, want still 1", n)
		}
	})
	t.Run("recipient refusals", func(t *testing.T) {
		if _, err := e.st.SetQuota(context.Background(), e.partner.ID, "erin@b.test", 1); err != nil {
			t.Fatal(err)
		}
		r := e.rawTLS(t)
		r.cmd("EHLO client.test", "250 ")
		r.cmd("AUTH PLAIN "+b64("\x00bob@a.test\x00"+password), "235 ")
		r.cmd("MAIL FROM:<bob@a.test> SIZE=2000000", "250 ")
		r.cmd("RCPT TO:<nobody@a.test>", "550 5.1.1 ")
		r.cmd("RCPT TO:<erin@b.test>", "452 4.2.2 ")
		r.cmd("RCPT TO:<loop1@a.test>", "550 5.4.6 ")
		r.cmd("RCPT TO:<bad..address@elsewhere.test>", "501 5.1.3 ")
		r.cmd("RCPT TO:<anyone@b.test>", "250 ")
	})
}

func TestSubmissionSignerFails(t *testing.T) {
	e := newSubmissionEnv(t, func(c *Config) { c.Signer = fakeSigner{fail: true} })
	err := e.submit(t, "bob@a.test", "bob@a.test", []string{"carol@a.test", "x@elsewhere.test"}, fromMsg("bob@a.test", "unsigned"))
	if got := smtpCode(err); got != "451 4.3.0" {
		t.Errorf("send with a failing signer = %s, want 451 4.3.0", got)
	}
	if n := len(e.inbox(t, "carol@a.test")); n != 0 {
		t.Errorf("carol has %d messages, want none", n)
	}
}

func TestSubmissionTransferCap(t *testing.T) {
	e := newSubmissionEnv(t, nil)
	ctx := context.Background()
	if _, err := e.st.SetTransferCap(ctx, e.partner.ID, "a.test", 1); err != nil {
		t.Fatal(err)
	}
	// The first message takes a.test past its 1 MB: the cap is checked
	// on what was used before it.
	big := fromMsg("bob@a.test", "big") + strings.Repeat(strings.Repeat("x", 62)+"\r\n", 17000)
	if err := e.submit(t, "bob@a.test", "bob@a.test", []string{"x@elsewhere.test"}, big); err != nil {
		t.Fatalf("first send = %v", err)
	}
	for _, tc := range []struct {
		name string
		to   []string
	}{
		{"remote", []string{"x@elsewhere.test"}},
		{"local", []string{"carol@a.test"}},
		{"both", []string{"carol@a.test", "y@elsewhere.test"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := e.submit(t, "bob@a.test", "bob@a.test", tc.to, fromMsg("bob@a.test", "over"))
			if got := smtpCode(err); got != "451 4.7.1" {
				t.Errorf("send over the cap = %s, want 451 4.7.1", got)
			}
		})
	}
	// Refused at MAIL already: the client need not send the message.
	c := e.login(t, "bob@a.test")
	if err := c.Mail("bob@a.test", nil); smtpCode(err) != "451 4.7.1" {
		t.Errorf("MAIL over the cap = %v, want 451 4.7.1", err)
	}
	c.Quit()
	if n := len(e.inbox(t, "carol@a.test")); n != 0 {
		t.Errorf("carol has %d messages, want none", n)
	}
	if q := e.outbound(t); len(q) != 1 {
		t.Errorf("queue has %d entries, want only the first message's", len(q))
	}
	if n := e.queued.Load(); n != 1 {
		t.Errorf("OnQueued called %d times, want 1", n)
	}
	// Other domains are not affected.
	if err := e.submit(t, "dave@b.test", "dave@b.test", []string{"x@elsewhere.test"}, fromMsg("dave@b.test", "fine")); err != nil {
		t.Errorf("send from b.test = %v", err)
	}
}

// TestImplicitTLSListeners checks both ways to serve implicit TLS:
// ServeTLS, which keeps the per-IP limit (closing the connection over it
// before the handshake), and a tls.NewListener given to Serve.
func TestImplicitTLSListeners(t *testing.T) {
	e := newSubmissionEnv(t, func(c *Config) { c.MaxConnsPerIP = 1 })
	t.Run("ServeTLS over the per-IP limit", func(t *testing.T) {
		e.rawTLS(t)
		c, err := net.Dial("tcp", e.tlsAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := c.Read(make([]byte, 64)); n != 0 || err == nil {
			t.Errorf("connection over the limit read %d bytes, %v; want it closed without a reply", n, err)
		}
	})
	t.Run("ServeTLS bounds the handshake", func(t *testing.T) {
		e := newSubmissionEnv(t, func(c *Config) { c.HandshakeTimeout = 200 * time.Millisecond })
		c, err := net.Dial("tcp", e.tlsAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := c.Read(make([]byte, 64)); n != 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("connection without a ClientHello read %d bytes, %v; want it closed by the server", n, err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("connection without a ClientHello closed after %v, want about 200 ms", d)
		}
		e.rawTLS(t) // a client that does the handshake is served
	})
	t.Run("tls.NewListener given to Serve", func(t *testing.T) {
		cert := selfSigned(t, "mx.test")
		srv := NewSubmission(Config{
			Store: e.st, Hostname: "mx.test", Now: func() time.Time { return testNow },
			Logins: credential.NewLogins(credential.LoginConfig{Accounts: e.st}),
		})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}})) }()
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			srv.Shutdown(ctx)
			<-served
		}()
		pool := x509.NewCertPool()
		pool.AddCert(cert.Leaf)
		c, err := smtp.DialTLS(ln.Addr().String(), &tls.Config{ServerName: "mx.test", RootCAs: pool})
		if err != nil {
			t.Fatalf("dial TLS: %v", err)
		}
		defer c.Close()
		if err := c.Auth(sasl.NewPlainClient("", "bob@a.test", password)); err != nil {
			t.Fatalf("AUTH over a TLS listener given to Serve = %v", err)
		}
		if err := c.SendMail("bob@a.test", []string{"carol@a.test"}, strings.NewReader(fromMsg("bob@a.test", "tls listener"))); err != nil {
			t.Fatalf("send = %v", err)
		}
		c.Quit()
	})
}

// TestSubmissionConnsPerUserIP: a mailbox's authenticated connections from
// one address stop at MaxConnsPerUserIP (454 4.7.0 to AUTH, the
// connection stays usable); a colleague behind the same address is not
// affected, and a slot comes back when a connection ends.
func TestSubmissionConnsPerUserIP(t *testing.T) {
	e := newSubmissionEnv(t, func(c *Config) { c.MaxConnsPerUserIP = 2 })
	auth := func(r *raw, user, want string) {
		t.Helper()
		r.cmd("AUTH PLAIN "+b64("\x00"+user+"\x00"+password), want)
	}
	first := e.rawTLS(t)
	first.cmd("EHLO client.test", "250 ")
	auth(first, "bob@a.test", "235 ")
	second := e.rawTLS(t)
	second.cmd("EHLO client.test", "250 ")
	auth(second, "bob@a.test", "235 ")
	third := e.rawTLS(t)
	third.cmd("EHLO client.test", "250 ")
	auth(third, "bob@a.test", "454 4.7.0 ")
	auth(third, "carol@a.test", "235 ")

	first.cmd("QUIT", "221 ")
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := e.rawTLS(t)
		r.cmd("EHLO client.test", "250 ")
		r.send("AUTH PLAIN " + b64("\x00bob@a.test\x00"+password))
		got := r.reply()
		if strings.HasPrefix(got, "235 ") {
			break
		}
		if !strings.HasPrefix(got, "454 4.7.0 ") || time.Now().After(deadline) {
			t.Fatalf("AUTH after a connection of bob ended = %q, want 235", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
