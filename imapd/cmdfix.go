package imapd

import (
	"bytes"
	"encoding/base64"
	"unicode/utf16"
)

// Corrections the command layer makes to what passes through it, for
// behaviour imapserver gets wrong and has no hook for; each can go when
// imapserver changes.

// literalAmpersands rewrites a LIST or LSUB command line so that each "&"
// that does not begin a valid modified UTF-7 sequence (RFC 3501 section
// 5.1.3) stands for itself, as "&-". Patterns are not necessarily valid
// modified UTF-7 (a client may send the name as the user typed it), and
// imapserver answers an invalid one NO [SERVERBUG] before the session
// sees it; taken literally, "&" matches a folder whose name has an "&".
// The line is returned unchanged (not copied) when nothing needs it.
func literalAmpersands(line []byte) []byte {
	if bytes.IndexByte(line, '&') < 0 {
		return line
	}
	var out []byte
	last := 0
	for i := 0; i < len(line); i++ {
		if line[i] != '&' {
			continue
		}
		if n, ok := shiftSequence(line[i:]); ok {
			i += n - 1
			continue
		}
		out = append(out, line[last:i+1]...)
		out = append(out, '-')
		last = i + 1
	}
	if out == nil {
		return line
	}
	return append(out, line[last:]...)
}

// shiftSequence reports whether b begins with a valid modified UTF-7
// shift sequence: "&-", or "&", modified BASE64 of UTF-16 that encodes
// no printable ASCII character, and "-". n is its length.
func shiftSequence(b []byte) (n int, ok bool) {
	end := bytes.IndexByte(b, '-')
	if end < 0 {
		return 0, false
	}
	if end == 1 {
		return 2, true
	}
	enc := b[1:end]
	for _, ch := range enc {
		if !(ch >= 'A' && ch <= 'Z' || ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '+' || ch == ',') {
			return 0, false
		}
	}
	raw, err := base64.RawStdEncoding.DecodeString(string(bytes.ReplaceAll(enc, []byte(","), []byte("/"))))
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

// moveText corrects the text of the untagged OK that carries MOVE's
// COPYUID (RFC 6851 section 4.3): imapserver writes "COPY completed"
// there, words a client shows as if it had copied. Only MOVE sends
// COPYUID untagged (COPY's is in its tagged OK), so the line is MOVE's.
func moveText(line []byte) []byte {
	const suffix = "] COPY completed\r\n"
	if !bytes.HasPrefix(line, []byte("* OK [COPYUID ")) || !bytes.HasSuffix(line, []byte(suffix)) {
		return line
	}
	return append(line[:len(line)-len(suffix)], "] Moved\r\n"...)
}
