package utf7

import (
	"encoding/base64"
	"strings"
	"unicode/utf16"
)

// DecodeLenient decodes a mailbox name or LIST pattern as Decode does,
// except that an "&" which begins no valid shift sequence stands for
// itself, as if it were "&-". Clients send names as their users typed
// them, "&" included, and the name is then either a folder that does
// not exist (NO) or a pattern that matches a folder with an "&" in its
// name; refusing the whole command as unparseable helps no one.
//
// mailhost patch: see PATCHES.md.
func DecodeLenient(src string) (string, error) {
	if s, err := Decode(src); err == nil {
		return s, nil
	}
	return Decode(escapeStrayAmpersands(src))
}

// escapeStrayAmpersands rewrites each "&" of s that does not begin a
// valid shift sequence as "&-".
func escapeStrayAmpersands(s string) string {
	var sb strings.Builder
	last := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '&' {
			continue
		}
		if n, ok := shiftSequence(s[i:]); ok {
			i += n - 1
			continue
		}
		sb.WriteString(s[last : i+1])
		sb.WriteByte('-')
		last = i + 1
	}
	sb.WriteString(s[last:])
	return sb.String()
}

// shiftSequence reports whether s begins with a valid modified UTF-7
// shift sequence: "&-", or "&", modified BASE64 of UTF-16 that encodes
// no printable ASCII character, and "-". n is its length.
func shiftSequence(s string) (n int, ok bool) {
	end := strings.IndexByte(s, '-')
	if end < 0 {
		return 0, false
	}
	if end == 1 {
		return 2, true
	}
	enc := s[1:end]
	for i := 0; i < len(enc); i++ {
		ch := enc[i]
		if !(ch >= 'A' && ch <= 'Z' || ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '+' || ch == ',') {
			return 0, false
		}
	}
	raw, err := base64.RawStdEncoding.DecodeString(strings.ReplaceAll(enc, ",", "/"))
	if err != nil || len(raw) == 0 || len(raw)%2 != 0 {
		return 0, false
	}
	units := make([]uint16, len(raw)/2)
	for i := range units {
		units[i] = uint16(raw[2*i])<<8 | uint16(raw[2*i+1])
	}
	for _, r := range utf16.Decode(units) {
		if r == 0xFFFD || r >= 0x20 && r <= 0x7e {
			return 0, false
		}
	}
	return end + 1, true
}
