package imapd

import (
	"slices"
	"testing"
)

// TestExaminePermanentFlags: EXAMINE answers PERMANENTFLAGS () (no flag
// can be changed in a read-only folder), SELECT the flags and \*.
func TestExaminePermanentFlags(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	e.deliver(msgPlain, t1)
	rc := dialRaw(t, e.addr)
	if _, tagged := rc.cmd(`LOGIN "alice@example.com" "alice's secret"`); tagged[:2] != "OK" {
		t.Fatalf("LOGIN = %q", tagged)
	}
	tests := []struct{ cmd, want string }{
		{"EXAMINE INBOX", `* OK [PERMANENTFLAGS ()] Permanent flags`},
		{"SELECT INBOX", `* OK [PERMANENTFLAGS (\Seen \Answered \Flagged \Deleted \Draft \*)] Permanent flags`},
	}
	for _, tc := range tests {
		untagged, tagged := rc.cmd("%s", tc.cmd)
		if tagged[:2] != "OK" {
			t.Fatalf("%s = %q", tc.cmd, tagged)
		}
		if !slices.Contains(untagged, tc.want) {
			t.Errorf("%s: untagged %q, want %q", tc.cmd, untagged, tc.want)
		}
	}
}
