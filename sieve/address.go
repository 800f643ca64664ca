package sieve

import (
	"strings"
)

// addresses extracts the addr-specs of an address-list header value
// (RFC 5322 section 3.4), leniently: display names, comments, groups and
// route-addrs are dropped; an element that is no address is kept as it
// is, so :all still sees it (RFC 5228 section 2.7.4 leaves it to
// :localpart and :domain not to match).
func addresses(v string) []string {
	var out []string
	var cur []byte
	depth := 0 // comment nesting
	inQuote, inAngle, hasAngle := false, false, false
	angleStart, angleEnd := 0, 0
	flush := func() {
		var a string
		if hasAngle {
			a = strings.TrimSpace(v[angleStart:angleEnd])
			// An obsolete route: "@a,@b:user@host".
			if strings.HasPrefix(a, "@") {
				if i := strings.IndexByte(a, ':'); i >= 0 {
					a = a[i+1:]
				}
			}
		} else {
			a = strings.TrimSpace(string(cur))
		}
		if a != "" || hasAngle {
			out = append(out, a)
		}
		cur = cur[:0]
		hasAngle = false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case inQuote:
			if c == '\\' && i+1 < len(v) {
				i++
				cur = append(cur, v[i])
				continue
			}
			if c == '"' {
				inQuote = false
			}
			cur = append(cur, c)
		case depth > 0:
			switch c {
			case '\\':
				i++
			case '(':
				depth++
			case ')':
				depth--
			}
		case inAngle:
			if c == '>' {
				inAngle = false
				angleEnd = i
			}
		default:
			switch c {
			case '"':
				inQuote = true
				cur = append(cur, c)
			case '(':
				depth++
			case '<':
				inAngle, hasAngle = true, true
				angleStart, angleEnd = i+1, len(v)
			case ',', ';':
				flush()
			case ':':
				// A group's display name ends here.
				if !hasAngle {
					cur = cur[:0]
				}
			default:
				cur = append(cur, c)
			}
		}
	}
	flush()
	// An addr-spec with blanks around its parts ("user @ host") is
	// written without them.
	for i, a := range out {
		if strings.ContainsAny(a, " \t") && !strings.Contains(a, `"`) {
			out[i] = strings.Join(strings.Fields(a), "")
		}
	}
	return out
}

// splitAddress splits an addr-spec at its last "@"; ok is false when it
// has none (then :localpart and :domain do not match).
func splitAddress(a string) (local, domain string, ok bool) {
	i := strings.LastIndexByte(a, '@')
	if i < 0 {
		return "", "", false
	}
	return a[:i], a[i+1:], true
}

// addressPart is the part of address a a test compares; ok is false when
// the part is not there (RFC 5228 section 2.7.4, RFC 5233 section 4).
func addressPart(a string, p addrPart, sep string) (string, bool) {
	if p == partAll {
		return a, true
	}
	local, domain, ok := splitAddress(a)
	if !ok {
		return "", false
	}
	switch p {
	case partLocal:
		return local, true
	case partDomain:
		return domain, true
	case partUser:
		if i := strings.Index(local, sep); i >= 0 {
			return local[:i], true
		}
		return local, true
	case partDetail:
		if i := strings.Index(local, sep); i >= 0 {
			return local[i+len(sep):], true
		}
		return "", false
	}
	return "", false
}

// validAddress tells whether a is a plausible addr-spec for redirect: a
// local part and a domain, no blanks or angle brackets.
func validAddress(a string) bool {
	local, domain, ok := splitAddress(a)
	if !ok || local == "" || domain == "" || len(a) > 320 {
		return false
	}
	if strings.ContainsAny(domain, " \t\r\n<>()[],;:\\\"@") {
		return false
	}
	if !strings.HasPrefix(local, `"`) && strings.ContainsAny(local, " \t\r\n<>()[],;:\\\"") {
		return false
	}
	return !strings.ContainsAny(local, "\r\n")
}

// angleAddr is the address in "Name <addr>", or s.
func angleAddr(s string) string {
	i, j := strings.LastIndexByte(s, '<'), strings.LastIndexByte(s, '>')
	if i >= 0 && j > i {
		return s[i+1 : j]
	}
	return s
}
