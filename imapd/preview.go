package imapd

import (
	"bytes"
	"html"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	gomessage "github.com/emersion/go-message"
)

// PREVIEW (RFC 8970): the start of a message's text, for a client's
// message list. The stored summaries hold header fields only, so a
// preview is made from the body when asked for (pgstore keeps the bodies
// it read last in memory, which a client listing the same folder again
// hits); PREVIEW (LAZY) is answered the same way, as the RFC allows.

// previewChars is the most characters a preview has (RFC 8970 section 3).
const previewChars = 256

// previewRead bounds what is decoded of the part a preview comes from:
// enough for previewChars of text after HTML tags and white space.
const previewRead = 16 << 10

// preview is the preview of msg (tree): the text of its first text/plain
// or text/html part that is not an attachment, HTML without its markup,
// plain text without quoted lines, white space runs made one space, at most previewChars characters;
// "" for a message without such text.
func preview(tree *mimePart, msg []byte) string {
	e := previewPart(tree)
	if e == nil {
		return ""
	}
	var r io.Reader = bytes.NewReader(msg[e.body:e.end])
	if ent, err := gomessage.New(gomessage.Header{Header: e.header}, r); ent != nil && (err == nil || gomessage.IsUnknownCharset(err)) {
		r = ent.Body
	}
	b, _ := io.ReadAll(io.LimitReader(r, previewRead))
	text := string(b)
	if e.mediaType == "text/html" {
		text = htmlText(text)
	} else {
		text = unquoted(text)
	}
	return previewText(text)
}

// previewPart finds the part a preview is taken from, depth first.
func previewPart(e *mimePart) *mimePart {
	if e == nil || e.flat {
		return nil
	}
	if e.isMultipart() {
		for _, c := range e.children {
			if p := previewPart(c); p != nil {
				return p
			}
		}
		return nil
	}
	if e.mediaType != "text/plain" && e.mediaType != "text/html" {
		return nil
	}
	if d, _, _ := strings.Cut(strings.TrimSpace(strings.ToLower(e.header.Get("Content-Disposition"))), ";"); d == "attachment" {
		return nil
	}
	return e
}

// htmlText is the text of an HTML document: tags, comments, and the
// content of style and script elements left out, entities decoded.
func htmlText(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		lt := strings.IndexByte(s, '<')
		if lt < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:lt])
		s = s[lt:]
		if strings.HasPrefix(s, "<!--") {
			end := strings.Index(s, "-->")
			if end < 0 {
				break
			}
			s = s[end+3:]
			continue
		}
		gt := strings.IndexByte(s, '>')
		if gt < 0 {
			break
		}
		tag := strings.ToLower(s[1:gt])
		s = s[gt+1:]
		for _, skip := range []string{"style", "script", "head"} {
			if tag == skip || strings.HasPrefix(tag, skip+" ") {
				if end := strings.Index(strings.ToLower(s), "</"+skip); end >= 0 {
					s = s[end:]
				} else {
					s = ""
				}
			}
		}
		b.WriteByte(' ') // a tag separates words (<br>, </p>)
	}
	return html.UnescapeString(b.String())
}

// unquoted is plain text without its quoted lines (those that begin with
// ">", the text a reply quotes), which say nothing of the message
// itself; Dovecot leaves them out of its previews too.
func unquoted(s string) string {
	if !strings.Contains(s, ">") {
		return s
	}
	var b strings.Builder
	for line := range strings.Lines(s) {
		if !strings.HasPrefix(line, ">") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// previewText makes each run of white space one space, trims the ends and
// cuts the text at previewChars characters; invalid UTF-8 becomes U+FFFD.
func previewText(s string) string {
	var b strings.Builder
	n, space := 0, false
	for _, r := range strings.ToValidUTF8(s, string(utf8.RuneError)) {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			if n++; n > previewChars {
				break
			}
			b.WriteByte(' ')
			space = false
		}
		if n++; n > previewChars {
			break
		}
		b.WriteRune(r)
	}
	return strings.TrimRight(b.String(), " ")
}
