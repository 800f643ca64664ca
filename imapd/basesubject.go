package imapd

import (
	"mime"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/emersion/go-message/charset"
	"golang.org/x/text/unicode/norm"
)

// Strings as SORT and THREAD compare them (RFC 5256): subjects reduced to
// their base subject (section 2.1), and every string key compared with
// the i;unicode-casemap collation (RFC 5051), which RFC 5256 section 7
// makes the default: each string is canonicalized once (casemap) and the
// canonical forms are compared octet by octet.

// casemap is s canonicalized as i;unicode-casemap says (RFC 5051 section
// 2.1): each character replaced by its titlecase mapping (Unicode's
// simple mapping, as unicode.ToTitle gives it), then the whole normalized
// to NFKD. Titlecase, not lower case, is why "_" sorts after letters
// (Dovecot's imaptest sort-subject). Bytes that are not UTF-8 become
// U+FFFD.
func casemap(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return casemapUnicode(s)
		}
	}
	// ASCII: titlecase is upper case, and NFKD changes nothing.
	for i := 0; i < len(s); i++ {
		if 'a' <= s[i] && s[i] <= 'z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'a' <= b[j] && b[j] <= 'z' {
					b[j] -= 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

func casemapUnicode(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		b.WriteRune(unicode.ToTitle(r))
	}
	return norm.NFKD.String(b.String())
}

// baseSubject is the base subject of a Subject field's value (RFC 5256
// section 2.1), canonicalized by casemap, and whether extracting it took
// away a reply or forward marker ("Re:", "Fwd:", "(fwd)", "[fwd: ...]"),
// which THREAD=REFERENCES asks (section 3, step 5).
func baseSubject(subject string) (base string, replyOrForward bool) {
	// (1) RFC 2047 decoding, then the collation's canonical form (so
	// that "re" matches "RE"), tabs and line breaks as spaces, runs of
	// spaces as one.
	if strings.Contains(subject, "=?") {
		if dec, err := (&mime.WordDecoder{CharsetReader: charset.Reader}).DecodeHeader(subject); err == nil {
			subject = dec
		}
	}
	s := collapseSpace(casemap(subject))
	for {
		// (2) subj-trailer: "(fwd)" or white space, as often as it
		// matches.
		for {
			if strings.HasSuffix(s, " ") {
				s = s[:len(s)-1]
			} else if strings.HasSuffix(s, "(FWD)") {
				s = s[:len(s)-len("(FWD)")]
				replyOrForward = true
			} else {
				break
			}
		}
		// (3), (4) and (5): subj-leader, then one subj-blob if
		// something is left after it, until neither matches.
		for {
			changed := false
			for {
				if strings.HasPrefix(s, " ") {
					s = s[1:]
				} else if n := refwdLeader(s); n > 0 {
					s = s[n:]
					replyOrForward = true
				} else {
					break
				}
				changed = true
			}
			if n := blob(s); n > 0 && n < len(s) {
				s = s[n:]
				changed = true
			}
			if !changed {
				break
			}
		}
		// (6) subj-fwd: "[fwd:" subject "]", then again from (2).
		if strings.HasPrefix(s, "[FWD:") && strings.HasSuffix(s, "]") {
			s = s[len("[FWD:") : len(s)-1]
			replyOrForward = true
			continue
		}
		return s, replyOrForward
	}
}

// collapseSpace turns tabs, CRs and LFs into spaces and runs of spaces
// into one.
func collapseSpace(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\t', '\r', '\n':
			clean = false
		case ' ':
			if i > 0 && s[i-1] == ' ' {
				clean = false
			}
		}
	}
	if clean {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\t' || c == '\r' || c == '\n' {
			c = ' '
		}
		if c == ' ' && len(b) > 0 && b[len(b)-1] == ' ' {
			continue
		}
		b = append(b, c)
	}
	return string(b)
}

// refwdLeader is the length of the subj-leader *subj-blob subj-refwd at
// the start of s (canonical: upper case), 0 if none:
//
//	subj-refwd = ("re" / ("fw" ["d"])) *WSP [subj-blob] ":"
//
// Blobs start with "[" and subj-refwd with a letter, so taking every
// blob before it never misses a match.
func refwdLeader(s string) int {
	i := 0
	for {
		n := blob(s[i:])
		if n == 0 {
			break
		}
		i += n
	}
	switch {
	case strings.HasPrefix(s[i:], "RE"):
		i += 2
	case strings.HasPrefix(s[i:], "FWD"):
		i += 3
	case strings.HasPrefix(s[i:], "FW"):
		i += 2
	default:
		return 0
	}
	for i < len(s) && s[i] == ' ' {
		i++
	}
	i += blob(s[i:])
	if i < len(s) && s[i] == ':' {
		return i + 1
	}
	return 0
}

// blob is the length of the subj-blob at the start of s, 0 if none:
//
//	subj-blob = "[" *BLOBCHAR "]" *WSP
//	BLOBCHAR  = %x01-5a / %x5c / %x5e-ff
func blob(s string) int {
	if !strings.HasPrefix(s, "[") {
		return 0
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '[', 0:
			return 0
		case ']':
			i++
			for i < len(s) && s[i] == ' ' {
				i++
			}
			return i
		}
	}
	return 0
}
