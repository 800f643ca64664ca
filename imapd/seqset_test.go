package imapd

import (
	"strings"
	"testing"
)

// TestSeqNumberBeyondExists: a message number beyond the last message,
// or "*" in an empty folder, is BAD for FETCH, STORE, COPY and MOVE (RFC
// 9051 section 9, seq-number); a UID beyond the last is no error.
func TestSeqNumberBeyondExists(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	e.deliver(msgPlain, t1)
	e.deliver(msgMultipart, t2)
	rc := dialRaw(t, e.addr)
	tests := []struct{ cmd, want string }{
		{`LOGIN "alice@example.com" "alice's secret"`, "OK"},
		{"SELECT INBOX", "OK"},
		{"FETCH 2 (FLAGS)", "OK"},
		{"FETCH 1:* (FLAGS)", "OK"},
		{"FETCH 3 (FLAGS)", "BAD"},
		{"FETCH 1:3 (FLAGS)", "BAD"},
		{"FETCH 99 (FLAGS)", "BAD"},
		{"UID FETCH 99 (FLAGS)", "OK"},
		{"STORE 3 +FLAGS (\\Seen)", "BAD"},
		{"COPY 3 Trash", "BAD"},
		{"MOVE 2:3 Trash", "BAD"},
		{"STATUS INBOX (MESSAGES)", "OK"},
		{"SELECT Trash", "OK"},
		{"FETCH * (FLAGS)", "BAD"},
		{"FETCH 1:* (FLAGS)", "BAD"},
		{"UID FETCH 1:* (FLAGS)", "OK"},
	}
	for _, tc := range tests {
		untagged, tagged := rc.cmd("%s", tc.cmd)
		if !strings.HasPrefix(tagged, tc.want+" ") {
			t.Errorf("%s = %q, want %s", tc.cmd, tagged, tc.want)
		}
		if tc.cmd == "STATUS INBOX (MESSAGES)" && (len(untagged) == 0 || !strings.Contains(untagged[len(untagged)-1], "MESSAGES 2")) {
			t.Errorf("STATUS after refused COPY/MOVE = %q, want MESSAGES 2", untagged)
		}
	}
}
