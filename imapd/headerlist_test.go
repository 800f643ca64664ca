package imapd

import (
	"strings"
	"testing"
)

// TestEmptyHeaderList: BODY[HEADER.FIELDS ()] is a syntax error (RFC
// 9051 section 9: header-list holds at least one name), not BODY[HEADER].
func TestEmptyHeaderList(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	e.deliver(msgPlain, t1)
	rc := dialRaw(t, e.addr)
	tests := []struct{ cmd, want string }{
		{`LOGIN "alice@example.com" "alice's secret"`, "OK"},
		{"SELECT INBOX", "OK"},
		{"FETCH 1 (BODY.PEEK[HEADER.FIELDS ()])", "BAD"},
		{"FETCH 1 (BODY.PEEK[HEADER.FIELDS.NOT ()])", "BAD"},
		{"UID FETCH 1 (BODY.PEEK[1.HEADER.FIELDS ()])", "BAD"},
		{"FETCH 1 (BODY.PEEK[HEADER.FIELDS (Subject)])", "OK"},
	}
	for _, tc := range tests {
		if _, tagged := rc.cmd("%s", tc.cmd); !strings.HasPrefix(tagged, tc.want+" ") {
			t.Errorf("%s = %q, want %s", tc.cmd, tagged, tc.want)
		}
	}
}
