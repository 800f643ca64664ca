package sieve

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// decodeEncoded replaces "${hex:...}" and "${unicode:...}" (RFC 5228
// section 2.4.2.4). A malformed sequence stays as it is; a code point
// outside Unicode is an error.
func decodeEncoded(s string) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		rest := s[i+2:]
		end := strings.IndexByte(rest, '}')
		colon := strings.IndexByte(rest, ':')
		if end < 0 || colon < 0 || colon > end {
			b.WriteString("${")
			s = rest
			continue
		}
		kind := strings.ToLower(rest[:colon])
		body := rest[colon+1 : end]
		var dec string
		ok := false
		switch kind {
		case "hex":
			dec, ok = decodeHexSeq(body)
		case "unicode":
			var err error
			dec, ok, err = decodeUnicodeSeq(body)
			if err != nil {
				return "", err
			}
		}
		if !ok {
			b.WriteString("${")
			s = rest
			continue
		}
		b.WriteString(dec)
		s = rest[end+1:]
	}
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func hexFields(body string, maxLen int) ([]string, bool) {
	var out []string
	i := 0
	for i < len(body) {
		for i < len(body) && isBlank(body[i]) {
			i++
		}
		j := i
		for j < len(body) && !isBlank(body[j]) {
			c := body[j]
			if !(isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return nil, false
			}
			j++
		}
		if j > i {
			if maxLen > 0 && j-i > maxLen {
				return nil, false
			}
			out = append(out, body[i:j])
		}
		i = j
	}
	return out, len(out) > 0
}

func decodeHexSeq(body string) (string, bool) {
	f, ok := hexFields(body, 2)
	if !ok {
		return "", false
	}
	b := make([]byte, len(f))
	for i, h := range f {
		n, _ := strconv.ParseUint(h, 16, 8)
		b[i] = byte(n)
	}
	return string(b), true
}

func decodeUnicodeSeq(body string) (string, bool, error) {
	f, ok := hexFields(body, 0)
	if !ok {
		return "", false, nil
	}
	var b strings.Builder
	for _, h := range f {
		h = strings.TrimLeft(h, "0")
		if len(h) > 6 {
			return "", false, fmt.Errorf("encoded character U+%s is outside Unicode", h)
		}
		n, _ := strconv.ParseUint("0"+h, 16, 32)
		if n > 0x10FFFF || n >= 0xD800 && n <= 0xDFFF {
			return "", false, fmt.Errorf("encoded character U+%X is not a Unicode scalar value", n)
		}
		b.WriteRune(rune(n))
	}
	return b.String(), true, nil
}

// parseVars splits s at its variable references: "${name}" or
// "${digits}" (RFC 5229 section 3); anything else after "${" is text.
// It returns nil when s holds none.
func parseVars(s string) ([]part, error) {
	var parts []part
	found := false
	lit := 0
	for i := 0; i+1 < len(s); i++ {
		if s[i] != '$' || s[i+1] != '{' {
			continue
		}
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			break
		}
		name := s[i+2 : i+2+end]
		var p part
		switch {
		case name != "" && allDigits(name):
			n, err := strconv.Atoi(strings.TrimLeft(name, "0") + "")
			if strings.TrimLeft(name, "0") == "" {
				n, err = 0, nil
			}
			if err != nil || n > 9 {
				// Match variables beyond 9 expand to "" like unset
				// ones (RFC 5229 section 3.2 allows only 0 to 9).
				n = -1
			}
			p = part{num: n, isVar: true}
		case isIdentifier(name):
			p = part{name: strings.ToLower(name), isVar: true}
		case strings.Contains(name, ".") && isNamespaced(name):
			return nil, fmt.Errorf("variable namespace of %q is not supported", name)
		default:
			continue
		}
		if i > lit {
			parts = append(parts, part{lit: s[lit:i]})
		}
		parts = append(parts, p)
		found = true
		i += 2 + end
		lit = i + 1
	}
	if !found {
		return nil, nil
	}
	if lit < len(s) {
		parts = append(parts, part{lit: s[lit:]})
	}
	return parts, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

func isNamespaced(s string) bool {
	for _, p := range strings.Split(s, ".") {
		if !isIdentifier(p) {
			return false
		}
	}
	return true
}

// truncate cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// applyModifier applies one modifier of set (RFC 5229 section 4.1).
func applyModifier(mod, s string) string {
	switch mod {
	case "lower":
		return strings.ToLower(s)
	case "upper":
		return strings.ToUpper(s)
	case "lowerfirst", "upperfirst":
		r, n := utf8.DecodeRuneInString(s)
		if n == 0 {
			return s
		}
		if mod == "lowerfirst" {
			return strings.ToLower(string(r)) + s[n:]
		}
		return strings.ToUpper(string(r)) + s[n:]
	case "quotewildcard":
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			if s[i] == '*' || s[i] == '?' || s[i] == '\\' {
				b.WriteByte('\\')
			}
			b.WriteByte(s[i])
		}
		return b.String()
	case "length":
		return strconv.Itoa(utf8.RuneCountInString(s))
	}
	return s
}
