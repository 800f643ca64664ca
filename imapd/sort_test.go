package imapd

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestBaseSubject(t *testing.T) {
	for _, tt := range []struct {
		in   string
		base string
		rf   bool
	}{
		// Dovecot's imaptest sort-subject.mbox.
		{"a", "A", false},
		{"[foo] Fwd: [bar] Re: fw: b (fWd)  (fwd)", "B", true},
		{"b (a)", "B (A)", false},
		{"Re: [FWD: c]", "C", true},
		{"[xyz]", "[XYZ]", false}, // a blob that is all there is stays
		{"_", "_", false},
		{"", "", false},
		// RFC 5256 section 2.1, step by step.
		{"Re: Re[2]: hello", "HELLO", true},
		{"RE:re: x", "X", true},
		{"re : x", "X", true},
		{"Fw: x", "X", true},
		{"FWD:x", "X", true},
		{"Fwd x", "FWD X", false}, // no colon: not a subj-refwd
		{"Re: ", "", true},
		{"[PATCH] re: x", "X", true},
		{"[PATCH v2] fix it", "FIX IT", false},
		{"[a][b]", "[B]", false},
		{"[a] [b] Re: [c] x", "X", true},
		{"[fwd: [fwd: x]]", "X", true},
		{"[Fwd: x] (fwd)", "X", true},
		{"x (fwd) y", "X (FWD) Y", false},
		{"\tHello  \t world \t", "HELLO WORLD", false},
		{"Hello\r\n world", "HELLO WORLD", false},
		// RFC 2047, then i;unicode-casemap: titlecase, NFKD.
		{"=?utf-8?q?R=C3=A9sum=C3=A9?=", "RE\u0301SUME\u0301", false},
		{"=?utf-8?q?Re:_caf=C3=A9?=", "CAFE\u0301", true},
		// RFC 5051 maps to titlecase before NFKD, so compatibility
		// decompositions can leave lower case.
		{"ǆemal ﬁle", "Dz\u030cEMAL fiLE", false},
	} {
		base, rf := baseSubject(tt.in)
		if base != tt.base || rf != tt.rf {
			t.Errorf("baseSubject(%q) = %q, %v; want %q, %v", tt.in, base, rf, tt.base, tt.rf)
		}
	}
}

// mboxMsg is a test message: its header fields, size and arrival.
func mboxMsg(seq uint32, arrival time.Time, size int64, fields ...string) sortMsg {
	h := strings.Join(fields, "\r\n")
	if h != "" {
		h += "\r\n"
	}
	return sortMsg{Seq: seq, UID: seq * 10, Size: size, Arrival: arrival, Header: []byte(h + "\r\n")}
}

func seqs(msgs []sortMsg) string {
	var s []string
	for _, m := range msgs {
		s = append(s, fmt.Sprint(m.Seq))
	}
	return strings.Join(s, " ")
}

func mustSort(t *testing.T, msgs []sortMsg, program string) string {
	t.Helper()
	c, err := parseSortCriteria(strings.Fields(program))
	if err != nil {
		t.Fatal(err)
	}
	return seqs(sortMessages(msgs, c))
}

// TestSortSubject: Dovecot's imaptest sort-subject, whose messages all
// arrived at once.
func TestSortSubject(t *testing.T) {
	at := time.Date(2008, 2, 22, 23, 0, 0, 0, time.FixedZone("", 2*3600))
	var msgs []sortMsg
	for i, subj := range []string{"a", "C", "b", "_", "[foo] Fwd: [bar] Re: fw: b (fWd)  (fwd)", "b (a)", "Re: [FWD: c]", "[xyz]", ""} {
		body := strings.Repeat(fmt.Sprint(i+1), min(i+1, 2))
		var f []string
		if subj != "" {
			f = append(f, "Subject: "+subj)
		}
		msgs = append(msgs, mboxMsg(uint32(i+1), at, int64(len(subj)+len(body)), f...))
	}
	for _, tt := range []struct{ program, want string }{
		{"SUBJECT", "9 1 3 5 6 2 7 8 4"},
		{"REVERSE SUBJECT", "4 8 2 7 6 3 5 1 9"},
		{"subject reverse size", "9 1 5 3 6 7 2 8 4"},
	} {
		if got := mustSort(t, msgs, tt.program); got != tt.want {
			t.Errorf("SORT (%s) = %s, want %s", tt.program, got, tt.want)
		}
	}
}

func TestSortKeys(t *testing.T) {
	base := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	day := func(n int) time.Time { return base.AddDate(0, 0, n) }
	msgs := []sortMsg{
		// The Date field is in another zone: 10:00 -0500 is 15:00 UTC,
		// after message 3's 13:00 UTC on the same day.
		mboxMsg(1, day(5), 300, "Date: Sun, 01 Nov 2026 10:00:00 -0500", "From: Zed <zed@b.org>", "To: bob@x.org", "Cc: carol@x.org"),
		// No Date: the sent date is the arrival, day 0 at 12:00.
		mboxMsg(2, day(0), 100, "From: alice@a.org", "To: \"Ann\" <ann@x.org>"),
		mboxMsg(3, day(1), 200, "Date: Sun, 01 Nov 2026 13:00:00 +0000", "From: =?utf-8?q?=C3=89mile?= <emile@c.org>", "To: dave@x.org (Dave)", "Cc: Al <al@x.org>"),
		// A Date that does not parse: the arrival, day 2.
		mboxMsg(4, day(2), 200, "Date: yesterday", "From: undisclosed:;", "Cc: "),
	}
	for _, tt := range []struct{ program, want string }{
		{"ARRIVAL", "2 3 4 1"},
		{"REVERSE ARRIVAL", "1 4 3 2"},
		{"DATE", "2 3 1 4"},
		{"REVERSE DATE", "4 1 3 2"},
		{"SIZE", "2 3 4 1"},         // 3 and 4 tie: sequence order
		{"REVERSE SIZE", "1 3 4 2"}, // ties stay ascending
		{"SIZE REVERSE DATE", "2 4 3 1"},
		// addr-mailbox of the first address, a group's name for a group.
		{"FROM", "2 3 4 1"},
		{"TO", "4 2 1 3"}, // no To sorts first
		{"CC", "2 4 3 1"}, // no Cc, an empty Cc: ""
		// RFC 5957: the display name, else mailbox@host.
		{"DISPLAYFROM", "2 3 4 1"}, // ALICE@A.ORG, ÉMILE, UNDISCLOSED, ZED
		{"DISPLAYTO", "4 2 1 3"},   // "", ANN, BOB@X.ORG, DAVE
		{"REVERSE DISPLAYFROM", "1 4 3 2"},
	} {
		if got := mustSort(t, msgs, tt.program); got != tt.want {
			t.Errorf("SORT (%s) = %s, want %s", tt.program, got, tt.want)
		}
	}
}

func TestParseSortCriteria(t *testing.T) {
	got, err := parseSortCriteria([]string{"reverse", "Date", "SUBJECT", "REVERSE", "displayfrom"})
	want := []sortCriterion{{sortDate, true}, {sortSubject, false}, {sortDisplayFrom, true}}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("parseSortCriteria = %v, %v; want %v", got, err, want)
	}
	for _, bad := range [][]string{nil, {"REVERSE"}, {"DATE", "REVERSE"}, {"REVERSE", "REVERSE", "DATE"}, {"THREAD"}} {
		if _, err := parseSortCriteria(bad); err == nil {
			t.Errorf("parseSortCriteria(%q) = nil error", bad)
		}
	}
}

func TestHeaderValues(t *testing.T) {
	h := []byte("Subject: one\r\n two \r\n\tthree\r\nX: y\r\nsubject: second\r\nFROM : a@b\r\nCc:\r\n\r\nDate: not the header\r\n")
	want := [hdrFields]bool{hdrSubject: true, hdrFrom: true, hdrCc: true, hdrDate: true}
	v := headerValues(h, &want)
	if string(v[hdrSubject]) != " one\r\n two \r\n\tthree" || string(v[hdrFrom]) != " a@b" || v[hdrCc] == nil || len(v[hdrCc]) != 0 || v[hdrDate] != nil {
		t.Errorf("headerValues = %q", v)
	}
	if got := unfoldValue(v[hdrSubject]); got != "one two \tthree" {
		t.Errorf("unfoldValue(%q) = %q", v[hdrSubject], got)
	}
}

// sortMessages, for the tests, answers msgs in the order criteria make (RFC 5256 section
// 3), ties in ascending sequence number whatever REVERSE says. msgs is
// not changed. Each message's header is read once, for the keys the
// criteria name, unless its keys are decoded already.
func sortMessages(msgs []sortMsg, criteria []sortCriterion) []sortMsg {
	var need keyGroup
	for _, c := range criteria {
		need |= groupOf(c.Key)
	}
	order := orderMsgs(withKeys(msgs, need), criteria, nil)
	out := make([]sortMsg, len(order))
	for i, j := range order {
		out[i] = msgs[j]
	}
	return out
}
