package imapd

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/emersion/go-imap/v2"
)

// SORT (RFC 5256 section 3, with DISPLAYFROM and DISPLAYTO of RFC 5957)
// as a pure function of what the store keeps of each message: its record
// (size, INTERNALDATE) and its summary (mailstore.HeaderSummary, which
// holds Date, Subject, From, To, Cc, Message-ID, References and
// In-Reply-To), never its body. sortcmd.go serves the SORT and THREAD
// commands with it.

// sortMsg is one message as SORT and THREAD see it.
type sortMsg struct {
	// Seq is its sequence number, which breaks every tie.
	Seq uint32
	UID uint32
	// Size is RFC822.SIZE, Arrival the INTERNALDATE.
	Size    int64
	Arrival time.Time
	// Header is its summary (or its whole header), for K nil.
	Header []byte
	// K is its decoded keys; pos, with a folder's keys, is its place in
	// them (sortkeys.go).
	K   *msgKeys
	pos int32
}

// sortKey names a SORT criterion's key.
type sortKey int

const (
	sortArrival     sortKey = iota + 1 // INTERNALDATE
	sortCc                             // addr-mailbox of the first Cc address
	sortDate                           // sent date (RFC 5256 section 2.2)
	sortFrom                           // addr-mailbox of the first From address
	sortSize                           // RFC822.SIZE
	sortSubject                        // base subject (RFC 5256 section 2.1)
	sortTo                             // addr-mailbox of the first To address
	sortDisplayFrom                    // RFC 5957 section 4
	sortDisplayTo                      // RFC 5957 section 4
)

// sortCriterion is one sort criterion: a key, REVERSE or not.
type sortCriterion struct {
	Key     sortKey
	Reverse bool
}

// parseSortCriteria reads a SORT program's criteria, such as "REVERSE
// DATE SUBJECT" (RFC 5256 section 3: REVERSE applies to the key after
// it), in any case.
func parseSortCriteria(words []string) ([]sortCriterion, error) {
	var out []sortCriterion
	reverse := false
	for _, w := range words {
		if strings.EqualFold(w, "REVERSE") {
			if reverse {
				return nil, fmt.Errorf("sort: REVERSE REVERSE")
			}
			reverse = true
			continue
		}
		k, ok := sortKeys[strings.ToUpper(w)]
		if !ok {
			return nil, fmt.Errorf("sort: unknown key %q", w)
		}
		out = append(out, sortCriterion{Key: k, Reverse: reverse})
		reverse = false
	}
	if reverse || len(out) == 0 {
		return nil, fmt.Errorf("sort: criteria end without a key")
	}
	return out, nil
}

var sortKeys = map[string]sortKey{
	"ARRIVAL": sortArrival, "CC": sortCc, "DATE": sortDate, "FROM": sortFrom,
	"SIZE": sortSize, "SUBJECT": sortSubject, "TO": sortTo,
	"DISPLAYFROM": sortDisplayFrom, "DISPLAYTO": sortDisplayTo,
}

// withKeys is msgs with the keys of need decoded from their headers, for
// those whose keys are not (K nil): a copy if any is not.
func withKeys(msgs []sortMsg, need keyGroup) []sortMsg {
	if !slices.ContainsFunc(msgs, func(m sortMsg) bool { return m.K == nil }) {
		return msgs
	}
	out := slices.Clone(msgs)
	keys := make([]msgKeys, len(out))
	for i := range out {
		if out[i].K == nil {
			decodeKeys(&keys[i], out[i].Header, out[i].Arrival, need)
			out[i].K = &keys[i]
		}
	}
	return out
}

// The header fields SORT and THREAD read, by index in their values.
const (
	hdrDate = iota
	hdrSubject
	hdrFrom
	hdrTo
	hdrCc
	hdrMessageID
	hdrReferences
	hdrInReplyTo
	hdrFields
)

var hdrNames = [hdrFields]string{"date", "subject", "from", "to", "cc", "message-id", "references", "in-reply-to"}

// sentDate is the sent date of RFC 5256 section 2.2: the Date field, or
// the INTERNALDATE when it is missing or does not parse. Times compare as
// instants, whatever their zones.
func sentDate(date string, arrival time.Time) time.Time {
	if t := envelopeDate(date); !t.IsZero() {
		return t
	}
	return arrival
}

// firstAddress is the first address of an address list, the zero Address
// for none. A group's first is its start: addr-mailbox is its name.
func firstAddress(v string) imap.Address {
	if v == "" {
		return imap.Address{}
	}
	// fastAddressList leaves encoded words as they are.
	l, ok := fastAddressList(v)
	if !ok || strings.Contains(v, "=?") {
		l = parseAddressList(v)
	}
	if len(l) == 0 {
		return imap.Address{}
	}
	return l[0]
}

// displayValue is the DISPLAY sort value of an address (RFC 5957 section
// 3): its display name (RFC 2047-decoded already) if not empty, else
// mailbox@host, else the mailbox, else "".
func displayValue(a imap.Address) string {
	switch {
	case a.Name != "":
		return a.Name
	case a.Mailbox != "" && a.Host != "":
		return a.Mailbox + "@" + a.Host
	}
	return a.Mailbox
}

// headerValues finds in header (a summary, or a whole header: it stops
// at the first empty line) the first field of each name of hdrNames that
// want asks for, and answers its value as it lies in header: from after
// the colon to the end of its last continuation line, line breaks
// included (unfoldValue unfolds it); nil for a field that is not there.
// One pass, no copy.
func headerValues(header []byte, want *[hdrFields]bool) (v [hdrFields][]byte) {
	var span [hdrFields][2]int
	var found [hdrFields]bool
	cur := -1 // the wanted field the last line belongs to, or -1
	for pos := 0; pos < len(header); {
		end := bytes.IndexByte(header[pos:], '\n')
		if end < 0 {
			end = len(header)
		} else {
			end += pos
		}
		line := bytes.TrimSuffix(header[pos:end], []byte("\r"))
		start := pos
		pos = end + 1
		if len(line) == 0 {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			if cur >= 0 {
				span[cur][1] = start + len(line)
			}
			continue
		}
		cur = -1
		colon := bytes.IndexByte(line, ':')
		if colon < 0 {
			continue
		}
		name := bytes.TrimRight(line[:colon], " \t")
		for f := range hdrFields {
			if want[f] && !found[f] && len(name) == len(hdrNames[f]) && bytes.EqualFold(name, []byte(hdrNames[f])) {
				cur, found[f] = f, true
				span[f] = [2]int{start + colon + 1, start + len(line)}
				break
			}
		}
	}
	for f := range hdrFields {
		if found[f] {
			v[f] = header[span[f][0]:span[f][1]:span[f][1]]
		}
	}
	return v
}

// unfoldValue is a field's value as headerValues answers it, unfolded as
// RFC 5322 section 2.2.3 says (a line break is removed, the white space
// after it kept) and trimmed of white space.
func unfoldValue(raw []byte) string {
	if bytes.IndexByte(raw, '\n') < 0 {
		return string(bytes.Trim(raw, " \t"))
	}
	out := make([]byte, 0, len(raw))
	for line := range bytes.Lines(raw) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		out = append(out, bytes.TrimSuffix(line, []byte("\r"))...)
	}
	return string(bytes.Trim(out, " \t"))
}
