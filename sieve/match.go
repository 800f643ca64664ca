package sieve

import (
	"strings"
)

// Comparators (RFC 4790 section 9, RFC 5228 section 2.7.3) and match
// types (RFC 5228 section 2.7.1, RFC 5231, the regex draft).

// asciiLower maps A-Z to a-z, and allocates only when it changes s.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

func foldByte(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if foldByte(a[i]) != foldByte(b[i]) {
			return false
		}
	}
	return true
}

func hasPrefix(s, p string, fold bool) bool {
	if len(s) < len(p) {
		return false
	}
	if !fold {
		return s[:len(p)] == p
	}
	return asciiEqualFold(s[:len(p)], p)
}

// equal is the equality of the comparator (:is).
func equal(cmp comparator, a, b string) bool {
	switch cmp {
	case cmpOctet:
		return a == b
	case cmpCasemap:
		return asciiEqualFold(a, b)
	}
	return compareNumeric(a, b) == 0
}

// compare orders a and b by the comparator (RFC 5231 :value).
func compare(cmp comparator, a, b string) int {
	switch cmp {
	case cmpOctet:
		return strings.Compare(a, b)
	case cmpCasemap:
		// i;ascii-casemap orders as i;octet after mapping a-z to A-Z
		// (RFC 4790 section 9.2).
		n := min(len(a), len(b))
		for i := 0; i < n; i++ {
			ca, cb := a[i], b[i]
			if ca >= 'a' && ca <= 'z' {
				ca -= 'a' - 'A'
			}
			if cb >= 'a' && cb <= 'z' {
				cb -= 'a' - 'A'
			}
			if ca != cb {
				if ca < cb {
					return -1
				}
				return 1
			}
		}
		return len(a) - len(b)
	}
	return compareNumeric(a, b)
}

// compareNumeric is i;ascii-numeric: the leading digits as a number of
// any size; a string without leading digit is positive infinity (RFC
// 4790 section 9.1).
func compareNumeric(a, b string) int {
	da, db := leadingDigits(a), leadingDigits(b)
	switch {
	case da == "" && db == "":
		return 0
	case da == "":
		return 1
	case db == "":
		return -1
	}
	da, db = strings.TrimLeft(da, "0"), strings.TrimLeft(db, "0")
	if len(da) != len(db) {
		return len(da) - len(db)
	}
	return strings.Compare(da, db)
}

func leadingDigits(s string) string {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return s[:i]
}

func relation(op relOp, c int) bool {
	switch op {
	case relGT:
		return c > 0
	case relGE:
		return c >= 0
	case relLT:
		return c < 0
	case relLE:
		return c <= 0
	case relEQ:
		return c == 0
	}
	return c != 0
}

// glob is a :matches pattern: "*" is any sequence, "?" one character,
// "\" quotes the next character.
type glob struct {
	toks  []gtok
	nwild int
}

type gtok struct {
	kind byte // 'l' literal, '?', '*'
	lit  string
	wild int // index of the wildcard among all of them
}

func compileGlob(p string) *glob {
	g := &glob{}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			g.toks = append(g.toks, gtok{kind: 'l', lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '\\':
			if i+1 < len(p) {
				i++
				lit.WriteByte(p[i])
			}
		case '*', '?':
			flush()
			// Consecutive stars match as one, but each still has its
			// match variable (RFC 5229 section 3.2): the later ones get "".
			g.toks = append(g.toks, gtok{kind: c, wild: g.nwild})
			g.nwild++
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	return g
}

// match tells whether s matches, with each wildcard's match shortest
// first from the left (RFC 5229 section 3.2); caps gets ${0} and the
// wildcards' matches when not nil. work counts the steps taken, so the
// caller can charge them; past limit steps the match gives up, false.
// Only the last star backtracks, so the steps are at most len(s) times
// the pattern's length.
func (g *glob) match(s string, fold bool, caps *[]string, work *int, limit int) bool {
	spans := make([][2]int, g.nwild)
	ti, si := 0, 0
	starTi, starEnd := -1, 0
	n := 0
	for {
		n++
		if n > limit {
			*work += n
			return false
		}
		if ti == len(g.toks) {
			if si == len(s) {
				break
			}
			goto back
		}
		switch t := g.toks[ti]; t.kind {
		case '*':
			starTi, starEnd = ti, si
			spans[t.wild] = [2]int{si, si}
			ti++
			continue
		case '?':
			// "?" is one octet with i;octet and i;ascii-casemap
			// (RFC 5228 section 2.7.1).
			if si < len(s) {
				spans[t.wild] = [2]int{si, si + 1}
				si++
				ti++
				continue
			}
		default:
			n += len(t.lit)
			if hasPrefix(s[si:], t.lit, fold) {
				si += len(t.lit)
				ti++
				continue
			}
		}
	back:
		if starTi < 0 || starEnd >= len(s) {
			*work += n
			return false
		}
		starEnd++
		spans[g.toks[starTi].wild][1] = starEnd
		si, ti = starEnd, starTi+1
	}
	*work += n
	if caps != nil {
		c := append((*caps)[:0], s)
		for _, sp := range spans {
			c = append(c, s[sp[0]:sp[1]])
		}
		*caps = c
	}
	return true
}
