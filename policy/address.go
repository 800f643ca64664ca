// Package policy holds mailhost's rules as pure functions: what a valid
// address or domain name is, the plans and value ranges, recipient
// resolution (mailbox, alias, catch-all), who may send as which address,
// and quota and transfer-cap decisions. It knows nothing of protocols or
// storage.
package policy

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
	"golang.org/x/text/unicode/norm"
)

// Errors of address and domain validation.
var (
	ErrBadDomain  = errors.New("invalid domain name")
	ErrBadAddress = errors.New("invalid email address")
)

// MaxAddressLen is the longest address accepted (RFC 5321 section 4.5.3.1.3
// limits a path to 256 octets including the angle brackets).
const MaxAddressLen = 254

var domainProfile = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.Transitional(false),
	idna.StrictDomainName(true),
	idna.VerifyDNSLength(true),
)

// NormalizeDomain returns a domain name in lower-case ASCII (IDNA) form, or
// ErrBadDomain. It needs at least two labels and accepts no trailing dot,
// no address literal and no label that starts or ends with a hyphen.
func NormalizeDomain(s string) (string, error) {
	// idna maps invalid UTF-8 to U+FFFD and encodes that, so check first.
	// The 253-octet limit is on the ASCII form (checked below); full-width
	// or accented input may be longer, but not without bound.
	if s == "" || len(s) > 4*253 || !utf8.ValidString(s) || strings.TrimSpace(s) != s || strings.HasSuffix(s, ".") {
		return "", fmt.Errorf("%q: %w", s, ErrBadDomain)
	}
	// IDNA's mapping drops some invisible characters (U+200B, U+00AD,
	// U+FEFF), so "exa<U+200B>mple.com" would be example.com: refused
	// instead, as in local parts, so that no two spellings that look
	// alike and differ name the same domain.
	if strings.IndexFunc(s, invisible) >= 0 {
		return "", fmt.Errorf("%q: %w", s, ErrBadDomain)
	}
	a, err := domainProfile.ToASCII(s)
	if err != nil {
		return "", fmt.Errorf("%q: %w", s, ErrBadDomain)
	}
	a = strings.ToLower(a)
	labels := strings.Split(a, ".")
	if len(labels) < 2 || len(a) > 253 {
		return "", fmt.Errorf("%q: %w", s, ErrBadDomain)
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return "", fmt.Errorf("%q: %w", s, ErrBadDomain)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return "", fmt.Errorf("%q: %w", s, ErrBadDomain)
			}
		}
	}
	// A top-level label of digits only would make it look like an IP.
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return "", fmt.Errorf("%q: %w", s, ErrBadDomain)
	}
	return a, nil
}

// NormalizeAddress returns local@domain with both parts in lower case and
// the domain in IDNA ASCII form, or ErrBadAddress. The local part is a
// dot-atom (RFC 5322 section 3.4.1) of at most 64 octets; UTF-8 letters
// are allowed in it (RFC 6531), in Unicode NFC (RFC 6532 section 3.1), but
// no invisible or spacing characters (format controls such as U+200B or
// U+202E, non-ASCII spaces), which would let two addresses look alike.
// Quoted local parts are refused: no mail
// hosting customer asks for one, and they complicate every comparison.
func NormalizeAddress(s string) (string, error) {
	at := strings.LastIndexByte(s, '@')
	// The length limit is on the normalised form (checked below).
	if at <= 0 || len(s) > 4*MaxAddressLen {
		return "", fmt.Errorf("%q: %w", s, ErrBadAddress)
	}
	local, err := normalizeLocal(s[:at])
	if err != nil {
		return "", fmt.Errorf("%q: %w", s, ErrBadAddress)
	}
	dom, err := NormalizeDomain(s[at+1:])
	if err != nil {
		return "", fmt.Errorf("%q: %w", s, ErrBadAddress)
	}
	// Lower-casing and IDNA can lengthen an address; the limit holds for
	// the stored form, so that normalising it again accepts it.
	addr := local + "@" + dom
	if len(addr) > MaxAddressLen {
		return "", fmt.Errorf("%q: %w", s, ErrBadAddress)
	}
	return addr, nil
}

// NormalizeAliasSource accepts what NormalizeAddress does, and "@domain"
// for a catch-all.
func NormalizeAliasSource(s string) (string, error) {
	if strings.HasPrefix(s, "@") {
		dom, err := NormalizeDomain(s[1:])
		if err != nil {
			return "", fmt.Errorf("%q: %w", s, ErrBadAddress)
		}
		return "@" + dom, nil
	}
	return NormalizeAddress(s)
}

// DomainOf returns the domain part of a normalised address or alias source.
func DomainOf(addr string) string { return addr[strings.LastIndexByte(addr, '@')+1:] }

// atext is RFC 5322 section 3.2.3's atext without the letters and digits.
const atextSpecials = "!#$%&'*+-/=?^_`{|}~"

// invisible reports a non-ASCII rune that prints as nothing or as a
// space: format controls (U+200B, U+00AD, U+202E...) and Unicode spaces.
func invisible(r rune) bool { return r >= 0x80 && !unicode.IsPrint(r) }

func normalizeLocal(l string) (string, error) {
	if l == "" || len(l) > 4*64 || l[0] == '.' || l[len(l)-1] == '.' || strings.Contains(l, "..") {
		return "", ErrBadAddress
	}
	for _, r := range l {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.':
		case r < 0x80 && strings.ContainsRune(atextSpecials, r):
		case r >= 0x80 && r != utf8.RuneError && unicode.IsPrint(r):
		default:
			return "", ErrBadAddress
		}
	}
	// The limit is on the stored form: lower case can be longer (U+023A
	// is 2 octets, its lower case 3), NFC shorter.
	l = norm.NFC.String(strings.ToLower(l))
	if len(l) > 64 {
		return "", ErrBadAddress
	}
	return l, nil
}

// IsSRS reports whether a normalised address has the local part of a
// Sender Rewriting Scheme address, SRS0= or SRS1= (local parts are
// normalised to lower case). The MX takes mail to such an address at a
// hosted domain only as a bounce of mail this server forwarded, and
// routes it to the original sender; a mailbox or alias of that name
// would never receive mail, so the API refuses to make one.
func IsSRS(addr string) bool {
	return strings.HasPrefix(addr, "srs0=") || strings.HasPrefix(addr, "srs1=")
}
