package outbound

import (
	"bytes"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/mailhost/mailhost/mailstore"
)

// FuzzDSN makes bounces from arbitrary original messages and arbitrary
// remote replies (both come from outside): the bounce must be a
// multipart/report of three parts, every line of it must end in CRLF
// with no other CR or LF (it leaves through the queue, and a bare CR is
// what SMTP smuggling uses), and the lines this server writes itself must
// stay within RFC 5322's 998 octets.
func FuzzDSN(f *testing.F) {
	f.Add([]byte("From: a@b.example\r\nSubject: hi\r\n\r\nbody\r\n"), "mailbox unavailable", 550, 5, 1, 1, false)
	f.Add([]byte("Subject: x\n\nbody"), "line one\nline two\r\n\tthree", 451, 4, 7, 1, true)
	f.Add([]byte{}, "", 999, -1, 1000, 3, true)
	now := time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)
	s := New(Config{Hostname: "mx.test", Lifetime: 5 * 24 * time.Hour})
	e := mailstore.Outbound{ID: 7, From: "alice@example.com", QueuedAt: now.Add(-time.Hour)}
	f.Fuzz(func(t *testing.T, body []byte, text string, code, c1, c2, c3 int, delayed bool) {
		r := reply{Code: code, Enhanced: smtp.EnhancedCode{c1, c2, c3}, Text: text, Host: "mx.remote.test"}
		failed := []failure{{rcpt: "bob@remote.test", reply: r, delayed: delayed}, {rcpt: "carol@remote.test", reply: r, expired: !delayed}}
		out := s.dsn(e, "alice@example.com", body, failed, now)

		headersPart := bytes.LastIndex(out, []byte("Content-Type: text/rfc822-headers\r\n"))
		for i, line := range bytes.SplitAfter(out, []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			if !bytes.HasSuffix(line, []byte("\r\n")) || bytes.Count(line, []byte("\r")) != 1 {
				t.Fatalf("line %d of the bounce is not one CRLF-ended line: %q", i, line)
			}
		}
		for _, line := range bytes.Split(out[:headersPart], []byte("\r\n")) {
			if len(line) > 998 {
				t.Fatalf("bounce line of %d octets: %.80q...", len(line), line)
			}
		}

		m, err := mail.ReadMessage(bytes.NewReader(out))
		if err != nil {
			t.Fatalf("bounce does not parse: %v", err)
		}
		mt, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
		if err != nil || mt != "multipart/report" {
			t.Fatalf("bounce Content-Type %q: %v", m.Header.Get("Content-Type"), err)
		}
		mr := multipart.NewReader(m.Body, params["boundary"])
		n := 0
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("bounce part %d: %v", n+1, err)
			}
			n++
			io.Copy(io.Discard, p)
		}
		if n != 3 {
			t.Fatalf("bounce has %d parts, want 3", n)
		}
	})
}
