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
// stored and forwarded is what a lenient next hop would read (issue 11).
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
