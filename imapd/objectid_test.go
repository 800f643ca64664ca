package imapd

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
)

// TestObjectID: MAILBOXID in CREATE, SELECT and STATUS, the same after
// RENAME; EMAILID the same after COPY and MOVE, SEARCH EMAILID finds the
// message; THREADID NIL and SEARCH THREADID nothing (RFC 8474).
func TestObjectID(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	e.deliver(msgPlain, t1)
	e.deliver(msgPlain, t2)
	rc := rawLogin(t, e)
	if u, _ := rc.cmd("CAPABILITY"); !strings.Contains(strings.Join(u, " "), " OBJECTID") {
		t.Errorf("CAPABILITY = %q, want OBJECTID", u)
	}
	_, tagged := rc.cmd("CREATE Projects")
	m := regexp.MustCompile(`^OK \[MAILBOXID \(([A-Za-z0-9_-]+)\)\]`).FindStringSubmatch(tagged)
	if m == nil {
		t.Fatalf("CREATE = %s, want OK [MAILBOXID (id)]", tagged)
	}
	id := m[1]
	if u := mustOK(t, rc, "STATUS Projects (MAILBOXID MESSAGES)"); !has(u, `* STATUS "Projects" (MESSAGES 0 MAILBOXID (`+id+"))") {
		t.Errorf("STATUS = %q, want MAILBOXID (%s)", u, id)
	}
	mustOK(t, rc, "RENAME Projects Old")
	if u := mustOK(t, rc, `LIST "" Old RETURN (STATUS (MAILBOXID))`); !has(u, `* STATUS "Old" (MAILBOXID (`+id+"))") {
		t.Errorf("LIST RETURN (STATUS (MAILBOXID)) after RENAME = %q, want MAILBOXID (%s)", u, id)
	}
	if u := mustOK(t, rc, "SELECT Old"); !has(u, "* OK [MAILBOXID ("+id+")]") {
		t.Errorf("SELECT after RENAME = %q, want MAILBOXID (%s)", u, id)
	}
	var inboxID string
	u := mustOK(t, rc, "SELECT INBOX")
	for _, l := range u {
		if m := regexp.MustCompile(`^\* OK \[MAILBOXID \((\S+)\)\]`).FindStringSubmatch(l); m != nil {
			inboxID = m[1]
		}
	}
	if inboxID == "" || inboxID == id {
		t.Errorf("SELECT INBOX = %q, want a MAILBOXID other than %s", u, id)
	}

	u = mustOK(t, rc, "FETCH 1:2 (EMAILID THREADID)")
	re := regexp.MustCompile(`EMAILID \(([A-Za-z0-9_-]+)\) THREADID NIL`)
	var ids []string
	for _, l := range u {
		if m := re.FindStringSubmatch(l); m != nil {
			ids = append(ids, m[1])
		}
	}
	if len(ids) != 2 || ids[0] == ids[1] {
		t.Fatalf("FETCH EMAILID THREADID = %q, want two different EMAILIDs and THREADID NIL", u)
	}
	if u := mustOK(t, rc, "SEARCH EMAILID "+ids[1]); !has(u, "* SEARCH 2") || len(u) != 1 {
		t.Errorf("SEARCH EMAILID = %q, want 2", u)
	}
	if u := mustOK(t, rc, "SEARCH THREADID T1"); len(u) != 1 || u[0] != "* SEARCH" {
		t.Errorf("SEARCH THREADID = %q, want none", u)
	}
	if _, tagged := rc.cmd("SEARCH EMAILID M+1"); !strings.HasPrefix(tagged, "BAD") {
		t.Errorf("SEARCH EMAILID with a bad id = %s, want BAD", tagged)
	}
	// A message that arrives while the folder is selected has the
	// EMAILID a fresh SELECT finds.
	e.deliver(msgPlain, t3)
	mustOK(t, rc, "NOOP")
	before := mustOK(t, rc, "FETCH 3 (EMAILID)")
	mustOK(t, rc, "SELECT INBOX")
	if after := mustOK(t, rc, "FETCH 3 (EMAILID)"); len(before) != 1 || !slices.Equal(before, after) || strings.Contains(before[0], "(M0)") {
		t.Errorf("EMAILID of a new message = %q, after SELECT %q", before, after)
	}
	mustOK(t, rc, "COPY 1 Old")
	mustOK(t, rc, "MOVE 2 Old")
	mustOK(t, rc, "SELECT Old")
	u = mustOK(t, rc, "FETCH 1:2 (EMAILID)")
	for i, l := range u {
		if !strings.Contains(l, "EMAILID ("+ids[i]+")") {
			t.Errorf("after COPY and MOVE: %q, want EMAILID (%s)", l, ids[i])
		}
	}
}

// TestWithin: SEARCH OLDER and YOUNGER count seconds back from now
// against INTERNALDATE (RFC 5032).
func TestWithin(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	now := time.Now()
	e.deliver(msgPlain, now.Add(-48*time.Hour))
	e.deliver(msgPlain, now.Add(-2*time.Hour))
	e.deliver(msgPlain, now.Add(-time.Minute))
	rc := rawLogin(t, e)
	if u, _ := rc.cmd("CAPABILITY"); !strings.Contains(strings.Join(u, " "), " WITHIN") {
		t.Errorf("CAPABILITY = %q, want WITHIN", u)
	}
	mustOK(t, rc, "EXAMINE INBOX")
	for _, tt := range []struct{ cmd, want string }{
		{"SEARCH YOUNGER 3600", "* SEARCH 3"},
		{"SEARCH OLDER 3600", "* SEARCH 1 2"},
		{"SEARCH OLDER 3600 YOUNGER 86400", "* SEARCH 2"},
		{"UID SEARCH NOT YOUNGER 86400", "* SEARCH 1"},
		{"SEARCH OR OLDER 100000 YOUNGER 120", "* SEARCH 1 3"},
		{"SEARCH RETURN (COUNT) YOUNGER 10000000", "* ESEARCH (TAG \"r9\") COUNT 3"},
	} {
		if u := mustOK(t, rc, tt.cmd); len(u) != 1 || u[0] != tt.want {
			t.Errorf("%s = %q, want %s", tt.cmd, u, tt.want)
		}
	}
	for _, bad := range []string{"SEARCH OLDER 0", "SEARCH YOUNGER", "SEARCH OLDER x"} {
		if _, tagged := rc.cmd("%s", bad); !strings.HasPrefix(tagged, "BAD") {
			t.Errorf("%s = %s, want BAD", bad, tagged)
		}
	}
}

// TestPreview: FETCH PREVIEW and PREVIEW (LAZY) give the start of the
// first text part, HTML without markup, white space folded (RFC 8970).
func TestPreview(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	e.deliver(msgPlain, t1)
	e.deliver(crlf(`From: bob@example.org
Subject: html
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary=b

--b
Content-Type: text/html; charset=utf-8
Content-Transfer-Encoding: quoted-printable

<html><head><style>p {color: red}</style></head><body><p>Caf=C3=A9 &amp;
 tea</p>   <p>at  five</p></body></html>
--b
Content-Type: text/plain
Content-Disposition: attachment

not this
--b--
`), t2)
	e.deliver(crlf("From: bob@example.org\nSubject: long\n\n"+strings.Repeat("word ", 100)+"\n"), t3)
	e.deliver(crlf("From: bob@example.org\nSubject: re\n\n  Hello   there,\n\n> quoted line\n>> more\nend.\n"), t3)
	rc := rawLogin(t, e)
	if u, _ := rc.cmd("CAPABILITY"); !strings.Contains(strings.Join(u, " "), " PREVIEW") {
		t.Errorf("CAPABILITY = %q, want PREVIEW", u)
	}
	mustOK(t, rc, "SELECT INBOX")
	u := mustOK(t, rc, "FETCH 2 (PREVIEW)")
	if len(u) != 2 || !strings.HasSuffix(u[0], "PREVIEW {19}") || u[1] != "Café & tea at five)" {
		t.Errorf("FETCH 2 (PREVIEW) = %q, want the HTML part's text", u)
	}
	u = mustOK(t, rc, "FETCH 3 (UID PREVIEW (LAZY) FLAGS)")
	want := strings.TrimSpace(strings.Repeat("word ", 52))[:256]
	if len(u) != 1 || !strings.Contains(u[0], `PREVIEW "`+want+`"`) {
		t.Errorf("FETCH 3 (PREVIEW (LAZY)) = %q, want %d characters", u, len(want))
	}
	// Quoted lines left out, as Dovecot does.
	if u := mustOK(t, rc, "FETCH 4 (PREVIEW)"); len(u) != 1 || !strings.HasSuffix(u[0], `PREVIEW "Hello there, end.")`) {
		t.Errorf("FETCH 4 (PREVIEW) = %q, want the text without its quoted lines", u)
	}
	// PREVIEW sets no \Seen, and a lone PREVIEW takes fetch-modifiers.
	u = mustOK(t, rc, "FETCH 1 PREVIEW (CHANGEDSINCE 1)")
	if len(u) != 1 || strings.Contains(u[0], `\Seen`) || !strings.Contains(u[0], "PREVIEW ") {
		t.Errorf("FETCH 1 PREVIEW (CHANGEDSINCE 1) = %q", u)
	}
	if _, tagged := rc.cmd("FETCH 1 (PREVIEW (FAST))"); !strings.HasPrefix(tagged, "BAD") {
		t.Errorf("PREVIEW (FAST) = %s, want BAD", tagged)
	}
}

// TestObjectIDImapclient: imapclient (the patched copy) asks for and reads
// EMAILID, THREADID and PREVIEW, and sends OLDER, YOUNGER and EMAILID.
func TestObjectIDImapclient(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.deliver(msgPlain, time.Now().Add(-time.Hour))
	e.deliver(msgPlain, time.Now())
	c := e.login(nil)
	selectInbox(t, c)
	msgs, err := c.Fetch(imap.SeqSetNum(1, 2), &imap.FetchOptions{EmailID: true, ThreadID: true, Preview: &imap.FetchItemPreview{Lazy: true}}).Collect()
	if err != nil || len(msgs) != 2 {
		t.Fatalf("FETCH (EMAILID THREADID PREVIEW (LAZY)) = %v, %v", msgs, err)
	}
	for _, m := range msgs {
		if !strings.HasPrefix(m.EmailID, "M") || m.ThreadID != "" || m.Preview == nil || *m.Preview == "" {
			t.Errorf("message %d: EMAILID %q THREADID %q PREVIEW %v", m.SeqNum, m.EmailID, m.ThreadID, m.Preview)
		}
	}
	st, err := c.Status("INBOX", &imap.StatusOptions{MailboxID: true, NumMessages: true}).Wait()
	if err != nil || !strings.HasPrefix(st.MailboxID, "F") || st.NumMessages == nil || *st.NumMessages != 2 {
		t.Errorf("STATUS (MAILBOXID MESSAGES) = %+v, %v", st, err)
	}
	data, err := c.Search(&imap.SearchCriteria{Younger: 600, EmailID: []string{msgs[1].EmailID}}, nil).Wait()
	if err != nil || !slices.Equal(data.AllSeqNums(), []uint32{2}) {
		t.Errorf("SEARCH YOUNGER 600 EMAILID = %v, %v, want 2", data, err)
	}
	data, err = c.Search(&imap.SearchCriteria{Older: 600}, nil).Wait()
	if err != nil || !slices.Equal(data.AllSeqNums(), []uint32{1}) {
		t.Errorf("SEARCH OLDER 600 = %v, %v, want 1", data, err)
	}
}
