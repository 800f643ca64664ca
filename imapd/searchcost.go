package imapd

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/emersion/go-imap/v2"
	gomessage "github.com/emersion/go-message"
)

// This file keeps the cost of SEARCH linear in the size of each message:
// the text of a message is decoded once per SEARCH, not once per
// criterion, from the MIME tree (mimetree.go, bounded in depth and
// parts), and a SEARCH names a bounded number of criteria, each of which
// costs at most one pass over the message's header or text.

const (
	// maxSearchCriteria bounds the search keys of one SEARCH, NOT and OR
	// included: a 50 KiB command holds about 6,000, nested as deep.
	maxSearchCriteria = 1024
	// maxSearchTextCriteria bounds the keys that look into a message's
	// header or text (BODY, TEXT, HEADER and the address and SUBJECT keys
	// that are HEADER keys), each a pass over it.
	maxSearchTextCriteria = 64
	// maxPartText is the most of one part's decoded text searched.
	maxPartText = 64 << 20
)

// errSearchTooComplex answers a SEARCH over the limits (RFC 5530 section
// 3, LIMIT).
var errSearchTooComplex = no(imap.ResponseCodeLimit,
	fmt.Sprintf("Too many search criteria: at most %d, of which %d look into headers or text", maxSearchCriteria, maxSearchTextCriteria))

// checkSearchCost refuses criteria over the limits.
func checkSearchCost(c *imap.SearchCriteria) error {
	all, text := countCriteria(c)
	if all > maxSearchCriteria || text > maxSearchTextCriteria {
		return errSearchTooComplex
	}
	return nil
}

// countCriteria counts the keys of c, and those that look into text. It
// stops counting past the limits, so that its own cost is bounded too.
func countCriteria(c *imap.SearchCriteria) (all, text int) {
	text = len(c.Header) + len(c.Body) + len(c.Text)
	all = text + len(c.SeqNum) + len(c.UID) + len(c.Flag) + len(c.NotFlag) + len(c.EmailID) + len(c.ThreadID)
	for _, t := range []bool{!c.Since.IsZero(), !c.Before.IsZero(), !c.SentSince.IsZero(), !c.SentBefore.IsZero(), c.Larger > 0, c.Smaller > 0, c.Older > 0, c.Younger > 0} {
		if t {
			all++
		}
	}
	for i := range c.Not {
		a, t := countCriteria(&c.Not[i])
		all, text = all+1+a, text+t
		if all > maxSearchCriteria {
			return all, text
		}
	}
	for i := range c.Or {
		a1, t1 := countCriteria(&c.Or[i][0])
		a2, t2 := countCriteria(&c.Or[i][1])
		all, text = all+1+a1+a2, text+t1+t2
		if all > maxSearchCriteria {
			return all, text
		}
	}
	return all, text
}

// appendTexts appends the lower-cased decoded text of the parts of e that
// SEARCH BODY and TEXT look into: text/* and message/* parts without
// their content transfer encoding, and the raw bytes of parts past the
// limits of the tree (which may hold text nobody parsed).
func (e *mimePart) appendTexts(msg []byte, out [][]byte) [][]byte {
	if e.isMultipart() {
		for _, c := range e.children {
			out = c.appendTexts(msg, out)
		}
		return out
	}
	body := msg[e.body:e.end]
	if e.flat {
		return append(out, bytes.ToLower(body[:min(len(body), maxPartText)]))
	}
	if !strings.HasPrefix(e.mediaType, "text/") && !strings.HasPrefix(e.mediaType, "message/") {
		return out
	}
	var r io.Reader = bytes.NewReader(body)
	// An unknown charset or encoding is not fatal: the part is still
	// searched as it is.
	if ent, err := gomessage.New(gomessage.Header{Header: e.header}, r); ent != nil && (err == nil || gomessage.IsUnknownCharset(err)) {
		r = ent.Body
	}
	b, err := io.ReadAll(io.LimitReader(r, maxPartText))
	if err != nil && len(b) == 0 {
		return out
	}
	return append(out, bytes.ToLower(b))
}

// matchBody reports whether any text of msg (tree) contains text,
// without regard to case.
func matchBody(tree *mimePart, msg []byte, text string) bool {
	return containsAny(tree.appendTexts(msg, nil), text)
}

func containsAny(texts [][]byte, text string) bool {
	lower := []byte(strings.ToLower(text))
	for _, t := range texts {
		if bytes.Contains(t, lower) {
			return true
		}
	}
	return false
}
