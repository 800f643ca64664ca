package imapd

import (
	"context"
	"fmt"
	netmail "net/mail"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"

	"github.com/mailhost/mailhost/mailstore"
)

// TestEnvelopeFromSummary: the ENVELOPE of a message's summary
// (mailstore.HeaderSummary, what a FETCH of ENVELOPE alone reads) is the
// ENVELOPE of the message.
func TestEnvelopeFromSummary(t *testing.T) {
	for _, c := range []struct{ name, body string }{
		{"plain", "Date: Mon, 02 Nov 2026 10:00:00 +0000\r\nFrom: Bob <bob@example.org>\r\nSender: s@example.org\r\n" +
			"Reply-To: r@example.org\r\nTo: alice@example.com, Carol <c@example.com>\r\nCc: d@example.com\r\nBcc: e@example.com\r\n" +
			"Subject: hello\r\nIn-Reply-To: <a@example.org>\r\nMessage-ID: <b@example.org>\r\nReceived: x\r\n\r\nbody\r\n"},
		{"folded and encoded", "Received: from a\r\n\tby b\r\nSubject: =?utf-8?q?caf=C3=A9?=\r\n and more\r\n" +
			"From: =?utf-8?q?J=C3=BCrgen?= <j@example.org>\r\nTo: undisclosed-recipients:;\r\nCc: team: a@example.com,\r\n\tb@example.com;\r\n\r\nbody"},
		{"LF only", "From: a@example.org\nSubject: lf\nX-Other: 1\n\nbody\nFrom: not@header\n"},
		{"no header", "\r\nbody only"},
		{"empty", ""},
		{"header only, unterminated", "Subject: just this"},
		{"duplicates", "From: a@example.org\r\nFrom: b@example.org\r\nSubject: one\r\nSubject: two\r\n\r\n"},
		{"space before colon", "Subject : spaced\r\nFrom:x@example.org\r\n\r\n"},
		{"route and odd addresses", "From: <@route:a@example.org>, \"q, uoted\" <q@example.org>\r\nTo: no-at-sign\r\n\r\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := []byte(c.body)
			want := envelope(body)
			got := envelope(mailstore.HeaderSummary(body))
			if !reflect.DeepEqual(got, want) {
				t.Errorf("envelope(HeaderSummary(%q)) = %+v, want envelope(body) = %+v", c.body, got, want)
			}
		})
	}
}

// readCounter is a store that counts the calls of Bodies and Summaries.
type readCounter struct {
	mailstore.Store
	bodies, summaries atomic.Int64
}

func (r *readCounter) Bodies(ctx context.Context, mailboxID, folderID int64, uids []uint32, fn func(uint32, []byte) error) error {
	r.bodies.Add(1)
	return r.Store.Bodies(ctx, mailboxID, folderID, uids, fn)
}

func (r *readCounter) Summaries(ctx context.Context, mailboxID, folderID int64, uids []uint32, fn func(uint32, []byte) error) error {
	r.summaries.Add(1)
	return r.Store.Summaries(ctx, mailboxID, folderID, uids, fn)
}

// TestFolderOpenReadsNoBody: the FETCH of a folder's listing and SEARCH
// on the fields a summary keeps read the summaries, once per command, and
// no body; BODY, and HEADER on a field the summary leaves out, read the
// bodies.
func TestFolderOpenReadsNoBody(t *testing.T) {
	rc := &readCounter{}
	e := newEnv(t, envOptions{wrap: func(st mailstore.Store) mailstore.Store {
		rc.Store = st
		return rc
	}})
	at := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	for i := range 3 {
		e.deliver(fmt.Sprintf("From: bob%d@example.org\r\nTo: alice@example.com\r\nSubject: message %d\r\nX-Tag: t%d\r\n\r\nbody %d\r\n", i, i, i, i), at)
	}
	c := e.login(nil)
	if _, err := c.Select("INBOX", nil).Wait(); err != nil {
		t.Fatalf("SELECT: %v", err)
	}
	var all imap.UIDSet
	all.AddRange(1, 0)
	msgs, err := c.Fetch(all, &imap.FetchOptions{UID: true, Flags: true, RFC822Size: true, InternalDate: true, Envelope: true}).Collect()
	if err != nil || len(msgs) != 3 {
		t.Fatalf("UID FETCH 1:* (UID FLAGS RFC822.SIZE INTERNALDATE ENVELOPE) = %d messages, %v; want 3", len(msgs), err)
	}
	for i, m := range msgs {
		if want := fmt.Sprintf("message %d", i); m.Envelope == nil || m.Envelope.Subject != want {
			t.Errorf("ENVELOPE of %d = %+v, want subject %q", i+1, m.Envelope, want)
		}
	}
	if b, s := rc.bodies.Load(), rc.summaries.Load(); b != 0 || s != 1 {
		t.Errorf("folder-open FETCH: %d Bodies, %d Summaries calls; want 0, 1", b, s)
	}

	for _, c2 := range []struct {
		name     string
		criteria imap.SearchCriteria
		want     []uint32
		bodies   int64
	}{
		{"FROM", imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: "From", Value: "bob1"}}}, []uint32{2}, 0},
		{"NOT SUBJECT", imap.SearchCriteria{Not: []imap.SearchCriteria{{Header: []imap.SearchCriteriaHeaderField{{Key: "Subject", Value: "message 2"}}}}}, []uint32{1, 2}, 0},
		{"HEADER X-Tag", imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: "X-Tag", Value: "t2"}}}, []uint32{3}, 1},
		{"BODY", imap.SearchCriteria{Body: []string{"body 0"}}, []uint32{1}, 1},
	} {
		rc.bodies.Store(0)
		data, err := c.UIDSearch(&c2.criteria, nil).Wait()
		if err != nil {
			t.Fatalf("UID SEARCH %s = %v", c2.name, err)
		}
		var got []uint32
		for _, u := range data.AllUIDs() {
			got = append(got, uint32(u))
		}
		if !slices.Equal(got, c2.want) || rc.bodies.Load() != c2.bodies {
			t.Errorf("UID SEARCH %s = %v after %d Bodies calls, want %v after %d", c2.name, got, rc.bodies.Load(), c2.want, c2.bodies)
		}
	}
}

// TestEnvelopeDate: envelopeDate answers what net/mail.ParseDate does.
func TestEnvelopeDate(t *testing.T) {
	for _, v := range []string{
		"Mon, 02 Nov 2026 10:00:00 +0000", "Mon, 2 Nov 2026 10:00:00 -0700", " Tue, 3 Nov 2026 23:59:59 +0130 ",
		"Mon, 02 Nov 2026 10:00:00 +0000 (UTC)", "2 Nov 2026 10:00:00 GMT", "Mon, 02 Nov 2026 10:00 EST",
		"Mon, 02 Nov 2026\r\n 10:00:00 +0000", "garbage", "Mon, 32 Nov 2026 10:00:00 +0000",
	} {
		want, _ := netmail.ParseDate(v)
		if got := envelopeDate(v); !got.Equal(want) || got.String() != want.String() {
			t.Errorf("envelopeDate(%q) = %v, want net/mail's %v", v, got, want)
		}
	}
}

// headerFieldsCases are BODY[HEADER.FIELDS (...)] items a mail client
// lists a folder with.
var headerFieldsCases = [][]string{
	{"From", "To", "Cc", "Bcc", "Subject", "Date", "Message-ID", "In-Reply-To", "References", "Content-Type", "Reply-To", "X-Priority"},
	{"subject"},
	{"LIST-ID", "List-Unsubscribe", "Sender"},
	{"Date", "Date"},
}

// TestHeaderFieldsFromSummary: BODY[HEADER.FIELDS (...)] of fields the
// summary keeps is the same from the summary as from the message, with
// and without a partial.
func TestHeaderFieldsFromSummary(t *testing.T) {
	bodies := []string{
		"Date: Mon, 02 Nov 2026 10:00:00 +0000\r\nFrom: Bob <bob@example.org>\r\nReceived: x\r\nTo: a@example.com,\r\n\tb@example.com\r\nSubject: hello\r\nX-Priority: 1\r\nList-Id: <l.example.org>\r\nList-Unsubscribe: <mailto:u@example.org>\r\nReferences: <a@b>\r\n <c@d>\r\nContent-Type: multipart/mixed; boundary=x\r\n\r\n--x\r\nContent-Type: text/plain\r\n\r\nhi\r\n--x--\r\n",
		"Subject: =?utf-8?q?caf=C3=A9?=\r\nsubject: twice\r\nFrom: =?utf-8?q?J=C3=BCrgen?= <j@example.org>\r\nTo: undisclosed-recipients:;\r\n\r\nbody",
		"From: a@example.org\nSubject: lf\nX-Other: 1\n\nbody\nFrom: not@header\n",
		"\r\nbody only",
		"X-Only: other\r\n\r\n",
	}
	for i, body := range bodies {
		summary := mailstore.HeaderSummary([]byte(body))
		for _, fields := range headerFieldsCases {
			for _, partial := range []*imap.SectionPartial{nil, {Offset: 3, Size: 20}} {
				bs := &imap.FetchItemBodySection{Specifier: imap.PartSpecifierHeader, HeaderFields: fields, Partial: partial}
				if !inSummaryFetch(&imap.FetchOptions{BodySection: []*imap.FetchItemBodySection{bs}}) {
					t.Fatalf("inSummaryFetch(HEADER.FIELDS %v) = false", fields)
				}
				mime := func() *mimePart { return parseMIME([]byte(body)) }
				want := bodySection([]byte(body), bs, mime)
				got := bodySection(summary, bs, func() *mimePart { return parseMIME(summary) })
				if string(got) != string(want) {
					t.Errorf("message %d, HEADER.FIELDS %v <%v>: from the summary %q, from the message %q", i, fields, partial, got, want)
				}
			}
		}
	}
	for _, bs := range []*imap.FetchItemBodySection{
		{Specifier: imap.PartSpecifierHeader, HeaderFields: []string{"From", "X-Tag"}},
		{Specifier: imap.PartSpecifierHeader, HeaderFieldsNot: []string{"From"}},
		{Specifier: imap.PartSpecifierHeader},
		{Specifier: imap.PartSpecifierHeader, Part: []int{1}, HeaderFields: []string{"From"}},
		{},
	} {
		if inSummaryFetch(&imap.FetchOptions{BodySection: []*imap.FetchItemBodySection{bs}}) {
			t.Errorf("inSummaryFetch(%+v) = true, want false", bs)
		}
	}
}

// TestHeaderFieldsReadNoBody: a folder listing with HEADER.FIELDS of the
// fields a summary keeps, as Thunderbird's without the fields it lacks,
// reads no body, and answers the message's lines.
func TestHeaderFieldsReadNoBody(t *testing.T) {
	rc := &readCounter{}
	e := newEnv(t, envOptions{wrap: func(st mailstore.Store) mailstore.Store {
		rc.Store = st
		return rc
	}})
	body := "From: bob@example.org\r\nTo: alice@example.com\r\nSubject: hello\r\nX-Tag: t\r\nMessage-ID: <1@example.org>\r\n\r\nbody\r\n"
	e.deliver(body, time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC))
	c := e.login(nil)
	if _, err := c.Select("INBOX", nil).Wait(); err != nil {
		t.Fatalf("SELECT: %v", err)
	}
	bs := &imap.FetchItemBodySection{Specifier: imap.PartSpecifierHeader, HeaderFields: []string{"From", "Subject", "Message-ID"}, Peek: true}
	msgs, err := c.Fetch(imap.SeqSetNum(1), &imap.FetchOptions{UID: true, Envelope: true, BodySection: []*imap.FetchItemBodySection{bs}}).Collect()
	if err != nil || len(msgs) != 1 {
		t.Fatalf("FETCH 1 (ENVELOPE BODY.PEEK[HEADER.FIELDS (From Subject Message-ID)]) = %d messages, %v", len(msgs), err)
	}
	want := "From: bob@example.org\r\nSubject: hello\r\nMessage-ID: <1@example.org>\r\n\r\n"
	if got := string(msgs[0].FindBodySection(bs)); got != want {
		t.Errorf("HEADER.FIELDS = %q, want %q", got, want)
	}
	if b, s := rc.bodies.Load(), rc.summaries.Load(); b != 0 || s != 1 {
		t.Errorf("%d Bodies, %d Summaries calls; want 0, 1", b, s)
	}
	bs.HeaderFields = []string{"X-Tag"}
	if _, err := c.Fetch(imap.SeqSetNum(1), &imap.FetchOptions{BodySection: []*imap.FetchItemBodySection{bs}}).Collect(); err != nil || rc.bodies.Load() != 1 {
		t.Errorf("HEADER.FIELDS (X-Tag): %v, %d Bodies calls; want 1", err, rc.bodies.Load())
	}
}
