package mailstore

import (
	"bytes"
	"strings"
)

// A message's summary is what mail clients ask of it without its body:
// the fields of its header that make the IMAP ENVELOPE, those a client
// lists a folder with, and those SEARCH looks into most (FROM, TO, CC,
// BCC, SUBJECT, SENTSINCE). Each store keeps it beside the body, keyed by
// the body (messages sharing a body share it), written in the same
// transaction as the body, so that opening a folder reads no body
// (Mail.Summaries).

// summaryFields are the fields a summary keeps (lower case), besides every
// List-* field (RFC 2369, RFC 2919).
var summaryFields = map[string]bool{
	"date": true, "subject": true, "from": true, "sender": true,
	"reply-to": true, "to": true, "cc": true, "bcc": true,
	"in-reply-to": true, "message-id": true, "references": true,
	"content-type": true, "x-priority": true,
}

// SummaryField reports whether a header field named name (any case) is in
// a summary: what a summary lacks must be looked for in the body.
func SummaryField(name string) bool {
	name = strings.ToLower(name)
	return summaryFields[name] || strings.HasPrefix(name, "list-")
}

// HeaderSummary is the summary of a message: the raw lines (continuation
// lines included, line endings as they are) of the header fields it
// keeps (SummaryField), in the message's order, then an empty line. It is
// a header block a header parser reads as it reads the message's header,
// for those fields. A message without a header gives an empty line.
func HeaderSummary(body []byte) []byte {
	var out []byte
	keep := false
	for len(body) > 0 {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line = body[:i+1]
		}
		body = body[len(line):]
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			break // the end of the header (RFC 5322 section 2.1)
		}
		if line[0] == ' ' || line[0] == '\t' {
			if keep { // a continuation line (RFC 5322 section 2.2.3)
				out = append(out, line...)
			}
			continue
		}
		name, _, ok := bytes.Cut(line, []byte(":"))
		keep = ok && SummaryField(string(bytes.TrimRight(name, " \t")))
		if keep {
			out = append(out, line...)
		}
	}
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\r', '\n') // a header that ends the message unterminated
	}
	return append(out, '\r', '\n')
}
