package imapserver

// mailhost patch: the FETCH encoder's fast paths against what upstream's
// writer wrote (see PATCHES.md).

import (
	"bufio"
	"bytes"
	"mime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/internal/imapwire"
)

// upstreamString is upstream's Encoder.String on the server side.
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

// upstreamEnvelope is what upstream's writeEnvelope wrote for env.
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
		b.WriteString(upstreamString(env.Date.Format(envelopeDateLayout)))
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

// encodeEnvelope is what writeEnvelope writes for env, and what
// appendEnvelope, WriteEnvelope's fast path, appends (unless it leaves
// env to writeEnvelope): both must be upstream's.
func encodeEnvelope(t testing.TB, env *imap.Envelope) string {
	t.Helper()
	var buf bytes.Buffer
	bw := bufio.NewWriterSize(&buf, 64)
	enc := imapwire.NewEncoder(bw, imapwire.ConnSideServer)
	writeEnvelope(enc, env)
	if err := enc.CRLF(); err != nil {
		t.Fatal(err)
	}
	written := strings.TrimSuffix(buf.String(), "\r\n")
	if appended, ok := appendEnvelope(enc, nil, env); ok && string(appended) != written {
		t.Fatalf("appendEnvelope(%+v)\n = %q\nwriteEnvelope wrote %q", env, appended, written)
	}
	return written
}

var envelopeCases = []*imap.Envelope{
	{},
	{
		Date:      time.Date(2026, 11, 2, 10, 0, 7, 0, time.FixedZone("", -5*3600)),
		Subject:   "message 7 about the weekly report",
		From:      []imap.Address{{Name: "Bob Sender", Mailbox: "bob", Host: "example.org"}},
		To:        []imap.Address{{Name: "Alice", Mailbox: "alice", Host: "bench.test"}, {Mailbox: "carol", Host: "x.test"}},
		MessageID: "7.bench@example.org",
	},
	{
		Date:      time.Date(987, 1, 2, 3, 4, 5, 0, time.UTC),
		Subject:   "caf\xc3\xa9 \"quoted\" back\\slash",
		From:      []imap.Address{{Name: "D\xc3\xa9 \"q\"", Mailbox: "d", Host: "e.test"}},
		Sender:    []imap.Address{{Mailbox: "s", Host: "e.test"}},
		ReplyTo:   []imap.Address{{Mailbox: "r", Host: "e.test"}},
		Cc:        []imap.Address{{Mailbox: "c\r\nc", Host: "e.test"}},
		Bcc:       []imap.Address{{Mailbox: strings.Repeat("b", 4097), Host: "e.test"}},
		InReplyTo: []string{"a@b", "c\"d@e"},
		MessageID: strings.Repeat("m", 4095),
	},
}

// TestWriteEnvelopeAsUpstream: writeEnvelope writes what upstream's did.
func TestWriteEnvelopeAsUpstream(t *testing.T) {
	for _, env := range envelopeCases {
		if got, want := encodeEnvelope(t, env), upstreamEnvelope(env); got != want {
			t.Errorf("writeEnvelope(%+v)\n = %q\nwant %q", env, got, want)
		}
	}
}

func FuzzWriteEnvelopeAsUpstream(f *testing.F) {
	f.Add(int64(1793613607), -18000, "subject", "Bob", "bob", "example.org", "id@x", "a@b c@d")
	f.Add(int64(0), 0, "", "", "", "", "", "")
	f.Fuzz(func(t *testing.T, sec int64, offset int, subject, name, mailbox, host, id, inReplyTo string) {
		env := &imap.Envelope{
			Date:      time.Unix(sec, 0).In(time.FixedZone("", offset%(200*3600))),
			Subject:   subject,
			From:      []imap.Address{{Name: name, Mailbox: mailbox, Host: host}},
			To:        []imap.Address{{Name: subject, Mailbox: host, Host: mailbox}, {Name: name}},
			MessageID: id,
		}
		if inReplyTo != "" {
			env.InReplyTo = strings.Split(inReplyTo, " ")
		}
		if got, want := encodeEnvelope(t, env), upstreamEnvelope(env); got != want {
			t.Fatalf("writeEnvelope(%+v)\n = %q\nwant %q", env, got, want)
		}
	})
}
