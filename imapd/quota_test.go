package imapd

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
)

// wantStorage is what GETQUOTA should report for alice: the figures of
// the mailbox record GET /users/{email}/usage and /quota answer from
// (storage_used_bytes rounded up to KiB, quota_mb times 1024).
func (e *env) wantStorage() (used, limit int64) {
	e.t.Helper()
	mb, err := e.st.Mailbox(context.Background(), e.partnerID, alice)
	if err != nil {
		e.t.Fatal(err)
	}
	return (mb.UsedBytes + 1023) / 1024, mb.QuotaMB * 1024
}

func TestQuotaWithIMAPClient(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.deliver(msgPlain, t1)
	e.deliver(msgLarge, t3)
	c := e.login(nil)
	if !c.Caps().Has(capQuota) || !c.Caps().Has(capQuotaStorage) || !c.Caps().Has(capID) {
		t.Errorf("capabilities after login = %v, want QUOTA, QUOTA=RES-STORAGE and ID", c.Caps())
	}
	if c.Caps().Has("QUOTA=RES-MESSAGE") || c.Caps().Has("QUOTASET") {
		t.Errorf("capabilities after login = %v, want no QUOTA=RES-MESSAGE and no QUOTASET", c.Caps())
	}

	check := func(what string, data []imapclient.QuotaData) {
		t.Helper()
		used, limit := e.wantStorage()
		want := imapclient.QuotaResourceData{Usage: used, Limit: limit}
		if len(data) != 1 || data[0].Root != "" || len(data[0].Resources) != 1 || data[0].Resources[imap.QuotaResourceStorage] != want {
			t.Errorf("%s = %+v, want root \"\" with STORAGE %+v", what, data, want)
		}
	}
	data, err := c.GetQuotaRoot("INBOX").Wait()
	if err != nil {
		t.Fatalf("GetQuotaRoot: %v", err)
	}
	check("GETQUOTAROOT INBOX", data)
	if used, _ := e.wantStorage(); used == 0 {
		t.Errorf("used KiB = 0 after two deliveries")
	}

	// The figures are read afresh: a delivery and a new quota show at once.
	e.deliver(msgMultipart, t2)
	if _, err := e.st.SetQuota(context.Background(), e.partnerID, alice, 3); err != nil {
		t.Fatal(err)
	}
	q, err := c.GetQuota("").Wait()
	if err != nil {
		t.Fatalf("GetQuota: %v", err)
	}
	check("GETQUOTA \"\" after a delivery", []imapclient.QuotaData{*q})
	if q.Resources[imap.QuotaResourceStorage].Limit != 3*1024 {
		t.Errorf("limit = %d KiB, want %d (quota_mb 3)", q.Resources[imap.QuotaResourceStorage].Limit, 3*1024)
	}

	if _, err := c.GetQuota("other").Wait(); imapCode(err) != imap.ResponseCodeNonExistent {
		t.Errorf("GETQUOTA other = %v, want NO [NONEXISTENT]", err)
	}
	if _, err := c.GetQuotaRoot("Nowhere").Wait(); imapCode(err) != imap.ResponseCodeNonExistent {
		t.Errorf("GETQUOTAROOT Nowhere = %v, want NO [NONEXISTENT]", err)
	}
	err = c.SetQuota("", map[imap.QuotaResourceType]int64{imap.QuotaResourceStorage: 1}).Wait()
	if imapCode(err) != imap.ResponseCodeNoPerm {
		t.Errorf("SETQUOTA = %v, want NO [NOPERM]", err)
	}
	// A folder with a name in modified UTF-7 has the same root.
	if err := c.Create("Käse", nil).Wait(); err != nil {
		t.Fatal(err)
	}
	data, err = c.GetQuotaRoot("Käse").Wait()
	if err != nil {
		t.Fatalf("GetQuotaRoot Käse: %v", err)
	}
	check("GETQUOTAROOT Käse", data)

	id, err := c.ID(&imap.IDData{Name: "imapd-test", Version: "1"}).Wait()
	if err != nil {
		t.Fatalf("ID: %v", err)
	}
	if id.Name != "mailhost" || id.Version == "" {
		t.Errorf("ID = %+v, want name mailhost and a version", id)
	}
	// imapserver goes on serving the connection.
	if _, err := c.Select("INBOX", nil).Wait(); err != nil {
		t.Errorf("SELECT after the session's commands: %v", err)
	}
}

// dialRawTLS is dialRaw over implicit TLS.
func dialRawTLS(t *testing.T, e *env) *rawConn {
	t.Helper()
	c, err := tls.Dial("tcp", e.tlsAddr, e.clientTLS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	rc := &rawConn{t: t, c: c, r: bufio.NewReader(c)}
	rc.line() // greeting
	return rc
}

// send writes s as it is and reads until the tagged response of tag; it
// returns every line read, the tagged one last.
func (rc *rawConn) send(s, tag string) []string {
	rc.t.Helper()
	if _, err := rc.c.Write([]byte(s)); err != nil {
		rc.t.Fatal(err)
	}
	return rc.until(tag)
}

func (rc *rawConn) until(tag string) []string {
	rc.t.Helper()
	var lines []string
	for {
		l := rc.line()
		lines = append(lines, l)
		if strings.HasPrefix(l, tag+" ") {
			return lines
		}
	}
}

func hasLine(lines []string, prefix string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

func TestSessionCapabilities(t *testing.T) {
	e := newEnv(t, envOptions{})
	caps := func(line string) map[string]bool {
		m := make(map[string]bool)
		if i := strings.Index(line, "CAPABILITY "); i >= 0 {
			line = line[i+len("CAPABILITY "):]
		}
		line, _, _ = strings.Cut(line, "]")
		for _, c := range strings.Fields(line) {
			m[c] = true
		}
		return m
	}
	check := func(what string, got map[string]bool, want, notWant []string) {
		t.Helper()
		for _, c := range want {
			if !got[c] {
				t.Errorf("%s: capabilities %v, want %s", what, got, c)
			}
		}
		for _, c := range notWant {
			if got[c] {
				t.Errorf("%s: capabilities %v, want no %s", what, got, c)
			}
		}
	}

	// In the clear: STARTTLS and LOGINDISABLED, no AUTH=, no QUOTA yet.
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	rc := &rawConn{t: t, c: c, r: bufio.NewReader(c)}
	t.Cleanup(func() { rc.c.Close() })
	greeting := rc.line()
	check("greeting", caps(greeting), []string{"IMAP4rev2", "STARTTLS", "LOGINDISABLED", "ID"}, []string{"AUTH=PLAIN", "QUOTA"})
	untagged, tagged := rc.cmd("CAPABILITY")
	check("CAPABILITY in the clear", caps(untagged[0]), []string{"STARTTLS", "LOGINDISABLED", "ID"}, []string{"AUTH=PLAIN", "QUOTA"})
	if !strings.HasPrefix(tagged, "OK") {
		t.Fatalf("CAPABILITY = %q", tagged)
	}
	if _, tagged := rc.cmd(`LOGIN "%s" "%s"`, alice, password); !strings.HasPrefix(tagged, "NO [PRIVACYREQUIRED]") {
		t.Errorf("LOGIN in the clear = %q, want NO [PRIVACYREQUIRED]", tagged)
	}

	// STARTTLS, then the same connection under TLS.
	if _, tagged := rc.cmd("STARTTLS"); !strings.HasPrefix(tagged, "OK") {
		t.Fatalf("STARTTLS = %q", tagged)
	}
	tc := tls.Client(rc.c, e.clientTLS)
	if err := tc.Handshake(); err != nil {
		t.Fatalf("handshake: %v", err)
	}
	rc.c, rc.r = tc, bufio.NewReader(tc)
	untagged, _ = rc.cmd("CAPABILITY")
	check("CAPABILITY after STARTTLS", caps(untagged[0]), []string{"AUTH=PLAIN", "ID"}, []string{"STARTTLS", "LOGINDISABLED", "QUOTA"})
	if _, tagged := rc.cmd("STARTTLS"); !strings.HasPrefix(tagged, "BAD") {
		t.Errorf("second STARTTLS = %q, want BAD", tagged)
	}
	_, tagged = rc.cmd(`LOGIN "%s" "%s"`, alice, password)
	check("LOGIN's OK", caps(tagged), []string{"IMAP4rev2", "ID", "QUOTA", "QUOTA=RES-STORAGE"}, []string{"AUTH=PLAIN", "STARTTLS", "LOGINDISABLED", "QUOTA=RES-MESSAGE"})
	untagged, _ = rc.cmd("CAPABILITY")
	check("CAPABILITY after login", caps(untagged[0]), []string{"IDLE", "ID", "QUOTA", "QUOTA=RES-STORAGE"}, []string{"AUTH=PLAIN"})

	// Implicit TLS: no STARTTLS from the start.
	rt := dialRawTLS(t, e)
	untagged, _ = rt.cmd("CAPABILITY")
	check("CAPABILITY on the TLS port", caps(untagged[0]), []string{"AUTH=PLAIN", "ID"}, []string{"STARTTLS", "LOGINDISABLED"})
	if _, tagged := rt.cmd("STARTTLS"); !strings.HasPrefix(tagged, "BAD") {
		t.Errorf("STARTTLS under TLS = %q, want BAD", tagged)
	}
}

// TestStartTLSDiscardsPipelinedCommands: a command sent in the clear after
// STARTTLS, before its answer, could have been added by a man in the
// middle: it must not run once TLS is on.
func TestStartTLSDiscardsPipelinedCommands(t *testing.T) {
	e := newEnv(t, envOptions{})
	rc := dialRaw(t, e.addr)
	lines := rc.send("s1 STARTTLS\r\ns2 ID NIL\r\n", "s1")
	if !strings.HasPrefix(lines[len(lines)-1], "s1 OK") {
		t.Fatalf("STARTTLS = %q", lines)
	}
	tc := tls.Client(rc.c, e.clientTLS)
	if err := tc.Handshake(); err != nil {
		t.Fatalf("handshake: %v", err)
	}
	rc.c, rc.r = tc, bufio.NewReader(tc)
	lines = rc.send("s3 NOOP\r\n", "s3")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "s3 OK") {
		t.Errorf("after STARTTLS = %q, want only s3's OK (nothing of s2)", lines)
	}
}

func TestQuotaRaw(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	e.deliver(msgPlain, t1)
	rc := dialRaw(t, e.addr)
	// Before login: refused, and the connection lives on (imapserver ends
	// it with BYE after a command it does not know).
	for _, cmd := range []string{"GETQUOTAROOT INBOX", `GETQUOTA ""`, `SETQUOTA "" (STORAGE 10)`} {
		if _, tagged := rc.cmd("%s", cmd); !strings.HasPrefix(tagged, "BAD") {
			t.Errorf("%s before login = %q, want BAD", cmd, tagged)
		}
	}
	if _, tagged := rc.cmd(`LOGIN "%s" "%s"`, alice, password); !strings.HasPrefix(tagged, "OK") {
		t.Fatalf("LOGIN = %q", tagged)
	}
	used, limit := e.wantStorage()
	quota := fmt.Sprintf(`* QUOTA "" (STORAGE %d %d)`, used, limit)
	steps := []struct {
		cmd      string
		untagged []string
		tagged   string
	}{
		{"GETQUOTAROOT INBOX", []string{`* QUOTAROOT INBOX ""`, quota}, "OK"},
		{"getquotaroot inbox", []string{`* QUOTAROOT inbox ""`, quota}, "OK"},
		{"GETQUOTAROOT {5}\r\nINBOX", []string{`* QUOTAROOT INBOX ""`, quota}, "OK"},
		{`GETQUOTA ""`, []string{quota}, "OK"},
		{`GETQUOTA {0+}` + "\r\n", []string{quota}, "OK"},
		{`SETQUOTA "" (STORAGE 10)`, nil, "NO [NOPERM]"},
		{"GETQUOTAROOT", nil, "BAD"},
		{`GETQUOTA "" extra`, nil, "BAD"},
		{"GETQUOTAROOT {5000}", nil, "NO [TOOBIG]"},
		{"ID NIL", []string{`* ID ("name" "mailhost" "version" "`}, "OK"},
		{`ID ("name" "raw" "version" NIL)`, []string{`* ID ("name" "mailhost"`}, "OK"},
		{`ID ("name")`, nil, "BAD"},
		{"NOOP", nil, "OK"},
	}
	for _, s := range steps {
		// A synchronizing literal is sent once the server says "+".
		first, rest, lit := strings.Cut(s.cmd, "\r\n")
		rc.tag++
		tag := fmt.Sprintf("r%d", rc.tag)
		fmt.Fprintf(rc.c, "%s %s\r\n", tag, first)
		var lines []string
		if lit && !strings.HasSuffix(first, "+}") {
			if l := rc.line(); !strings.HasPrefix(l, "+") {
				t.Fatalf("%s: %q, want a continuation request", s.cmd, l)
			}
			fmt.Fprintf(rc.c, "%s\r\n", rest)
		} else if lit {
			fmt.Fprintf(rc.c, "%s\r\n", rest)
		}
		lines = rc.until(tag)
		tagged := strings.TrimPrefix(lines[len(lines)-1], tag+" ")
		if !strings.HasPrefix(tagged, s.tagged) {
			t.Errorf("%s: tagged %q, want %s", s.cmd, tagged, s.tagged)
		}
		for _, want := range s.untagged {
			if !hasLine(lines, want) {
				t.Errorf("%s: lines %q, want one starting %q", s.cmd, lines, want)
			}
		}
	}
}

func TestIDBeforeAndAfterLogin(t *testing.T) {
	logs := &syncBuffer{}
	e := newEnv(t, envOptions{log: logs})
	rc := dialRaw(t, e.addr)
	// Before login, in the clear: a value as a literal, with a control
	// character, a long value and a long field name, all bounded in the log.
	long := strings.Repeat("x", 300)
	lines := rc.send("i1 ID (\"name\" {6+}\r\nMy\x01App \"VERSION\" \"1.0\" \"os\" \""+long+"\" \""+strings.Repeat("k", 40)+"\" \"v\")\r\n", "i1")
	if !hasLine(lines, `* ID ("name" "mailhost" "version" "`) || !strings.HasPrefix(lines[len(lines)-1], "i1 OK") {
		t.Errorf("ID before login = %q", lines)
	}
	log := logs.String()
	for _, want := range []string{"msg=\"client id\"", "client.name=My?App", "client.version=1.0", "client.os=" + strings.Repeat("x", idMaxValue) + "...", "client." + strings.Repeat("k", idMaxKey) + "=v"} {
		if !strings.Contains(log, want) {
			t.Errorf("log %q, want %q", log, want)
		}
	}
	if strings.Contains(log, "\x01") || strings.Contains(log, strings.Repeat("x", idMaxValue+1)) {
		t.Errorf("log %q holds the raw value", log)
	}

	// After login, with a real client: the line names the user.
	c := e.login(nil)
	if _, err := c.ID(&imap.IDData{Name: "after-login"}).Wait(); err != nil {
		t.Fatalf("ID after login: %v", err)
	}
	log = logs.String()
	if !strings.Contains(log, "user="+alice) || !strings.Contains(log, "client.name=after-login") {
		t.Errorf("log %q, want a client id line with user=%s", log, alice)
	}
}

// TestAppendBodyWithCommandLines: a message whose lines look like
// commands, and end like literals, reaches the store intact, sent as a
// synchronizing literal, as a LITERAL+ one and inside pipelined commands.
func TestAppendBodyWithCommandLines(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	body := crlf("From: x@example.org\nSubject: tricky\n\na1 GETQUOTA \"\"\na2 ID NIL\na3 STARTTLS\na4 SETQUOTA \"\" (STORAGE 1)\na5 APPEND INBOX {3}\na6 LOGOUT\n")
	rc := dialRaw(t, e.addr)
	if _, tagged := rc.cmd(`LOGIN "%s" "%s"`, alice, password); !strings.HasPrefix(tagged, "OK") {
		t.Fatalf("LOGIN = %q", tagged)
	}

	// Synchronizing: wait for "+".
	fmt.Fprintf(rc.c, "b1 APPEND INBOX {%d}\r\n", len(body))
	if l := rc.line(); !strings.HasPrefix(l, "+") {
		t.Fatalf("APPEND: %q, want a continuation request", l)
	}
	lines := rc.send(body+"\r\n", "b1")
	if !strings.HasPrefix(lines[len(lines)-1], "b1 OK") || hasLine(lines, "a1") || hasLine(lines, "* QUOTA") || hasLine(lines, "* ID") {
		t.Errorf("APPEND with a synchronizing literal = %q", lines)
	}
	// LITERAL+, in one write with the commands after it.
	lines = rc.send(fmt.Sprintf("b2 APPEND INBOX {%d+}\r\n%s\r\nb3 GETQUOTA \"\"\r\n", len(body), body), "b3")
	if !hasLine(lines, "b2 OK") || !hasLine(lines, `* QUOTA "" (STORAGE`) || hasLine(lines, "a1") || hasLine(lines, "* ID") {
		t.Errorf("APPEND with LITERAL+ then GETQUOTA = %q", lines)
	}

	c := e.login(nil)
	if _, err := c.Select("INBOX", nil).Wait(); err != nil {
		t.Fatal(err)
	}
	msgs, err := c.Fetch(imap.SeqSetNum(1, 2), &imap.FetchOptions{BodySection: []*imap.FetchItemBodySection{{Peek: true}}}).Collect()
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 {
		t.Fatalf("%d messages, want 2", len(msgs))
	}
	for _, m := range msgs {
		if got := string(m.FindBodySection(&imap.FetchItemBodySection{Peek: true})); got != body {
			t.Errorf("message %d = %q, want %q", m.SeqNum, got, body)
		}
	}
	// Fetching it (its lines in a literal of imapserver's output) leaves
	// the session's capabilities and quota alone.
	data, err := c.GetQuotaRoot("INBOX").Wait()
	if used, _ := e.wantStorage(); err != nil || len(data) != 1 || data[0].Resources[imap.QuotaResourceStorage].Usage != used {
		t.Errorf("GETQUOTAROOT after FETCH = %+v, %v; want usage %d", data, err, used)
	}
}

// TestPipelinedCommandsKeepOrder: commands sent at once, imapserver's and
// the session's mixed, are answered in order, each untagged response before
// its own tagged one.
func TestPipelinedCommandsKeepOrder(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	e.deliver(msgPlain, t1)
	rc := dialRaw(t, e.addr)
	body := crlf("Subject: p\n\np9 ID NIL\n")
	cmds := []string{
		`p1 LOGIN "` + alice + `" "` + password + `"`,
		"p2 GETQUOTAROOT INBOX",
		"p3 STATUS INBOX (MESSAGES)",
		"p4 ID NIL",
		fmt.Sprintf("p5 APPEND INBOX {%d+}\r\n%s", len(body), body),
		`p6 GETQUOTA ""`,
		"p7 SELECT INBOX",
		"p8 ID NIL",
		"p10 FETCH 2 (BODY.PEEK[])",
		"p11 GETQUOTA \"\"",
		"p12 NOOP",
	}
	lines := rc.send(strings.Join(cmds, "\r\n")+"\r\n", "p12")
	// Each tag in turn, with what must come before it (after the previous
	// tag).
	want := []struct{ tag, before string }{
		{"p1", ""}, {"p2", "* QUOTA "}, {"p3", "* STATUS INBOX (MESSAGES 1)"}, {"p4", "* ID "},
		{"p5", ""}, {"p6", "* QUOTA "}, {"p7", "* 2 EXISTS"}, {"p8", "* ID "},
		{"p10", "* 2 FETCH"}, {"p11", "* QUOTA "}, {"p12", ""},
	}
	tags := make(map[string]bool)
	for _, w := range want {
		tags[w.tag] = true
	}
	i := 0
	var since []string
	for _, l := range lines {
		if tag, _, _ := strings.Cut(l, " "); !tags[tag] {
			since = append(since, l)
			continue
		}
		if i == len(want) {
			t.Fatalf("extra tagged line %q", l)
		}
		if tag, _, _ := strings.Cut(l, " "); tag != want[i].tag || !strings.HasPrefix(l, tag+" OK") {
			t.Fatalf("tagged line %d = %q, want %s OK; all: %q", i, l, want[i].tag, lines)
		}
		if want[i].before != "" && !hasLine(since, want[i].before) {
			t.Errorf("before %s: %q, want a line starting %q", want[i].tag, since, want[i].before)
		}
		i++
		since = nil
	}
	if i != len(want) {
		t.Errorf("%d tagged lines, want %d: %q", i, len(want), lines)
	}
	if hasLine(lines, "p9 OK") || hasLine(lines, "p9 BAD") {
		t.Errorf("the body's p9 line was answered: %q", lines)
	}
}

// TestRefusedLiteralThenLayerCommand: after imapserver refuses a
// synchronizing literal (the client then never sends it), the next command
// is a command again, not literal data.
func TestRefusedLiteralThenLayerCommand(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	rc := dialRaw(t, e.addr)
	if _, tagged := rc.cmd(`LOGIN "%s" "%s"`, alice, password); !strings.HasPrefix(tagged, "OK") {
		t.Fatalf("LOGIN = %q", tagged)
	}
	if _, tagged := rc.cmd("APPEND INBOX {4000000000}"); !strings.HasPrefix(tagged, "NO") && !strings.HasPrefix(tagged, "BAD") {
		t.Fatalf("APPEND over the limit = %q, want NO or BAD", tagged)
	}
	if untagged, tagged := rc.cmd("GETQUOTAROOT INBOX"); !strings.HasPrefix(tagged, "OK") || !hasLine(untagged, `* QUOTAROOT INBOX ""`) {
		t.Errorf("GETQUOTAROOT after a refused literal = %q %q", untagged, tagged)
	}
}

// TestNoCommandsWhileInFlight: while a command of imapserver reads more
// lines (an AUTHENTICATE exchange, IDLE until DONE), a client line is not
// a command, even if it reads like one of the session's.
func TestNoCommandsWhileInFlight(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	rc := dialRaw(t, e.addr)
	fmt.Fprintf(rc.c, "d1 AUTHENTICATE PLAIN\r\n")
	if l := rc.line(); !strings.HasPrefix(l, "+") {
		t.Fatalf("AUTHENTICATE: %q", l)
	}
	lines := rc.send("d2 ID NIL\r\n", "d1")
	if hasLine(lines, "* ID") || hasLine(lines, "d2") || strings.HasPrefix(lines[len(lines)-1], "d1 OK") {
		t.Errorf("a command as a SASL response = %q, want d1 refused and no ID", lines)
	}
	if _, tagged := rc.cmd(`LOGIN "%s" "%s"`, alice, password); !strings.HasPrefix(tagged, "OK") {
		t.Fatalf("LOGIN = %q", tagged)
	}
	rc.cmd("SELECT INBOX")
	// A line other than DONE during IDLE is not tried here: imapserver
	// then ends IDLE without waiting for the session's Idle, a data race
	// that the changelog branch fixes (Close waits for Idle).
	fmt.Fprintf(rc.c, "d3 IDLE\r\n")
	if l := rc.line(); !strings.HasPrefix(l, "+") {
		t.Fatalf("IDLE: %q", l)
	}
	lines = rc.send("DONE\r\nd4 GETQUOTA \"\"\r\n", "d4")
	if !hasLine(lines, "d3 OK") || !hasLine(lines, "* QUOTA") || !strings.HasPrefix(lines[len(lines)-1], "d4 OK") {
		t.Errorf("DONE then GETQUOTA = %q", lines)
	}
}

func TestLiteralAtEnd(t *testing.T) {
	for _, tc := range []struct {
		line     string
		n        int64
		sync, ok bool
	}{
		{"a APPEND INBOX {12}\r\n", 12, true, true},
		{"a APPEND INBOX {12+}\r\n", 12, false, true},
		{"a APPEND INBOX ~{7}\r\n", 7, true, true},
		{"{0}\n", 0, true, true},
		{"a LOGIN \"{12}\"\r\n", 0, false, false},
		{"a NOOP\r\n", 0, false, false},
		{"a X {}\r\n", 0, false, false},
		{"a X {1x}\r\n", 0, false, false},
		{"a X {99999999999999999999}\r\n", 0, false, false},
		{"a X {+}\r\n", 0, false, false},
	} {
		n, sync, ok := literalAtEnd([]byte(tc.line))
		if n != tc.n || sync != tc.sync || ok != tc.ok {
			t.Errorf("literalAtEnd(%q) = %d, %v, %v, want %d, %v, %v", tc.line, n, sync, ok, tc.n, tc.sync, tc.ok)
		}
	}
}

func TestMailboxName(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{"inbox", "INBOX"},
		{"Sent", "Sent"},
		{"K&AOQ-se", "Käse"},
		{"a&-b", "a&b"},
		{"&ZeVnLIqe-", "日本語"},
		{"Käse", "Käse"},
		{"&ZeVnLIqe", ""},
		{"a\x01", ""},
	} {
		got, err := mailboxName(tc.raw)
		if tc.want == "" && err == nil || tc.want != "" && (err != nil || got != tc.want) {
			t.Errorf("mailboxName(%q) = %q, %v, want %q", tc.raw, got, err, tc.want)
		}
	}
}

func TestStorageKiB(t *testing.T) {
	for _, tc := range []struct{ usedBytes, quotaMB, used, limit int64 }{
		{0, 1024, 0, 1048576},
		{1, 1024, 1, 1048576},
		{1024, 1, 1, 1024},
		{1025, 1, 2, 1024},
		{1 << 20, 1, 1024, 1024},
	} {
		used, limit := storageKiB(tc.usedBytes, tc.quotaMB)
		if used != tc.used || limit != tc.limit {
			t.Errorf("storageKiB(%d, %d) = %d, %d, want %d, %d", tc.usedBytes, tc.quotaMB, used, limit, tc.used, tc.limit)
		}
	}
}
