package smtpd

import (
	"bytes"
	"testing"
	"time"
)

// FuzzHeader runs the header functions the MX and submission apply to
// every message on arbitrary input: they must not panic, headerFields
// must cover exactly the bytes before the body, stripAuthResults must
// only remove whole fields and leave none it should have removed, and
// addMissing must keep the message and add what it lacked.
func FuzzHeader(f *testing.F) {
	for _, s := range []string{
		"From: a@b.example\r\nSubject: x\r\n\r\nbody\r\n",
		"Authentication-Results: mx.test; spf=pass\r\n\tdkim=pass\r\nFrom: a@b\r\n\r\n",
		"authentication-results : (c (nested)) MX.TEST ; none\nX: y\n\nz",
		"From: \"=?utf-8?q?J=C3=B6rg?=\" <j@example.org>, b@c\r\n\r\n",
		"Subject: s\r\nbroken line\r\nFrom: x@y\r\n\r\n",
		" continuation first\r\n\r\n",
		"From: a@b\rX: bare CR\r\n\r\n",
		"Date: Mon, 2 Jan 2006 15:04:05 +0000\r\nMessage-ID: <x@y>\r\n",
		"From:",
	} {
		f.Add([]byte(s))
	}
	at := time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, msg []byte) {
		fields, end := headerFields(msg)
		if end > len(msg) {
			t.Fatalf("headerFields end %d > len %d", end, len(msg))
		}
		if got := bytes.Join(fields, nil); !bytes.Equal(got, msg[:end]) {
			t.Fatalf("headerFields(%q): fields %q do not make up msg[:%d]", msg, fields, end)
		}
		_ = headerEnd(msg, end)
		_, _ = fromAddresses(fields)
		for _, fl := range fields {
			_ = authservID(fieldValue(fl))
		}

		out := stripAuthResults(msg, "mx.test")
		if len(out) > len(msg) {
			t.Fatalf("stripAuthResults grew %q to %q", msg, out)
		}
		if again := stripAuthResults(out, "mx.test"); !bytes.Equal(again, out) {
			t.Fatalf("stripAuthResults(%q) = %q left a field to remove: again %q", msg, out, again)
		}

		added := addMissing(msg, fields, end, at, "id1", "mx.test")
		if !bytes.HasPrefix(added, msg[:end]) || !bytes.HasSuffix(added, msg[end:]) {
			t.Fatalf("addMissing(%q) = %q does not keep the message", msg, added)
		}
		var date, id bool
		newFields, _ := headerFields(added)
		for _, fl := range newFields {
			switch fieldName(fl) {
			case "date":
				date = true
			case "message-id":
				id = true
			}
		}
		if !date || !id {
			t.Fatalf("addMissing(%q) = %q: Date %v, Message-ID %v", msg, added, date, id)
		}
	})
}
