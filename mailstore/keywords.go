package mailstore

import (
	"errors"
	"fmt"
	"strings"
)

// Keywords: the flags of a message that are not system flags (RFC 9051
// section 2.3.2), which a client names as it likes. Each one a folder
// holds is listed in every SELECT's FLAGS and PERMANENTFLAGS, so that
// without a bound one user's STORE of thousands of made-up keywords made
// every later SELECT and STORE of the folder slow and large. A store
// keeps, beside each folder, how many of its messages hold each keyword
// (a keyword's key is KeywordKey), in the transaction that changes them,
// and refuses a change that would leave a folder with more than its
// limit of distinct keywords and more than it had (ErrTooManyKeywords).

// DefaultMaxKeywords is the most distinct keywords a folder may hold
// unless the store is told otherwise (setting imap_max_keywords). Mail
// clients use a few dozen (Thunderbird's tags, $Forwarded, $MDNSent,
// $Junk); Cyrus allows 128 a folder.
const DefaultMaxKeywords = 1000

// MaxKeywordBytes is the longest keyword SetFlags and Append accept
// (ErrKeywordTooLong). A folder's keywords are listed in every SELECT,
// twice (FLAGS and PERMANENTFLAGS): at DefaultMaxKeywords of this length
// that is 256 KB, where a command line alone (50 KiB) would have let one
// keyword make it 100 MB. Mail clients' keywords are short: $Forwarded,
// $MailFlagBit0, a tag's name.
const MaxKeywordBytes = 128

// ErrKeywordTooLong answers SetFlags and Append given a keyword longer
// than MaxKeywordBytes; nothing is changed. Removing one is accepted.
var ErrKeywordTooLong = errors.New("keyword too long")

// CheckKeywordLength refuses flags holding a keyword longer than
// MaxKeywordBytes (ErrKeywordTooLong).
func CheckKeywordLength(flags []string) error {
	for _, f := range flags {
		if IsKeyword(f) && len(f) > MaxKeywordBytes {
			return fmt.Errorf("keyword of %d bytes, at most %d: %w", len(f), MaxKeywordBytes, ErrKeywordTooLong)
		}
	}
	return nil
}

// ErrTooManyKeywords answers SetFlags, Append, Copy and Move when the
// change would give the folder more distinct keywords than its limit;
// nothing is changed.
var ErrTooManyKeywords = errors.New("too many keywords in the folder")

// IsKeyword reports whether a stored flag is a keyword rather than a
// system flag.
func IsKeyword(f string) bool { return f != "" && f[0] != '\\' }

// KeywordKey is the key under which a store counts a keyword: the flag
// with its ASCII letters upper case, which PostgreSQL computes alike
// (upper(flag COLLATE "C")). Keywords that differ only in the case of
// other letters count twice: the count errs high, never low, since a
// message never holds two flags with one key (NormFlags).
func KeywordKey(f string) string {
	return strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' {
			return r - 'a' + 'A'
		}
		return r
	}, f)
}

// KeywordDelta adds to d, by KeywordKey, how the number of messages that
// hold each keyword changes when a message's flags go from old to new
// (nil old: the message arrives; nil new: it leaves). Keys whose count
// does not change may be left at 0.
func KeywordDelta(d map[string]int64, old, new []string) {
	for _, f := range old {
		if IsKeyword(f) {
			d[KeywordKey(f)]--
		}
	}
	for _, f := range new {
		if IsKeyword(f) {
			d[KeywordKey(f)]++
		}
	}
}

// HasKeywords reports whether flags hold a keyword.
func HasKeywords(flags []string) bool {
	for _, f := range flags {
		if IsKeyword(f) {
			return true
		}
	}
	return false
}

// CheckKeywords decides a change that takes a folder from before to
// after distinct keywords under a limit of max (0 or less: none):
// ErrTooManyKeywords when after is above max and above before. A folder
// already above the limit (made before it, or under a larger one) may
// keep what it has and lose keywords, but gains none.
func CheckKeywords(before, after int64, max int) error {
	if max > 0 && after > int64(max) && after > before {
		return ErrTooManyKeywords
	}
	return nil
}
