package imapd

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// rawConn speaks IMAP line by line, for what imapclient does not expose.
type rawConn struct {
	t   *testing.T
	c   net.Conn
	r   *bufio.Reader
	tag int
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	rc := &rawConn{t: t, c: c, r: bufio.NewReader(c)}
	rc.line() // greeting
	return rc
}

func (rc *rawConn) line() string {
	rc.t.Helper()
	rc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	l, err := rc.r.ReadString('\n')
	if err != nil {
		rc.t.Fatalf("read: %v", err)
	}
	return strings.TrimRight(l, "\r\n")
}

// cmd sends a command and returns the untagged lines and the tagged one.
func (rc *rawConn) cmd(format string, args ...any) ([]string, string) {
	rc.t.Helper()
	rc.tag++
	tag := fmt.Sprintf("r%d", rc.tag)
	fmt.Fprintf(rc.c, "%s %s\r\n", tag, fmt.Sprintf(format, args...))
	var untagged []string
	for {
		l := rc.line()
		if strings.HasPrefix(l, tag+" ") {
			return untagged, strings.TrimPrefix(l, tag+" ")
		}
		untagged = append(untagged, l)
	}
}

func TestRawProtocol(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	e.deliver(msgPlain, t1)
	e.deliver(msgMultipart, t2)
	e.deliver(msgLarge, t3)
	rc := dialRaw(t, e.addr)
	steps := []struct {
		cmd      string
		untagged []string // each must appear among the untagged lines
		tagged   string   // prefix of the tagged line
	}{
		{`LOGIN "alice@example.com" "alice's secret"`, nil, "OK"},
		{`LIST "" ""`, []string{`* LIST (\Noselect) "/" ""`}, "OK"},
		{`LIST "" "inbox"`, []string{`* LIST (\HasNoChildren) "/" INBOX`}, "OK"},
		{`LSUB "" "Sent"`, []string{`* LSUB`}, "OK"},
		{`STATUS INBOX (MESSAGES UNSEEN DELETED SIZE)`, []string{`* STATUS INBOX (MESSAGES 3 UNSEEN 3 DELETED 0 SIZE`}, "OK"},
		{`SELECT INBOX`, []string{`* 3 EXISTS`, `* OK [UIDVALIDITY`, `* OK [UIDNEXT 4]`, `* OK [UNSEEN 1]`, `* FLAGS (`}, "OK [READ-WRITE]"},
		{`STORE 2 +FLAGS (\Flagged)`, []string{`* 2 FETCH (UID 2 FLAGS (\Flagged))`}, "OK"},
		{`SEARCH RETURN (MIN MAX COUNT) ALL`, []string{`* ESEARCH (TAG "r8") MIN 1 MAX 3 COUNT 3`}, "OK"},
		{`SEARCH RETURN (SAVE) FLAGGED`, nil, "OK"},
		{`FETCH $ (UID)`, []string{`* 2 FETCH (UID 2)`}, "OK"},
		{`UID SEARCH SUBJECT "hello"`, []string{`* SEARCH 1`}, "OK"},
		{`FETCH 1 (BODY.PEEK[HEADER.FIELDS (SUBJECT)])`, []string{`* 1 FETCH (UID 1 BODY[HEADER.FIELDS (SUBJECT)] {24}`, `Subject: Hello Alice`}, "OK"},
		{`FETCH 3 (BODY.PEEK[]<0.10>)`, []string{`* 3 FETCH (UID 3 BODY[]<0> {10}`}, "OK"},
		{`FETCH 1 (RFC822.SIZE INTERNALDATE)`, []string{fmt.Sprintf(`* 1 FETCH (UID 1 INTERNALDATE " 2-Nov-2026 10:00:00 +0000" RFC822.SIZE %d)`, len(msgPlain))}, "OK"},
		{`NAMESPACE`, []string{`* NAMESPACE (("" "/")) NIL NIL`}, "OK"},
		{`EXAMINE INBOX`, []string{`* 3 EXISTS`}, "OK [READ-ONLY]"},
		{`STORE 1 +FLAGS (\Deleted)`, nil, "NO"},
		{`CLOSE`, nil, "OK"},
		{`CREATE "Käse"`, nil, "OK"},
		{`LIST "" "K*"`, []string{`* LIST (\HasNoChildren) "/" "K&AOQ-se"`}, "OK"},
		{`LOGOUT`, []string{`* BYE`}, "OK"},
	}
	for _, s := range steps {
		untagged, tagged := rc.cmd("%s", s.cmd)
		if !strings.HasPrefix(tagged, s.tagged) {
			t.Errorf("%s: tagged %q, want %s", s.cmd, tagged, s.tagged)
		}
		for _, want := range s.untagged {
			found := false
			for _, u := range untagged {
				if strings.HasPrefix(u, want) {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: untagged %q, want a line starting %q", s.cmd, untagged, want)
			}
		}
	}
}
