package imapd

import (
	"strings"
	"testing"
)

// TestCheckNeedsSelected: CHECK is a selected-state command (RFC 3501
// section 6.4.1): BAD before SELECT, OK after.
func TestCheckNeedsSelected(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	rc := dialRaw(t, e.addr)
	tests := []struct{ cmd, want string }{
		{`LOGIN "alice@example.com" "alice's secret"`, "OK"},
		{"CHECK", "BAD"},
		{"SELECT INBOX", "OK"},
		{"CHECK", "OK"},
	}
	for _, tc := range tests {
		if _, tagged := rc.cmd("%s", tc.cmd); !strings.HasPrefix(tagged, tc.want+" ") {
			t.Errorf("%s = %q, want %s", tc.cmd, tagged, tc.want)
		}
	}
}
