package imapd

import (
	"bytes"
	"strings"

	"github.com/emersion/go-imap/v2"
)

// SEARCH FROM, TO, SUBJECT and HEADER look at a few fields of every
// message's summary; for plain headers (as fastEnvelope takes them)
// fastHeaderMatch answers without go-message's header parser, and
// matchField on the parsed header for any other (TestFastHeaderMatch and
// FuzzFastHeaderMatch hold the two equal).

// fastHeaderMatch is matchField(header's fields named key, value): ok is
// false when header or the fields are other than plain (a line not ended
// by CRLF, a byte outside printable ASCII, space and tab, a line without
// a colon, an encoded word in a field named key, an address field that
// fastAddressList does not take), and match is then meaningless.
func fastHeaderMatch(header []byte, key, value string) (match, ok bool) {
	// A key of letters, digits, "-" and "_" compares as go-message's
	// canonical keys do, without regard to case.
	for i := 0; i < len(key); i++ {
		if ch := key[i] | 0x20; !(ch >= 'a' && ch <= 'z' || key[i] >= '0' && key[i] <= '9' || key[i] == '-' || key[i] == '_') {
			return false, false
		}
	}
	if key == "" {
		return false, false
	}
	value = strings.ToLower(value)
	address := isAddressField(key)
	// A field is looked at once it is whole: cur spans it, continuation
	// lines included, while it may go on.
	var curStart, curEnd int
	inField, first := false, true
	check := func() (bool, bool) {
		if !inField {
			return false, true
		}
		v := unfold(header[curStart:curEnd])
		if strings.Contains(v, "=?") {
			return false, false
		}
		if value == "" || strings.Contains(asciiLower(v), value) {
			return true, true
		}
		if address {
			l, ok := fastAddressList(v)
			if !ok {
				return false, false
			}
			return strings.Contains(strings.ToLower(addressListText(l)), value), true
		}
		return false, true
	}
	for pos := 0; ; {
		eol := bytes.Index(header[pos:], []byte("\r\n"))
		if eol < 0 {
			return false, false
		}
		start, end := pos, pos+eol
		line := header[start:end]
		pos = end + 2
		if len(line) > 0 && (line[0] == ' ' || line[0] == '\t') {
			if first {
				return false, false
			}
			if !printable(line) {
				return false, false
			}
			curEnd = end
			continue
		}
		if m, ok := check(); !ok || m {
			return m, ok
		}
		inField = false
		if len(line) == 0 {
			return false, true
		}
		first = false
		if !printable(line) {
			return false, false
		}
		colon := bytes.IndexByte(line, ':')
		if colon < 0 {
			return false, false
		}
		name := bytes.TrimRight(line[:colon], " \t")
		if len(name) == 0 || !printable(name) || bytes.ContainsAny(name, " \t") {
			return false, false
		}
		if bytes.EqualFold(name, []byte(key)) {
			inField, curStart, curEnd = true, start+colon+1, end
		}
	}
}

// printable reports whether b is printable ASCII, space and tab only.
func printable(b []byte) bool {
	for _, ch := range b {
		if (ch < ' ' && ch != '\t') || ch > '~' {
			return false
		}
	}
	return true
}

// asciiLower is strings.ToLower for ASCII text.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}

// addressListText is addressText of a parsed list.
func addressListText(l []imap.Address) string {
	var b strings.Builder
	for _, a := range l {
		switch {
		case a.IsGroupStart():
			b.WriteString(a.Mailbox + ": ")
		case a.IsGroupEnd():
			b.WriteString("; ")
		default:
			if a.Name != "" {
				b.WriteString(a.Name + " ")
			}
			b.WriteString("<" + a.Mailbox + "@" + a.Host + ">, ")
		}
	}
	return b.String()
}

// fastHeaderFields is BODY[HEADER.FIELDS (...)] of a message's own header
// (appendHeader of the parsed header, before any partial) for a plain
// header: every line ended by CRLF, of printable ASCII, space and tab,
// with a colon after a name without spaces, the first not a continuation.
// ok is false for any other header, for the parser; and for an item that
// is not HEADER.FIELDS of the whole message.
func fastHeaderFields(msg []byte, item *imap.FetchItemBodySection) (b []byte, ok bool) {
	if len(item.Part) > 0 || item.Specifier != imap.PartSpecifierHeader || len(item.HeaderFields) == 0 || len(item.HeaderFieldsNot) > 0 {
		return nil, false
	}
	keep := false // the field being read is one item names
	for pos := 0; ; {
		eol := bytes.Index(msg[pos:], []byte("\r\n"))
		if eol < 0 {
			return nil, false
		}
		line := msg[pos : pos+eol+2]
		pos += eol + 2
		if len(line) == 2 {
			return append(b, '\r', '\n'), true
		}
		if !printable(line[:len(line)-2]) {
			return nil, false
		}
		if line[0] == ' ' || line[0] == '\t' {
			if pos == len(line) {
				return nil, false
			}
			if keep {
				b = append(b, line...)
			}
			continue
		}
		colon := bytes.IndexByte(line, ':')
		if colon < 0 {
			return nil, false
		}
		name := bytes.TrimRight(line[:colon], " \t")
		if len(name) == 0 || bytes.ContainsAny(name, " \t") {
			return nil, false
		}
		keep = false
		for _, k := range item.HeaderFields {
			if bytes.EqualFold(name, []byte(k)) {
				keep = true
				break
			}
		}
		if keep {
			b = append(b, line...)
		}
	}
}
