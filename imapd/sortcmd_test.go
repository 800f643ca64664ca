package imapd

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// SORT, THREAD and ESORT (RFC 5256, RFC 5957, RFC 5267) over a real
// connection.

// sortEnv delivers five messages to INBOX after one that is expunged, so
// that each message's UID is its sequence number plus one, and answers a
// raw connection with INBOX selected.
//
//	seq  Subject                  From                     Date         threading
//	1    Lunch plans              Bob Zulu <alpha@...>     1 Jan 2024   <m1>
//	2    Re: Lunch plans          Alice <zulu@...>         3 Jan 2024   reply to m1
//	3    =?UTF-8?Q?Budget_review?= carol@example.org     2 Jan 2024   <m3>
//	4    Fwd: Budget review       Dave <dave@...>          4 Jan 2024   references m1
//	5    Zoo trip                 Eve <eve@...>            31 Dec 2023  <m5>
func sortEnv(t *testing.T) *rawConn {
	t.Helper()
	e := newEnv(t, envOptions{insecureAuth: true})
	msg := func(id, subject, from, date, refs string) string {
		h := fmt.Sprintf("From: %s\nTo: team@example.com\nSubject: %s\nDate: %s\nMessage-ID: <%s@example.org>\n", from, subject, date, id)
		if refs != "" {
			h += fmt.Sprintf("In-Reply-To: <%s@example.org>\nReferences: <%s@example.org>\n", refs, refs)
		}
		return crlf(h + "\nbody\n")
	}
	at := time.Date(2024, 1, 5, 0, 0, 0, 0, time.UTC)
	e.deliver(msg("m0", "gone", "x@example.org", "Mon, 1 Jan 2024 00:00:00 +0000", ""), at)
	e.deliver(msg("m1", "Lunch plans", "Bob Zulu <alpha@example.org>", "Mon, 1 Jan 2024 10:00:00 +0000", ""), at.Add(1*time.Minute))
	e.deliver(msg("m2", "Re: Lunch plans", "Alice <zulu@example.org>", "Wed, 3 Jan 2024 10:00:00 +0000", "m1"), at.Add(2*time.Minute))
	e.deliver(msg("m3", "=?UTF-8?Q?Budget_review?=", "carol@example.org", "Tue, 2 Jan 2024 10:00:00 +0000", ""), at.Add(3*time.Minute))
	e.deliver(msg("m4", "Fwd: Budget review", "Dave <dave@example.org>", "Thu, 4 Jan 2024 10:00:00 +0000", "m1"), at.Add(4*time.Minute))
	e.deliver(msg("m5", "Zoo trip", "Eve <eve@example.org>", "Sun, 31 Dec 2023 10:00:00 +0000", ""), at.Add(5*time.Minute))
	rc := rawLogin(t, e)
	rc.ok("SELECT INBOX")
	rc.ok(`STORE 1 +FLAGS.SILENT (\Deleted)`)
	rc.ok("EXPUNGE")
	return rc
}

func TestSortCommand(t *testing.T) {
	rc := sortEnv(t)
	for _, tc := range []struct{ cmd, want string }{
		// Base subjects (RFC 5256 section 2.1): Re: and Fwd: go, the
		// RFC 2047 word is decoded; ties in sequence order.
		{"SORT (SUBJECT) UTF-8 ALL", "* SORT 3 4 1 2 5"},
		{"SORT (REVERSE DATE) UTF-8 ALL", "* SORT 4 2 3 1 5"},
		{"SORT (DATE) US-ASCII ALL", "* SORT 5 1 3 2 4"},
		// FROM sorts by mailbox, DISPLAYFROM by display name (RFC 5957).
		{"SORT (FROM) UTF-8 ALL", "* SORT 1 3 4 5 2"},
		{"SORT (DISPLAYFROM) UTF-8 ALL", "* SORT 2 1 3 4 5"},
		{"SORT (SUBJECT REVERSE ARRIVAL) UTF-8 ALL", "* SORT 4 3 2 1 5"},
		{"UID SORT (DATE) UTF-8 NOT FROM eve", "* SORT 2 4 3 5"},
		{"UID SORT (SUBJECT) UTF-8 UID 3:5", "* SORT 4 5 3"},
		{"SORT (SUBJECT) UTF-8 FROM nobody", "* SORT"},
		// Six deliveries take MODSEQ 2 to 7 (condstore_test.go); the
		// highest of the matches follows (RFC 7162 section 3.1.5).
		{"SORT (REVERSE SUBJECT) UTF-8 MODSEQ 5", "* SORT 5 3 4 (MODSEQ 7)"},
	} {
		untagged := rc.ok("%s", tc.cmd)
		wantLines(t, tc.cmd, untagged, tc.want)
	}

	untagged := rc.ok("SORT RETURN (MIN MAX COUNT ALL) (SUBJECT) UTF-8 ALL")
	want := fmt.Sprintf(`* ESEARCH (TAG "r%d") ALL 3:4,1:2,5 MIN 3 MAX 5 COUNT 5`, rc.tag)
	wantLines(t, "ESORT", untagged, want)
	untagged = rc.ok("UID SORT RETURN (COUNT) (SUBJECT) UTF-8 ALL")
	want = fmt.Sprintf(`* ESEARCH (TAG "r%d") UID COUNT 5`, rc.tag)
	wantLines(t, "UID ESORT", untagged, want)

	for _, cmd := range []string{
		"SORT (FOO) UTF-8 ALL",
		"SORT (REVERSE) UTF-8 ALL",
		"SORT (SUBJECT) UTF-8 FOO",
		"THREAD FOO UTF-8 ALL",
	} {
		if _, tagged := rc.cmd("%s", cmd); !strings.HasPrefix(tagged, "BAD") {
			t.Errorf("%s: %s, want BAD", cmd, tagged)
		}
	}
	// The connection goes on after a BAD.
	wantLines(t, "SORT after BAD", rc.ok("SORT (SIZE) UTF-8 UID 2"), "* SORT 1")
}

func TestThreadCommand(t *testing.T) {
	rc := sortEnv(t)
	for _, tc := range []struct{ cmd, want string }{
		// Threads in the order of their first message's date, a message
		// with two replies followed by each in parentheses (RFC 5256
		// section 4).
		{"THREAD REFERENCES UTF-8 ALL", "* THREAD (5)(1 (2)(4))(3)"},
		{"UID THREAD REFERENCES UTF-8 ALL", "* THREAD (6)(2 (3)(5))(4)"},
		// ORDEREDSUBJECT groups by base subject only.
		{"THREAD ORDEREDSUBJECT UTF-8 ALL", "* THREAD (5)(1 2)(3 4)"},
		{"UID THREAD ORDEREDSUBJECT UTF-8 NOT FROM eve", "* THREAD (2 3)(4 5)"},
		{"THREAD REFERENCES UTF-8 FROM nobody", "* THREAD"},
		// REFS: the threads by their latest message, 1's by 4's date.
		{"THREAD REFS UTF-8 ALL", "* THREAD (5)(3)(1 (2)(4))"},
		{"UID THREAD REFS UTF-8 NOT FROM eve", "* THREAD (4)(2 (3)(5))"},
	} {
		untagged := rc.ok("%s", tc.cmd)
		wantLines(t, tc.cmd, untagged, tc.want)
	}
}

func TestSortCapabilities(t *testing.T) {
	rc := sortEnv(t)
	caps := strings.Join(rc.ok("CAPABILITY"), " ")
	for _, c := range []string{"SORT", "SORT=DISPLAY", "ESORT", "THREAD=ORDEREDSUBJECT", "THREAD=REFERENCES", "THREAD=REFS"} {
		if !strings.Contains(caps+" ", " "+c+" ") {
			t.Errorf("CAPABILITY lacks %s: %s", c, caps)
		}
	}
}
