package imapd

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-message/textproto"
)

// BINARY (RFC 3516): FETCH BINARY[section], BINARY.PEEK and BINARY.SIZE
// answer a part without its content transfer encoding (mimefetch.go's
// binary), as literal8; APPEND takes a literal8 (multiappend.go). A part
// whose encoding is none RFC 2045 defines cannot be decoded, and RFC 3516
// section 4.3 has FETCH then fail with NO [UNKNOWN-CTE], which
// unknownCTE checks for before the message's response is begun.

// knownCTE reports whether a part with header h can be decoded.
func knownCTE(h textproto.Header) bool {
	switch strings.ToLower(strings.TrimSpace(h.Get("Content-Transfer-Encoding"))) {
	case "", "7bit", "8bit", "binary", "base64", "quoted-printable":
		return true
	}
	return false
}

// unknownCTE is the NO [UNKNOWN-CTE] for a FETCH that asks BINARY of a
// part of msg with an encoding it cannot decode, or nil. A part that does
// not exist, and a multipart, are not decoded and so never fail.
func unknownCTE(msg []byte, o *imap.FetchOptions) error {
	if len(o.BinarySection) == 0 && len(o.BinarySectionSize) == 0 {
		return nil
	}
	var tree *mimePart
	check := func(part []int) error {
		var e *mimePart
		if len(part) == 0 {
			e = parseTop(msg)
		} else {
			if tree == nil {
				tree = parseMIME(msg)
			}
			e = tree.find(part)
		}
		if e == nil || e.isMultipart() || knownCTE(e.header) {
			return nil
		}
		return no(imap.ResponseCodeUnknownCTE, fmt.Sprintf("Unknown Content-Transfer-Encoding %q", e.header.Get("Content-Transfer-Encoding")))
	}
	for _, bs := range o.BinarySection {
		if err := check(bs.Part); err != nil {
			return err
		}
	}
	for _, bs := range o.BinarySectionSize {
		if err := check(bs.Part); err != nil {
			return err
		}
	}
	return nil
}

// An APPENDed message may hold NUL octets: RFC 3516 lets a client send
// one as literal8 ("~{n}"), and a part with Content-Transfer-Encoding
// binary. IMAP cannot send NUL in the literal of BODY[] (RFC 9051
// section 4.3: CHAR8 excludes it), so the message is stored with each
// part that holds NUL encoded base64, as Dovecot answers BODY[] of such
// a message: BINARY[part] decodes it back to the bytes the client sent,
// and BODY[] is the message as stored, its size RFC822.SIZE. A message
// with NUL octets elsewhere (a header, between parts) or in a part
// already encoded otherwise is refused with NO [UNKNOWN-CTE] (RFC 3516
// section 4.4, for content the mailbox cannot store).

// errBinaryContent refuses a message whose NUL octets cannot be encoded.
var errBinaryContent = no(imap.ResponseCodeUnknownCTE, "NUL octets outside a part that can be stored base64-encoded")

// withoutNUL is msg with each part that holds NUL octets base64-encoded;
// msg itself when it has none.
func withoutNUL(msg []byte) ([]byte, error) {
	if bytes.IndexByte(msg, 0) < 0 {
		return msg, nil
	}
	var leaves []*mimePart
	var walk func(e *mimePart) bool
	walk = func(e *mimePart) bool {
		switch {
		case bytes.IndexByte(msg[e.hdr:e.body], 0) >= 0:
			return false // in a header
		case e.isMultipart():
			for _, c := range e.children {
				if !walk(c) {
					return false
				}
			}
			return true
		case e.embedded != nil:
			return walk(e.embedded)
		case bytes.IndexByte(msg[e.body:e.end], 0) < 0:
			return true
		}
		if !endsBlank(msg[e.hdr:e.body]) {
			return false // a header that did not parse to its end
		}
		switch strings.ToLower(strings.TrimSpace(e.header.Get("Content-Transfer-Encoding"))) {
		case "", "7bit", "8bit", "binary":
			leaves = append(leaves, e)
			return true
		}
		return false
	}
	if !walk(parseMIME(msg)) {
		return nil, errBinaryContent
	}
	out := make([]byte, 0, len(msg)+len(msg)/2)
	at := 0
	for _, e := range leaves { // in the order of the message
		out = append(out, msg[at:e.hdr]...)
		out = appendBase64Header(out, msg[e.hdr:e.body])
		out = appendBase64Lines(out, msg[e.body:e.end])
		at = e.end
	}
	out = append(out, msg[at:]...)
	if bytes.IndexByte(out, 0) >= 0 {
		return nil, errBinaryContent // between parts
	}
	return out, nil
}

// endsBlank reports whether header h ends with the empty line that ends
// a header (RFC 5322 section 2.1), or is that line alone.
func endsBlank(h []byte) bool {
	return string(h) == "\r\n" || string(h) == "\n" || bytes.HasSuffix(h, []byte("\n\r\n")) || bytes.HasSuffix(h, []byte("\n\n"))
}

// appendBase64Header appends header h with its Content-Transfer-Encoding
// fields replaced by "Content-Transfer-Encoding: base64", which goes
// before the empty line that ends it.
func appendBase64Header(out, h []byte) []byte {
	const cte = "Content-Transfer-Encoding: base64\r\n"
	skip, done := false, false
	for line := range bytes.Lines(h) {
		if line[0] == ' ' || line[0] == '\t' {
			if !skip {
				out = append(out, line...)
			}
			continue
		}
		if len(bytes.TrimRight(line, "\r\n")) == 0 && !done {
			out = append(out, cte...)
			done = true
		}
		name, _, _ := bytes.Cut(line, []byte(":"))
		skip = strings.EqualFold(strings.TrimSpace(string(name)), "Content-Transfer-Encoding")
		if !skip {
			out = append(out, line...)
		}
	}
	if !done { // not reached: withoutNUL encodes only parts with whole headers
		out = append(out, cte+"\r\n"...)
	}
	return out
}

// appendBase64Lines appends b base64-encoded in lines of 76 characters
// (RFC 2045 section 6.8), with no line break after the last: the line
// break that follows the part is the next boundary's.
func appendBase64Lines(out, b []byte) []byte {
	enc := base64.StdEncoding.EncodeToString(b)
	for len(enc) > 76 {
		out = append(out, enc[:76]...)
		out = append(out, '\r', '\n')
		enc = enc[76:]
	}
	return append(out, enc...)
}
