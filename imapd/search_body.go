package imapd

import (
	"bytes"
	"strings"
)

// Most messages are one part of plain ASCII text. SEARCH BODY on those
// needs neither the MIME parser nor a lowered copy of the text
// (appendTexts): plainText finds the text in place and containsFold looks
// in it without regard to case. TestPlainTextSearch and
// FuzzPlainTextSearch hold this equal to appendTexts and containsAny.

// plainText is the text of msg when msg is one part of ASCII text with no
// transfer encoding: its header plain (as fastEnvelope takes them), at
// most one Content-Type, text/plain with no charset or US-ASCII or UTF-8,
// at most one Content-Transfer-Encoding, 7bit, 8bit or binary, and no
// byte of its body above 0x7f; ok is false for any other message.
func plainText(msg []byte) (text []byte, ok bool) {
	var ctype, cte []byte
	seenType, seenCTE := false, false
	// inContent: the field being read is Content-Type or
	// Content-Transfer-Encoding (a folded one is left to the parser).
	pos, first, inContent := 0, true, false
	for {
		eol := bytes.Index(msg[pos:], []byte("\r\n"))
		if eol < 0 {
			return nil, false
		}
		line := msg[pos : pos+eol]
		pos += eol + 2
		if len(line) == 0 {
			break
		}
		if !printable(line) {
			return nil, false
		}
		if line[0] == ' ' || line[0] == '\t' {
			if first || inContent {
				return nil, false
			}
			continue
		}
		first, inContent = false, false
		colon := bytes.IndexByte(line, ':')
		if colon < 0 {
			return nil, false
		}
		name := bytes.TrimRight(line[:colon], " \t")
		value := bytes.Trim(line[colon+1:], " \t")
		switch {
		case len(name) == 0 || bytes.ContainsAny(name, " \t"):
			return nil, false
		case bytes.EqualFold(name, []byte("Content-Type")):
			if seenType {
				return nil, false
			}
			seenType, ctype, inContent = true, value, true
		case bytes.EqualFold(name, []byte("Content-Transfer-Encoding")):
			if seenCTE {
				return nil, false
			}
			seenCTE, cte, inContent = true, value, true
		}
	}
	if seenType && !plainTextType(string(ctype)) {
		return nil, false
	}
	if seenCTE {
		switch strings.ToLower(string(cte)) {
		case "7bit", "8bit", "binary":
		default:
			return nil, false
		}
	}
	text = msg[pos:]
	for _, ch := range text {
		if ch >= 0x80 {
			return nil, false
		}
	}
	return text[:min(len(text), maxPartText)], true
}

// plainTextType reports whether a Content-Type value is text/plain with
// parameters of plain tokens only and a charset, if any, of US-ASCII or
// UTF-8.
func plainTextType(v string) bool {
	v = strings.ToLower(v)
	mt, params, _ := strings.Cut(v, ";")
	if strings.TrimSpace(mt) != "text/plain" {
		return false
	}
	for p := range strings.SplitSeq(params, ";") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		k, val, ok := strings.Cut(p, "=")
		if !ok || k == "" || val == "" || strings.ContainsAny(k+val, " \t\"'()<>@,:\\/[]?=*%") {
			return false
		}
		if k == "charset" && val != "us-ascii" && val != "utf-8" {
			return false
		}
	}
	return true
}

// containsFold reports whether text, ASCII, contains needle without
// regard to ASCII case; needle must be ASCII.
func containsFold(text []byte, needle string) bool {
	n := len(needle)
	if n == 0 {
		return true
	}
	c0 := needle[0] | 0x20
	letter := c0 >= 'a' && c0 <= 'z'
	if !letter {
		c0 = needle[0]
	}
	for i := 0; i+n <= len(text); i++ {
		ch := text[i]
		if letter {
			ch |= 0x20
		}
		if ch == c0 && bytes.EqualFold(text[i:i+n], []byte(needle)) {
			return true
		}
	}
	return false
}

// isASCII reports whether s is ASCII.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
