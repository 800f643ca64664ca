package imapd

import (
	"bufio"
	"bytes"
	"strings"

	"github.com/emersion/go-imap/v2"
	gomessage "github.com/emersion/go-message"
	"github.com/emersion/go-message/textproto"
)

// SEARCH on From, To, Cc and Subject from the folder's kept keys
// (sortkeys.go): the text each field is searched in, decoded once per
// message as matchField reads it, and kept beside the sort keys, so that
// a repeated search (a webmail's quick search, with a SORT around it)
// reads no summaries.

// keptFields are the fields whose search text the keys keep, by their
// index in msgKeys.hay.
var keptFields = [...]string{"from", "to", "cc", "subject"}

// keptField is the index of field key in keptFields, -1 if not kept.
func keptField(key string) int {
	for i, f := range keptFields {
		if strings.EqualFold(key, f) {
			return i
		}
	}
	return -1
}

// keptSearchable answers the groups of kept texts (searchkept.go) that
// hold everything c looks into, and whether they do: of the message's
// content, only HEADER (FROM, TO, CC, SUBJECT) on the kept fields.
func keptSearchable(c *imap.SearchCriteria) (keyGroup, bool) {
	if len(c.Body) > 0 || len(c.Text) > 0 || !c.SentSince.IsZero() || !c.SentBefore.IsZero() {
		return 0, false
	}
	var need keyGroup
	for _, h := range c.Header {
		i := keptField(h.Key)
		if i < 0 {
			return 0, false
		}
		need |= groupHayFrom << i
	}
	for i := range c.Not {
		g, ok := keptSearchable(&c.Not[i])
		if !ok {
			return 0, false
		}
		need |= g
	}
	for i := range c.Or {
		g0, ok0 := keptSearchable(&c.Or[i][0])
		g1, ok1 := keptSearchable(&c.Or[i][1])
		if !ok0 || !ok1 {
			return 0, false
		}
		need |= g0 | g1
	}
	return need, true
}

// searchHays is, for each kept field of want (groupHayFrom...), the
// lower-cased texts matchField searches in each of the header's fields
// of that name: the decoded text, and for an address field its
// addresses as addressText writes them. A field present gets at least
// one text, empty or not.
func searchHays(header []byte, want keyGroup) (hay [len(keptFields)][]string) {
	if hay, ok := fastSearchHays(header, want); ok {
		return hay
	}
	// Parsed as candidate.parsedHeader parses it.
	th, err := textproto.ReadHeader(bufio.NewReader(bytes.NewReader(header)))
	if err != nil && th.Len() == 0 {
		return hay
	}
	h := gomessage.Header{Header: th}
	for i, key := range keptFields {
		if want&(groupHayFrom<<i) == 0 {
			continue
		}
		fields := h.FieldsByKey(key)
		for fields.Next() {
			raw := fields.Value()
			t, err := fields.Text()
			if err != nil {
				t = raw
			}
			hay[i] = append(hay[i], strings.ToLower(t))
			if isAddressField(key) {
				hay[i] = append(hay[i], strings.ToLower(addressText(raw)))
			}
		}
	}
	return hay
}

// matchKept is matchField over the kept texts of field key.
func (k *msgKeys) matchKept(key, value string) bool {
	if k.hay == nil {
		return false
	}
	hay := k.hay[keptField(key)]
	if value == "" {
		return len(hay) > 0
	}
	value = strings.ToLower(value)
	for _, t := range hay {
		if strings.Contains(t, value) {
			return true
		}
	}
	return false
}

// searchKept is the search of SEARCH over every live message of v from
// the kept texts of need: add is called for each with its keys.
func (s *session) searchKept(v *view, need keyGroup, add func(i int, k *msgKeys) error) error {
	nums := make([]uint32, 0, len(v.msgs))
	for i, m := range v.msgs {
		if !m.gone {
			nums = append(nums, uint32(i+1))
		}
	}
	msgs, f, err := s.keptKeys(v, nums, need, "search")
	if err != nil {
		return err
	}
	defer f.mu.Unlock()
	for i := range msgs {
		if err := add(int(msgs[i].Seq)-1, msgs[i].K); err != nil {
			return err
		}
	}
	return nil
}

// fastSearchHays is searchHays for a plain header, as fastHeaderMatch
// reads it (and TestFastHeaderMatch holds equal to matchField): every
// line printable ASCII ended by CRLF, each field a name and a colon, the
// wanted fields without encoded words and their addresses as
// fastAddressList takes them. ok is false for any other header.
func fastSearchHays(header []byte, want keyGroup) (hay [len(keptFields)][]string, ok bool) {
	type span struct{ field, start, end int }
	var found []span
	first := true
	for pos := 0; ; {
		eol := bytes.Index(header[pos:], []byte("\r\n"))
		if eol < 0 {
			return hay, false
		}
		start, end := pos, pos+eol
		line := header[start:end]
		pos = end + 2
		if len(line) == 0 {
			break
		}
		if !printable(line) {
			return hay, false
		}
		if line[0] == ' ' || line[0] == '\t' {
			if first {
				return hay, false
			}
			if n := len(found); n > 0 && found[n-1].end == start-2 {
				found[n-1].end = end
			}
			continue
		}
		first = false
		colon := bytes.IndexByte(line, ':')
		if colon < 0 {
			return hay, false
		}
		name := bytes.TrimRight(line[:colon], " \t")
		if len(name) == 0 || bytes.ContainsAny(name, " \t") {
			return hay, false
		}
		for i, f := range keptFields {
			if want&(groupHayFrom<<i) != 0 && len(name) == len(f) && bytes.EqualFold(name, []byte(f)) {
				found = append(found, span{i, start + colon + 1, end})
				break
			}
		}
	}
	for _, sp := range found {
		v := unfold(header[sp.start:sp.end])
		if strings.Contains(v, "=?") {
			return hay, false
		}
		hay[sp.field] = append(hay[sp.field], asciiLower(v))
		if isAddressField(keptFields[sp.field]) {
			l, ok := fastAddressList(v)
			if !ok {
				return hay, false
			}
			hay[sp.field] = append(hay[sp.field], strings.ToLower(addressListText(l)))
		}
	}
	return hay, true
}
