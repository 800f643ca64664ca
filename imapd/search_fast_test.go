package imapd

import (
	"testing"

	"github.com/emersion/go-imap/v2"

	"github.com/mailhost/mailhost/mailstore"
)

// headerSearches are SEARCH HEADER criteria for TestFastHeaderMatch.
var headerSearches = []struct{ key, value string }{
	{"From", "bob"}, {"From", "BOB@EXAMPLE.ORG"}, {"from", "<bob@example.org>"}, {"From", "Smith <"},
	{"To", "c@example.com"}, {"To", "a@example.com, b@"}, {"Cc", "dave, d."}, {"Subject", "hello"},
	{"Subject", "long folded"}, {"Subject", ""}, {"X-Tag", "t"}, {"X-Missing", ""}, {"Subject", "café"},
	{"List-Id", "l.example"}, {"Fr om", "x"}, {"To", "friends: "},
}

// TestFastHeaderMatch: where fastHeaderMatch answers, it answers what
// matchField on go-message's parsed header does, on messages and on
// their summaries.
func TestFastHeaderMatch(t *testing.T) {
	headers := []string{
		"From: Bob Smith <bob@example.org>\r\nTo: a@example.com,\r\n b@example.com, c@example.com\r\nCc: \"Dave, D.\" <dave@example.com>\r\nSubject: hello\r\n  long\r\n\tfolded\r\nX-Tag: t\r\nList-Id: <l.example.org>\r\n\r\nbody\r\n",
		"From: bob (the builder) @ example.org\r\nTo: friends: a@example.com;\r\n\r\n",
		"Subject: =?utf-8?q?caf=C3=A9?=\r\nFrom: =?utf-8?q?J=C3=BCrgen?= <j@example.org>\r\n\r\n",
		"From: a@example.org\nSubject: lf\n\n",
		"Subject: hello\r\nSubject: HELLO again\r\n\r\n",
		"\r\n",
	}
	taken := 0
	for _, h := range headers {
		for _, b := range [][]byte{[]byte(h), mailstore.HeaderSummary([]byte(h))} {
			for _, s := range headerSearches {
				got, ok := fastHeaderMatch(b, s.key, s.value)
				if !ok {
					continue
				}
				taken++
				c := &candidate{body: b}
				if want := matchField(c.parsedHeader().FieldsByKey(s.key), s.value); got != want {
					t.Errorf("fastHeaderMatch(%q, %q, %q) = %v, want %v", b, s.key, s.value, got, want)
				}
			}
		}
	}
	if taken < len(headerSearches) {
		t.Errorf("fastHeaderMatch answered %d searches, want the plain ones (at least %d)", taken, len(headerSearches))
	}
}

// FuzzFastHeaderMatch: where fastHeaderMatch answers, it answers what
// matchField does.
func FuzzFastHeaderMatch(f *testing.F) {
	f.Add([]byte("From: Bob <bob@example.org>\r\nSubject: hi\r\n\r\n"), "From", "bob")
	f.Add([]byte("To: a@example.com,\r\n b@example.com\r\n\r\n"), "to", "com, b")
	f.Add([]byte("Subject: x\r\n y\r\n\r\n"), "Subject", "X Y")
	f.Fuzz(func(t *testing.T, h []byte, key, value string) {
		got, ok := fastHeaderMatch(h, key, value)
		if !ok {
			return
		}
		c := &candidate{body: h}
		if want := matchField(c.parsedHeader().FieldsByKey(key), value); got != want {
			t.Fatalf("fastHeaderMatch(%q, %q, %q) = %v, want %v", h, key, value, got, want)
		}
	})
}

// TestFastHeaderFields: where fastHeaderFields answers, it answers what
// the parser's section does, on messages and on their summaries.
func TestFastHeaderFields(t *testing.T) {
	headers := []string{
		"Date: Mon, 02 Nov 2026 10:00:00 +0000\r\nFrom: Bob <bob@example.org>\r\nReceived: x\r\nTo: a@example.com,\r\n\tb@example.com\r\nSubject: hello\r\nsubject: again\r\nX-Priority: 1\r\nReferences: <a@b>\r\n <c@d>\r\n\r\nbody\r\n",
		"Subject : spaced\r\nFrom:x@example.org\r\n\r\n",
		"From: a@example.org\nSubject: lf\n\n",
		"\r\nbody only",
		"X-Only: other\r\n\r\n",
		" folded first\r\nFrom: a@b\r\n\r\n",
		"no colon\r\nFrom: a@b\r\n\r\n",
	}
	taken := 0
	for _, h := range headers {
		for _, b := range [][]byte{[]byte(h), mailstore.HeaderSummary([]byte(h))} {
			for _, fields := range headerFieldsCases {
				item := &imap.FetchItemBodySection{Specifier: imap.PartSpecifierHeader, HeaderFields: fields}
				got, ok := fastHeaderFields(b, item)
				if !ok {
					continue
				}
				taken++
				if want := parseTop(b).section(b, item); string(got) != string(want) {
					t.Errorf("fastHeaderFields(%q, %v) = %q, want %q", b, fields, got, want)
				}
			}
		}
	}
	if taken < 20 {
		t.Errorf("fastHeaderFields answered %d times, want the plain headers' (20 at least)", taken)
	}
}

// FuzzFastHeaderFields: where fastHeaderFields answers, it answers what
// the parser's section does.
func FuzzFastHeaderFields(f *testing.F) {
	f.Add([]byte("From: a@b\r\nTo: c@d,\r\n e@f\r\nSubject: s\r\n\r\nbody"), "to", "subject")
	f.Add([]byte("Subject : s\r\n\r\n"), "Subject", "From")
	f.Fuzz(func(t *testing.T, msg []byte, k1, k2 string) {
		item := &imap.FetchItemBodySection{Specifier: imap.PartSpecifierHeader, HeaderFields: []string{k1, k2}}
		got, ok := fastHeaderFields(msg, item)
		if !ok {
			return
		}
		if want := parseTop(msg).section(msg, item); string(got) != string(want) {
			t.Fatalf("fastHeaderFields(%q, %q) = %q, want %q", msg, item.HeaderFields, got, want)
		}
	})
}
