package imapd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"mime"
	"net"
	"reflect"
	"slices"
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
	// folder is INBOX's id.
	folder int64
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
	p := &fetchPair{e: e, st: st, c: c, r: bufio.NewReader(c), folder: e.inbox().ID}
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

// fetchAsked are the items of a FETCH of fetchCommands.
type fetchAsked struct {
	flags, internalDate, size, envelope bool
}

var fetchCommands = []struct {
	cmd   string
	items fetchAsked
}{
	{`UID FETCH 1:* (UID FLAGS RFC822.SIZE INTERNALDATE ENVELOPE)`, fetchAsked{true, true, true, true}},
	{`FETCH 1:* ALL`, fetchAsked{true, true, true, true}},
	{`FETCH 1:* FAST`, fetchAsked{true, true, true, false}},
	{`FETCH 2 (ENVELOPE)`, fetchAsked{envelope: true}},
	{`UID FETCH 1:* (FLAGS)`, fetchAsked{flags: true}},
	{`FETCH 1:3 (INTERNALDATE UID)`, fetchAsked{internalDate: true}},
}

// want is what go-imap's imapserver v2.0.0-beta.8, unpatched, wrote for
// cmd (the tagged line left out), the messages' summaries being
// summaries[uid] (the stored ones where nil): the reference the one
// FETCH encoder is held to.
func (p *fetchPair) want(t testing.TB, c string, items fetchAsked) string {
	t.Helper()
	msgs, err := p.e.st.Messages(context.Background(), p.e.mb.ID, p.folder)
	if err != nil {
		t.Fatal(err)
	}
	uids := make([]uint32, len(msgs))
	for i, m := range msgs {
		uids[i] = m.UID
	}
	summaries := map[uint32][]byte{}
	if err := p.st.Summaries(context.Background(), p.e.mb.ID, p.folder, uids, func(uid uint32, b []byte) error {
		summaries[uid] = slices.Clone(b)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i, m := range msgs {
		if strings.HasPrefix(c, "FETCH 2 ") && i != 1 {
			continue
		}
		fmt.Fprintf(&b, "* %d FETCH (UID %d", i+1, m.UID)
		if items.flags {
			b.WriteString(" FLAGS (" + strings.Join(m.Flags, " ") + ")")
		}
		if items.internalDate {
			b.WriteString(" INTERNALDATE " + upstreamString(m.ReceivedAt.In(time.UTC).Format("_2-Jan-2006 15:04:05 -0700")))
		}
		if items.size {
			fmt.Fprintf(&b, " RFC822.SIZE %d", m.Size)
		}
		if items.envelope {
			b.WriteString(" ENVELOPE " + upstreamEnvelope(envelope(summaries[m.UID])))
		}
		b.WriteString(")\r\n")
	}
	return b.String()
}

// check: every command of fetchCommands is answered as upstream's
// encoder answered it.
func (p *fetchPair) check(t testing.TB, name string) {
	t.Helper()
	for _, c := range fetchCommands {
		s, err := p.cmd(c.cmd)
		if err != nil {
			t.Fatalf("%s: %s: %v\n%s", name, c.cmd, err, s)
		}
		got := s[:strings.LastIndex(strings.TrimSuffix(s, "\r\n"), "\n")+1]
		if want := p.want(t, c.cmd, c.items); got != want {
			t.Fatalf("%s: %s:\n%s\nwant (upstream's encoder)\n%s", name, c.cmd, got, want)
		}
	}
}

// fetchHeaders are summaries for TestFetchAsUpstream beside
// envelopeHeaders: escapes, the quoted string's size limit, tabs,
// comments, dates at the edges of what is parsed by hand.
var fetchHeaders = []string{
	"Subject: \"quoted\" and back\\slash\r\nFrom: \"Dave\" <d@example.com>\r\n\r\n",
	"Subject: " + strings.Repeat("x", 4097) + "\r\n\r\n",
	"Subject: " + strings.Repeat("x", 4096) + "\r\n\r\n",
	"Subject: tab\tinside\r\n\r\n",
	"From: bob (Bob \"B\") @ example.org\r\n\r\n",
	"Date: Sun, 31 Dec 9999 23:59:59 -0000\r\n\r\n",
	"Date: Fri, 13 Mar 2026 07:08:09 +1345\r\n\r\n",
	"Date: Mon, 01 Jan 0001 00:00:00 +0000\r\n\r\n",
	"Date: Mon, 01 Jan 0987 00:00:00 +0000\r\n\r\n",
	"Subject: caf\xc3\xa9\r\nFrom: =?utf-8?q?Andr=C3=A9?= <a@example.org>\r\nIn-Reply-To: <a@b> <c@d>\r\n\r\n",
}

// TestFetchAsUpstream: for the stored summaries, every header of
// envelopeHeaders and fetchHeaders as the summary of every message, and
// a plain one beside one fastEnvelope declines, each FETCH of
// fetchCommands is answered with the bytes upstream's encoder wrote.
func TestFetchAsUpstream(t *testing.T) {
	p := newFetchPair(t)
	p.check(t, "stored summaries")
	for _, tc := range envelopeHeaders {
		h := []byte(tc.header)
		p.st.header.Store(&h)
		p.check(t, tc.name)
	}
	for _, h := range fetchHeaders {
		b := []byte(h)
		p.st.header.Store(&b)
		p.check(t, fmt.Sprintf("%.40q", h))
	}
	plain := []byte(envelopeHeaders[1].header)
	odd := []byte("Subject: caf\xc3\xa9\r\nFrom: bob@example.org\r\n\r\n")
	if _, ok := fastEnvelope(odd); ok {
		t.Fatal("fastEnvelope takes the 8-bit subject: the test needs one it declines")
	}
	p.st.header.Store(&plain)
	p.st.second.Store(&odd)
	p.check(t, "mixed")
}

// FuzzFetchAsUpstream: for any summary, the folder open is answered with
// the bytes upstream's encoder wrote.
func FuzzFetchAsUpstream(f *testing.F) {
	for _, tc := range envelopeHeaders {
		f.Add([]byte(tc.header))
	}
	for _, h := range fetchHeaders {
		f.Add([]byte(h))
	}
	p := newFetchPair(f)
	f.Fuzz(func(t *testing.T, h []byte) {
		p.st.header.Store(&h)
		c := fetchCommands[0]
		s, err := p.cmd(c.cmd)
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.cmd, err, s)
		}
		got := s[:strings.LastIndex(strings.TrimSuffix(s, "\r\n"), "\n")+1]
		if want := p.want(t, c.cmd, c.items); got != want {
			t.Fatalf("summary %q:\n%s\nwant (upstream's encoder)\n%s", h, got, want)
		}
	})
}

// upstreamString is what go-imap v2.0.0-beta.8's encoder wrote for a
// string on an IMAP4rev1 connection: quoted (in a strings.Builder) when
// it may be, else a literal.
func upstreamString(s string) string {
	valid := len(s) <= 4096
	for i := 0; i < len(s) && valid; i++ {
		valid = s[i] != 0 && s[i] != '\r' && s[i] != '\n' && s[i] <= 0x7f
	}
	if !valid {
		return "{" + strconv.Itoa(len(s)) + "}\r\n" + s
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

func upstreamNString(s string) string {
	if s == "" {
		return "NIL"
	}
	return upstreamString(s)
}

// upstreamEnvelope is what go-imap v2.0.0-beta.8's writeEnvelope wrote.
func upstreamEnvelope(env *imap.Envelope) string {
	sender, replyTo := env.Sender, env.ReplyTo
	if sender == nil {
		sender = env.From
	}
	if replyTo == nil {
		replyTo = env.From
	}
	var b strings.Builder
	b.WriteString("(")
	if env.Date.IsZero() {
		b.WriteString("NIL")
	} else {
		b.WriteString(upstreamString(env.Date.Format("Mon, 02 Jan 2006 15:04:05 -0700")))
	}
	b.WriteString(" " + upstreamNString(mime.QEncoding.Encode("utf-8", env.Subject)))
	for _, l := range [][]imap.Address{env.From, sender, replyTo, env.To, env.Cc, env.Bcc} {
		b.WriteString(" ")
		if len(l) == 0 {
			b.WriteString("NIL")
			continue
		}
		b.WriteString("(")
		for i, a := range l {
			if i > 0 {
				b.WriteString(" ")
			}
			b.WriteString("(" + upstreamNString(mime.QEncoding.Encode("utf-8", a.Name)) + " NIL " +
				upstreamNString(a.Mailbox) + " " + upstreamNString(a.Host) + ")")
		}
		b.WriteString(")")
	}
	if len(env.InReplyTo) > 0 {
		b.WriteString(" " + upstreamString("<"+strings.Join(env.InReplyTo, "> <")+">"))
	} else {
		b.WriteString(" NIL")
	}
	if env.MessageID != "" {
		b.WriteString(" " + upstreamString("<"+env.MessageID+">"))
	} else {
		b.WriteString(" NIL")
	}
	b.WriteString(")")
	return b.String()
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

// TestParsePlainDate: parsePlainDate reads the usual form itself, and
// reads what time.Parse reads.
func TestParsePlainDate(t *testing.T) {
	for _, tc := range envelopeDates {
		if _, ok := parsePlainDate(tc.v); ok != tc.plain {
			t.Errorf("parsePlainDate(%q) ok = %v, want %v", tc.v, ok, tc.plain)
		}
		checkPlainDate(t, tc.v)
	}
}

// FuzzParsePlainDate: whenever parsePlainDate takes a date, it answers
// what time.Parse does.
func FuzzParsePlainDate(f *testing.F) {
	for _, tc := range envelopeDates {
		f.Add(tc.v)
	}
	f.Fuzz(checkPlainDate)
}

func checkPlainDate(t *testing.T, v string) {
	got, ok := parsePlainDate(v)
	if !ok {
		return
	}
	want, err := time.Parse(rfc5322Date, v)
	if err != nil || !got.Equal(want) || got.String() != want.String() || !reflect.DeepEqual(got, want) {
		t.Fatalf("parsePlainDate(%q) = %v, want time.Parse's %v (%v)", v, got, want, err)
	}
}
