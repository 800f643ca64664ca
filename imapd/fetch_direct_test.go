package imapd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"

	"github.com/mailhost/mailhost/mailstore"
)

// summaryOverride is a store whose Summaries answers one header for every
// message, so that a stored message can be fetched with any summary.
// When second is set, message 2 gets it instead.
type summaryOverride struct {
	mailstore.Store
	header, second atomic.Pointer[[]byte]
}

func (s *summaryOverride) Summaries(ctx context.Context, mailboxID, folderID int64, uids []uint32, fn func(uint32, []byte) error) error {
	h := s.header.Load()
	if h == nil {
		return s.Store.Summaries(ctx, mailboxID, folderID, uids, fn)
	}
	for _, uid := range uids {
		b := *h
		if second := s.second.Load(); second != nil && uid == 2 {
			b = *second
		}
		if err := fn(uid, b); err != nil {
			return err
		}
	}
	return nil
}

// fetchPair is a server on a summaryOverride store whose INBOX holds
// three messages, with flags and dates of both widths, and a plain
// connection to it with INBOX selected.
type fetchPair struct {
	e   *env
	st  *summaryOverride
	c   net.Conn
	r   *bufio.Reader
	tag int
}

func newFetchPair(t testing.TB) *fetchPair {
	st := &summaryOverride{}
	e := newEnv(t, envOptions{insecureAuth: true, noRateLimit: true, wrap: func(s mailstore.Store) mailstore.Store {
		st.Store = s
		return st
	}})
	e.deliver(msgPlain, t1)
	e.deliver(msgMultipart, time.Date(2026, 11, 25, 18, 4, 59, 0, time.UTC))
	e.deliver(msgPlain, time.Date(987, 1, 2, 3, 4, 5, 0, time.UTC))
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	p := &fetchPair{e: e, st: st, c: c, r: bufio.NewReader(c)}
	if _, err := p.r.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{`LOGIN "alice@example.com" "alice's secret"`, `SELECT INBOX`,
		`STORE 1 +FLAGS (\Seen $Label1 \Flagged)`, `STORE 3 +FLAGS (\Answered)`} {
		if out, err := p.cmd(cmd); err != nil || !strings.HasSuffix(out, "OK") && !strings.Contains(out, "OK ") {
			t.Fatalf("%s: %v\n%s", cmd, err, out)
		}
	}
	return p
}

// cmd sends a command and returns all it reads up to and with the tagged
// response, literals read by their length.
func (p *fetchPair) cmd(cmd string) (string, error) {
	p.tag++
	tag := fmt.Sprintf("t%d ", p.tag)
	p.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(p.c, "%s%s\r\n", tag, cmd); err != nil {
		return "", err
	}
	var out strings.Builder
	for {
		l, err := p.r.ReadString('\n')
		out.WriteString(l)
		if err != nil {
			return out.String(), err
		}
		if strings.HasPrefix(l, tag) {
			return out.String(), nil
		}
		if i := strings.LastIndexByte(l, '{'); i >= 0 && strings.HasSuffix(l, "}\r\n") {
			n, err := strconv.Atoi(l[i+1 : len(l)-3])
			if err != nil {
				return out.String(), err
			}
			b := make([]byte, n)
			if _, err := io.ReadFull(p.r, b); err != nil {
				return out.String(), err
			}
			out.Write(b)
		}
	}
}

// both is what cmd answers with directFetch and with imapserver's writer
// (the tagged lines left out: their tags differ).
func (p *fetchPair) both(t testing.TB, cmd string) (direct, general string) {
	t.Helper()
	var out [2]string
	for i, off := range []bool{false, true} {
		p.e.srv.noDirectFetch.Store(off)
		s, err := p.cmd(cmd)
		if err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, s)
		}
		out[i] = s[:strings.LastIndex(strings.TrimSuffix(s, "\r\n"), "\n")+1]
	}
	p.e.srv.noDirectFetch.Store(false)
	return out[0], out[1]
}

var directFetchCommands = []string{
	`UID FETCH 1:* (UID FLAGS RFC822.SIZE INTERNALDATE ENVELOPE)`,
	`FETCH 1:* ALL`,
	`FETCH 1:* FAST`,
	`FETCH 2 (ENVELOPE)`,
	`UID FETCH 1:* (FLAGS)`,
	`FETCH 1:3 (INTERNALDATE UID)`,
}

// TestDirectFetch: for every header of envelopeHeaders as the messages'
// summary, and for the stored summaries, each FETCH directFetch takes is
// answered with the bytes imapserver's writer sends; and directFetch
// writes the ENVELOPE of every header fastEnvelope takes.
func TestDirectFetch(t *testing.T) {
	p := newFetchPair(t)
	check := func(name string) {
		for _, cmd := range directFetchCommands {
			direct, general := p.both(t, cmd)
			if direct != general {
				t.Errorf("%s: %s:\ndirectFetch:\n%s\nimapserver:\n%s", name, cmd, direct, general)
			}
			if !strings.Contains(direct, " FETCH (") {
				t.Errorf("%s: %s: no FETCH response:\n%s", name, cmd, direct)
			}
		}
	}
	check("stored summaries")
	for _, tc := range envelopeHeaders {
		h := []byte(tc.header)
		p.st.header.Store(&h)
		check(tc.name)
		if _, ok := appendEnvelope(nil, h, new([]imap.Address)); ok != tc.fast {
			t.Errorf("%s: appendEnvelope ok = %v, want %v", tc.name, ok, tc.fast)
		}
	}
	for _, h := range []string{
		"Subject: \"quoted\" and back\\slash\r\nFrom: \"Dave\" <d@example.com>\r\n\r\n",
		"Subject: " + strings.Repeat("x", 4097) + "\r\n\r\n",
		"Subject: " + strings.Repeat("x", 4096) + "\r\n\r\n",
		"Subject: tab\tinside\r\n\r\n",
		"From: bob (Bob \"B\") @ example.org\r\n\r\n",
		"Date: Sun, 31 Dec 9999 23:59:59 -0000\r\n\r\n",
		"Date: Fri, 13 Mar 2026 07:08:09 +1345\r\n\r\n",
	} {
		b := []byte(h)
		p.st.header.Store(&b)
		check(fmt.Sprintf("%.40q", h))
	}
}

// TestDirectFetchMixed: when directFetch leaves one message of a FETCH to
// imapserver's writer, the responses still come in order, as imapserver
// alone sends them.
func TestDirectFetchMixed(t *testing.T) {
	p := newFetchPair(t)
	plain := []byte(envelopeHeaders[1].header)
	odd := []byte("Subject: caf\xc3\xa9\r\nFrom: bob@example.org\r\n\r\n")
	if _, ok := appendEnvelope(nil, odd, new([]imap.Address)); ok {
		t.Fatal("appendEnvelope takes the 8-bit subject: the test needs one it declines")
	}
	p.st.header.Store(&plain)
	p.st.second.Store(&odd)
	direct, general := p.both(t, directFetchCommands[0])
	if direct != general {
		t.Errorf("directFetch:\n%s\nimapserver:\n%s", direct, general)
	}
	if n := strings.Count(direct, " FETCH ("); n != 3 {
		t.Errorf("%d FETCH responses, want 3:\n%s", n, direct)
	}
}

// FuzzDirectFetch: for any summary, the folder open is answered with the
// bytes imapserver's writer sends.
func FuzzDirectFetch(f *testing.F) {
	for _, tc := range envelopeHeaders {
		f.Add([]byte(tc.header))
	}
	p := newFetchPair(f)
	f.Fuzz(func(t *testing.T, h []byte) {
		p.st.header.Store(&h)
		direct, general := p.both(t, directFetchCommands[0])
		if direct != general {
			t.Fatalf("summary %q:\ndirectFetch:\n%s\nimapserver:\n%s", h, direct, general)
		}
	})
}

// TestAppendInternalDate: appendInternalDate writes what time.Format
// does with imapserver's layout, in and out of the years it writes
// itself.
func TestAppendInternalDate(t *testing.T) {
	loc := time.FixedZone("", -7*3600)
	for _, tm := range []time.Time{
		time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC),
		time.Date(2026, 11, 25, 23, 59, 59, 999, loc),
		time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(999, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-5, 6, 7, 8, 9, 10, 0, time.UTC),
		{},
	} {
		want := `"` + tm.In(time.UTC).Format(internalDateLayout) + `"`
		if got := string(appendInternalDate(nil, tm)); got != want {
			t.Errorf("appendInternalDate(%v) = %s, want %s", tm, got, want)
		}
	}
}

// BenchmarkAppendFetchResponse is the response to a folder open for a
// typical summary.
func BenchmarkAppendFetchResponse(b *testing.B) {
	h := mailstore.HeaderSummary([]byte("Return-Path: <bob@example.org>\r\nReceived: from mx.example.org by mx.bench.test; Mon, 02 Nov 2026 10:00:00 +0000\r\n" +
		"Date: Mon, 02 Nov 2026 10:00:07 +0000\r\nFrom: Bob Sender <bob@example.org>\r\nTo: Alice <user0@bench.test>\r\nSubject: message 7 about the weekly report\r\n" +
		"Message-ID: <7.bench@example.org>\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nbody\r\n"))
	m := mailstore.Message{UID: 7, Flags: []string{`\Seen`}, Size: 4096, ReceivedAt: time.Date(2026, 11, 2, 10, 0, 7, 0, time.UTC)}
	o := &imap.FetchOptions{UID: true, Flags: true, RFC822Size: true, InternalDate: true, Envelope: true}
	buf := make([]byte, 0, 1024)
	var addrs []imap.Address
	b.ReportAllocs()
	for b.Loop() {
		var ok bool
		if buf, ok = appendFetchResponse(buf[:0], 7, m, h, o, false, &addrs); !ok {
			b.Fatal("appendFetchResponse declined a plain summary")
		}
	}
}

// envelopeDates are cases of TestAppendEnvelopeDate and seeds of
// FuzzAppendEnvelopeDate; plain says whether appendPlainDate takes them.
var envelopeDates = []struct {
	v     string
	plain bool
}{
	{"Mon, 2 Nov 2026 10:00:00 +0000", true},
	{"Tue, 03 Nov 2026 08:01:02 -0500", true},
	{"Sun, 03 Nov 2026 08:01:02 -0500", true}, // the wrong day of the week
	{"Thu, 29 Feb 2024 23:59:59 +1345", true},
	{"Thu, 29 Feb 2023 23:59:59 +0000", false},
	{"Mon, 31 Apr 2026 10:00:00 +0000", false},
	{"Mon, 01 Jan 0001 00:00:00 +0000", true}, // the zero time: NIL
	{"Mon, 01 Jan 0001 01:30:00 +0130", true},
	{"Mon, 01 Jan 0000 00:00:00 -0000", true},
	{"Mon, 2 Nov 2026 10:00:00 -0000", true},
	{"mon, 2 Nov 2026 10:00:00 +0000", false},
	{"Mon, 2 nov 2026 10:00:00 +0000", false},
	{"Mon,  2 Nov 2026 10:00:00 +0000", false},
	{"Mon, 2 Nov 2026 24:00:00 +0000", false},
	{"Mon, 2 Nov 2026 10:60:00 +0000", false},
	{"Mon, 2 Nov 2026 10:00:60 +0000", false},
	{"Mon, 2 Nov 2026 10:00:00 +2400", false},
	{"Mon, 2 Nov 2026 10:00:00 +0060", false},
	{"Mon, 2 Nov 2026 10:00:00 GMT", false},
	{"Mon, 2 Nov 2026 10:00:00 +00000", false},
	{"Mon, 00 Nov 2026 10:00:00 +0000", false},
	{"2 Nov 2026 10:00:00 +0000", false},
	{"Mon, 2 Nov 2026 10:00 +0000", false},
	{"Mon, 2 Nov 2026 1:00:00 +00000", false},
	{"", false},
}

// wantEnvelopeDate is the date of an ENVELOPE as imapserver writes
// envelopeDate(v).
func wantEnvelopeDate(v string) string {
	t := envelopeDate(v)
	if t.IsZero() {
		return "NIL"
	}
	return `"` + t.Format(envelopeDateLayout) + `"`
}

// TestAppendEnvelopeDate: appendEnvelopeDate writes what imapserver
// writes, and reads the usual form itself.
func TestAppendEnvelopeDate(t *testing.T) {
	for _, tc := range envelopeDates {
		if _, ok := appendPlainDate(nil, tc.v); ok != tc.plain {
			t.Errorf("appendPlainDate(%q) ok = %v, want %v", tc.v, ok, tc.plain)
		}
		if got, want := string(appendEnvelopeDate(nil, tc.v)), wantEnvelopeDate(tc.v); got != want {
			t.Errorf("appendEnvelopeDate(%q) = %s, want %s", tc.v, got, want)
		}
	}
}

// FuzzAppendEnvelopeDate: whenever appendPlainDate takes a date, it
// writes what imapserver writes.
func FuzzAppendEnvelopeDate(f *testing.F) {
	for _, tc := range envelopeDates {
		f.Add(tc.v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if got, ok := appendPlainDate(nil, v); ok {
			if want := wantEnvelopeDate(v); string(got) != want {
				t.Fatalf("appendPlainDate(%q) = %s, want %s", v, got, want)
			}
		}
	})
}
