package imapd

import (
	"slices"
	"strings"

	"github.com/emersion/go-imap/v2"

	"github.com/mailhost/mailhost/mailstore"
)

// systemFlags are the flags a client may set that start with a backslash
// (RFC 9051 section 2.3.2); \Recent is gone from IMAP4rev2 and never kept.
var systemFlags = []imap.Flag{imap.FlagSeen, imap.FlagAnswered, imap.FlagFlagged, imap.FlagDeleted, imap.FlagDraft}

// storeFlags turns client flags into the stored form: system flags in
// their canonical case, keywords as given, no duplicates (flags compare
// without regard to case), nothing that cannot be stored. Its cost is
// linear in the flags: a command line may hold thousands.
func storeFlags(flags []imap.Flag) []string {
	out := make([]string, 0, len(flags))
	seen := make(map[string]struct{}, len(flags))
	for _, f := range flags {
		s := string(f)
		if strings.HasPrefix(s, `\`) {
			i := slices.IndexFunc(systemFlags, func(sf imap.Flag) bool { return strings.EqualFold(string(sf), s) })
			if i < 0 {
				continue
			}
			s = string(systemFlags[i])
		}
		if s == "" {
			continue
		}
		k := mailstore.FoldFlag(s)
		if _, dup := seen[k]; dup {
			continue
		}
		seen[k] = struct{}{}
		out = append(out, s)
	}
	return out
}

func toIMAPFlags(flags []string) []imap.Flag {
	out := make([]imap.Flag, len(flags))
	for i, f := range flags {
		out[i] = imap.Flag(f)
	}
	return out
}

// hasFlag reports whether flags holds f, in any case.
func hasFlag[F ~string](flags []F, f imap.Flag) bool {
	return slices.ContainsFunc(flags, func(g F) bool { return strings.EqualFold(string(g), string(f)) })
}

// sameFlags reports whether a and b hold the same flags in any order
// (each list holds a flag once). Linear in the flags: a message may hold
// a folder's every keyword.
func sameFlags(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) <= 8 {
		for _, f := range a {
			if !hasFlag(b, imap.Flag(f)) {
				return false
			}
		}
		return true
	}
	keys := make(map[string]struct{}, len(b))
	for _, f := range b {
		keys[mailstore.FoldFlag(f)] = struct{}{}
	}
	for _, f := range a {
		if _, ok := keys[mailstore.FoldFlag(f)]; !ok {
			return false
		}
	}
	return true
}
