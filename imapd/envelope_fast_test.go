package imapd

import (
	"reflect"
	"testing"

	"github.com/mailhost/mailhost/mailstore"
)

// envelopeHeaders are headers for TestFastEnvelope and FuzzFastEnvelope's
// seeds; fast says whether fastEnvelope should take them itself.
var envelopeHeaders = []struct {
	name   string
	header string
	fast   bool
}{
	{"plain", "From: bob@example.org\r\nTo: alice@example.com\r\nSubject: message 1\r\nDate: Mon, 02 Nov 2026 10:00:00 +0000\r\n\r\nbody\r\n", true},
	{"names and ids", "Date: Tue, 3 Nov 2026 08:01:02 -0500\r\nFrom: Bob Smith <bob@example.org>\r\nSender: list@example.net\r\nReply-To: Replies <r@example.org>\r\nTo: Alice <alice@example.com>, carol@example.com\r\nCc: \"Dave, D.\" <dave@example.com>\r\nBcc: eve@example.com\r\nSubject:   padded subject  \r\nMessage-ID: <abc.123@mail.example.org>\r\nIn-Reply-To: <x.y@example.org>\r\n\r\n", true},
	{"folded", "From: bob@example.org\r\nTo: a@example.com,\r\n b@example.com,\r\n\tc@example.com\r\nSubject: a long\r\n   folded subject\r\n\r\n", true},
	{"missing everything", "X-Other: 1\r\n\r\n", true},
	{"empty", "\r\n", true},
	{"empty fields", "From:\r\nTo: \r\nSubject:\r\nMessage-ID:\r\n\r\n", true},
	{"group", "From: bob@example.org\r\nTo: Friends: a@example.com, b@example.com;, c@example.com\r\n\r\n", true},
	{"empty group", "To: undisclosed-recipients:;\r\n\r\n", true},
	{"comments", "From: bob (Bob) @ (the host) example.org\r\nTo: <alice (x)@example.com>\r\n\r\n", true},
	{"route", "To: <@relay.example:alice@example.com>\r\n\r\n", true},
	{"odd date", "Date: 2 Nov 2026 10:00 GMT\r\nFrom: bob@example.org\r\n\r\n", true},
	{"bad date", "Date: yesterday\r\n\r\n", true},
	{"encoded subject", "Subject: =?utf-8?q?caf=C3=A9?=\r\nFrom: bob@example.org\r\n\r\n", false},
	{"encoded name", "From: =?iso-8859-1?q?Andr=E9?= <andre@example.org>\r\n\r\n", false},
	{"8-bit", "Subject: caf\xc3\xa9\r\n\r\n", false},
	{"bare LF", "From: bob@example.org\nSubject: x\n\n", false},
	{"no end", "From: bob@example.org\r\nSubject: x", false},
	{"two froms", "From: a@example.org\r\nFrom: b@example.org\r\n\r\n", false},
	{"two subjects", "Subject: one\r\nSubject: two\r\n\r\n", false},
	{"msg-id in comment", "Message-ID: (c) <a@b>\r\n\r\n", false},
	{"two in-reply-to", "In-Reply-To: <a@b> <c@d>\r\n\r\n", false},
	{"bad msg-id", "Message-ID: a@b\r\n\r\n", false},
	{"first line folded", " From: a@b\r\n\r\n", false},
	{"no colon", "From a@b\r\n\r\n", false},
	{"space before colon", "Subject : spaced\r\nFrom: a@example.org\r\n\r\n", true},
}

// TestFastEnvelope: what fastEnvelope answers is what envelope answers,
// for the message and for its stored summary, and it takes the plain
// headers itself.
func TestFastEnvelope(t *testing.T) {
	for _, tc := range envelopeHeaders {
		t.Run(tc.name, func(t *testing.T) {
			for _, h := range [][]byte{[]byte(tc.header), mailstore.HeaderSummary([]byte(tc.header))} {
				got, ok := fastEnvelope(h)
				if ok != tc.fast && len(h) == len(tc.header) {
					t.Errorf("fastEnvelope(%q) ok = %v, want %v", h, ok, tc.fast)
				}
				if !ok {
					continue
				}
				if want := envelope(h); !reflect.DeepEqual(got, want) {
					t.Errorf("fastEnvelope(%q) =\n%+v\nwant (envelope)\n%+v", h, got, want)
				}
			}
		})
	}
}

// FuzzFastEnvelope: whenever fastEnvelope takes a header, it answers what
// envelope does, and envelopeOf never panics.
func FuzzFastEnvelope(f *testing.F) {
	for _, tc := range envelopeHeaders {
		f.Add([]byte(tc.header))
	}
	f.Fuzz(func(t *testing.T, h []byte) {
		got, ok := fastEnvelope(h)
		if ok {
			if want := envelope(h); !reflect.DeepEqual(got, want) {
				t.Fatalf("fastEnvelope(%q) =\n%+v\nwant (envelope)\n%+v", h, got, want)
			}
		}
		envelopeOf(mailstore.HeaderSummary(h))
	})
}

// addressLists are seeds of FuzzFastAddressList and cases of
// TestFastAddressList; fast says whether fastAddressList takes them.
var addressLists = []struct {
	list string
	fast bool
}{
	{"bob@example.org", true},
	{"Bob Smith <bob@example.org>", true},
	{"  Bob   Smith\t<bob@example.org> , carol@example.net,,", true},
	{`"Dave, D." <dave@example.com>, <e@example.com>`, true},
	{"a.b@c.example, x_y+z@[127.0.0.1]", false},
	{"J. Smith <j@example.org>", false},
	{"bob (Bob) <bob@example.org>", false},
	{"Friends: a@example.com;", false},
	{"<@route:a@example.org>", false},
	{`"a \" b" <q@example.org>`, false},
	{"bob @ example.org", false},
	{"no-at-sign", false},
	{"a@b@c", false},
	{`"unclosed <a@b>`, false},
	{"", true},
	{".a@b", false},
}

// TestFastAddressList: fastAddressList answers what parseAddressList
// does, for the lists it takes.
func TestFastAddressList(t *testing.T) {
	for _, tc := range addressLists {
		got, ok := fastAddressList(tc.list)
		if ok != tc.fast {
			t.Errorf("fastAddressList(%q) ok = %v, want %v", tc.list, ok, tc.fast)
		}
		if want := parseAddressList(tc.list); ok && !reflect.DeepEqual(got, want) {
			t.Errorf("fastAddressList(%q) = %+v, want %+v", tc.list, got, want)
		}
	}
}

// FuzzFastAddressList: whenever fastAddressList takes a list, it answers
// what parseAddressList does.
func FuzzFastAddressList(f *testing.F) {
	for _, tc := range addressLists {
		f.Add(tc.list)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, ok := fastAddressList(s); ok {
			if want := parseAddressList(s); !reflect.DeepEqual(got, want) {
				t.Fatalf("fastAddressList(%q) = %+v, want %+v", s, got, want)
			}
		}
	})
}

// BenchmarkFastEnvelope is the envelope of a typical summary.
func BenchmarkFastEnvelope(b *testing.B) {
	h := mailstore.HeaderSummary([]byte("Return-Path: <bob@example.org>\r\nReceived: from mx.example.org by mx.bench.test; Mon, 02 Nov 2026 10:00:00 +0000\r\n" +
		"Date: Mon, 02 Nov 2026 10:00:07 +0000\r\nFrom: Bob Sender <bob@example.org>\r\nTo: Alice <user0@bench.test>\r\nSubject: message 7 about the weekly report\r\n" +
		"Message-ID: <7.bench@example.org>\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nbody\r\n"))
	b.ReportAllocs()
	for b.Loop() {
		envelopeOf(h)
	}
}
