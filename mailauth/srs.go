package mailauth

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Errors of Reverse, matched with errors.Is.
var (
	// ErrNotSRS: the address is not an SRS address, or not a well-formed
	// one.
	ErrNotSRS = errors.New("srs: not an SRS address")
	// ErrBadHash: the hash does not match; the address was not made with
	// this secret, or was altered.
	ErrBadHash = errors.New("srs: hash does not match")
	// ErrExpired: the address is older than SRSMaxAge.
	ErrExpired = errors.New("srs: address expired")
	// ErrNoSecret: the SRS has no secret.
	ErrNoSecret = errors.New("srs: no secret")
)

// SRSMaxAge is how long a rewritten address can be reversed: long enough
// for the slowest bounce (queues retry for up to five days), short enough
// that an address harvested from a bounce stops working.
const SRSMaxAge = 21 * 24 * time.Hour

const (
	// srsHashLen is longer than libsrs2's default of 4 (24 bits, fewer
	// compared without case), which an MX that answers RCPT per guess lets
	// anyone forge in about a million tries. Only this server reverses its
	// own addresses, so no other implementation needs to agree on it.
	srsHashLen   = 8
	srsDay       = 24 * time.Hour
	srsSlots     = 1024 // two base32 characters of day number
	srsMaxDays   = int(SRSMaxAge / srsDay)
	srsBase32    = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	srsSeparator = "="
)

// SRS rewrites envelope senders of forwarded mail and reverses them: the
// Sender Rewriting Scheme in the format of libsrs2 and postsrsd.
//
// A forwarder that relays mail from user@orig.example to another domain
// sends it with the envelope sender
//
//	SRS0=HHHHHHHH=TT=orig.example=user@forward.example
//
// which SPF of forward.example authorises, and which only it can turn back
// into user@orig.example: HHHHHHHH is the first eight base64 characters of
// HMAC-SHA1(secret, TT + "orig.example" + "user") over the lower-cased
// parts, TT the day of the forward (days since 1970 modulo 1024, in two
// base32 characters, high bits first). A later forwarder of an SRS0
// address does not nest it but names the first forwarder:
//
//	SRS1=GGGGGGGG=forward.example==HHHHHHHH=TT=orig.example=user@next.example
//
// with GGGGGGGG = HMAC-SHA1(secret, "forward.example" + "=HHHHHHHH=TT=orig.example=user"),
// and Reverse of it gives back the SRS0 address at forward.example, which
// a bounce then reaches.
//
// Hashes compare without regard to case because some MTAs lower-case the
// local part on the way; that leaves about 41 of the 48 bits, against
// about 20 of libsrs2's default of four characters: addresses of libsrs2
// (and of earlier versions of mailhost) do not reverse here. The SRS0 part
// an SRS1 address carries may be another forwarder's, with a hash of any
// length: Forward keeps it as it is.
// The day is kept modulo 1024, as in libsrs2: an address 1024 days old
// reads as new again (its hash still binds it to the secret).
type SRS struct {
	// Secret keys the hashes; it is required, and every node that reverses
	// the addresses must share it.
	Secret []byte
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

func (s *SRS) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Forward rewrites sender for mail forwarded out under forwardDomain (the
// domain whose SPF authorises this server; given as an address, the part
// after "@" is used). The null sender stays null, since bounces are not
// bounced; a sender of forwardDomain itself is already authorised and
// stays as it is; an SRS0 or SRS1 address (of any forwarder) becomes SRS1.
func (s *SRS) Forward(sender, forwardDomain string) (string, error) {
	if sender == "" {
		return "", nil
	}
	if len(s.Secret) == 0 {
		return "", ErrNoSecret
	}
	if i := strings.LastIndexByte(forwardDomain, '@'); i >= 0 {
		forwardDomain = forwardDomain[i+1:]
	}
	if !srsDomain(forwardDomain) {
		return "", fmt.Errorf("srs: forward domain %q is not a domain name", forwardDomain)
	}
	at := strings.LastIndexByte(sender, '@')
	if at < 0 {
		return "", fmt.Errorf("srs: sender %q has no domain", sender)
	}
	local, host := sender[:at], sender[at+1:]
	if !srsDomain(host) {
		return "", fmt.Errorf("srs: sender domain %q is not a domain name", host)
	}
	if !srsLocal(local) {
		return "", fmt.Errorf("srs: sender local part %q cannot be rewritten", local)
	}
	if strings.EqualFold(host, forwardDomain) {
		return sender, nil
	}

	// An SRS address of another forwarder is not nested but named (SRS1).
	// One that does not parse is rewritten as any local part would be.
	switch tag, rest := srsTag(local); tag {
	case "SRS0":
		// SRS1=GGGG=host==HHHH=TT=...: local[4:] keeps the tag's separator.
		if _, _, _, _, ok := srs0Fields(rest); ok {
			return s.srs1(host, local[4:], forwardDomain), nil
		}
	case "SRS1":
		// rest is GGGG=first=srs0: keep the first forwarder and its SRS0
		// part, hash them anew.
		if first, srs0, ok := srs1Fields(rest); ok {
			return s.srs1(first, srs0, forwardDomain), nil
		}
	}
	stamp := srsStamp(s.now())
	return "SRS0" + srsSeparator + s.hash(stamp, host, local) + srsSeparator + stamp +
		srsSeparator + host + srsSeparator + local + "@" + forwardDomain, nil
}

func (s *SRS) srs1(first, srs0, forwardDomain string) string {
	return "SRS1" + srsSeparator + s.hash(first, srs0) + srsSeparator + first + srsSeparator + srs0 + "@" + forwardDomain
}

// Reverse turns an address made by Forward back into the one it
// rewrote: the original sender for SRS0, the first forwarder's SRS0
// address for SRS1. The domain after "@" is not checked (the caller
// received the mail for it). ErrNotSRS, ErrBadHash, ErrExpired.
func (s *SRS) Reverse(addr string) (string, error) {
	if len(s.Secret) == 0 {
		return "", ErrNoSecret
	}
	at := strings.LastIndexByte(addr, '@')
	if at < 0 || !srsDomain(addr[at+1:]) {
		return "", ErrNotSRS
	}
	tag, rest := srsTag(addr[:at])
	// Forward writes only "=" after the tag; libsrs2's "+" and "-" come
	// from other forwarders, whose addresses are not ours to reverse.
	if tag == "" || rest == "" || addr[4:5] != srsSeparator {
		return "", ErrNotSRS
	}
	switch tag {
	case "SRS0":
		hash, stamp, host, local, ok := srs0Fields(rest)
		if !ok {
			return "", ErrNotSRS
		}
		if !s.hashOK(hash, stamp, host, local) {
			return "", ErrBadHash
		}
		if !srsFresh(stamp, s.now()) {
			return "", ErrExpired
		}
		return local + "@" + host, nil
	default:
		hash, _, _ := strings.Cut(rest, srsSeparator)
		first, srs0, ok := srs1Fields(rest)
		if !ok {
			return "", ErrNotSRS
		}
		if !s.hashOK(hash, first, srs0) {
			return "", ErrBadHash
		}
		// The SRS0 part's day is checked too (as OpenSMTPD does), so that
		// an old SRS1 address stops working like an old SRS0 one.
		_, stamp, _, _, _ := srs0Fields(srs0[1:])
		if !srsFresh(stamp, s.now()) {
			return "", ErrExpired
		}
		return "SRS0" + srs0 + "@" + first, nil
	}
}

// srs0Fields splits what follows "SRS0=": HHHH=TT=host=local, each part
// non-empty and TT a day stamp.
func srs0Fields(rest string) (hash, stamp, host, local string, ok bool) {
	f := strings.SplitN(rest, srsSeparator, 4)
	if len(f) != 4 || f[0] == "" || !srsDomain(f[2]) || f[3] == "" {
		return "", "", "", "", false
	}
	if _, ok := srsParseStamp(f[1]); !ok {
		return "", "", "", "", false
	}
	return f[0], f[1], f[2], f[3], true
}

// srs1Fields splits what follows "SRS1=": GGGG=first=srs0, where srs0 is
// an SRS0 local part without its tag ("=HHHH=TT=host=local", any of the
// tag separators first).
func srs1Fields(rest string) (first, srs0 string, ok bool) {
	hash, after, _ := strings.Cut(rest, srsSeparator)
	first, srs0, _ = strings.Cut(after, srsSeparator)
	if hash == "" || !srsDomain(first) || len(srs0) < 2 || !strings.ContainsAny(srs0[:1], "=+-") {
		return "", "", false
	}
	if _, _, _, _, ok := srs0Fields(srs0[1:]); !ok {
		return "", "", false
	}
	return first, srs0, true
}

// hash is the first srsHashLen base64 characters of the HMAC-SHA1 of the
// lower-cased parts, concatenated.
func (s *SRS) hash(parts ...string) string {
	m := hmac.New(sha1.New, s.Secret)
	for _, p := range parts {
		m.Write([]byte(asciiLower(p)))
	}
	return base64.StdEncoding.EncodeToString(m.Sum(nil))[:srsHashLen]
}

// hashOK compares a received hash with the computed one, in constant
// time and without regard to case.
func (s *SRS) hashOK(got string, parts ...string) bool {
	want := s.hash(parts...)
	return len(got) == srsHashLen &&
		hmac.Equal([]byte(asciiLower(got)), []byte(asciiLower(want)))
}

// asciiLower lower-cases ASCII letters only, as libsrs2 does: other bytes,
// valid UTF-8 or not, are hashed as they are.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// srsTag splits an SRS local part into its tag (upper-cased "SRS0" or
// "SRS1", matched without regard to case) and what follows the tag's
// separator ("=", "+" or "-", as libsrs2 accepts). No tag: "", "".
func srsTag(local string) (tag, rest string) {
	if len(local) < 5 || !strings.ContainsAny(local[4:5], "=+-") {
		return "", ""
	}
	switch t := strings.ToUpper(local[:4]); t {
	case "SRS0", "SRS1":
		return t, local[5:]
	}
	return "", ""
}

// srsStamp is the day of t in two base32 characters.
func srsStamp(t time.Time) string {
	day := srsDayOf(t)
	return string([]byte{srsBase32[day>>5], srsBase32[day&31]})
}

// srsDayOf is the day number of t modulo srsSlots, in [0, srsSlots).
func srsDayOf(t time.Time) int {
	d := t.Unix() / int64(srsDay/time.Second) % srsSlots
	if d < 0 {
		d += srsSlots
	}
	return int(d)
}

// srsParseStamp reads two base32 characters, either case.
func srsParseStamp(stamp string) (int, bool) {
	if len(stamp) != 2 {
		return 0, false
	}
	hi := strings.IndexByte(srsBase32, upper(stamp[0]))
	lo := strings.IndexByte(srsBase32, upper(stamp[1]))
	if hi < 0 || lo < 0 {
		return 0, false
	}
	return hi<<5 | lo, true
}

func upper(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}

// srsFresh reports whether a stamp's day is at most srsMaxDays before the
// day of now, or one day after it (a forwarder whose clock is ahead, or a
// date turning between two nodes).
func srsFresh(stamp string, now time.Time) bool {
	day, ok := srsParseStamp(stamp)
	if !ok {
		return false
	}
	age := (srsDayOf(now) - day + srsSlots) % srsSlots
	return age <= srsMaxDays || age == srsSlots-1
}

// srsDomain reports whether d can stand in an SRS address: a non-empty
// host name of letters, digits, "-", "_" and "." (IDNA ASCII form), which
// keeps the "=" that separates the fields out of it.
func srsDomain(d string) bool {
	if d == "" || len(d) > 253 {
		return false
	}
	for i := 0; i < len(d); i++ {
		c := d[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}

// srsLocal reports whether a local part can be carried: non-empty, no
// quotes, spaces, controls or "@", so that the rewritten address is a
// dot-atom-like local part again.
func srsLocal(l string) bool {
	if l == "" {
		return false
	}
	for i := 0; i < len(l); i++ {
		if c := l[i]; c <= ' ' || c == '"' || c == '@' || c == '\\' || c == 0x7f {
			return false
		}
	}
	return true
}
