package imapd

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// TestCommandLimits: a command over imapserver's limits is answered at
// once, BAD on its first line (and the connection goes on) or BYE once
// part of it went to imapserver, never NO [SERVERBUG]: imapserver alone
// has `LOGIN {99999}` wait 30 s for SERVERBUG, a 57 KB line get SERVERBUG
// and the connection dropped, and 3,000 parentheses and CREATE "&AAA"
// get SERVERBUG.
func TestCommandLimits(t *testing.T) {
	logs := &syncBuffer{}
	e := newEnv(t, envOptions{insecureAuth: true, log: logs})
	deep := strings.Repeat("(", 3000) + "ALL" + strings.Repeat(")", 3000)
	tests := []struct {
		name   string
		send   string // after the tag and a space; \r\n added
		tagged string // prefix of the tagged answer
	}{
		{"sync literal over 4096 outside APPEND", "LOGIN {99999}", "BAD [TOOBIG]"},
		{"non-sync literal over 4096 outside APPEND", "LOGIN {5000+}\r\n" + strings.Repeat("a", 5000) + " {3+}\r\nabc", "BAD [TOOBIG]"},
		{"line over 50 KiB", "NOOP " + strings.Repeat("x", 60_000), "BAD Command line too long"},
		{"line over 1 MiB of which 50 KiB is read", "NOOP " + strings.Repeat("x", 900_000), "BAD Command line too long"},
		{"3,000 nested parentheses", "SEARCH " + deep, "BAD [CLIENTBUG] Too many nested"},
		{"CREATE with a bare &", `CREATE "&AAA"`, "BAD [CLIENTBUG] Mailbox name"},
		{"CREATE with an atom and a bare &", `CREATE a&b`, "BAD [CLIENTBUG] Mailbox name"},
		{"RENAME to a bare &", `RENAME Sent "x&AGEAYgBj"`, "BAD [CLIENTBUG] Mailbox name"},
		{"CREATE with modified UTF-7", `CREATE "K&AOQ-se"`, "OK"},
		{"CREATE with &-", `CREATE "Q&-A"`, "OK"},
		{"literal of 4096", "SEARCH TEXT {4096+}\r\n" + strings.Repeat("a", 4096), "OK"},
		// Arguments imapserver's decoder cannot read, which it answered
		// NO [SERVERBUG] (its parse errors are not typed as syntax
		// errors): a client's error, BAD.
		{"SEARCH with an unknown key", "SEARCH FOOBAR", "BAD [CLIENTBUG]"},
		{"SEARCH BODY unquoted, then not a set", "SEARCH BODY line 0079999", "BAD [CLIENTBUG]"},
		{"UID SEARCH with an unknown key", "UID SEARCH UNSEEN FOOBAR", "BAD [CLIENTBUG]"},
		{"FETCH of a number over 32 bits", "FETCH 99999999999 (FLAGS)", "BAD"},
		{"SEARCH of a set", "SEARCH 1:*", "OK"},
	}
	rc := rawLogin(t, e)
	if _, tagged := rc.cmd(`SELECT INBOX`); !strings.HasPrefix(tagged, "OK") {
		t.Fatalf("SELECT: %s", tagged)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc.t = t
			start := time.Now()
			_, tagged := rc.cmd("%s", tt.send)
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("answered after %v, want at once", took)
			}
			if !strings.HasPrefix(tagged, tt.tagged) {
				t.Errorf("%.60s... = %q, want %s", tt.send, tagged, tt.tagged)
			}
			if _, tagged := rc.cmd("NOOP"); !strings.HasPrefix(tagged, "OK") {
				t.Errorf("NOOP after it = %q, want OK", tagged)
			}
		})
	}
	if n := e.srv.ServerBugs(); n != 0 {
		t.Errorf("ServerBugs() = %d, want 0:\n%s", n, logs.String())
	}
}

// TestCommandLimitsBye: a limit met after part of the command went to
// imapserver (in the line after a literal) ends the connection with BYE,
// at once.
func TestCommandLimitsBye(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	for _, tt := range []struct{ name, first, rest string }{
		{"literal over 4096 after a literal", "a LOGIN {5}\r\n", "alice {99999}\r\n"},
		{"command over 50 KiB after a literal", "a LOGIN {5}\r\n", "alice " + strings.Repeat("x", 60_000) + "\r\n"},
		{"parentheses after a literal", "a SEARCH CHARSET {5}\r\n", "UTF-8 " + strings.Repeat("(", 3000) + "ALL" + strings.Repeat(")", 3000) + "\r\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rc := dialRaw(t, e.addr)
			fmt.Fprint(rc.c, tt.first)
			if l := rc.line(); !strings.HasPrefix(l, "+") {
				t.Fatalf("after %q: %q, want +", tt.first, l)
			}
			start := time.Now()
			fmt.Fprint(rc.c, tt.rest)
			if l := rc.line(); !strings.HasPrefix(l, "* BYE") {
				t.Errorf("answer = %q, want * BYE", l)
			}
			rc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
			// A reset is a close too: the server leaves what it did not read.
			if rest, err := io.ReadAll(rc.r); err != nil && !strings.Contains(err.Error(), "reset") || len(rest) > 0 {
				t.Errorf("after BYE: %q, %v; want the connection closed", rest, err)
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("closed after %v, want at once", took)
			}
		})
	}
	if n := e.srv.ServerBugs(); n != 0 {
		t.Errorf("ServerBugs() = %d, want 0", n)
	}
}

// TestServerBugCounted: a NO [SERVERBUG] (here a store closed under the
// session) is counted and logged once, with its command.
func TestServerBugCounted(t *testing.T) {
	logs := &syncBuffer{}
	e := newEnv(t, envOptions{insecureAuth: true, log: logs})
	rc := rawLogin(t, e)
	e.st.Close()
	if _, tagged := rc.cmd(`STATUS INBOX (MESSAGES)`); !strings.HasPrefix(tagged, "NO [SERVERBUG]") {
		t.Fatalf("STATUS on a closed store = %q, want NO [SERVERBUG]", tagged)
	}
	if n := e.srv.ServerBugs(); n != 1 {
		t.Errorf("ServerBugs() = %d, want 1", n)
	}
	if got := strings.Count(logs.String(), "server bug"); got != 1 || !strings.Contains(logs.String(), "command=STATUS") {
		t.Errorf("log has %d \"server bug\" lines, want 1 with command=STATUS:\n%s", got, logs.String())
	}
}

// TestUnreadableLines: a line imapserver cannot read a tag and a command
// name from (it closed the connection without a word), and a quoted
// string left open at the end of a line (imapserver read the next lines
// into it, so that the client waited for ever), are answered BAD at once,
// and the connection goes on (found by a protocol audit).
func TestUnreadableLines(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	rc := rawLogin(t, e)
	for _, tt := range []struct{ name, send, want string }{
		{"empty line", "\r\n", "* BAD [CLIENTBUG]"},
		{"tag alone", "t1\r\n", "* BAD [CLIENTBUG]"},
		{"two spaces", "t1  NOOP\r\n", "t1 BAD [CLIENTBUG]"},
		{"tab", "t1\tNOOP\r\n", "* BAD [CLIENTBUG]"},
		{"star as tag", "* NOOP\r\n", "* BAD [CLIENTBUG]"},
		{"brace in the tag", "t{1 NOOP\r\n", "* BAD [CLIENTBUG]"},
		{"UID alone", "t1 UID\r\n", "t1 BAD [CLIENTBUG]"},
		{"open quote", "t1 SELECT \"INBOX\r\n", "t1 BAD [CLIENTBUG]"},
		{"open quote in SEARCH", "t1 SEARCH SUBJECT \"x\r\n", "t1 BAD [CLIENTBUG]"},
		{"open quote before a literal", "t1 SEARCH SUBJECT \"x {3+}\r\nabc\r\n", "t1 BAD [CLIENTBUG]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rc.t = t
			fmt.Fprint(rc.c, tt.send)
			if l := rc.line(); !strings.HasPrefix(l, tt.want) {
				t.Errorf("%q: %q, want %s", tt.send, l, tt.want)
			}
			if _, tagged := rc.cmd("NOOP"); !strings.HasPrefix(tagged, "OK") {
				t.Errorf("NOOP after it = %q, want OK", tagged)
			}
		})
	}
	rc.t = t
	// An escaped quote does not end a quoted string; a closed one is fine.
	if _, tagged := rc.cmd(`SELECT INBOX`); !strings.HasPrefix(tagged, "OK") {
		t.Fatalf("SELECT: %s", tagged)
	}
	if _, tagged := rc.cmd(`SEARCH SUBJECT "a\"b" TEXT "c d"`); !strings.HasPrefix(tagged, "OK") {
		t.Errorf("SEARCH with quoted strings = %q, want OK", tagged)
	}

	// Before login the connection ends, as after an unknown command
	// there, but with BAD and BYE.
	pre := dialRaw(t, e.addr)
	fmt.Fprint(pre.c, "\r\n")
	if l := pre.line(); !strings.HasPrefix(l, "* BAD [CLIENTBUG]") {
		t.Errorf("empty line before login: %q, want * BAD", l)
	}
	if l := pre.line(); !strings.HasPrefix(l, "* BYE") {
		t.Errorf("then %q, want * BYE", l)
	}
}

// TestAnsweredLiteralDropped: a non-synchronizing literal of a command
// that imapserver answers before reading it (APPEND with a date it cannot
// read, or over APPENDLIMIT; a syntax error before the literal) is read
// and dropped, not run line by line as commands (found by a protocol
// audit: the lines of the message were answered as commands, and an
// empty line closed the connection). One over maxDiscard ends the
// connection with BYE (RFC 7888 section 4).
func TestAnsweredLiteralDropped(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	rc := rawLogin(t, e)
	inj := "x1 CREATE Injected\r\nx2 NOOP\r\n\r\n"
	for _, tt := range []struct{ name, send string }{
		{"APPEND with a bad date", fmt.Sprintf("t1 APPEND INBOX \"2020-01-01\" {%d+}\r\n%s\r\n", len(inj), inj)},
		{"NOOP with a literal", fmt.Sprintf("t1 NOOP {%d+}\r\n%s\r\n", len(inj), inj)},
		{"two literals", fmt.Sprintf("t1 LIST \"\" * {%d+}\r\n%s {3+}\r\nabc\r\n", len(inj), inj)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rc.t = t
			answeredThenNoop(t, rc, tt.send, "t1 BAD")
		})
	}
	rc.t = t
	if _, tagged := rc.cmd(`STATUS Injected (MESSAGES)`); !strings.HasPrefix(tagged, "NO") {
		t.Errorf("STATUS Injected = %q: the literal's line ran as CREATE", tagged)
	}

	// Over APPENDLIMIT: NO [TOOBIG], then BYE rather than the data read
	// as commands.
	big := rawLogin(t, e)
	lines := big.send(fmt.Sprintf("t1 APPEND INBOX {%d+}\r\n%s", 1<<40, inj), "t1")
	if l := lines[len(lines)-1]; !strings.HasPrefix(l, "t1 NO [TOOBIG]") {
		t.Errorf("APPEND over the limit: %q, want NO [TOOBIG]", l)
	}
	if l := big.line(); !strings.HasPrefix(l, "* BYE") {
		t.Errorf("then %q, want * BYE", l)
	}
}

// TestAppendTrailingBytes: bytes between an APPEND's literal and the end
// of its line are dropped and the APPEND is answered (found by a protocol
// audit: imapserver stored the message and answered nothing, and the
// client waited for ever). A mailbox name sent as a literal still works.
func TestAppendTrailingBytes(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	rc := rawLogin(t, e)
	msg := "Subject: t\r\n\r\nhello\r\n"
	for _, tt := range []struct{ name, send string }{
		{"extra bytes", fmt.Sprintf("t1 APPEND INBOX {%d+}\r\n%s extra\r\n", len(msg), msg)},
		{"mailbox as a literal", fmt.Sprintf("t1 APPEND {5+}\r\nINBOX {%d+}\r\n%s\r\n", len(msg), msg)},
		{"plain", fmt.Sprintf("t1 APPEND INBOX (\\Seen) {%d+}\r\n%s\r\n", len(msg), msg)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rc.t = t
			answeredThenNoop(t, rc, tt.send, "t1 OK")
		})
	}
	rc.t = t
	if untagged, tagged := rc.cmd(`STATUS INBOX (MESSAGES)`); !strings.HasPrefix(tagged, "OK") || len(untagged) != 1 || !strings.Contains(untagged[0], "MESSAGES 3") {
		t.Errorf("STATUS INBOX = %q %q, want the 3 messages appended", untagged, tagged)
	}
}

// TestShutdownDuringIdle: a session in IDLE when the server shuts down
// gets BYE, and imapserver's failed read there is neither a server bug
// nor taken for a client's syntax error (found by an operator audit: it
// was logged as "arguments imapserver cannot parse").
func TestShutdownDuringIdle(t *testing.T) {
	logs := &syncBuffer{}
	e := newEnv(t, envOptions{insecureAuth: true, log: logs})
	rc := rawLogin(t, e)
	if _, tagged := rc.cmd(`SELECT INBOX`); !strings.HasPrefix(tagged, "OK") {
		t.Fatalf("SELECT: %s", tagged)
	}
	fmt.Fprint(rc.c, "i1 IDLE\r\n")
	if l := rc.line(); !strings.HasPrefix(l, "+") {
		t.Fatalf("IDLE: %q, want +", l)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	rc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	rest, _ := io.ReadAll(rc.r)
	if !strings.Contains(string(rest), "* BYE") || strings.Contains(string(rest), "CLIENTBUG") {
		t.Errorf("after Shutdown: %q, want * BYE and no CLIENTBUG", rest)
	}
	if n := e.srv.ServerBugs(); n != 0 {
		t.Errorf("ServerBugs() = %d, want 0", n)
	}
	if strings.Contains(logs.String(), "cannot parse") {
		t.Errorf("log takes the shutdown for a syntax error:\n%s", logs.String())
	}
}

// answeredThenNoop sends a command tagged t1, which must be answered at
// once with a tagged line starting with want, and then a NOOP, which must
// be answered OK alone (nothing of the command left to run as commands).
func answeredThenNoop(t *testing.T, rc *rawConn, send, want string) {
	t.Helper()
	start := time.Now()
	lines := rc.send(send, "t1")
	if l := lines[len(lines)-1]; !strings.HasPrefix(l, want) {
		t.Errorf("%q: %q, want %s", send, l, want)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("answered after %v, want at once", took)
	}
	untagged, tagged := rc.cmd("NOOP")
	if !strings.HasPrefix(tagged, "OK") || len(untagged) > 0 {
		t.Errorf("NOOP after it = %q %q, want OK alone (the command's data run as commands?)", untagged, tagged)
	}
}
