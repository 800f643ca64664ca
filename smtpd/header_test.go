package smtpd

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestHeaderFields(t *testing.T) {
	for _, tc := range []struct {
		name, msg string
		fields    []string
		body      string
	}{
		{"simple", "A: 1\r\nB: 2\r\n\r\nbody\r\n", []string{"A: 1\r\n", "B: 2\r\n"}, "\r\nbody\r\n"},
		{"folded", "A: 1\r\n 2\r\n\tthree\r\nB: x\r\n\r\n", []string{"A: 1\r\n 2\r\n\tthree\r\n", "B: x\r\n"}, "\r\n"},
		{"bare LF", "A: 1\nB: 2\n\nbody", []string{"A: 1\n", "B: 2\n"}, "\nbody"},
		{"no body", "A: 1\r\n", []string{"A: 1\r\n"}, ""},
		{"no final line end", "A: 1", []string{"A: 1"}, ""},
		{"obsolete blank before the colon", "From : x\r\n\r\n", []string{"From : x\r\n"}, "\r\n"},
		{"a line that is no field ends the header", "A: 1\r\nnot a field\r\nB: 2\r\n", []string{"A: 1\r\n"}, "not a field\r\nB: 2\r\n"},
		{"continuation first", " A: 1\r\n", nil, " A: 1\r\n"},
		{"empty", "", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fields, end := headerFields([]byte(tc.msg))
			var got []string
			for _, f := range fields {
				got = append(got, string(f))
			}
			if !slices.Equal(got, tc.fields) || tc.msg[end:] != tc.body {
				t.Errorf("headerFields(%q) = %q, rest %q; want %q, rest %q", tc.msg, got, tc.msg[end:], tc.fields, tc.body)
			}
		})
	}
}

func TestAuthservID(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Authentication-Results: mx.test; spf=pass", "mx.test"},
		{"authentication-results:MX.Test;spf=pass", "mx.test"},
		{" (a (nested) comment) mx.test 1; none", "mx.test"},
		{"mx.test;\r\n\tspf=pass", "mx.test"},
		{"mx.test(comment); none", "mx.test"},
		{"(unterminated comment mx.test", ""},
		{"", ""},
	} {
		if got := authservID(tc.in); got != tc.want {
			t.Errorf("authservID(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestStripAuthResults(t *testing.T) {
	msg := "Authentication-Results: mx.test; spf=pass\r\n" +
		"Received: x\r\n" +
		"Authentication-Results: other.test; spf=pass\r\n" +
		"authentication-results:\r\n mx.test;\r\n dkim=pass\r\n" +
		"Subject: s\r\n\r\nAuthentication-Results: mx.test; body\r\n"
	want := "Received: x\r\nAuthentication-Results: other.test; spf=pass\r\nSubject: s\r\n\r\nAuthentication-Results: mx.test; body\r\n"
	if got := string(stripAuthResults([]byte(msg), "", "MX.test")); got != want {
		t.Errorf("stripAuthResults = %q, want %q", got, want)
	}
	// Past a line that is not a field, as lenient parsers read it; the
	// line itself and the body stay.
	msg = "Subject: s\r\nX-Break\r\nAuthentication-Results: mx.test;\r\n dkim=pass\r\nTo: t\r\n\r\nAuthentication-Results: mx.test; body\r\n"
	want = "Subject: s\r\nX-Break\r\nTo: t\r\n\r\nAuthentication-Results: mx.test; body\r\n"
	if got := string(stripAuthResults([]byte(msg), "mx.test")); got != want {
		t.Errorf("stripAuthResults past a broken line = %q, want %q", got, want)
	}
	// The last field of a message without a body.
	if got := string(stripAuthResults([]byte("Subject: s\r\nAuthentication-Results: mx.test; x"), "mx.test")); got != "Subject: s\r\n" {
		t.Errorf("stripAuthResults of a header-only message = %q", got)
	}
	clean := []byte("Subject: s\r\n\r\nx\r\n")
	if got := stripAuthResults(clean, "mx.test"); &got[0] != &clean[0] {
		t.Error("stripAuthResults copied a message with nothing to remove")
	}
}

func TestFromAddresses(t *testing.T) {
	for _, tc := range []struct {
		name, msg string
		want      []string // nil: an error
	}{
		{"plain", "From: bob@a.test\r\n\r\n", []string{"bob@a.test"}},
		{"display name", "From: \"Bob, B.\" <bob@a.test>\r\n\r\n", []string{"bob@a.test"}},
		{"list", "From: bob@a.test, Carol <carol@a.test>\r\n\r\n", []string{"bob@a.test", "carol@a.test"}},
		{"two fields", "From: bob@a.test\r\nFROM: carol@a.test\r\n\r\n", []string{"bob@a.test", "carol@a.test"}},
		{"encoded word in an unknown charset", "From: =?x-unknown?q?B=F6b?= <bob@a.test>\r\n\r\n", []string{"bob@a.test"}},
		{"UTF-8 address", "From: Jösé <jösé@a.test>\r\n\r\n", []string{"jösé@a.test"}},
		{"folded", "From: Bob\r\n <bob@a.test>\r\n\r\n", []string{"bob@a.test"}},
		{"none", "Subject: x\r\n\r\n", nil},
		{"empty", "From: \r\n\r\n", nil},
		{"no address", "From: Bob\r\n\r\n", nil},
		{"in the body only", "Subject: x\r\n\r\nFrom: bob@a.test\r\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fields, _ := headerFields([]byte(tc.msg))
			got, err := fromAddresses(fields)
			if tc.want == nil && err == nil || tc.want != nil && (err != nil || !slices.Equal(got, tc.want)) {
				t.Errorf("fromAddresses(%q) = %q, %v; want %q", tc.msg, got, err, tc.want)
			}
		})
	}
}

func TestAddMissing(t *testing.T) {
	at := time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)
	for _, tc := range []struct{ name, msg, want string }{
		{"both missing", "From: a@a.test\r\n\r\nx\r\n",
			"From: a@a.test\r\nDate: Sun, 22 Nov 2026 09:30:00 +0000\r\nMessage-ID: <id1@mx.test>\r\n\r\nx\r\n"},
		{"both there", "Date: x\r\nMessage-Id: <y>\r\n\r\n", "Date: x\r\nMessage-Id: <y>\r\n\r\n"},
		{"no line end", "From: a@a.test", "From: a@a.test\r\nDate: Sun, 22 Nov 2026 09:30:00 +0000\r\nMessage-ID: <id1@mx.test>\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fields, end := headerFields([]byte(tc.msg))
			if got := string(addMissing([]byte(tc.msg), fields, end, at, "id1", "mx.test")); got != tc.want {
				t.Errorf("addMissing(%q) = %q, want %q", tc.msg, got, tc.want)
			}
		})
	}
}

func TestLoginServer(t *testing.T) {
	var user, pass string
	auth := func(u, p string) error { user, pass = u, p; return nil }
	for _, tc := range []struct {
		name  string
		steps []string // responses, "<nil>" for none
	}{
		{"no initial response", []string{"<nil>", "bob", "secret"}},
		{"user name as initial response", []string{"bob", "secret"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			user, pass = "", ""
			l := &loginServer{auth: auth}
			var done bool
			var challenges []string
			for _, s := range tc.steps {
				var resp []byte
				if s != "<nil>" {
					resp = []byte(s)
				}
				ch, d, err := l.Next(resp)
				if err != nil {
					t.Fatalf("Next(%q) = %v", s, err)
				}
				challenges = append(challenges, string(ch))
				done = d
			}
			if !done || user != "bob" || pass != "secret" {
				t.Errorf("after %q: done %v, user %q, password %q", tc.steps, done, user, pass)
			}
			if got := strings.Join(challenges, ","); !strings.HasSuffix(got, "Password:,") {
				t.Errorf("challenges = %q, want Password: before the end", got)
			}
		})
	}
	l := &loginServer{auth: auth}
	for _, s := range []string{"bob", "secret"} {
		l.Next([]byte(s))
	}
	if _, _, err := l.Next([]byte("more")); err == nil {
		t.Error("Next after the end = nil, want an error")
	}
}
