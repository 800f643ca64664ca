package imapd

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/emersion/go-imap/v2"

	"github.com/mailhost/mailhost/mailstore"
)

// CONDSTORE and QRESYNC (RFC 7162) over a real connection. Three
// messages delivered to a new INBOX take the store's ModSeqs 1, 2 and 3,
// so MODSEQ 2, 3 and 4, and HIGHESTMODSEQ 4 (condstore.go: one more).

// condEnv is an env with msgPlain, msgMultipart and msgLarge in INBOX and
// a raw connection logged in.
func condEnv(t *testing.T, o envOptions) (*env, *rawConn) {
	t.Helper()
	o.insecureAuth = true
	e := newEnv(t, o)
	e.deliver(msgPlain, t1)
	e.deliver(msgMultipart, t2)
	e.deliver(msgLarge, t3)
	rc := dialRaw(t, e.addr)
	rc.ok(`LOGIN "alice@example.com" "alice's secret"`)
	return e, rc
}

// ok sends a command, fails the test unless it is answered OK, and
// returns the untagged lines.
func (rc *rawConn) ok(format string, args ...any) []string {
	rc.t.Helper()
	untagged, tagged := rc.cmd(format, args...)
	if !strings.HasPrefix(tagged, "OK") {
		rc.t.Fatalf("%s: %s (untagged %q)", fmt.Sprintf(format, args...), tagged, untagged)
	}
	return untagged
}

// wantLines fails unless each of want is one of lines, exactly.
func wantLines(t *testing.T, what string, lines []string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(lines, w) {
			t.Errorf("%s: no line %q in %q", what, w, lines)
		}
	}
}

// noLine fails if a line of lines begins with prefix.
func noLine(t *testing.T, what string, lines []string, prefix string) {
	t.Helper()
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			t.Errorf("%s: unexpected %q", what, l)
		}
	}
}

var uidValidityRE = regexp.MustCompile(`\[UIDVALIDITY (\d+)\]`)

func uidValidity(t *testing.T, lines []string) string {
	t.Helper()
	for _, l := range lines {
		if m := uidValidityRE.FindStringSubmatch(l); m != nil {
			return m[1]
		}
	}
	t.Fatalf("no UIDVALIDITY in %q", lines)
	return ""
}

func TestCondStoreCapabilityStatusSelect(t *testing.T) {
	_, rc := condEnv(t, envOptions{})
	caps := rc.ok("CAPABILITY")
	if len(caps) != 1 || !strings.Contains(caps[0], " CONDSTORE") || !strings.Contains(caps[0], " QRESYNC") {
		t.Errorf("CAPABILITY = %q, want CONDSTORE and QRESYNC", caps)
	}
	wantLines(t, "STATUS", rc.ok("STATUS INBOX (MESSAGES HIGHESTMODSEQ)"), `* STATUS INBOX (MESSAGES 3 HIGHESTMODSEQ 4)`)
	wantLines(t, "LIST RETURN (STATUS)", rc.ok(`LIST "" "INBOX" RETURN (STATUS (HIGHESTMODSEQ))`), `* STATUS INBOX (HIGHESTMODSEQ 4)`)
	sel := rc.ok("SELECT INBOX")
	wantLines(t, "SELECT", sel, `* OK [HIGHESTMODSEQ 4] Highest`)
	wantLines(t, "EXAMINE (CONDSTORE)", rc.ok("EXAMINE INBOX (CONDSTORE)"), `* OK [HIGHESTMODSEQ 4] Highest`)
	wantLines(t, "ENABLE", rc.ok("ENABLE CONDSTORE QRESYNC"), `* ENABLED CONDSTORE QRESYNC`)

	// A folder with no change yet: HIGHESTMODSEQ 1, never 0.
	rc.ok("CREATE Empty")
	wantLines(t, "SELECT Empty", rc.ok("SELECT Empty"), `* OK [HIGHESTMODSEQ 1] Highest`)
	wantLines(t, "STATUS Empty", rc.ok("STATUS Empty (HIGHESTMODSEQ)"), `* STATUS "Empty" (HIGHESTMODSEQ 1)`)
}

func TestCondStoreFetch(t *testing.T) {
	e, rc := condEnv(t, envOptions{})
	rc.ok("SELECT INBOX")
	// MODSEQ on request; CONDSTORE is not enabled yet, so a STORE's
	// responses have none.
	wantLines(t, "FETCH MODSEQ", rc.ok("FETCH 1:* (MODSEQ)"),
		`* 1 FETCH (UID 1 MODSEQ (2))`, `* 2 FETCH (UID 2 MODSEQ (3))`, `* 3 FETCH (UID 3 MODSEQ (4))`)
	// That FETCH enabled CONDSTORE: STORE reports the new MODSEQ.
	wantLines(t, "STORE", rc.ok(`STORE 2 +FLAGS (\Flagged)`), `* 2 FETCH (UID 2 FLAGS (\Flagged) MODSEQ (5))`)
	// .SILENT still says the new MODSEQ (RFC 7162 section 3.1.3).
	wantLines(t, "STORE.SILENT", rc.ok(`STORE 1 +FLAGS.SILENT (\Answered)`), `* 1 FETCH (UID 1 MODSEQ (6))`)

	// CHANGEDSINCE: only what changed after it, with MODSEQ.
	got := rc.ok("FETCH 1:* (FLAGS) (CHANGEDSINCE 4)")
	wantLines(t, "CHANGEDSINCE 4", got, `* 1 FETCH (UID 1 FLAGS (\Answered) MODSEQ (6))`, `* 2 FETCH (UID 2 FLAGS (\Flagged) MODSEQ (5))`)
	noLine(t, "CHANGEDSINCE 4", got, "* 3 FETCH")
	if got := rc.ok("UID FETCH 1:* (FLAGS) (CHANGEDSINCE 6)"); len(got) != 0 {
		t.Errorf("CHANGEDSINCE 6 = %q, want nothing", got)
	}

	// Another session's change comes unsolicited with its MODSEQ.
	if _, err := e.st.SetFlags(context.Background(), e.mb.ID, e.inbox().ID, []uint32{3}, mailstore.FlagsAdd, []string{`\Seen`}); err != nil {
		t.Fatal(err)
	}
	wantLines(t, "NOOP", rc.ok("NOOP"), `* 3 FETCH (UID 3 FLAGS (\Seen) MODSEQ (7))`)

	// VANISHED needs QRESYNC, UID FETCH and CHANGEDSINCE.
	for _, cmd := range []string{
		"UID FETCH 1:* (FLAGS) (CHANGEDSINCE 1 VANISHED)",
		"FETCH 1:* (FLAGS) (CHANGEDSINCE 1 VANISHED)",
		"UID FETCH 1:* (FLAGS) (VANISHED)",
	} {
		if _, tagged := rc.cmd("%s", cmd); !strings.HasPrefix(tagged, "BAD") {
			t.Errorf("%s before ENABLE QRESYNC: %s, want BAD", cmd, tagged)
		}
		rc.ok("ENABLE QRESYNC")
	}
	if _, err := e.st.Expunge(context.Background(), e.mb.ID, e.inbox().ID, []uint32{2}); err != nil {
		t.Fatal(err)
	}
	// With QRESYNC enabled, another session's expunge is VANISHED.
	wantLines(t, "NOOP after expunge", rc.ok("NOOP"), `* VANISHED 2`)
	got = rc.ok("UID FETCH 1:* (FLAGS) (CHANGEDSINCE 6 VANISHED)")
	wantLines(t, "CHANGEDSINCE 6 VANISHED", got, `* VANISHED (EARLIER) 2`, `* 2 FETCH (UID 3 FLAGS (\Seen) MODSEQ (7))`)
	if got[0] != `* VANISHED (EARLIER) 2` {
		t.Errorf("VANISHED (EARLIER) is not first: %q", got)
	}
	// The set limits VANISHED (EARLIER).
	got = rc.ok("UID FETCH 3 (FLAGS) (CHANGEDSINCE 6 VANISHED)")
	noLine(t, "UID FETCH 3 VANISHED", got, "* VANISHED")
}

func TestCondStoreUnchangedSince(t *testing.T) {
	_, rc := condEnv(t, envOptions{})
	rc.ok("SELECT INBOX")
	// MODSEQs 2, 3, 4: message 3 changed after 3.
	untagged, tagged := rc.cmd(`STORE 1:3 (UNCHANGEDSINCE 3) +FLAGS (\Flagged)`)
	if tagged != "OK [MODIFIED 3] Conditional STORE failed" {
		t.Errorf("STORE UNCHANGEDSINCE tagged %q, want OK [MODIFIED 3]", tagged)
	}
	wantLines(t, "STORE UNCHANGEDSINCE", untagged,
		`* 1 FETCH (UID 1 FLAGS (\Flagged) MODSEQ (5))`, `* 2 FETCH (UID 2 FLAGS (\Flagged) MODSEQ (6))`)
	noLine(t, "STORE UNCHANGEDSINCE", untagged, "* 3 FETCH")
	// UID STORE names UIDs; UNCHANGEDSINCE 0 passes no message.
	if _, tagged := rc.cmd(`UID STORE 1:3 (UNCHANGEDSINCE 0) +FLAGS (\Seen)`); tagged != "OK [MODIFIED 1:3] Conditional STORE failed" {
		t.Errorf("UID STORE UNCHANGEDSINCE 0 tagged %q, want OK [MODIFIED 1:3]", tagged)
	}
	// All unchanged since: a plain OK.
	if _, tagged := rc.cmd(`UID STORE 3 (UNCHANGEDSINCE 4) +FLAGS (\Seen)`); tagged != "OK UID STORE completed" {
		t.Errorf("UID STORE UNCHANGEDSINCE 4 tagged %q, want OK UID STORE completed", tagged)
	}
	wantLines(t, "FETCH after", rc.ok("FETCH 1:3 (FLAGS MODSEQ)"),
		`* 1 FETCH (UID 1 FLAGS (\Flagged) MODSEQ (5))`, `* 3 FETCH (UID 3 FLAGS (\Seen) MODSEQ (7))`)
}

func TestCondStoreSearchModSeq(t *testing.T) {
	_, rc := condEnv(t, envOptions{})
	rc.ok("SELECT INBOX")
	wantLines(t, "SEARCH MODSEQ", rc.ok("SEARCH MODSEQ 3"), `* SEARCH 2 3 (MODSEQ 4)`)
	wantLines(t, "UID SEARCH MODSEQ entry", rc.ok(`UID SEARCH MODSEQ "/flags/\\draft" all 4`), `* SEARCH 3 (MODSEQ 4)`)
	got := rc.ok("SEARCH RETURN (ALL COUNT) MODSEQ 2")
	if len(got) != 1 || !strings.HasSuffix(got[0], `ALL 1:3 COUNT 3 MODSEQ 4`) {
		t.Errorf("ESEARCH MODSEQ = %q, want ALL 1:3 COUNT 3 MODSEQ 4", got)
	}
	// Nothing found: no MODSEQ; no MODSEQ key: none either.
	wantLines(t, "SEARCH MODSEQ 9", rc.ok("SEARCH MODSEQ 9"), `* SEARCH`)
	wantLines(t, "SEARCH ALL", rc.ok("SEARCH ALL"), `* SEARCH 1 2 3`)
}

func TestQResyncSelect(t *testing.T) {
	e, rc := condEnv(t, envOptions{})
	validity := uidValidity(t, rc.ok("SELECT INBOX"))
	rc.ok("CLOSE")
	if _, tagged := rc.cmd("SELECT INBOX (QRESYNC (%s 4))", validity); !strings.HasPrefix(tagged, "BAD") {
		t.Errorf("SELECT (QRESYNC) before ENABLE QRESYNC: %s, want BAD", tagged)
	}
	rc.ok("ENABLE QRESYNC")

	// While the client is away: UID 2 expunged, UID 1 flagged.
	ctx := context.Background()
	if _, err := e.st.Expunge(ctx, e.mb.ID, e.inbox().ID, []uint32{2}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.SetFlags(ctx, e.mb.ID, e.inbox().ID, []uint32{1}, mailstore.FlagsAdd, []string{`\Seen`}); err != nil {
		t.Fatal(err)
	}
	got := rc.ok("SELECT INBOX (QRESYNC (%s 4))", validity)
	wantLines(t, "SELECT (QRESYNC)", got, `* 2 EXISTS`, `* OK [HIGHESTMODSEQ 6] Highest`,
		`* VANISHED (EARLIER) 2`, `* 1 FETCH (UID 1 FLAGS (\Seen) MODSEQ (6))`)
	noLine(t, "SELECT (QRESYNC)", got, "* 2 FETCH")
	// Known UIDs limit VANISHED (EARLIER); seq-match data is taken.
	got = rc.ok("EXAMINE INBOX (QRESYNC (%s 4 1,3 (1:2 1,3)))", validity)
	noLine(t, "EXAMINE (QRESYNC known 1,3)", got, "* VANISHED")
	wantLines(t, "EXAMINE (QRESYNC known 1,3)", got, `* 1 FETCH (UID 1 FLAGS (\Seen) MODSEQ (6))`)
	// Up to date: nothing to say.
	got = rc.ok("EXAMINE INBOX (QRESYNC (%s 6))", validity)
	noLine(t, "EXAMINE (QRESYNC 6)", got, "* VANISHED")
	noLine(t, "EXAMINE (QRESYNC 6)", got, "* 1 FETCH")
	// Another UIDVALIDITY: the client's cache is void, a plain SELECT.
	got = rc.ok("SELECT INBOX (QRESYNC (1%s 4))", validity)
	noLine(t, "SELECT (QRESYNC other validity)", got, "* VANISHED")
	noLine(t, "SELECT (QRESYNC other validity)", got, "* 1 FETCH")

	// Once QRESYNC is enabled, EXPUNGE and MOVE answer VANISHED.
	rc.ok(`STORE 1 +FLAGS (\Deleted)`)
	got = rc.ok("EXPUNGE")
	wantLines(t, "EXPUNGE", got, `* VANISHED 1`)
	noLine(t, "EXPUNGE", got, "* 1 EXPUNGE")
	got = rc.ok("UID MOVE 3 Archive")
	wantLines(t, "MOVE", got, `* VANISHED 3`)
}

// TestQResyncBeyondLog: a client whose mod-sequence the change log no
// longer reaches gets every UID it names that is gone, and the messages
// changed since, exactly.
func TestQResyncBeyondLog(t *testing.T) {
	e, rc := condEnv(t, envOptions{changeLogKeep: 2})
	ctx := context.Background()
	for range 3 {
		e.deliver(msgPlain, t1) // UIDs 4, 5, 6: ModSeqs 4, 5, 6
	}
	validity := uidValidity(t, rc.ok("SELECT INBOX"))
	rc.ok("CLOSE")
	rc.ok("ENABLE QRESYNC")
	if _, err := e.st.Expunge(ctx, e.mb.ID, e.inbox().ID, []uint32{2, 4, 5}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.SetFlags(ctx, e.mb.ID, e.inbox().ID, []uint32{6}, mailstore.FlagsAdd, []string{`\Seen`}); err != nil {
		t.Fatal(err)
	}
	// Client at MODSEQ 7 (the store's 6); the log keeps 9 and 10 only.
	got := rc.ok("SELECT INBOX (QRESYNC (%s 7))", validity)
	wantLines(t, "SELECT (QRESYNC) beyond the log", got, `* VANISHED (EARLIER) 2,4:5`, `* 3 FETCH (UID 6 FLAGS (\Seen) MODSEQ (11))`)
	noLine(t, "SELECT (QRESYNC) beyond the log", got, "* 1 FETCH")
	got = rc.ok("SELECT INBOX (QRESYNC (%s 7 1:4))", validity)
	wantLines(t, "SELECT (QRESYNC known 1:4) beyond the log", got, `* VANISHED (EARLIER) 2,4`)
}

// TestCondStoreImapclient: go-imap's client, which speaks CONDSTORE,
// reads what the server answers.
func TestCondStoreImapclient(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	e.deliver(msgPlain, t1)
	e.deliver(msgMultipart, t2)
	c := e.login(nil)
	sel, err := c.Select("INBOX", &imap.SelectOptions{CondStore: true}).Wait()
	if err != nil {
		t.Fatal(err)
	}
	if sel.HighestModSeq != 3 {
		t.Errorf("SELECT (CONDSTORE) HighestModSeq = %d, want 3", sel.HighestModSeq)
	}
	st, err := c.Status("INBOX", &imap.StatusOptions{HighestModSeq: true}).Wait()
	if err != nil || st.HighestModSeq != 3 {
		t.Errorf("STATUS (HIGHESTMODSEQ) = %+v, %v; want 3", st, err)
	}
	if err := c.Store(imap.SeqSetNum(1), &imap.StoreFlags{Op: imap.StoreFlagsAdd, Flags: []imap.Flag{imap.FlagSeen}}, &imap.StoreOptions{UnchangedSince: 2}).Close(); err != nil {
		t.Fatalf("STORE (UNCHANGEDSINCE 2): %v", err)
	}
	msgs, err := c.Fetch(imap.SeqSetNum(1, 2), &imap.FetchOptions{Flags: true, ChangedSince: 3}).Collect()
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].UID != 1 || msgs[0].ModSeq != 4 || !slices.Contains(msgs[0].Flags, imap.FlagSeen) {
		t.Errorf("FETCH (CHANGEDSINCE 3) = %+v, want message 1 at MODSEQ 4, seen", msgs)
	}
	res, err := c.Search(&imap.SearchCriteria{ModSeq: &imap.SearchCriteriaModSeq{ModSeq: 4}}, nil).Wait()
	if err != nil || len(res.AllSeqNums()) != 1 || res.ModSeq != 4 {
		t.Errorf("SEARCH MODSEQ 4 = %+v, %v; want message 1, MODSEQ 4", res, err)
	}
}

// TestQResyncExpungeModSeq: once QRESYNC is enabled, EXPUNGE, UID
// EXPUNGE and MOVE answer the folder's HIGHESTMODSEQ in their tagged OK
// (RFC 7162 sections 3.2.7 and 3.2.9; MOVE as Dovecot answers it);
// before, they do not.
func TestQResyncExpungeModSeq(t *testing.T) {
	_, rc := condEnv(t, envOptions{})
	rc.ok("SELECT INBOX")
	rc.ok(`STORE 1 +FLAGS (\Deleted)`)
	if _, tagged := rc.cmd("EXPUNGE"); tagged != "OK EXPUNGE completed" {
		t.Errorf("EXPUNGE without QRESYNC = %q, want a plain OK", tagged)
	}
	rc.ok("ENABLE QRESYNC")
	rc.ok("SELECT INBOX")
	highest := func() string {
		t.Helper()
		for _, l := range rc.ok("STATUS INBOX (HIGHESTMODSEQ)") {
			if m := regexp.MustCompile(`HIGHESTMODSEQ (\d+)`).FindStringSubmatch(l); m != nil {
				return m[1]
			}
		}
		t.Fatal("no HIGHESTMODSEQ in STATUS")
		return ""
	}
	rc.ok(`STORE 1 +FLAGS (\Deleted)`)
	untagged, tagged := rc.cmd("EXPUNGE")
	if want := "OK [HIGHESTMODSEQ " + highest() + "] EXPUNGE completed"; tagged != want || !slices.Contains(untagged, "* VANISHED 2") {
		t.Errorf("EXPUNGE with QRESYNC = %q %q, want VANISHED 2 and %q", untagged, tagged, want)
	}
	rc.ok(`UID STORE 3 +FLAGS (\Deleted)`)
	untagged, tagged = rc.cmd("UID EXPUNGE 1:*")
	if want := "OK [HIGHESTMODSEQ " + highest() + "] UID EXPUNGE completed"; tagged != want || !slices.Contains(untagged, "* VANISHED 3") {
		t.Errorf("UID EXPUNGE with QRESYNC = %q %q, want VANISHED 3 and %q", untagged, tagged, want)
	}
	rc.ok("APPEND INBOX {2+}\r\nhi")
	rc.ok("NOOP")
	untagged, tagged = rc.cmd("MOVE 1 Trash")
	if want := "OK [HIGHESTMODSEQ " + highest() + "] MOVE completed"; tagged != want || !slices.Contains(untagged, "* VANISHED 4") {
		t.Errorf("MOVE with QRESYNC = %q %q, want VANISHED 4 and %q", untagged, tagged, want)
	}
}
