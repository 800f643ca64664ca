package imapd

import (
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
