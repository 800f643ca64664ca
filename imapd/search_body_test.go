package imapd

import (
	"testing"
)

// plainTextMessages are messages for TestPlainTextSearch and the seeds of
// FuzzPlainTextSearch; plain says whether plainText takes them.
var plainTextMessages = []struct {
	msg   string
	plain bool
}{
	{"From: a@example.org\r\nSubject: x\r\n\r\nHello, this is Token42.\r\n", true},
	{"Content-Type: text/plain; charset=\"utf-8\"\r\n\r\nplain\r\n", false},
	{"Content-Type: text/plain; charset=utf-8; format=flowed\r\nContent-Transfer-Encoding: 7bit\r\n\r\nFlowed TEXT\r\n", true},
	{"Content-Type: TEXT/PLAIN; CHARSET=US-ASCII\r\n\r\nupper\r\n", true},
	{"Content-Type: text/plain; charset=iso-8859-1\r\n\r\ncaf\xe9\r\n", false},
	{"Content-Type: text/plain\r\n\r\ncaf\xc3\xa9 \xe2\x84\xaa\r\n", false},
	{"Content-Transfer-Encoding: quoted-printable\r\n\r\nsoft=\r\nbreak\r\n", false},
	{"Content-Transfer-Encoding: base64\r\n\r\naGVsbG8=\r\n", false},
	{"Content-Type: text/html\r\n\r\n<p>hello</p>\r\n", false},
	{"Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n\r\nin part\r\n--b--\r\n", false},
	{"Content-Type: text/plain;\r\n charset=utf-8\r\n\r\nfolded\r\n", false},
	{"Subject: folded\r\n subject\r\n\r\nbody\r\n", true},
	{"no header at all", false},
	{"\r\nonly a body\r\n", true},
	{"Content-Type: text/plain\r\nContent-Type: text/html\r\n\r\ntwo\r\n", false},
	{"Content-Type: application/octet-stream\r\n\r\nbinary\r\n", false},
}

var bodySearches = []string{"token42", "TOKEN42", "hello", "flowed text", "", "é", "k", "<p>", "in part", "=", "\r\n", "x\r\nb"}

// TestPlainTextSearch: for the messages plainText takes, SEARCH BODY's
// answer through it is the MIME parser's.
func TestPlainTextSearch(t *testing.T) {
	for _, tc := range plainTextMessages {
		text, ok := plainText([]byte(tc.msg))
		if ok != tc.plain {
			t.Errorf("plainText(%q) ok = %v, want %v", tc.msg, ok, tc.plain)
		}
		if !ok {
			continue
		}
		for _, s := range bodySearches {
			if !isASCII(s) {
				continue
			}
			want := containsAny(parseMIME([]byte(tc.msg)).appendTexts([]byte(tc.msg), nil), s)
			if got := containsFold(text, s); got != want {
				t.Errorf("BODY %q in %q: %v through plainText, %v through the parser", s, tc.msg, got, want)
			}
		}
	}
}

// FuzzPlainTextSearch: where plainText takes a message, searching it
// answers what the MIME parser's texts do.
func FuzzPlainTextSearch(f *testing.F) {
	for _, tc := range plainTextMessages {
		f.Add([]byte(tc.msg), "hello")
	}
	f.Fuzz(func(t *testing.T, msg []byte, s string) {
		if !isASCII(s) {
			return
		}
		text, ok := plainText(msg)
		if !ok {
			return
		}
		want := containsAny(parseMIME(msg).appendTexts(msg, nil), s)
		if got := containsFold(text, s); got != want {
			t.Fatalf("BODY %q in %q: %v through plainText, %v through the parser", s, msg, got, want)
		}
	})
}
