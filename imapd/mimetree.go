package imapd

import (
	"bufio"
	"bytes"
	"mime"
	"slices"
	"strings"

	"github.com/emersion/go-message/charset"
	"github.com/emersion/go-message/textproto"
)

// This file parses the MIME structure of a message (RFC 2045, RFC 2046)
// once, into a tree of byte ranges of the stored message, for FETCH
// BODYSTRUCTURE, FETCH of body parts and SEARCH BODY/TEXT (mimefetch.go,
// search.go).
//
// imapserver's Extract functions read a nested part through one reader
// per level of nesting, each scanning for its boundary, and copy the body
// of every message/rfc822 part to parse it again: a message of n nested
// parts costs them time (and, for message/rfc822, memory) that grows with
// n squared or worse (10 s of CPU for each FETCH BODYSTRUCTURE
// of a 139 KB message of 2,000 nested multipart/mixed parts). Here each
// level scans only its own range, the structure stops at maxMIMEDepth
// levels and maxMIMEParts parts, and every section is a slice of the
// stored message, never a copy per level: the cost of a message is at most
// maxMIMEDepth times its size.
//
// Where a limit is reached the rest is not parsed: it is one part, of
// the range it covers, described as application/octet-stream, as Dovecot
// does with its message_max_mime_parts and nesting limits. Its bytes are
// still served by BODY[] and by the sections of the parts around it, and
// SEARCH BODY and TEXT look into them as raw text.
//
// Boundaries are found as go-message's textproto.MultipartReader (which
// imapserver uses) finds them, so that a message within the limits is
// described and cut exactly as before: a part ends before a newline and
// "--boundary" followed by a space, tab, newline or "-"; preamble and
// epilogue belong to no part; a multipart without its close delimiter
// ends its last part at the end of its own range.

const (
	// maxMIMEDepth is how deep the structure goes: multipart and
	// message/rfc822 parts nested deeper are served flat. Dovecot's
	// default nesting limit is 100; real mail stays under 20 (a forward
	// of a forward of a signed message is about 8).
	maxMIMEDepth = 100
	// maxMIMEParts is how many parts the structure has at most; the parts
	// after it, in each multipart still open, are one flat part.
	// Dovecot's default is 10,000.
	maxMIMEParts = 10_000
)

// mimePart is one entity of a message: msg[hdr:body] is its header, blank
// line included, and msg[body:end] its body.
type mimePart struct {
	header         textproto.Header
	hdr, body, end int
	// mediaType is as contentType parses it (lower case unless it does
	// not parse): "text/plain" without a Content-Type, or
	// "message/rfc822" for such a part of a multipart/digest (RFC 2046
	// section 5.1.5).
	mediaType string
	params    map[string]string
	children  []*mimePart // the parts of a multipart
	embedded  *mimePart   // the message a message/rfc822 or message/global part holds
	flat      bool        // past a limit: not parsed, application/octet-stream
}

// mimeParser parses one message.
type mimeParser struct {
	msg   []byte
	parts int
	br    *bufio.Reader // reused for every header
	// dashes is dashLines, nil until made.
	dashes []dashLine
	// malformed is set when the message's own header did not parse to
	// its end: imapserver then answers no section at all, and the tests
	// compare with it only messages without.
	malformed bool
	// unterminated is set when a part ran to the end of its multipart:
	// imapserver then answers no section of it (its reader ends in
	// io.ErrUnexpectedEOF), and leaves out of its size a last line that
	// could start a boundary, where this answers what there is.
	unterminated bool
}

// parseMIME parses the structure of msg.
func parseMIME(msg []byte) *mimePart {
	p := &mimeParser{msg: msg}
	return p.message(0, len(msg), 0)
}

// parseTop parses only the header of msg: enough for the sections of the
// whole message.
func parseTop(msg []byte) *mimePart {
	p := &mimeParser{msg: msg}
	h, n, _ := p.readHeader(0, len(msg))
	return &mimePart{header: h, body: n, end: len(msg)}
}

// message parses msg[start:end] as a message (the whole one, or the one a
// message/rfc822 part holds) at depth levels of nesting. A header that
// does not parse to its end ends where it stops, as imapserver reads it.
func (p *mimeParser) message(start, end, depth int) *mimePart {
	h, n, err := p.readHeader(start, end)
	if err != nil && start == 0 {
		p.malformed = true
	}
	return p.entity(h, start, start+n, end, depth, false)
}

// entity makes the part of header h at msg[start:end], its body starting
// at body, and parses what it holds.
func (p *mimeParser) entity(h textproto.Header, start, body, end, depth int, inDigest bool) *mimePart {
	p.parts++
	e := &mimePart{header: h, hdr: start, body: body, end: end}
	e.mediaType, e.params, _ = contentType(h)
	if inDigest && !h.Has("Content-Type") {
		e.mediaType = "message/rfc822"
	}
	switch {
	case primaryType(e.mediaType) == "multipart":
		if depth >= maxMIMEDepth || p.parts >= maxMIMEParts {
			e.flat = true
			return e
		}
		e.children = p.multipart(e, depth+1)
	case isMessageType(e.mediaType):
		if depth >= maxMIMEDepth || p.parts >= maxMIMEParts {
			e.flat = true
			return e
		}
		e.embedded = p.message(e.body, e.end, depth+1)
	}
	return e
}

// contentType is the media type and parameters of h's Content-Type, as
// go-message's Header.ContentType reads them ("text/plain" without the
// field; the value as it is, no parameters, when it does not parse) but
// unfolded as RFC 5322 section 2.2.3 unfolds: a line break before white
// space is removed and the white space kept. go-message replaces a line
// break and the white space around it with one space, which changes a
// quoted parameter folded within: the boundary "a\r\n\tb" is "a\tb" and
// "a \r\n b" is "a  b", and a multipart cut at "--a b" would lose its
// parts.
func contentType(h textproto.Header) (string, map[string]string, error) {
	return headerParams(h, "Content-Type", "text/plain")
}

// headerParams parses field k of h (the first of that name, as
// textproto's Get takes it) as a value with parameters (RFC 2045 section
// 5.1, RFC 2183), unfolded as contentType says; def is the value of an
// absent or empty field. Parameters are RFC 2047-decoded, as go-message
// decodes them.
func headerParams(h textproto.Header, k, def string) (string, map[string]string, error) {
	v := unfoldedValue(h, k)
	if v == "" {
		return def, nil, nil
	}
	typ, params, err := mime.ParseMediaType(v)
	if err != nil {
		return v, nil, err
	}
	for name, pv := range params {
		if !strings.Contains(pv, "=?") {
			continue
		}
		if dec, err := (&mime.WordDecoder{CharsetReader: charset.Reader}).DecodeHeader(pv); err == nil {
			params[name] = dec
		}
	}
	return typ, params, nil
}

// unfoldedValue is the value of field k of h unfolded (RFC 5322 section
// 2.2.3: each line break of a field is followed by white space, and
// unfolding removes the line break alone), without the white space
// around it; "" without the field.
func unfoldedValue(h textproto.Header, k string) string {
	raw, err := h.Raw(k)
	if err != nil || raw == nil {
		return h.Get(k) // a field set, not read: it has no line breaks
	}
	_, v, ok := bytes.Cut(raw, []byte(":"))
	if !ok {
		return ""
	}
	out := make([]byte, 0, len(v))
	for line := range bytes.Lines(v) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		out = append(out, bytes.TrimSuffix(line, []byte("\r"))...)
	}
	return string(bytes.Trim(out, " \t"))
}

// primaryType is the part of media type t before the "/", as imapserver
// takes it to describe a part ("multipart" without a subtype is one, with
// no parts).
func primaryType(t string) string {
	typ, _, _ := strings.Cut(t, "/")
	return typ
}

func isMessageType(t string) bool { return t == "message/rfc822" || t == "message/global" }

// readHeader parses the header at msg[start:end] and returns it with its
// length, the blank line after it included, as textproto.ReadHeader reads
// it (a malformed header ends where it stops, after the line it could not
// parse).
func (p *mimeParser) readHeader(start, end int) (textproto.Header, int, error) {
	r := bytes.NewReader(p.msg[start:end])
	if p.br == nil {
		p.br = bufio.NewReaderSize(r, 4096)
	} else {
		p.br.Reset(r)
	}
	h, err := textproto.ReadHeader(p.br)
	return h, end - start - r.Len() - p.br.Buffered(), err
}

// multipart finds the parts of e's body, each parsed at depth.
func (p *mimeParser) multipart(e *mimePart, depth int) []*mimePart {
	boundary := e.params["boundary"]
	if boundary == "" {
		return nil
	}
	b := p.msg[e.body:e.end]
	dash := []byte("--" + boundary)
	nl := []byte("\r\n")

	// The preamble: lines up to the first delimiter line.
	pos := 0
	for {
		line, next := lineAt(b, pos)
		if line == nil {
			return nil
		}
		if rest, ok := bytes.CutPrefix(line, dash); ok {
			if isCloseRest(rest, nl) {
				return nil
			}
			rest = skipLWSP(rest)
			if len(rest) == 1 && rest[0] == '\n' {
				nl = nl[1:] // bare LF lines, as MultipartReader allows
			}
			if bytes.Equal(rest, nl) {
				pos = next
				break
			}
		}
		pos = next
	}

	var parts []*mimePart
	for {
		if p.parts >= maxMIMEParts {
			// One flat part holds the rest.
			p.parts++
			parts = append(parts, &mimePart{hdr: e.body + pos, body: e.body + pos, end: e.end, mediaType: "application/octet-stream", flat: true})
			return parts
		}
		// The part's header is read before its end is looked for, and
		// may run past it, as textproto's MultipartReader reads it; one
		// that does not parse ends the multipart there.
		h, n, err := p.readHeader(e.body+pos, e.end)
		if err != nil {
			return parts
		}
		end, delim := p.partEnd(e.body+pos+n, e.end, nl, dash)
		end, delim = end-e.body, delim-e.body
		parts = append(parts, p.entity(h, e.body+pos, e.body+pos+n, e.body+end, depth, e.mediaType == "multipart/digest"))
		if end == len(b) {
			p.unterminated = true
			return parts
		}
		// A delimiter line or the close delimiter; anything else ends
		// the multipart.
		line, next := lineAt(b, delim)
		rest, ok := bytes.CutPrefix(line, dash)
		if !ok {
			return parts
		}
		rest = skipLWSP(rest)
		if !bytes.Equal(rest, nl) {
			return parts // the close delimiter, or junk
		}
		pos = next
	}
}

// partEnd is where the part whose body starts at msg[pos:] ends, in a
// multipart that ends at end, and where the boundary line after it
// starts: before the first newline and dashed boundary followed by a
// space, tab, CR, LF or "-" (textproto's matchAfterPrefix), or right at
// pos if the body starts with the dashed boundary (an empty body, as
// textproto's scanUntilBoundary allows); else at end. It looks only at
// the lines that start with "--" (dashLines), so that the levels of a
// deep message do not each scan all of its bytes.
func (p *mimeParser) partEnd(pos, end int, nl, dash []byte) (partEnd, delim int) {
	msg := p.msg[:end]
	if bytes.HasPrefix(msg[pos:], dash) && afterBoundary(msg, pos+len(dash)) {
		return pos, pos
	}
	lines := p.dashLines()
	// A boundary may hold spaces (RFC 2046 section 5.1.1: bchars), where
	// a line's token stops: such a boundary's lines are those whose
	// token is the boundary's first word.
	b := dash[2:]
	spaced := bytes.IndexAny(b, " \t") >= 0
	if spaced {
		b = b[:bytes.IndexAny(b, " \t")]
	}
	hb := tokenHash(b)
	i, _ := slices.BinarySearchFunc(lines, pos+len(nl), func(l dashLine, at int) int { return l.pos - at })
	for ; i < len(lines) && lines[i].pos < end; i++ {
		l := lines[i]
		// The cheap tests first: a line whose token (what follows "--"
		// up to white space) is the boundary, or longer with a "-"
		// after it; most lines of a deep message are neither.
		switch {
		case l.tokLen == len(b):
			if l.hash != hb {
				continue
			}
		case l.tokLen > len(b) && !spaced:
			if p.msg[l.pos+2+len(b)] != '-' {
				continue
			}
		default:
			continue
		}
		q := l.pos
		if bytes.Equal(msg[q-len(nl):q], nl) && bytes.HasPrefix(msg[q:], dash) && afterBoundary(msg, q+len(dash)) {
			return q - len(nl), q
		}
	}
	return end, end
}

// dashLine is a line of the message that starts with "--": where, and
// the length and hash of its token, the bytes after "--" up to white
// space.
type dashLine struct {
	pos, tokLen int
	hash        uint64
}

// dashLines is the lines of the message that start with "--" (the first
// line left out), in order; made once per message.
func (p *mimeParser) dashLines() []dashLine {
	if p.dashes != nil {
		return p.dashes
	}
	p.dashes = []dashLine{}
	for pos := 0; ; {
		i := bytes.IndexByte(p.msg[pos:], '\n')
		if i < 0 {
			return p.dashes
		}
		pos += i + 1
		if !bytes.HasPrefix(p.msg[pos:], []byte("--")) {
			continue
		}
		tok := p.msg[pos+2:]
		if j := bytes.IndexAny(tok, " \t\r\n"); j >= 0 {
			tok = tok[:j]
		}
		p.dashes = append(p.dashes, dashLine{pos: pos, tokLen: len(tok), hash: tokenHash(tok)})
	}
}

// tokenHash is FNV-1a.
func tokenHash(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h
}

// afterBoundary reports whether what follows a dashed boundary ending at
// b[i:] lets it end a part.
func afterBoundary(b []byte, i int) bool {
	if i == len(b) {
		return true
	}
	switch b[i] {
	case ' ', '\t', '\r', '\n', '-':
		return true
	}
	return false
}

// lineAt is the line of b starting at pos, its newline included, and
// where the next begins; nil at the end of b.
func lineAt(b []byte, pos int) (line []byte, next int) {
	if pos >= len(b) {
		return nil, pos
	}
	i := bytes.IndexByte(b[pos:], '\n')
	if i < 0 {
		return b[pos:], len(b)
	}
	return b[pos : pos+i+1], pos + i + 1
}

// isCloseRest reports whether rest, what follows "--boundary" on a line
// and its white space, makes it the close delimiter.
func isCloseRest(rest, nl []byte) bool {
	rest, ok := bytes.CutPrefix(rest, []byte("--"))
	if !ok {
		return false
	}
	rest = skipLWSP(rest)
	return len(rest) == 0 || bytes.Equal(rest, nl)
}

func skipLWSP(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}
