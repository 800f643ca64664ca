package imapd

import (
	"strings"
	"testing"
)

// TestPartHeaderOfNonMessage: BODY[n.HEADER] and BODY[n.TEXT] of a part
// that is not message/rfc822 are empty (RFC 9051 section 6.4.5 defines
// them for a message; Dovecot answers the same), BODY[n.MIME] is the
// part's own header, and BODY[n.HEADER] of an attached message is that
// message's header.
func TestPartHeaderOfNonMessage(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	e.deliver(msgMultipart, t1)
	e.deliver(crlf(`From: a@example.org
Subject: fwd
Content-Type: multipart/mixed; boundary=x

--x
Content-Type: text/plain

see below
--x
Content-Type: message/rfc822

Subject: inner

inner body
--x--
`), t2)
	e.deliver(msgPlain, t3)
	rc := dialRaw(t, e.addr)
	for _, c := range []string{`LOGIN "alice@example.com" "alice's secret"`, "SELECT INBOX"} {
		if _, tagged := rc.cmd("%s", c); !strings.HasPrefix(tagged, "OK") {
			t.Fatalf("%s = %q", c, tagged)
		}
	}
	tests := []struct{ fetch, want string }{
		{"1 (BODY.PEEK[1.HEADER])", "BODY[1.HEADER] {0}"},
		{"1 (BODY.PEEK[1.TEXT])", "BODY[1.TEXT] {0}"},
		{"1 (BODY.PEEK[2.HEADER.FIELDS (Content-Type)])", "{0}"},
		{"1 (BODY.PEEK[1.MIME])", "BODY[1.MIME] {43}"},
		{"2 (BODY.PEEK[2.HEADER])", "BODY[2.HEADER] {18}"},
		{"2 (BODY.PEEK[2.TEXT])", "BODY[2.TEXT] {10}"},
		{"2 (BODY.PEEK[2.1.HEADER])", "BODY[2.1.HEADER] {0}"},
		{"3 (BODY.PEEK[1.HEADER])", "BODY[1.HEADER] {0}"},
		{"3 (BODY.PEEK[1.TEXT])", "BODY[1.TEXT] {0}"},
	}
	for _, tc := range tests {
		untagged, tagged := rc.cmd("FETCH %s", tc.fetch)
		if !strings.HasPrefix(tagged, "OK") || len(untagged) == 0 || !strings.Contains(untagged[0], tc.want) {
			t.Errorf("FETCH %s = %q, %q; want a line with %q", tc.fetch, untagged, tagged, tc.want)
		}
	}
}
