package smtpd

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"time"
	"unicode"
)

// traceInfo is what the trace headers of one message say.
type traceInfo struct {
	id          string // this server's id of the transaction, also logged
	from        string // reverse path, "" for the null sender
	helo        string
	remoteIP    string
	hostname    string
	tls, utf8   bool
	rcpt        string // the one RCPT, or "" when there were several
	deliveredTo string // the one local mailbox, or ""
	at          time.Time
	// relayed: the same body is queued for remote recipients too.
	relayed bool
	// authResults is a whole Authentication-Results field with its CRLF,
	// or "".
	authResults string
	// auth: submission, after AUTH (RFC 3848 "A").
	auth bool
}

// traceHeaders renders the header fields the MX prepends to a message,
// in this order (RFC 5321 section 4.4, RFC 5322 section 3.6.7, RFC 8601
// section 5):
//
//	Return-Path: <from>                 (final delivery only)
//	Delivered-To: mailbox@domain        (one local mailbox only)
//	Authentication-Results: ...         (from Config.Authenticator)
//	Received: from helo ([ip]) by host with ESMTPS id ID for <rcpt>; date
//
// Return-Path belongs to final delivery (RFC 5321 section 4.4): one body
// is stored for the local recipients and the queue alike, so when the
// message is also relayed (forwarded through an alias, or a bounce sent
// back) neither Return-Path nor Delivered-To is added, rather than
// sending them on to the next server.
//
// "for <rcpt>" is given only for a single recipient, since with several
// it would tell each recipient who else (Bcc included) got the message.
//
// Delivered-To names the mailbox the message is delivered to, after alias
// expansion, as Postfix and others write it. The stored body is one for
// all local recipients of a message (store.Deliver is called once), so it
// can name only one: it is added when the message goes to exactly one
// local mailbox and left out otherwise, rather than naming one recipient
// in the others' copies or storing a body per recipient.
func traceHeaders(t traceInfo) []byte {
	var b strings.Builder
	if !t.relayed {
		b.WriteString("Return-Path: <" + clean(t.from) + ">\r\n")
		if t.deliveredTo != "" {
			b.WriteString("Delivered-To: " + clean(t.deliveredTo) + "\r\n")
		}
	}
	b.WriteString(t.authResults)
	b.WriteString("Received: from " + clean(t.helo) + " ([" + t.remoteIP + "])\r\n")
	b.WriteString("\tby " + clean(t.hostname) + " with " + protocol(t) + " id " + t.id)
	if t.rcpt != "" {
		b.WriteString("\r\n\tfor <" + clean(t.rcpt) + ">")
	}
	b.WriteString(";\r\n\t" + t.at.Format(time.RFC1123Z) + "\r\n")
	return []byte(b.String())
}

// submissionTrace renders the one trace field submission prepends:
//
//	Received: by host with ESMTPSA id ID; date
//
// It leaves out the from clause, the client's address and EHLO name,
// which tell the recipients where the user was and which machine it used
// (a home address, "johns-laptop.local"), and "for", which would tell
// them the Bcc recipients. The session log keeps the address, for abuse
// reports.
func submissionTrace(t traceInfo) []byte {
	return []byte("Received: by " + clean(t.hostname) + " with " + protocol(t) + " id " + t.id +
		";\r\n\t" + t.at.Format(time.RFC1123Z) + "\r\n")
}

// protocol is the "with" keyword of RFC 3848 and RFC 6531 section 4.3.
func protocol(t traceInfo) string {
	// Sessions exist only after EHLO or HELO and go-smtp does not say
	// which; every client this server sees speaks ESMTP.
	p := "ESMTP"
	if t.utf8 {
		p = "UTF8SMTP"
	}
	if t.tls {
		p += "S"
	}
	if t.auth {
		p += "A"
	}
	return p
}

// clean makes a client-supplied value safe inside a header field: no
// control characters (no CR or LF to inject fields), no invisible format
// characters, and at most 255 octets.
func clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f || unicode.Is(unicode.Cf, r) || r == unicode.ReplacementChar {
			return -1
		}
		return r
	}, s)
	if len(s) > 255 {
		s = strings.ToValidUTF8(s[:255], "")
	}
	return s
}

// newID returns a random transaction id, 16 hex digits.
func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// prepend is fields followed by msg in one new slice: the body stored,
// which must not share msg's memory (readMessage reuses it).
func prepend(fields, msg []byte) []byte {
	body := make([]byte, 0, len(fields)+len(msg))
	return append(append(body, fields...), msg...)
}
