package imapd

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// FuzzCommand sends one arbitrary command line to a logged-in session
// with INBOX selected: the server must answer it (or close the
// connection) and never panic.
func FuzzCommand(f *testing.F) {
	for _, seed := range []string{
		"FETCH 1:* (FLAGS BODY.PEEK[1.2.MIME] BINARY[2])",
		"UID SEARCH OR FLAGGED (NOT SEEN) UID 2:* LARGER 10",
		"SEARCH $",
		"UID SORT (REVERSE DATE DISPLAYFROM) UTF-8 NOT SEEN",
		"SORT RETURN (MIN MAX COUNT ALL) (SUBJECT) US-ASCII ALL",
		"THREAD REFERENCES UTF-8 ALL",
		"UID THREAD ORDEREDSUBJECT UTF-8 OR 1 2",
		"STORE 1:* FLAGS ()",
		"STORE * -FLAGS.SILENT (\\Recent \\Bogus)",
		"FETCH 4294967295 (BODY[])",
		"UID FETCH 4294967295:* (UID)",
		"COPY 1:5 Trash",
		"MOVE 1 INBOX",
		"UID EXPUNGE *",
		`LIST "" %/%`,
		"RENAME INBOX INBOX",
		`CREATE "a//b"`,
		"STATUS Nowhere (MESSAGES)",
		"IDLE",
		"SEARCH OLDER 5 YOUNGER 300 EMAILID M1 NOT THREADID T1",
		"UID FETCH 1:* (PREVIEW (LAZY) EMAILID THREADID BINARY.SIZE[1])",
		"FETCH 1 PREVIEW (CHANGEDSINCE 1)",
		"STATUS INBOX (MAILBOXID HIGHESTMODSEQ)",
		"SEARCH RETURN (SAVE MAX) ALL",
	} {
		f.Add(seed)
	}
	logs := &syncBuffer{}
	e := newEnv(f, envOptions{insecureAuth: true, log: logs, noRateLimit: true})
	e.deliver(msgPlain, t1)
	e.deliver(msgMultipart, t2)
	f.Fuzz(func(t *testing.T, line string) {
		if strings.ContainsAny(line, "\r\n{") {
			t.Skip("literals and line breaks need a conversation")
		}
		rc := dialRaw(t, e.addr)
		if _, tagged := rc.cmd(`LOGIN "alice@example.com" "alice's secret"`); !strings.HasPrefix(tagged, "OK") {
			t.Fatalf("LOGIN: %s", tagged)
		}
		if _, tagged := rc.cmd(`SELECT INBOX`); !strings.HasPrefix(tagged, "OK") {
			t.Fatalf("SELECT: %s", tagged)
		}
		rc.c.Write([]byte("f1 " + line + "\r\n"))
		if strings.EqualFold(strings.TrimSpace(line), "IDLE") {
			rc.c.Write([]byte("DONE\r\n"))
		}
		// A line can leave the server waiting for more (an open quoted
		// string): give up on an answer after a while.
		rc.c.SetReadDeadline(time.Now().Add(time.Second))
		for {
			l, err := rc.r.ReadString('\n')
			if err != nil || strings.HasPrefix(l, "f1 ") || strings.HasPrefix(l, "* BYE") {
				break
			}
		}
		if strings.Contains(logs.String(), "panic") {
			t.Fatalf("server panicked on %q:\n%s", line, logs.String())
		}
	})
}
