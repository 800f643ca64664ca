package smtpd

import (
	"bytes"
	"strings"
	"testing"
)

// TestBareLineEnds: the MX takes "<CRLF>.<CRLF>" alone for the end of
// data (RFC 5321 section 4.1.1.4): "\n.\n", "\r.\r" and "\n.\r\n" are
// content. It stores bare CR and LF as CRLF (as Postfix 3.9's
// smtpd_forbid_bare_newline = normalize does for LF), so that what is
// stored and forwarded is what a lenient next hop would read.
func TestBareLineEnds(t *testing.T) {
	e := newEnv(t, nil)
	r := e.dialRaw(t)
	r.cmd("EHLO client.test", "250")
	r.cmd("MAIL FROM:<s@remote.test>", "250")
	r.cmd("RCPT TO:<bob@a.test>", "250")
	r.cmd("DATA", "354")
	r.write("Subject: s\r\n\r\na\n.\nb\r.\rc\n.\r\nMAIL FROM:<evil@x.test>\r\nd\n")
	r.write("..e\r\n.\r\n")
	r.expect("250 ")
	got := e.inbox(t, "bob@a.test")
	if len(got) != 1 {
		t.Fatalf("bob's INBOX holds %d messages, want 1", len(got))
	}
	// "..e" after a bare LF was not at the start of a line on the wire,
	// so go-smtp did not take its first dot for stuffing: it stays.
	want := "Subject: s\r\n\r\na\r\n.\r\nb\r\n.\r\nc\r\n.\r\nMAIL FROM:<evil@x.test>\r\nd\r\n..e\r\n"
	if _, body, _ := bytes.Cut(got[0], []byte("\r\n\r\n")); !strings.HasSuffix(string(got[0]), want) || bytes.Contains(body, []byte("\r\n\r\n")) {
		t.Errorf("stored %q, want it to end %q", got[0], want)
	}
}

// TestEndOfDataAfterCR: the data ends at the first "<CRLF>.<CRLF>", also
// when a bare CR precedes the CRLF ("hi\r\r\n.\r\n") or follows a line's
// stuffed dot (".\r\r\n.\r\n"), and what the client pipelined after it is
// read as commands: a second transaction to another mailbox is a message
// of its own, not the end of the first recipient's (docs/security.md,
// "SMTP framing: the end of DATA"). On the MX and on submission.
func TestEndOfDataAfterCR(t *testing.T) {
	for _, c := range []struct{ name, last, stored string }{
		// The bare CR becomes CRLF when stored (NormalizeLineEnds).
		{"CR before the end", "hi\r\r\n", "hi\r\n\r\n"},
		{"stuffed dot and CR before the end", "hi\r\n.\r\r\n", "hi\r\n\r\n\r\n"},
	} {
		second := "Subject: second\r\n\r\nconfidential for the second recipient\r\n.\r\n"
		check := func(t *testing.T, e *env, first, other string) {
			t.Helper()
			got := e.inbox(t, first)
			if len(got) != 1 {
				t.Fatalf("%s holds %d messages, want 1", first, len(got))
			}
			for _, leak := range []string{"confidential", "MAIL FROM", "RCPT TO", other} {
				if bytes.Contains(got[0], []byte(leak)) {
					t.Errorf("%s's message holds %q of the second transaction:\n%q", first, leak, got[0])
				}
			}
			// Submission adds Date and Message-ID after the header.
			if !bytes.Contains(got[0], []byte("\r\nSubject: first\r\n")) || !bytes.HasSuffix(got[0], []byte("\r\n\r\n"+c.stored)) {
				t.Errorf("%s's message = %q, want Subject: first and the body %q", first, got[0], c.stored)
			}
			got = e.inbox(t, other)
			if len(got) != 1 || !bytes.Contains(got[0], []byte("\r\nSubject: second\r\n")) ||
				!bytes.HasSuffix(got[0], []byte("\r\n\r\nconfidential for the second recipient\r\n")) {
				t.Fatalf("%s's INBOX = %q, want the second message", other, got)
			}
		}
		t.Run("MX "+c.name, func(t *testing.T) {
			e := newEnv(t, nil)
			r := e.dialRaw(t)
			r.cmd("EHLO client.test", "250 ")
			r.send("MAIL FROM:<s@remote.test>", "RCPT TO:<bob@a.test>", "DATA")
			r.expect("250 ")
			r.expect("250 ")
			r.expect("354 ")
			r.write("Subject: first\r\n\r\n" + c.last + ".\r\n" +
				"MAIL FROM:<s@remote.test>\r\nRCPT TO:<carol@a.test>\r\nDATA\r\n" + second)
			r.expect("250 2.0.0 ")
			r.expect("250 ")
			r.expect("250 ")
			r.expect("354 ")
			r.expect("250 2.0.0 ")
			r.cmd("NOOP", "250 ")
			check(t, e, "bob@a.test", "carol@a.test")
		})
		t.Run("submission "+c.name, func(t *testing.T) {
			e := newSubmissionEnv(t, nil)
			r := e.rawTLS(t)
			r.cmd("EHLO client.test", "250 ")
			r.cmd("AUTH PLAIN "+b64("\x00bob@a.test\x00"+password), "235 ")
			r.send("MAIL FROM:<bob@a.test>", "RCPT TO:<carol@a.test>", "DATA")
			r.expect("250 ")
			r.expect("250 ")
			r.expect("354 ")
			r.write("From: bob@a.test\r\nSubject: first\r\n\r\n" + c.last + ".\r\n" +
				"MAIL FROM:<bob@a.test>\r\nRCPT TO:<dave@b.test>\r\nDATA\r\nFrom: bob@a.test\r\n" + second)
			r.expect("250 2.0.0 ")
			r.expect("250 ")
			r.expect("250 ")
			r.expect("354 ")
			r.expect("250 2.0.0 ")
			r.cmd("NOOP", "250 ")
			check(t, e.env, "carol@a.test", "dave@b.test")
		})
	}
}
