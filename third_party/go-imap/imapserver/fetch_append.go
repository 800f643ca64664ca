package imapserver

import (
	"mime"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/internal/imapwire"
)

// mailhost patch: the ENVELOPE appended to a response's bytes at once,
// as writeEnvelope would write it token by token. See PATCHES.md (the
// FETCH encoder).

// appendEnvelope appends what writeEnvelope writes for envelope to b;
// ok is false when a string of it is to be written as a literal.
//
// mailhost patch: see PATCHES.md (the FETCH encoder).
func appendEnvelope(enc *imapwire.Encoder, b []byte, envelope *imap.Envelope) (_ []byte, ok bool) {
	if envelope == nil {
		envelope = new(imap.Envelope)
	}
	sender := envelope.Sender
	if sender == nil {
		sender = envelope.From
	}
	replyTo := envelope.ReplyTo
	if replyTo == nil {
		replyTo = envelope.From
	}
	b = append(b, '(')
	if envelope.Date.IsZero() {
		b = append(b, "NIL"...)
	} else {
		b = append(b, '"')
		b = imapwire.AppendTime(b, envelope.Date, envelopeDateLayout)
		b = append(b, '"')
	}
	b = append(b, ' ')
	if b, ok = appendText(enc, b, envelope.Subject); !ok {
		return b, false
	}
	// Sender and Reply-To are most often From itself: its bytes are
	// copied rather than written again.
	var from []byte
	for k, l := range [...][]imap.Address{envelope.From, sender, replyTo, envelope.To, envelope.Cc, envelope.Bcc} {
		b = append(b, ' ')
		if len(l) == 0 {
			b = append(b, "NIL"...)
			continue
		}
		if k > 0 && from != nil && sameList(l, envelope.From) {
			b = append(b, from...)
			continue
		}
		start := len(b)
		b = append(b, '(')
		for i, addr := range l {
			if i > 0 {
				b = append(b, ' ')
			}
			b = append(b, '(')
			if b, ok = appendText(enc, b, addr.Name); !ok {
				return b, false
			}
			b = append(b, " NIL "...)
			if b, ok = appendNString(enc, b, addr.Mailbox); !ok {
				return b, false
			}
			b = append(b, ' ')
			if b, ok = appendNString(enc, b, addr.Host); !ok {
				return b, false
			}
			b = append(b, ')')
		}
		b = append(b, ')')
		if k == 0 {
			from = b[start:len(b):len(b)]
		}
	}
	b = append(b, ' ')
	if len(envelope.InReplyTo) > 0 {
		if b, ok = enc.AppendQuotedJoin(b, "<", envelope.InReplyTo, "> <", ">"); !ok {
			return b, false
		}
	} else {
		b = append(b, "NIL"...)
	}
	b = append(b, ' ')
	if envelope.MessageID != "" {
		id := [1]string{envelope.MessageID}
		if b, ok = enc.AppendQuotedJoin(b, "<", id[:], "", ">"); !ok {
			return b, false
		}
	} else {
		b = append(b, "NIL"...)
	}
	return append(b, ')'), true
}

// sameList reports whether a and b are the same slice (mailhost patch).
func sameList(a, b []imap.Address) bool {
	return len(a) == len(b) && len(a) > 0 && &a[0] == &b[0]
}

// appendText appends what writeNString writes for
// mime.QEncoding.Encode("utf-8", s) (a subject, a display name): for
// printable ASCII and tabs, which Encode leaves as they are, in one pass
// over s (mailhost patch).
func appendText(enc *imapwire.Encoder, b []byte, s string) ([]byte, bool) {
	if s == "" {
		return append(b, "NIL"...), true
	}
	escape := false
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case (ch < ' ' || ch > '~') && ch != '\t':
			return appendNString(enc, b, mime.QEncoding.Encode("utf-8", s))
		case ch == '"', ch == '\\':
			escape = true
		}
	}
	if escape || len(s) > 4096 {
		return enc.AppendQuoted(b, s)
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
}

// appendNString appends s as writeNString writes it, when not as a
// literal (mailhost patch).
func appendNString(enc *imapwire.Encoder, b []byte, s string) ([]byte, bool) {
	if s == "" {
		return append(b, "NIL"...), true
	}
	return enc.AppendQuoted(b, s)
}
