package mailstore

// Rules every backend applies alike (flags, folder names, how a relay
// becomes queue entries, what an attempt does to an entry): one place,
// so that bbolt and PostgreSQL cannot drift apart. mailstore/storetest
// checks the results through each backend.

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// The system flags (RFC 3501 2.3.2) a store's counters and expunge look at.
const (
	FlagSeen    = `\Seen`
	FlagDeleted = `\Deleted`
	// FlagRecent is a session's property, never stored (NormFlags drops it).
	FlagRecent = `\Recent`
)

var systemFlags = []string{`\Answered`, `\Flagged`, `\Deleted`, `\Seen`, `\Draft`}

// NormFlags returns flags as stored: system flags in canonical case, no
// \Recent (a session property, RFC 3501 2.3.2), no empty or duplicate
// flags (compared without case), in the order given. Its cost is linear
// in the flags: a message may carry a folder's every keyword
// (MaxKeywords), and a STORE as many again.
func NormFlags(flags []string) []string {
	var out []string
	seen := make(map[string]struct{}, len(flags))
	for _, f := range flags {
		if strings.HasPrefix(f, `\`) {
			if strings.EqualFold(f, FlagRecent) {
				continue
			}
			for _, sf := range systemFlags {
				if strings.EqualFold(f, sf) {
					f = sf
					break
				}
			}
		}
		if f == "" {
			continue
		}
		k := FoldFlag(f)
		if _, dup := seen[k]; dup {
			continue
		}
		seen[k] = struct{}{}
		out = append(out, f)
	}
	return out
}

// HasFlag reports whether flags has f, compared without case.
func HasFlag(flags []string, f string) bool {
	return slices.ContainsFunc(flags, func(x string) bool { return strings.EqualFold(x, f) })
}

// FoldFlag is a flag's key for comparing flags without case: two flags
// have the same key exactly when strings.EqualFold says they are equal
// (each rune is replaced by the least rune of its simple case-folding
// orbit, as EqualFold compares).
func FoldFlag(f string) string {
	ascii := true
	for i := 0; i < len(f); i++ {
		if f[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		// An ASCII letter's orbit's least rune is its upper case ('K'
		// and 'S' are below the Kelvin sign and the long s).
		return strings.ToUpper(f)
	}
	var b strings.Builder
	b.Grow(len(f))
	for _, r := range f {
		least := r
		for g := unicode.SimpleFold(r); g != r; g = unicode.SimpleFold(g) {
			least = min(least, g)
		}
		b.WriteRune(least)
	}
	return b.String()
}

// flagSet is a set of flags compared without case.
type flagSet map[string]struct{}

func newFlagSet(flags []string) flagSet {
	s := make(flagSet, len(flags))
	for _, f := range flags {
		s[FoldFlag(f)] = struct{}{}
	}
	return s
}

func (s flagSet) has(f string) bool {
	_, ok := s[FoldFlag(f)]
	return ok
}

// ApplyFlags returns the flags after op and whether they changed. Its
// cost is linear in the flags (NormFlags).
func ApplyFlags(cur []string, op FlagOp, flags []string) ([]string, bool) {
	var next []string
	switch op {
	case FlagsAdd:
		next = NormFlags(append(slices.Clone(cur), flags...))
	case FlagsRemove:
		drop := newFlagSet(flags)
		for _, f := range cur {
			if !drop.has(f) {
				next = append(next, f)
			}
		}
	default:
		next = flags
	}
	if len(next) != len(cur) {
		return next, true
	}
	have := newFlagSet(cur)
	for _, f := range next {
		if !have.has(f) {
			return next, true
		}
	}
	return cur, false
}

// CanonFolder returns the stored form of a folder name: INBOX in any
// case is INBOX (RFC 3501 5.1).
func CanonFolder(name string) string {
	if strings.EqualFold(name, "INBOX") {
		return "INBOX"
	}
	return name
}

// CheckFolderName refuses names that IMAP cannot carry or that would
// break the "/" hierarchy: empty levels, wildcards, control characters,
// invalid UTF-8, and the path-like levels "." and ".." (as Dovecot does:
// clients and tools that map folders to directories read them as paths)
// (ErrInvalidArgument).
func CheckFolderName(name string) error {
	bad := name == "" || len(name) > 512 || !utf8.ValidString(name) ||
		strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") ||
		strings.Contains(name, "//") || strings.ContainsAny(name, "*%")
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			bad = true
		}
	}
	for level := range strings.SplitSeq(name, "/") {
		if level == "." || level == ".." {
			bad = true
		}
	}
	if bad {
		return fmt.Errorf("folder name %q: %w", name, ErrInvalidArgument)
	}
	return nil
}

// RelayGroup is one queue entry to be: a relay's recipients in one
// destination domain.
type RelayGroup struct {
	Relay       *Relay
	Destination string
	To          []string
}

// GroupRelays checks a delivery's relays and groups each one's
// recipients by destination domain (what follows the last "@", in lower
// case), in the order they first appear; an address given twice counts
// once. An unknown kind or an address without a local part or a domain
// is ErrInvalidArgument.
func GroupRelays(relays []Relay) ([]RelayGroup, error) {
	var out []RelayGroup
	for i := range relays {
		r := &relays[i]
		switch r.Kind {
		case KindSubmission, KindForward, KindBounce:
		default:
			return nil, fmt.Errorf("relay kind %q: %w", r.Kind, ErrInvalidArgument)
		}
		first := len(out)
		for _, addr := range r.To {
			at := strings.LastIndexByte(addr, '@')
			if at <= 0 || at == len(addr)-1 {
				return nil, fmt.Errorf("relay recipient %q: %w", addr, ErrInvalidArgument)
			}
			dest := strings.ToLower(addr[at+1:])
			g := slices.IndexFunc(out[first:], func(g RelayGroup) bool { return g.Destination == dest })
			if g < 0 {
				out = append(out, RelayGroup{Relay: r, Destination: dest})
				g = len(out) - first - 1
			}
			if grp := &out[first+g]; !slices.Contains(grp.To, addr) {
				grp.To = append(grp.To, addr)
			}
		}
	}
	return out, nil
}

// LocalRetry is the queue entry to be of a recipient mailbox m that
// Deliver found full (Mail.Deliver): a KindLocal relay from the
// delivery's sender to m's address. Both stores make it so.
func LocalRetry(m Mailbox, from string) RelayGroup {
	dest := strings.ToLower(m.Email[strings.LastIndexByte(m.Email, '@')+1:])
	return RelayGroup{
		Relay:       &Relay{Kind: KindLocal, DomainID: m.DomainID, From: from, To: []string{m.Email}},
		Destination: dest,
		To:          []string{m.Email},
	}
}

// ApplyAttempt is an entry after an attempt (Queue.RecordAttempt). Only
// pending recipients change; addresses the entry does not have pending
// are ignored.
func ApplyAttempt(o Outbound, a Attempt) Outbound {
	rcpts := slices.Clone(o.Recipients)
	var firstFailure string
	for i := range rcpts {
		r := &rcpts[i]
		if r.State != RecipientPending {
			continue
		}
		if slices.Contains(a.Delivered, r.Address) {
			r.State, r.Reply = RecipientDelivered, ""
			continue
		}
		if reply, ok := a.Failed[r.Address]; ok {
			r.State, r.Reply = RecipientFailed, reply
			if firstFailure == "" {
				firstFailure = reply
			}
			continue
		}
		if a.Deferred != "" {
			r.Reply = a.Deferred
		}
	}
	o.Recipients = rcpts
	o.Attempts++
	o.Leased = false
	o.Warned = o.Warned || a.Warned
	switch {
	case a.Deferred != "":
		o.LastError = a.Deferred
	case firstFailure != "":
		o.LastError = firstFailure
	}
	next := a.NextAttempt
	if next.IsZero() {
		next = a.Now
	}
	o.NextAttempt = next.UTC().Truncate(time.Second)
	return o
}

// RetentionDomain is a domain the retention pass visits: one with a
// retention (RetentionDays > 0).
type RetentionDomain struct {
	ID   int64
	Name string
	Days int64
}

// PurgeDomains is the retention pass of Mail.PurgeBefore over domains,
// whatever the backend: for each, batch deletes messages received before
// now minus its retention, one transaction a call, until a call takes
// fewer than batchSize entries. It answers one result per domain where
// something was deleted, those of a domain whose batch failed included,
// with that error.
func PurgeDomains(doms []RetentionDomain, now time.Time, batchSize int, batch func(domainID int64, cutoff time.Time) (entries int, msgs, bytes int64, err error)) ([]PurgeResult, error) {
	out := []PurgeResult{}
	for _, d := range doms {
		cutoff := now.Add(-time.Duration(d.Days) * 24 * time.Hour)
		res := PurgeResult{DomainID: d.ID, Domain: d.Name}
		for {
			entries, n, size, err := batch(d.ID, cutoff)
			res.Messages += n
			res.Bytes += size
			if err != nil {
				if res.Messages > 0 {
					out = append(out, res)
				}
				return out, fmt.Errorf("purge domain %s: %w", d.Name, err)
			}
			if entries < batchSize {
				break
			}
		}
		if res.Messages > 0 {
			out = append(out, res)
		}
	}
	return out, nil
}
