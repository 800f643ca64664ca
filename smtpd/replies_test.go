package smtpd

import (
	"strings"
	"testing"
)

// TestLongBodyLine: body lines of 64 KiB and more are accepted and stored
// byte for byte (a limit of 2,000 bytes would bounce unwrapped HTML
// mail with 500 5.5.2); lines of data stay bounded
// (maxDataLineLength), and command lines keep their own, smaller limit
// (TestLongLine).
func TestLongBodyLine(t *testing.T) {
	e := newEnv(t, nil)
	for _, n := range []int{2000, 64 << 10, 200 << 10} {
		line := strings.Repeat("<p>x</p>", n/8)
		msg := "Subject: long\r\n\r\n" + line + "\r\nshort\r\n"
		if err := e.send(t, "s@remote.test", []string{"bob@a.test"}, msg); err != nil {
			t.Fatalf("send a %d-byte line: %v", n, err)
		}
		got := e.inbox(t, "bob@a.test")
		if last := got[len(got)-1]; !strings.HasSuffix(string(last), msg) {
			t.Errorf("stored message with a %d-byte line does not end with the message sent", n)
		}
	}
	r := e.dialRaw(t)
	r.cmd("EHLO client.test", "250 ")
	r.cmd("MAIL FROM:<s@remote.test>", "250 ")
	r.cmd("RCPT TO:<bob@a.test>", "250 ")
	r.cmd("DATA", "354 ")
	r.write("Subject: too long\r\n\r\n" + strings.Repeat("x", maxDataLineLength+1))
	r.expect("500 5.5.2 ")
}

// TestSizeOver32Bits: a SIZE= that does not fit 32 bits is a size over
// the limit (552 5.3.4, RFC 1870 section 6), not a syntax error (issue
// 11: it was 501 5.5.4); a SIZE= that is no number stays 501.
func TestSizeOver32Bits(t *testing.T) {
	e := newEnv(t, nil)
	for _, tc := range []struct{ size, want string }{
		{"4294967296", "552 5.3.4 "},
		{"18446744073709551615", "552 5.3.4 "},
		{"99999999999999999999999999", "552 5.3.4 "},
		{"52428801", "552 5.3.4 "},
		{"12ab", "501 5.5.4 "},
		{"1000", "250 "},
	} {
		r := e.dialRaw(t)
		r.cmd("EHLO client.test", "250 ")
		r.cmd("MAIL FROM:<s@remote.test> SIZE="+tc.size, tc.want)
		r.cmd("QUIT", "221 ")
	}
}

// TestPostmaster: RCPT TO:<postmaster>, in any case and without a
// domain, is accepted (RFC 5321 section 4.5.1) and
// delivered to Config.Postmaster, and so are postmaster@ and abuse@ a
// hosted domain that has no mailbox, alias or catch-all of that name;
// one with a catch-all keeps it. Without Config.Postmaster both are unknown users.
func TestPostmaster(t *testing.T) {
	t.Run("configured", func(t *testing.T) {
		e := newEnv(t, func(c *Config) { c.Postmaster = "Carol@A.test" })
		for _, rcpt := range []string{"postmaster", "PostMaster", "postmaster@a.test", "abuse@a.test", "postmaster@b.test"} {
			r := e.dialRaw(t)
			r.cmd("EHLO client.test", "250 ")
			r.cmd("MAIL FROM:<s@remote.test>", "250 ")
			r.cmd("RCPT TO:<"+rcpt+">", "250 ")
			r.cmd("DATA", "354 ")
			r.cmd("Subject: to "+rcpt+"\r\n\r\nhi\r\n.", "250 ")
			r.cmd("QUIT", "221 ")
		}
		var subjects []string
		for _, m := range e.inbox(t, "carol@a.test") {
			_, s, _ := strings.Cut(string(m), "Subject: ")
			s, _, _ = strings.Cut(s, "\r\n")
			subjects = append(subjects, s)
		}
		if want := "to postmaster,to PostMaster,to postmaster@a.test,to abuse@a.test"; strings.Join(subjects, ",") != want {
			t.Errorf("carol got %q, want %s", subjects, want)
		}
		// b.test has a catch-all: its postmaster@ is the catch-all's.
		if n := len(e.inbox(t, "dave@b.test")); n != 1 {
			t.Errorf("dave@b.test (the catch-all) got %d messages, want 1", n)
		}
	})
	t.Run("not configured", func(t *testing.T) {
		e := newEnv(t, nil)
		r := e.dialRaw(t)
		r.cmd("EHLO client.test", "250 ")
		r.cmd("MAIL FROM:<s@remote.test>", "250 ")
		r.cmd("RCPT TO:<postmaster>", "550 5.1.1 ")
		r.cmd("RCPT TO:<postmaster@a.test>", "550 5.1.1 ")
	})
}

// TestNULInAddresses: a NUL in MAIL FROM or RCPT TO is refused at once
// with a reply that says so, rather than taken and failing later as a
// forward's 451 4.3.0, retried for days.
func TestNULInAddresses(t *testing.T) {
	e := newEnv(t, nil)
	r := e.dialRaw(t)
	r.cmd("EHLO client.test", "250 ")
	if got := r.cmd("MAIL FROM:<s\x00x@remote.test>", "501 5.1.7 "); !strings.Contains(got, "NUL") {
		t.Errorf("MAIL FROM with a NUL = %q, want a reply naming the NUL", got)
	}
	r.cmd("MAIL FROM:<s@remote.test>", "250 ")
	if got := r.cmd("RCPT TO:<bob\x00@a.test>", "501 5.1.3 "); !strings.Contains(got, "NUL") {
		t.Errorf("RCPT TO with a NUL = %q, want a reply naming the NUL", got)
	}
}
