package imapd

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
)

// Tests of what a conformance run against a reference suite found, each
// through a real connection.

// rawLogin dials in the clear (the env allows it), logs in and selects
// INBOX.
func rawLogin(t *testing.T, e *env) *rawConn {
	t.Helper()
	rc := dialRaw(t, e.addr)
	if _, tagged := rc.cmd(`LOGIN "alice@example.com" "alice's secret"`); !strings.HasPrefix(tagged, "OK") {
		t.Fatalf("LOGIN = %s", tagged)
	}
	return rc
}

func mustOK(t *testing.T, rc *rawConn, cmd string) []string {
	t.Helper()
	untagged, tagged := rc.cmd("%s", cmd)
	if !strings.HasPrefix(tagged, "OK") {
		t.Fatalf("%s = %s (untagged %q)", cmd, tagged, untagged)
	}
	return untagged
}

// TestEnvelopeGroups: group syntax keeps its start and end markers in
// ENVELOPE (RFC 3501 section 7.4.2), and an empty group is not NIL.
func TestEnvelopeGroups(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	e.deliver(crlf(`From: Bob <bob@example.org>
To: group: g1@d1.org, g2@d2.org;, group2: g3@d3.org;
Cc: group:;
Subject: groups

Hi.
`), t1)
	rc := rawLogin(t, e)
	mustOK(t, rc, "SELECT INBOX")
	untagged := mustOK(t, rc, "FETCH 1 (ENVELOPE)")
	got := strings.Join(untagged, "\n")
	for _, want := range []string{
		`((NIL NIL "group" NIL) (NIL NIL "g1" "d1.org") (NIL NIL "g2" "d2.org") (NIL NIL NIL NIL) (NIL NIL "group2" NIL) (NIL NIL "g3" "d3.org") (NIL NIL NIL NIL))`,
		`((NIL NIL "group" NIL) (NIL NIL NIL NIL)) NIL`, // Cc, then Bcc
	} {
		if !strings.Contains(got, want) {
			t.Errorf("FETCH ENVELOPE = %s\nwant it to contain %s", got, want)
		}
	}
}

func TestParseAddressList(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []imap.Address
	}{
		{"a@b.c", []imap.Address{{Mailbox: "a", Host: "b.c"}}},
		{`"Bob, Jr." <bob@x.org>, =?utf-8?q?J=C3=B6rg?= <j@y.org>`, []imap.Address{{Name: "Bob, Jr.", Mailbox: "bob", Host: "x.org"}, {Name: "Jörg", Mailbox: "j", Host: "y.org"}}},
		{"<user-from (comment)@ (comment) domain.org>", []imap.Address{{Mailbox: "user-from", Host: "domain.org"}}},
		{"Name (c) <@route,@r2:u@h.org> (trailing)", []imap.Address{{Name: "Name", Mailbox: "u", Host: "h.org"}}},
		{"g:;", []imap.Address{{Mailbox: "g"}, {}}},
		{"undisclosed-recipients, a@b.c, ,", []imap.Address{{Mailbox: "a", Host: "b.c"}}},
		{"first.last@[127.0.0.1]", []imap.Address{{Mailbox: "first.last", Host: "[127.0.0.1]"}}},
		{`"quoted \" local"@x.org`, []imap.Address{{Mailbox: `quoted " local`, Host: "x.org"}}},
		// A comment names an address without a display name: the last
		// one within or after it, not one before it.
		{"user@domain (Real Name)", []imap.Address{{Name: "Real Name", Mailbox: "user", Host: "domain"}}},
		{"(before) u (one)@ (two) d.org (three), v@e.org", []imap.Address{{Name: "three", Mailbox: "u", Host: "d.org"}, {Mailbox: "v", Host: "e.org"}}},
		{`a@b.c (Jo \(J\) (nested) =?utf-8?q?J=C3=B6rg?=)`, []imap.Address{{Name: "Jo (J) (nested) Jörg", Mailbox: "a", Host: "b.c"}}},
		{"a@b.c (name) ()", []imap.Address{{Mailbox: "a", Host: "b.c"}}},
		{"Display <a@b.c> (comment), <d@e.f> (comment)", []imap.Address{{Name: "Display", Mailbox: "a", Host: "b.c"}, {Mailbox: "d", Host: "e.f"}}},
		{"g: a@b.c (In Group);", []imap.Address{{Mailbox: "g"}, {Name: "In Group", Mailbox: "a", Host: "b.c"}, {}}},
	} {
		if got := parseAddressList(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("parseAddressList(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

// TestEnvelopeCommentName: an address without a display name takes the
// comment after it as its name in ENVELOPE, as Dovecot gives it
// (imaptest's fetch-envelope, messages 4 and 5).
func TestEnvelopeCommentName(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	e.deliver(crlf(`Date: Sat, 01 Feb 2007 01:02:03 +0200
From: user@domain (Real Name)
To: group: g1@d1.org, g2@d2.org;, group2: g3@d3.org;

body
`), t1)
	e.deliver(crlf(`Date: Sat, 01 Feb 2007 01:02:03 +0200
From: user@domain (Real Name)
Sender: 
Reply-To: 

body
`), t2)
	rc := rawLogin(t, e)
	mustOK(t, rc, "EXAMINE INBOX")
	untagged := mustOK(t, rc, "FETCH 1:2 (ENVELOPE)")
	if len(untagged) != 2 {
		t.Fatalf("FETCH 1:2 (ENVELOPE) = %q", untagged)
	}
	from := `(("Real Name" NIL "user" "domain"))`
	for i, want := range []string{
		" NIL " + from + " " + from + " " + from + ` ((NIL NIL "group" NIL) (NIL NIL "g1" "d1.org") (NIL NIL "g2" "d2.org") (NIL NIL NIL NIL) (NIL NIL "group2" NIL) (NIL NIL "g3" "d3.org") (NIL NIL NIL NIL)) NIL NIL NIL NIL))`,
		" NIL " + from + " " + from + " " + from + " NIL NIL NIL NIL NIL))",
	} {
		if !strings.HasSuffix(untagged[i], want) {
			t.Errorf("FETCH %d ENVELOPE = %s\nwant it to end %s", i+1, untagged[i], want)
		}
	}
}

// TestSearchFromComments: comments inside an address do not hide it from
// SEARCH FROM (RFC 5322 section 3.2.2).
func TestSearchFromComments(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.deliver(crlf(`From: <user-from (comment)@ (comment) domain.org>
To: alice@example.com
Subject: comments

Hi.
`), t1)
	e.deliver(msgPlain, t2)
	c := e.login(nil)
	if _, err := c.Select("INBOX", nil).Wait(); err != nil {
		t.Fatal(err)
	}
	data, err := c.UIDSearch(&imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: "From", Value: "user-from@domain.org"}}}, nil).Wait()
	if err != nil {
		t.Fatal(err)
	}
	if got := data.AllUIDs(); !slices.Equal(got, []imap.UID{1}) {
		t.Errorf("UID SEARCH FROM user-from@domain.org = %v, want [1]", got)
	}
}

// TestLiteralCapability: once LITERAL+ is listed, LITERAL- is not
// (RFC 7888 section 4: LITERAL+ includes it); before login only
// LITERAL-, with its 4096-byte bound, is.
func TestLiteralCapability(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	rc := dialRaw(t, e.addr)
	// imapclient's CapSet reports LITERAL- whenever LITERAL+ is there,
	// so the lines are read as sent.
	caps := func() []string {
		for _, u := range mustOK(t, rc, "CAPABILITY") {
			if l, ok := strings.CutPrefix(u, "* CAPABILITY "); ok {
				return strings.Fields(l)
			}
		}
		t.Fatal("no CAPABILITY data")
		return nil
	}
	if c := caps(); !slices.Contains(c, "LITERAL-") || slices.Contains(c, "LITERAL+") {
		t.Errorf("before login: %v, want LITERAL- alone", c)
	}
	mustOK(t, rc, `LOGIN "alice@example.com" "alice's secret"`)
	if c := caps(); slices.Contains(c, "LITERAL-") || !slices.Contains(c, "LITERAL+") {
		t.Errorf("after login: %v, want LITERAL+ alone", c)
	}
}

// TestMoveSameMailbox: MOVE to the selected mailbox succeeds with new
// UIDs (RFC 6851), and the untagged COPYUID of MOVE does not say COPY.
func TestMoveSameMailbox(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	e.deliver(msgPlain, t1)
	e.deliver(msgPlain, t2)
	rc := rawLogin(t, e)
	mustOK(t, rc, "SELECT INBOX")
	untagged := mustOK(t, rc, "MOVE 1 INBOX")
	if !slices.Contains(untagged, "* OK [COPYUID 1 1 3] Moved") || !slices.Contains(untagged, "* 1 EXPUNGE") {
		t.Errorf("MOVE 1 INBOX: untagged %q, want COPYUID 1 1 3 and 1 EXPUNGE", untagged)
	}
	untagged = mustOK(t, rc, "UID FETCH 1:* (UID)")
	if got := strings.Join(untagged, "|"); !strings.Contains(got, "UID 2") || !strings.Contains(got, "UID 3") || strings.Contains(got, "UID 1)") {
		t.Errorf("after MOVE: %q, want UIDs 2 and 3", untagged)
	}
	mustOK(t, rc, "CREATE Dst")
	for _, u := range mustOK(t, rc, "MOVE 1 Dst") {
		if strings.Contains(u, "COPY completed") {
			t.Errorf("MOVE 1 Dst: %q", u)
		}
	}
}

// TestListBareAmpersand: a pattern that is not modified UTF-7 is taken
// literally, not answered SERVERBUG.
func TestListBareAmpersand(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	rc := rawLogin(t, e)
	mustOK(t, rc, `CREATE "R&-D"`)
	for _, tt := range []struct {
		cmd  string
		want []string
	}{
		{`LIST "" "&"`, nil},
		{`LIST "" "R&D"`, []string{`* LIST (\HasNoChildren) "/" "R&-D"`}},
		{`LIST "" "R&*"`, []string{`* LIST (\HasNoChildren) "/" "R&-D"`}},
		{`LIST "" "R&-D"`, []string{`* LIST (\HasNoChildren) "/" "R&-D"`}},
		{`LSUB "" "a&b*"`, nil},
		{`LIST "" "&AOQ-*"`, nil}, // valid modified UTF-7 stays as it is
	} {
		untagged := mustOK(t, rc, tt.cmd)
		if !slices.Equal(untagged, tt.want) {
			t.Errorf("%s: untagged %q, want %q", tt.cmd, untagged, tt.want)
		}
	}
}

// TestAtomCharacterNames: a mailbox name or LIST pattern made of every
// atom character (Dovecot's conformance scripts use it) is a name like
// any other: SELECT, EXAMINE and STATUS of a folder that does not exist
// answer NO (RFC 9051 section 6.3.2), not BAD, LIST and LSUB answer OK
// with nothing, and the session goes on. Its "&" begins no modified
// UTF-7 sequence, so it stands for itself.
func TestAtomCharacterNames(t *testing.T) {
	const name = "!#$&'+,-.0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ^_`abcdefghijklmnopqrstuvwxyz|}~"
	e := newEnv(t, envOptions{insecureAuth: true})
	rc := rawLogin(t, e)
	for _, tt := range []struct{ cmd, want string }{
		{"SELECT " + name, "NO [NONEXISTENT]"},
		{"EXAMINE " + name, "NO [NONEXISTENT]"},
		{`SELECT "` + name + `"`, "NO [NONEXISTENT]"},
		{"STATUS " + name + " (MESSAGES)", "NO [NONEXISTENT]"},
		{`LIST "" ` + name, "OK"},
		{`LIST "" ` + name + "*", "OK"},
		{"LIST " + name + " " + name, "OK"},
		{`LSUB "" ` + name, "OK"},
		{"NOOP", "OK"},
	} {
		untagged, tagged := rc.cmd("%s", tt.cmd)
		if !strings.HasPrefix(tagged, tt.want+" ") {
			t.Errorf("%s = %q, want %s", tt.cmd, tagged, tt.want)
		}
		if strings.HasPrefix(tt.cmd, "L") && len(untagged) != 0 {
			t.Errorf("%s: untagged %q, want none", tt.cmd, untagged)
		}
	}
}

// TestStoreNewKeyword: a STORE that brings a keyword new to the folder
// sends FLAGS and PERMANENTFLAGS with it before the FETCH.
func TestStoreNewKeyword(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	e.deliver(msgPlain, t1)
	rc := rawLogin(t, e)
	mustOK(t, rc, "SELECT INBOX")
	untagged := mustOK(t, rc, "STORE 1 +FLAGS ($Kw1)")
	want := []string{
		`* FLAGS (\Seen \Answered \Flagged \Deleted \Draft $Kw1)`,
		`* OK [PERMANENTFLAGS (\Seen \Answered \Flagged \Deleted \Draft $Kw1 \*)] Permanent flags`,
		`* 1 FETCH (UID 1 FLAGS ($Kw1))`,
	}
	if !slices.Equal(untagged, want) {
		t.Errorf("STORE 1 +FLAGS ($Kw1): %q, want %q", untagged, want)
	}
	// A keyword already in use: no new FLAGS.
	if untagged := mustOK(t, rc, "STORE 1 +FLAGS ($Kw1 \\Seen)"); len(untagged) != 1 {
		t.Errorf("second STORE: %q, want the FETCH alone", untagged)
	}
}

// has reports whether a line of lines starts with prefix.
func has(lines []string, prefix string) bool {
	return slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, prefix) })
}

// TestRecent: \Recent, RECENT, STATUS (RECENT) and SEARCH NEW, OLD and
// RECENT follow RFC 3501 section 2.3.2 for IMAP4rev1 sessions: a message
// is recent to the first session to see its folder after it arrived.
func TestRecent(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	e.deliver(msgPlain, time.Now().Add(-time.Hour)) // received before the process started
	a := rawLogin(t, e)
	if u := mustOK(t, a, "SELECT INBOX"); !slices.Contains(u, "* 0 RECENT") {
		t.Errorf("first SELECT: %q, want 0 RECENT (mail received before the process started)", u)
	}
	e.deliver(msgPlain, t2)
	if u := mustOK(t, a, "NOOP"); !slices.Contains(u, "* 2 EXISTS") || !slices.Contains(u, "* 1 RECENT") {
		t.Errorf("NOOP after delivery: %q, want 2 EXISTS and 1 RECENT", u)
	}
	for _, tt := range []struct{ cmd, want string }{
		{"SEARCH RECENT", "* SEARCH 2"},
		{"SEARCH NEW", "* SEARCH 2"},
		{"SEARCH OLD", "* SEARCH 1"},
		{"FETCH 2 (FLAGS)", `* 2 FETCH (UID 2 FLAGS (\Recent))`},
		{"FETCH 1 (FLAGS)", `* 1 FETCH (UID 1 FLAGS ())`},
		{"STORE 2 +FLAGS ($x)", `* 2 FETCH (UID 2 FLAGS ($x \Recent))`},
	} {
		if u := mustOK(t, a, tt.cmd); !has(u, tt.want) {
			t.Errorf("%s: %q, want %s", tt.cmd, u, tt.want)
		}
	}

	// A message that arrives while a's session has not looked yet is
	// unclaimed: b's STATUS counts it, b's SELECT claims it, and a does
	// not see it recent afterwards.
	e.deliver(msgPlain, t3)
	b := rawLogin(t, e)
	if u := mustOK(t, b, "STATUS INBOX (RECENT)"); !has(u, "* STATUS INBOX (RECENT 1)") {
		t.Errorf("STATUS: %q, want RECENT 1", u)
	}
	if u := mustOK(t, b, "EXAMINE INBOX"); !slices.Contains(u, "* 1 RECENT") {
		t.Errorf("EXAMINE: %q, want 1 RECENT", u)
	}
	if u := mustOK(t, b, "SELECT INBOX"); !slices.Contains(u, "* 1 RECENT") {
		t.Errorf("SELECT after EXAMINE: %q, want 1 RECENT (EXAMINE claims nothing)", u)
	}
	if u := mustOK(t, a, "NOOP"); !slices.Contains(u, "* 3 EXISTS") || !slices.Contains(u, "* 1 RECENT") {
		t.Errorf("a's NOOP: %q, want 3 EXISTS and still 1 RECENT", u)
	}
	if u := mustOK(t, a, "FETCH 3 (FLAGS)"); !has(u, "* 3 FETCH (UID 3 FLAGS ())") {
		t.Errorf("a's FETCH 3: %q, want no \\Recent (b claimed it)", u)
	}
	if u := mustOK(t, b, "STATUS INBOX (RECENT)"); !has(u, "* STATUS INBOX (RECENT 0)") {
		t.Errorf("STATUS after claims: %q, want RECENT 0", u)
	}

	// IMAP4rev2 has no \Recent (RFC 9051).
	e.deliver(msgPlain, t3)
	c := rawLogin(t, e)
	mustOK(t, c, "ENABLE IMAP4rev2")
	if u := mustOK(t, c, "SELECT INBOX"); has(u, "* 1 RECENT") {
		t.Errorf("IMAP4rev2 SELECT: %q, want no RECENT", u)
	}
	if u := mustOK(t, c, "FETCH 4 (FLAGS)"); has(u, `* 4 FETCH (UID 4 FLAGS (\Recent))`) {
		t.Errorf("IMAP4rev2 FETCH: %q, want no \\Recent", u)
	}
}

// TestFoldedBoundary: a boundary folded across lines is unfolded as RFC
// 5322 section 2.2.3 says (the line break removed, the white space kept)
// and its delimiter lines, which hold white space (RFC 2046 section
// 5.1.1), are found; a multipart whose delimiter is never found has one
// empty text/plain part, as Dovecot describes it, rather than none.
func TestFoldedBoundary(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	// Dovecot's imaptest fetch-bodystructure.mbox.
	e.deliver(crlf(`From: user@domain.org
Date: Sat, 24 Mar 2007 23:00:00 +0200
Mime-Version: 1.0
Content-Type: multipart/mixed; boundary="foo
 bar"

--foo bar
Content-Type: text/html; charset=us-ascii

hello

--foo bar--
`), t1)
	e.deliver(crlf("From: user@domain.org\nContent-Type: multipart/mixed;\n\tboundary=\"a \n\tb\"\n\n--a \tb\nContent-Type: text/plain\n\none\n--a \tb\n\ntwo\n--a \tb--\n"), t2)
	e.deliver(crlf("From: user@domain.org\nContent-Type: multipart/mixed; boundary=nowhere\n\n--elsewhere\n\ntext\n"), t3)
	rc := rawLogin(t, e)
	mustOK(t, rc, "EXAMINE INBOX")
	for _, tt := range []struct{ cmd, want string }{
		{"FETCH 1 (BODYSTRUCTURE)", `* 1 FETCH (UID 1 BODYSTRUCTURE (("text" "html" ("charset" "us-ascii") NIL NIL "7bit" 7 1 NIL NIL NIL NIL) "mixed" ("boundary" "foo bar") NIL NIL NIL))`},
		{"FETCH 1 (BODY[1])", `* 1 FETCH (UID 1 BODY[1] {7}|hello|)`},
		{"FETCH 2 (BODYSTRUCTURE)", "* 2 FETCH (UID 2 BODYSTRUCTURE ((\"text\" \"plain\" NIL NIL NIL \"7bit\" 3 0 NIL NIL NIL NIL)(\"text\" \"plain\" NIL NIL NIL \"7bit\" 3 0 NIL NIL NIL NIL) \"mixed\" (\"boundary\" \"a \tb\") NIL NIL NIL))"},
		{"FETCH 2 (BODY[2])", `* 2 FETCH (UID 2 BODY[2] {3}|two)`},
		{"FETCH 3 (BODYSTRUCTURE)", `* 3 FETCH (UID 3 BODYSTRUCTURE (("text" "plain" ("charset" "us-ascii") NIL NIL "7bit" 0 0 NIL NIL NIL NIL) "mixed" ("boundary" "nowhere") NIL NIL NIL))`},
		{"FETCH 3 (BODY[1])", `* 3 FETCH (UID 3 BODY[1] {0}|)`},
	} {
		if u := strings.Join(mustOK(t, rc, tt.cmd), "|"); u != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.cmd, u, tt.want)
		}
	}
}

// TestRecentFirstSight: a folder no session of the process has seen yet
// still shows as recent the mail that came since the process started,
// to the first session that selects it and to no other (RFC 3501
// section 2.3.2). Dovecot's imaptest "select": CREATE, two APPENDs,
// SELECT answers 2 RECENT.
func TestRecentFirstSight(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	e.deliver(msgPlain, time.Now().Add(-time.Hour)) // before the process started
	e.deliver(msgPlain, time.Now())                 // after, before anyone looked
	a := rawLogin(t, e)
	b := rawLogin(t, e)

	mustOK(t, a, "CREATE Box")
	mustOK(t, a, "APPEND Box {16+}\r\nSubject: x\r\n\r\nhi\r\n")
	mustOK(t, a, "APPEND Box (\\Seen) \"02-Nov-2026 10:00:00 +0000\" {16+}\r\nSubject: x\r\n\r\nhi\r\n")
	if u := mustOK(t, a, "SELECT Box"); !slices.Contains(u, "* 2 EXISTS") || !slices.Contains(u, "* 2 RECENT") {
		t.Errorf("SELECT Box after two APPENDs: %q, want 2 EXISTS, 2 RECENT", u)
	}
	if u := mustOK(t, a, "FETCH 1:2 (FLAGS)"); !has(u, `* 1 FETCH (UID 1 FLAGS (\Recent))`) || !has(u, `* 2 FETCH (UID 2 FLAGS (\Seen \Recent))`) {
		t.Errorf("FETCH FLAGS: %q, want \\Recent on both", u)
	}
	if u := mustOK(t, b, "SELECT Box"); !slices.Contains(u, "* 0 RECENT") {
		t.Errorf("second session's SELECT Box: %q, want 0 RECENT (a claimed them)", u)
	}

	// INBOX: the message delivered since the start is recent, the one
	// from before is not; STATUS counts it before anyone selects.
	if u := mustOK(t, b, "STATUS INBOX (RECENT)"); !has(u, "* STATUS INBOX (RECENT 1)") {
		t.Errorf("STATUS INBOX: %q, want RECENT 1", u)
	}
	if u := mustOK(t, b, "SELECT INBOX"); !slices.Contains(u, "* 1 RECENT") {
		t.Errorf("first SELECT INBOX: %q, want 1 RECENT", u)
	}
	if u := mustOK(t, b, "SEARCH RECENT"); !has(u, "* SEARCH 2") || has(u, "* SEARCH 1") {
		t.Errorf("SEARCH RECENT: %q, want 2 alone", u)
	}
	if u := mustOK(t, a, "SELECT INBOX"); !slices.Contains(u, "* 0 RECENT") {
		t.Errorf("a's SELECT INBOX: %q, want 0 RECENT (b claimed it)", u)
	}

	// COPY into a folder not seen yet: the copies are recent to the next
	// session that selects it, though their dates are old.
	mustOK(t, a, "CREATE Dst")
	mustOK(t, a, "COPY 1:2 Dst")
	if u := mustOK(t, b, "SELECT Dst"); !slices.Contains(u, "* 2 RECENT") {
		t.Errorf("SELECT Dst after COPY: %q, want 2 RECENT", u)
	}
}

// TestSearchSave: SEARCH RETURN (SAVE) alone answers no ESEARCH, and SAVE
// with MIN or MAX alone saves those messages only (RFC 5182 section
// 2.4).
func TestSearchSave(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	for _, at := range []time.Time{t1, t2, t3} {
		e.deliver(msgPlain, at)
	}
	rc := rawLogin(t, e)
	mustOK(t, rc, "SELECT INBOX")
	for _, tt := range []struct {
		search   string
		untagged []string
		saved    string
	}{
		{"SEARCH RETURN (SAVE) ALL", nil, "* SEARCH 1 2 3"},
		{"UID SEARCH RETURN (SAVE) 2:3", nil, "* SEARCH 2 3"},
		{"SEARCH RETURN (SAVE MIN) ALL", []string{`* ESEARCH (TAG "r7") MIN 1`}, "* SEARCH 1"},
		{"SEARCH RETURN (MAX SAVE) 1:2", []string{`* ESEARCH (TAG "r9") MAX 2`}, "* SEARCH 2"},
		{"SEARCH RETURN (MIN MAX SAVE) ALL", []string{`* ESEARCH (TAG "r11") MIN 1 MAX 3`}, "* SEARCH 1 3"},
		{"SEARCH RETURN (SAVE COUNT MIN) ALL", []string{`* ESEARCH (TAG "r13") MIN 1 COUNT 3`}, "* SEARCH 1 2 3"},
	} {
		if u := mustOK(t, rc, tt.search); !slices.Equal(u, tt.untagged) {
			t.Errorf("%s = %q, want %q", tt.search, u, tt.untagged)
		}
		if u := mustOK(t, rc, "SEARCH $"); !slices.Equal(u, []string{tt.saved}) {
			t.Errorf("after %s: SEARCH $ = %q, want %s", tt.search, u, tt.saved)
		}
	}
}

// TestNewKeywordOtherSession: a keyword new to the folder reaches another
// session with the folder selected as untagged FLAGS and PERMANENTFLAGS
// before any FETCH FLAGS names it (RFC 9051 section 7.3.5), as Dovecot
// sends it; IDLE gets it the same way.
func TestNewKeywordOtherSession(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	e.deliver(msgPlain, t1)
	a, b := rawLogin(t, e), rawLogin(t, e)
	mustOK(t, a, "SELECT INBOX")
	mustOK(t, b, "SELECT INBOX")
	mustOK(t, b, "STORE 1 +FLAGS ($NewKw)")
	want := []string{
		`* FLAGS (\Seen \Answered \Flagged \Deleted \Draft $NewKw)`,
		`* OK [PERMANENTFLAGS (\Seen \Answered \Flagged \Deleted \Draft $NewKw \*)] Permanent flags`,
		`* 1 FETCH (UID 1 FLAGS ($NewKw))`,
	}
	if u := mustOK(t, a, "NOOP"); !slices.Equal(u, want) {
		t.Errorf("other session's NOOP = %q, want %q", u, want)
	}
	// Through IDLE.
	a.tag++
	tag := "r" + strconv.Itoa(a.tag)
	fmt.Fprintf(a.c, "%s IDLE\r\n", tag)
	if l := a.line(); !strings.HasPrefix(l, "+") {
		t.Fatalf("IDLE: %q", l)
	}
	mustOK(t, b, "STORE 1 +FLAGS ($Other)")
	var got []string
	for len(got) < 3 {
		got = append(got, a.line())
	}
	fmt.Fprintf(a.c, "DONE\r\n")
	a.until(tag)
	want = []string{
		`* FLAGS (\Seen \Answered \Flagged \Deleted \Draft $NewKw $Other)`,
		`* OK [PERMANENTFLAGS (\Seen \Answered \Flagged \Deleted \Draft $NewKw $Other \*)] Permanent flags`,
		`* 1 FETCH (UID 1 FLAGS ($NewKw $Other))`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("during IDLE: %q, want %q", got, want)
	}
}

// TestCapabilitiesDocumented: every capability the server lists before
// and after login is in docs/mail.md's capability table and in the
// README's IMAP table, so both stay true.
func TestCapabilitiesDocumented(t *testing.T) {
	docs := map[string]string{}
	for _, path := range []string{"../docs/mail.md", "../README.md"} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		docs[path] = string(b)
	}
	e := newEnv(t, envOptions{insecureAuth: true})
	rc := dialRaw(t, e.addr)
	var caps []string
	capsOf := func(lines []string) {
		for _, l := range lines {
			if rest, ok := strings.CutPrefix(l, "* CAPABILITY "); ok {
				caps = append(caps, strings.Fields(rest)...)
			}
		}
	}
	capsOf(mustOK(t, rc, "CAPABILITY"))
	rc = rawLogin(t, e)
	capsOf(mustOK(t, rc, "CAPABILITY"))
	if len(caps) < 20 {
		t.Fatalf("CAPABILITY = %q", caps)
	}
	for _, c := range caps {
		name := c
		if strings.HasPrefix(c, "APPENDLIMIT=") {
			name = "APPENDLIMIT=<n>"
		}
		for path, doc := range docs {
			if !strings.Contains(doc, "| `"+name+"`") && !strings.Contains(doc, ", `"+name+"`") {
				t.Errorf("capability %s is not in %s's table", c, path)
			}
		}
	}
}

// TestRecentAfterExpunge: an IMAP4rev1 session is sent RECENT again when
// an expunge, its own or another session's, takes recent messages away
// (RFC 3501 section 7.3.2: RECENT follows a change of the mailbox's
// size), as Dovecot sends it; an expunge of no recent message, and an
// IMAP4rev2 session, get none.
func TestRecentAfterExpunge(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	e.deliver(msgPlain, t1) // before the process started: not recent
	a := rawLogin(t, e)
	mustOK(t, a, "SELECT INBOX")
	e.deliver(msgPlain, t2)
	e.deliver(msgPlain, t3)
	if u := mustOK(t, a, "NOOP"); !slices.Equal(u, []string{"* 3 EXISTS", "* 2 RECENT"}) {
		t.Fatalf("NOOP = %q", u)
	}
	mustOK(t, a, `STORE 1:2 +FLAGS.SILENT (\Deleted)`)
	if u := mustOK(t, a, "EXPUNGE"); !slices.Equal(u, []string{"* 2 EXPUNGE", "* 1 EXPUNGE", "* 1 RECENT"}) {
		t.Errorf("EXPUNGE of a recent message = %q, want RECENT 1 after the EXPUNGEs", u)
	}
	b := rawLogin(t, e)
	mustOK(t, b, "SELECT INBOX")
	mustOK(t, b, `STORE 1 +FLAGS.SILENT (\Deleted)`)
	mustOK(t, b, "EXPUNGE")
	if u := mustOK(t, a, "NOOP"); !slices.Equal(u, []string{"* 1 EXPUNGE", "* 0 RECENT"}) {
		t.Errorf("NOOP after b's EXPUNGE = %q, want EXPUNGE and RECENT 0", u)
	}
	e.deliver(msgPlain, t3)
	c := rawLogin(t, e)
	mustOK(t, c, "ENABLE IMAP4rev2")
	mustOK(t, c, "SELECT INBOX")
	mustOK(t, c, `STORE 1 +FLAGS.SILENT (\Deleted)`)
	if u := mustOK(t, c, "EXPUNGE"); !slices.Equal(u, []string{"* 1 EXPUNGE"}) {
		t.Errorf("IMAP4rev2 EXPUNGE = %q, want no RECENT", u)
	}
}
