package imapd

import (
	"bufio"
	"bytes"
	"compress/flate"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mailhost/mailhost/internal/dovecottest"
)

// Probes of imapd's framing from outside, over raw sockets, as an
// attacker or an odd client would send them: each must get a bounded
// answer at once, and what follows a refused command must not run as a
// command of its own.

// auditStep is what a probe sends, and what it waits for: a line that
// starts with want (when want is set), then, with closed, the end of the
// connection.
type auditStep struct {
	send   string
	want   string
	closed bool
}

// runSteps plays steps on rc, each answered within 5 s.
func runSteps(t *testing.T, rc *rawConn, steps []auditStep) {
	t.Helper()
	for i, s := range steps {
		if s.send != "" {
			rc.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.WriteString(rc.c, s.send); err != nil && !s.closed {
				t.Fatalf("step %d: write: %v", i, err)
			}
		}
		if s.want != "" {
			if got := waitLine(rc, s.want); got != "" {
				t.Fatalf("step %d (%.40q): %s", i, s.send, got)
			}
		}
		if s.closed {
			if err := waitClosed(rc); err != nil {
				t.Fatalf("step %d (%.40q): %v", i, s.send, err)
			}
		}
	}
}

// waitLine reads lines until one starts with want; it returns "" or what
// went wrong.
func waitLine(rc *rawConn, want string) string {
	var seen []string
	for {
		rc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		l, err := rc.r.ReadString('\n')
		l = strings.TrimRight(l, "\r\n")
		if strings.HasPrefix(l, want) {
			return ""
		}
		if len(l) > 200 {
			l = l[:100] + "..." + l[len(l)-60:]
		}
		seen = append(seen, l)
		if err != nil {
			return fmt.Sprintf("waiting for %q: %v after %q", want, err, seen)
		}
	}
}

// waitClosed reads until the server closes the connection, within 5 s,
// and fails on any tagged answer meanwhile (a command that ran).
func waitClosed(rc *rawConn) error {
	rc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		l, err := rc.r.ReadString('\n')
		if l != "" && !strings.HasPrefix(l, "* ") {
			return fmt.Errorf("before the close: %.80q", l)
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return fmt.Errorf("connection still open after 5 s")
			}
			return nil // EOF or reset
		}
	}
}

// TestAuditLimits: commands over a limit, sent without waiting for an
// answer as an attacker would, each on a fresh connection before or
// after login.
func TestAuditLimits(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true, noRateLimit: true})
	lit4k := strings.Repeat("v", 4096)
	plain := func(user, pass string) string {
		return base64.StdEncoding.EncodeToString([]byte("\x00" + user + "\x00" + pass))
	}
	nest := strings.Repeat("(", 3000)
	tests := []struct {
		name  string
		login bool
		steps []auditStep
	}{
		{"line of 2 MiB without CRLF", false, []auditStep{{send: "a NOOP " + strings.Repeat("x", 2<<20), want: "* BYE", closed: true}}},
		{"command of 60 KiB", false, []auditStep{
			{send: "a NOOP " + strings.Repeat("x", 60<<10) + "\r\n", want: "a BAD Command line too long"},
			{send: "b NOOP\r\n", want: "b OK"}}},
		{"tag of 10 KB", false, []auditStep{{send: strings.Repeat("t", 10_000) + " NOOP\r\n", want: strings.Repeat("t", 10_000) + " OK"}}},
		{"synchronizing literal of 4097 before login", false, []auditStep{
			{send: "a LOGIN {4097}\r\n", want: "a BAD [TOOBIG]"},
			{send: "b NOOP\r\n", want: "b OK"}}},
		{"non-synchronizing literal of 4097 before login", false, []auditStep{
			{send: "a LOGIN {4097+}\r\n" + strings.Repeat("x", 4097) + " y\r\n", want: "a BAD [TOOBIG]"},
			{send: "b NOOP\r\n", want: "b OK"}}},
		{"ID's synchronizing literal of 4097", false, []auditStep{
			{send: "a ID {4097}\r\n", want: "a NO [TOOBIG]"},
			{send: "b NOOP\r\n", want: "b OK"}}},
		// An APPEND before login is bounded as any other command: its
		// message is not read up to APPENDLIMIT (64 MiB) before the
		// answer that it needs a login, nor MULTIAPPEND's any number.
		{"APPEND of 200 KB before login", false, []auditStep{
			{send: "a APPEND INBOX {200000+}\r\n", want: "a BAD [TOOBIG]"},
			{send: strings.Repeat("x", 200_000) + "\r\nb NOOP\r\n", want: "b OK"}}},
		{"APPEND of 64 MiB before login", false, []auditStep{
			{send: "a APPEND INBOX {67108864+}\r\n" + strings.Repeat("x", 2<<20), want: "a BAD [TOOBIG]", closed: true}}},
		{"MULTIAPPEND of small messages before login", false, []auditStep{
			{send: "a APPEND INBOX {4096+}\r\n" + strings.Repeat(lit4k+" {4096+}\r\n", 100), want: "* BYE", closed: true}}},
		// Each literal within 4096 bytes, the lines between them short:
		// imapserver held them all (1.2 MB here, some 20 MB within the
		// line limit).
		{"ID with 300 literals of 4 KiB before login", false, []auditStep{
			{send: "a ID (" + strings.Repeat("\"k\" {4096+}\r\n"+lit4k+" ", 300) + "\"k\" \"v\")\r\n", want: "* BYE", closed: true}}},
		{"SEARCH with 300 literals of 4 KiB", true, []auditStep{
			{send: "a SEARCH " + strings.Repeat("TEXT {4096+}\r\n"+lit4k+" ", 300) + "ALL\r\n", want: "* BYE", closed: true}}},
		{"SEARCH with 8 literals of 4 KiB", true, []auditStep{
			{send: "a SEARCH " + strings.Repeat("TEXT {4096+}\r\n"+lit4k+" ", 8) + "ALL\r\n", want: "a OK"},
			{send: "b NOOP\r\n", want: "b OK"}}},
		{"APPEND over APPENDLIMIT", true, []auditStep{
			{send: "a APPEND INBOX {99999999999+}\r\n" + strings.Repeat("x", 1000), want: "a NO [TOOBIG]", closed: true}}},
		{"SEARCH with 3,000 parentheses", true, []auditStep{
			{send: "a SEARCH " + nest + "ALL\r\n", want: "a BAD [CLIENTBUG] Too many nested"},
			{send: "b NOOP\r\n", want: "b OK"}}},
		{"FETCH with 3,000 parentheses", true, []auditStep{
			{send: "a FETCH 1 " + nest + "\r\n", want: "a BAD [CLIENTBUG] Too many nested"},
			{send: "b NOOP\r\n", want: "b OK"}}},
		{"AUTHENTICATE cancelled", false, []auditStep{
			{send: "a AUTHENTICATE PLAIN\r\n", want: "+"},
			{send: "*\r\n", want: "a BAD"},
			{send: "b NOOP\r\n", want: "b OK"}}},
		{"AUTHENTICATE with bad base64", false, []auditStep{
			{send: "a AUTHENTICATE PLAIN\r\n", want: "+"},
			{send: "!!!!\r\n", want: "a BAD"},
			{send: "b NOOP\r\n", want: "b OK"}}},
		// The rest of a SASL response over imapserver's 4 KiB buffer was
		// read as the next command, the client's next command glued to
		// it.
		{"AUTHENTICATE with a response of 20 KB", false, []auditStep{
			{send: "a AUTHENTICATE PLAIN\r\n", want: "+"},
			{send: strings.Repeat("QUFB", 5000) + "\r\n", want: "a BAD [TOOBIG]"},
			{send: "b NOOP\r\n", want: "b OK"}}},
		{"AUTHENTICATE with a response of 120 KB", false, []auditStep{
			{send: "a AUTHENTICATE PLAIN\r\n", want: "+"},
			{send: strings.Repeat("QUFB", 30_000) + "\r\n", want: "* BYE", closed: true}}},
		{"AUTHENTICATE with a response ending as a literal", false, []auditStep{
			{send: "a AUTHENTICATE PLAIN\r\n", want: "+"},
			{send: "abc {5+}\r\n", want: "a BAD"},
			{send: "b NOOP\r\n", want: "b OK"}}},
		{"AUTHENTICATE with a response ending as a big literal", false, []auditStep{
			{send: "a AUTHENTICATE PLAIN\r\n", want: "+"},
			{send: "abc {99999}\r\n", want: "a BAD"},
			{send: "b NOOP\r\n", want: "b OK"}}},
		{"AUTHENTICATE, then a login", false, []auditStep{
			{send: "a AUTHENTICATE PLAIN\r\n", want: "+"},
			{send: plain(alice, password) + "\r\n", want: "a OK"},
			{send: "b SELECT INBOX\r\n", want: "b OK"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rc *rawConn
			if tt.login {
				rc = rawLogin(t, e)
				runSteps(t, rc, []auditStep{{send: "s SELECT INBOX\r\n", want: "s OK"}})
			} else {
				rc = dialRaw(t, e.addr)
			}
			start := time.Now()
			runSteps(t, rc, tt.steps)
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("answered after %v, want at once", took)
			}
		})
	}
	if n := e.srv.ServerBugs(); n != 0 {
		t.Errorf("ServerBugs() = %d, want 0", n)
	}
}

// TestAuditIdle: IDLE's DONE in pieces, something else than DONE, and a
// connection closed while idling.
func TestAuditIdle(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	for _, tt := range []struct {
		name  string
		steps []auditStep
	}{
		{"DONE in two packets", []auditStep{
			{send: "i IDLE\r\n", want: "+"},
			{send: "DO"},
			{send: "NE\r\n", want: "i OK"},
			{send: "b NOOP\r\n", want: "b OK"}}},
		// Dovecot answers "BAD Expected DONE" and goes on too.
		{"garbage instead of DONE", []auditStep{
			{send: "i IDLE\r\n", want: "+"},
			{send: "xyz\r\n", want: "i BAD"},
			{send: "b NOOP\r\n", want: "b OK"}}},
		{"a command instead of DONE", []auditStep{
			{send: "i IDLE\r\n", want: "+"},
			{send: "x LOGOUT\r\n", want: "i BAD"},
			{send: "b NOOP\r\n", want: "b OK"}}},
		// DONE is a line, no command: "{5+}" there announces nothing,
		// and the next command is not taken for a literal.
		{"DONE with a literal", []auditStep{
			{send: "i IDLE\r\n", want: "+"},
			{send: "DONE {5+}\r\n", want: "i BAD"},
			{send: "b NOOP\r\n", want: "b OK"}}},
		{"DONE with a literal over 4096", []auditStep{
			{send: "i IDLE\r\n", want: "+"},
			{send: "DONE {5000+}\r\n", want: "i BAD"},
			{send: "b NOOP\r\n", want: "b OK"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rc := rawLogin(t, e)
			runSteps(t, rc, []auditStep{{send: "s SELECT INBOX\r\n", want: "s OK"}})
			runSteps(t, rc, tt.steps)
		})
	}
	t.Run("closed while idling", func(t *testing.T) {
		rc := rawLogin(t, e)
		runSteps(t, rc, []auditStep{{send: "s SELECT INBOX\r\n", want: "s OK"}, {send: "i IDLE\r\n", want: "+"}})
		rc.c.Close()
		// The server goes on; Shutdown (in newEnv's cleanup) must not
		// wait for the closed session.
		rc2 := rawLogin(t, e)
		runSteps(t, rc2, []auditStep{{send: "b NOOP\r\n", want: "b OK"}})
	})
}

// TestAuditStartTLSInjection: what a client (or a man in the middle)
// sends in the clear after STARTTLS, before the handshake, never runs
// (CVE-2011-0411 in SMTP servers); STARTTLS is refused where it has no
// place.
func TestAuditStartTLSInjection(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, tt := range []struct{ name, injected string }{
		{"a command", "s2 ID NIL\r\n"},
		{"a login", fmt.Sprintf("s2 LOGIN %q %q\r\n", alice, password)},
		{"a command with a literal", "s2 ID (\"name\" {5+}\r\nhello)\r\n"},
		{"half a command", "s2 NO"},
		{"a second STARTTLS", "s2 STARTTLS\r\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rc := dialRaw(t, e.addr)
			runSteps(t, rc, []auditStep{{send: "s1 STARTTLS\r\n" + tt.injected, want: "s1 OK"}})
			tc := tls.Client(rc.c, e.clientTLS)
			tc.SetDeadline(time.Now().Add(5 * time.Second))
			if err := tc.Handshake(); err != nil {
				t.Fatalf("handshake: %v", err)
			}
			rc.c, rc.r = tc, bufio.NewReader(tc)
			lines := rc.send("s3 SELECT INBOX\r\n", "s3")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "s3 BAD") && !strings.HasPrefix(lines[0], "s3 NO") {
				t.Errorf("SELECT after STARTTLS = %q, want only s3's refusal (not logged in, nothing of s2)", lines)
			}
			lines = rc.send("s4 STARTTLS\r\n", "s4")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "s4 BAD") {
				t.Errorf("STARTTLS under TLS = %q, want BAD", lines)
			}
		})
	}
	t.Run("after login", func(t *testing.T) {
		e := newEnv(t, envOptions{insecureAuth: true})
		rc := rawLogin(t, e)
		runSteps(t, rc, []auditStep{{send: "a STARTTLS\r\n", want: "a BAD"}, {send: "b NOOP\r\n", want: "b OK"}})
	})
}

// TestAuditCompressPipelined: after COMPRESS DEFLATE the client
// compresses what follows the command's CRLF (RFC 4978 section 3), so
// bytes sent with the command are compressed data; clear text there ends
// the connection rather than running.
func TestAuditCompressPipelined(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	t.Run("compressed", func(t *testing.T) {
		rc := rawLogin(t, e)
		var z bytes.Buffer
		zw, _ := flate.NewWriter(&z, flate.BestSpeed)
		deflate := func(s string) []byte {
			z.Reset()
			zw.Write([]byte(s))
			zw.Flush()
			return bytes.Clone(z.Bytes())
		}
		rc.c.Write(append([]byte("c COMPRESS DEFLATE\r\n"), deflate("n NOOP\r\n")...))
		if got := waitLine(rc, "c OK"); got != "" {
			t.Fatal(got)
		}
		// rc.r is a ByteReader: the inflater reads no further than it
		// needs.
		zr := bufio.NewReader(flate.NewReader(rc.r))
		zc := &rawConn{t: t, c: rc.c, r: zr}
		if got := waitLine(zc, "n OK"); got != "" {
			t.Fatal(got)
		}
		rc.c.Write(deflate("c2 COMPRESS DEFLATE\r\n"))
		if got := waitLine(zc, "c2 NO [COMPRESSIONACTIVE]"); got != "" {
			t.Error(got)
		}
		// 4 MiB without a line end, a few KB on the wire: the limits
		// apply to what is inflated.
		rc.c.Write(deflate("b NOOP " + strings.Repeat("x", 4<<20)))
		if got := waitLine(zc, "* BYE"); got != "" {
			t.Error(got)
		}
		if err := waitClosed(zc); err != nil {
			t.Error(err)
		}
	})
	t.Run("clear text", func(t *testing.T) {
		rc := rawLogin(t, e)
		runSteps(t, rc, []auditStep{{send: "c COMPRESS DEFLATE\r\nn NOOP\r\n", want: "c OK"}})
		// What follows is compressed or nothing: the server closes
		// (the bytes are no DEFLATE stream) without a clear "n OK".
		rc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		rest, err := io.ReadAll(rc.r)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("connection still open 5 s after clear text following COMPRESS")
		}
		if bytes.Contains(rest, []byte("n OK")) {
			t.Errorf("after COMPRESS: %q, want no clear answer to n", rest)
		}
	})
}

// TestAuditLoginThrottle: the failed-login throttle holds for LOGIN and
// AUTHENTICATE alike, across connections (docs/security.md, decision
// 0015).
func TestAuditLoginThrottle(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true, maxFailures: 2})
	auth := func(pass string) string {
		return base64.StdEncoding.EncodeToString([]byte("\x00" + alice + "\x00" + pass))
	}
	rc := dialRaw(t, e.addr)
	runSteps(t, rc, []auditStep{
		{send: "a AUTHENTICATE PLAIN " + auth("wrong 1") + "\r\n", want: "a NO [AUTHENTICATIONFAILED]"},
		{send: fmt.Sprintf("b LOGIN %q %q\r\n", alice, "wrong 2"), want: "b NO [AUTHENTICATIONFAILED]"},
	})
	rc2 := dialRaw(t, e.addr)
	runSteps(t, rc2, []auditStep{
		{send: fmt.Sprintf("c LOGIN %q %q\r\n", alice, password), want: "c NO [UNAVAILABLE]"},
		{send: "d AUTHENTICATE PLAIN\r\n", want: "+"},
		{send: auth(password) + "\r\n", want: "d NO [UNAVAILABLE]"},
	})
}

// TestAuditShutdownDuringAuthenticate: a client that leaves AUTHENTICATE
// waiting for its response does not hold Shutdown up: imapserver held
// its response encoder while waiting, and Bye waited for the read's 30 s
// timeout.
func TestAuditShutdownDuringAuthenticate(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	rc := dialRaw(t, e.addr)
	runSteps(t, rc, []auditStep{{send: "a AUTHENTICATE PLAIN\r\n", want: "+"}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v after %v", err, time.Since(start))
	}
	if err := waitLine(rc, "* BYE"); err != "" {
		t.Error(err)
	}
}

// TestAuditSlowClients: a client that sends nothing, or a command a byte
// at a time, holds its connection only for imapserver's command read
// timeout (30 s from the start of the command, whatever arrives
// meanwhile), not as long as it keeps sending.
func TestAuditSlowClients(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the 30 s read timeout; run without -short")
	}
	const timeout = 30 * time.Second
	e := newEnv(t, envOptions{insecureAuth: true})
	for _, tt := range []struct {
		name, first string
		trickle     bool
	}{
		{"silent before login", "", false},
		{"a literal a byte a second", "a LOGIN {100}\r\n", true},
		{"a line a byte a second", "a NOOP", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rc := dialRaw(t, e.addr)
			start := time.Now()
			if tt.first != "" {
				runSteps(t, rc, []auditStep{{send: tt.first}})
			}
			closed := make(chan time.Duration, 1)
			go func() {
				rc.c.SetReadDeadline(time.Now().Add(timeout + 15*time.Second))
				io.Copy(io.Discard, rc.r)
				closed <- time.Since(start)
			}()
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case took := <-closed:
					if took < timeout-time.Second || took > timeout+10*time.Second {
						t.Errorf("closed after %v, want about %v", took, timeout)
					}
					return
				case <-tick.C:
					if tt.trickle {
						rc.c.SetWriteDeadline(time.Now().Add(time.Second))
						rc.c.Write([]byte("x"))
					}
				}
			}
		})
	}
}

// TestAuditStartTLSSilent: a client that asks for STARTTLS and sends no
// ClientHello is dropped after Config.HandshakeTimeout.
func TestAuditStartTLSSilent(t *testing.T) {
	const timeout = 300 * time.Millisecond
	e := newEnv(t, envOptions{handshakeTimeout: timeout})
	rc := dialRaw(t, e.addr)
	start := time.Now()
	runSteps(t, rc, []auditStep{{send: "a STARTTLS\r\n", want: "a OK", closed: true}})
	if took := time.Since(start); took < timeout/2 || took > timeout+3*time.Second {
		t.Errorf("closed after %v, want about %v", took, timeout)
	}
}

// TestAuditAgainstDovecot: where mailhost and Dovecot answer the same
// abuse alike (the class of the answer, and whether the connection goes
// on), both are held to it. They differ elsewhere, each bounded: a 10 KB
// tag (Dovecot: BYE; mailhost answers), "LOGIN {4097}" (Dovecot sends
// "+"; mailhost, which lists LITERAL-, BAD [TOOBIG]), a 20 KB SASL
// response (Dovecot closes; mailhost BAD [TOOBIG] and goes on), a bad
// base64 SASL response (Dovecot NO, mailhost BAD).
func TestAuditAgainstDovecot(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true, noRateLimit: true})
	d := dovecottest.Start(t, dovecottest.Options{})
	lit4k := strings.Repeat("v", 4096)
	tests := []struct {
		name  string
		login bool
		steps []auditStep
	}{
		{"IDLE ended by garbage", true, []auditStep{
			{send: "i IDLE\r\n", want: "+"},
			{send: "xyz\r\n", want: "i BAD"},
			{send: "b NOOP\r\n", want: "b OK"}}},
		{"AUTHENTICATE cancelled", false, []auditStep{
			{send: "a AUTHENTICATE PLAIN\r\n", want: "+"},
			{send: "*\r\n", want: "a BAD"},
			{send: "b NOOP\r\n", want: "b OK"}}},
		{"line of 2 MiB without CRLF", false, []auditStep{{send: "a NOOP " + strings.Repeat("x", 2<<20), want: "* BYE", closed: true}}},
		{"ID with 300 literals of 4 KiB", false, []auditStep{
			{send: "a ID (" + strings.Repeat("\"k\" {4096+}\r\n"+lit4k+" ", 300) + "\"k\" \"v\")\r\n", want: "* BYE", closed: true}}},
		{"SEARCH with 300 literals of 4 KiB", true, []auditStep{
			{send: "a SEARCH " + strings.Repeat("TEXT {4096+}\r\n"+lit4k+" ", 300) + "ALL\r\n", want: "* BYE", closed: true}}},
		{"FETCH with 3,000 parentheses", true, []auditStep{
			{send: "a FETCH 1 " + strings.Repeat("(", 3000) + "\r\n", want: "a BAD"},
			{send: "b NOOP\r\n", want: "b OK"}}},
		{"APPEND of 64 MiB before login", false, []auditStep{
			{send: "a APPEND INBOX {67108864+}\r\n" + strings.Repeat("x", 2<<20), want: "* BYE", closed: true}}},
	}
	for _, srv := range []struct{ name, addr, user string }{{"mailhost", e.addr, alice}, {"dovecot", d.IMAPAddr, dovecottest.User}} {
		for _, tt := range tests {
			t.Run(srv.name+"/"+tt.name, func(t *testing.T) {
				rc := dialRaw(t, srv.addr)
				if tt.login {
					runSteps(t, rc, []auditStep{
						{send: fmt.Sprintf("l LOGIN %q %q\r\n", srv.user, password), want: "l OK"},
						{send: "s SELECT INBOX\r\n", want: "s OK"}})
				}
				runSteps(t, rc, tt.steps)
			})
		}
	}
}
