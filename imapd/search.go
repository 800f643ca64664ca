package imapd

import (
	"bufio"
	"bytes"
	"slices"
	"strings"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
	gomessage "github.com/emersion/go-message"
	"github.com/emersion/go-message/mail"
	"github.com/emersion/go-message/textproto"

	"github.com/mailhost/mailhost/mailstore"
)

// Search answers SEARCH and UID SEARCH (RFC 9051 section 6.4.4, with
// ESEARCH's MIN, MAX, COUNT and SEARCHRES's SAVE). Text criteria match
// substrings without regard to case; a body is read only when a criterion
// needs it.
func (s *session) Search(kind imapserver.NumKind, criteria *imap.SearchCriteria, options *imap.SearchOptions) (*imap.SearchData, error) {
	v := s.sel
	if v == nil {
		return nil, errNoSelection
	}
	var (
		data   imap.SearchData
		seqs   imap.SeqSet
		uids   imap.UIDSet
		needed = needsContent(criteria)
		// Criteria on the fields a summary keeps (FROM, TO, CC, BCC,
		// SUBJECT, SENTSINCE...) read the stored summaries, not the bodies.
		headerOnly = needed && inSummary(criteria)
	)
	if err := checkSearchCost(criteria); err != nil {
		return nil, err
	}
	v.staticCriteria(criteria)
	now := s.srv.now()
	var keys *msgKeys // the message's kept keys, for a search from them
	add := func(i int, body []byte) error {
		m := v.msgs[i]
		c := &candidate{v: v, seq: uint32(i + 1), msg: v.withRecent(m.Message), body: body, kept: keys, now: now}
		if !c.match(criteria) {
			return nil
		}
		uids.AddNum(imap.UID(m.UID))
		num := c.seq
		if kind == imapserver.NumKindUID {
			num = m.UID
		}
		seqs.AddNum(c.seq)
		if data.Min == 0 || num < data.Min {
			data.Min = num
		}
		data.Max = max(data.Max, num)
		data.Count++
		data.ModSeq = max(data.ModSeq, imapModSeq(m.ModSeq))
		return nil
	}
	keptNeed, kept := keptSearchable(criteria)
	if headerOnly && kept {
		err := s.searchKept(v, keptNeed, func(i int, k *msgKeys) error {
			keys = k
			return add(i, nil)
		})
		if err != nil {
			return nil, err
		}
	} else if headerOnly {
		all := make([]int, len(v.msgs))
		for i := range all {
			all[i] = i
		}
		if err := s.eachSummary(v, all, "search", add); err != nil {
			return nil, err
		}
	} else if needed {
		// Bodies are valid only during add, which keeps none.
		all := make([]int, len(v.msgs))
		for i := range all {
			all[i] = i
		}
		if err := s.eachBody(v, all, "search", add); err != nil {
			return nil, err
		}
	} else {
		for i, m := range v.msgs {
			if !m.gone {
				add(i, nil)
			}
		}
	}
	if kind == imapserver.NumKindUID {
		data.All = uids
	} else {
		data.All = seqs
	}
	if !searchModSeq(criteria) {
		data.ModSeq = 0 // RFC 7162 section 3.1.5: only for a MODSEQ search
	}
	if options.ReturnSave {
		v.searchRes = uids
		if !options.ReturnAll && !options.ReturnCount && (options.ReturnMin || options.ReturnMax) {
			// SAVE with MIN and/or MAX alone saves those (RFC 5182
			// section 2.4); sequence numbers and UIDs ascend together.
			// uids was built in ascending order, one range after another.
			v.searchRes = nil
			if len(uids) > 0 {
				if options.ReturnMin {
					v.searchRes.AddNum(uids[0].Start)
				}
				if options.ReturnMax {
					v.searchRes.AddNum(uids[len(uids)-1].Stop)
				}
			}
		}
	}
	return &data, nil
}

// staticCriteria resolves "*" and "$" in the criteria's number sets once,
// before matching.
func (v *view) staticCriteria(c *imap.SearchCriteria) {
	var seqs []imap.SeqSet
	for _, set := range c.SeqNum {
		if imap.IsSearchRes(set) {
			c.UID = append(c.UID, v.searchRes)
			continue
		}
		set = slices.Clone(set)
		for i := range set {
			staticRange(&set[i].Start, &set[i].Stop, uint32(len(v.msgs)))
		}
		seqs = append(seqs, set)
	}
	c.SeqNum = seqs
	for j, set := range c.UID {
		if imap.IsSearchRes(set) {
			c.UID[j] = v.searchRes
			continue
		}
		set = slices.Clone(set)
		for i := range set {
			staticRange((*uint32)(&set[i].Start), (*uint32)(&set[i].Stop), v.lastUID())
		}
		c.UID[j] = set
	}
	for i := range c.Not {
		v.staticCriteria(&c.Not[i])
	}
	for i := range c.Or {
		v.staticCriteria(&c.Or[i][0])
		v.staticCriteria(&c.Or[i][1])
	}
}

// needsContent reports whether any criterion looks into the message.
func needsContent(c *imap.SearchCriteria) bool {
	if len(c.Header) > 0 || len(c.Body) > 0 || len(c.Text) > 0 || !c.SentSince.IsZero() || !c.SentBefore.IsZero() {
		return true
	}
	for i := range c.Not {
		if needsContent(&c.Not[i]) {
			return true
		}
	}
	for i := range c.Or {
		if needsContent(&c.Or[i][0]) || needsContent(&c.Or[i][1]) {
			return true
		}
	}
	return false
}

// inSummary reports whether a message's summary (mailstore.HeaderSummary)
// holds all the criteria look into: no BODY or TEXT, and HEADER only on
// the fields it keeps.
func inSummary(c *imap.SearchCriteria) bool {
	if len(c.Body) > 0 || len(c.Text) > 0 {
		return false
	}
	for _, h := range c.Header {
		if !mailstore.SummaryField(h.Key) {
			return false
		}
	}
	for i := range c.Not {
		if !inSummary(&c.Not[i]) {
			return false
		}
	}
	for i := range c.Or {
		if !inSummary(&c.Or[i][0]) || !inSummary(&c.Or[i][1]) {
			return false
		}
	}
	return true
}

// candidate is one message being matched, its parsed header made once.
type candidate struct {
	v   *view
	seq uint32
	msg mailstore.Message
	// body is the message, or its summary when the criteria need no
	// more (inSummary).
	body []byte
	// kept, if not nil, is the message's kept keys, which HEADER
	// criteria are matched on instead of body (searchkept.go).
	kept   *msgKeys
	header *mail.Header
	// texts is the lower-cased text of the body, made once for all the
	// BODY and TEXT criteria (searchcost.go).
	texts     [][]byte
	textsMade bool
	// now is when the search started, for OLDER and YOUNGER.
	now time.Time
}

func (c *candidate) match(cr *imap.SearchCriteria) bool {
	for _, set := range cr.SeqNum {
		if !set.Contains(c.seq) {
			return false
		}
	}
	for _, set := range cr.UID {
		if !set.Contains(imap.UID(c.msg.UID)) {
			return false
		}
	}
	if !matchDate(c.msg.ReceivedAt, cr.Since, cr.Before) {
		return false
	}
	for _, f := range cr.Flag {
		if !hasFlag(c.msg.Flags, f) {
			return false
		}
	}
	for _, f := range cr.NotFlag {
		if hasFlag(c.msg.Flags, f) {
			return false
		}
	}
	if cr.ModSeq != nil && imapModSeq(c.msg.ModSeq) < cr.ModSeq.ModSeq {
		return false
	}
	if !c.matchObjectWithin(cr) {
		return false
	}
	if cr.Larger > 0 && c.msg.Size <= cr.Larger {
		return false
	}
	if cr.Smaller > 0 && c.msg.Size >= cr.Smaller {
		return false
	}
	for _, hf := range cr.Header {
		if c.kept != nil {
			if !c.kept.matchKept(hf.Key, hf.Value) {
				return false
			}
			continue
		}
		if m, ok := fastHeaderMatch(c.body, hf.Key, hf.Value); ok && !m {
			return false
		} else if !ok && !matchField(c.parsedHeader().FieldsByKey(hf.Key), hf.Value) {
			return false
		}
	}
	if !cr.SentSince.IsZero() || !cr.SentBefore.IsZero() {
		t, err := c.parsedHeader().Date()
		if err != nil || !matchDate(t, cr.SentSince, cr.SentBefore) {
			return false
		}
	}
	for _, text := range cr.Text {
		if !c.matchText(text, true) {
			return false
		}
	}
	for _, text := range cr.Body {
		if !c.matchText(text, false) {
			return false
		}
	}
	for i := range cr.Not {
		if c.match(&cr.Not[i]) {
			return false
		}
	}
	for i := range cr.Or {
		if !c.match(&cr.Or[i][0]) && !c.match(&cr.Or[i][1]) {
			return false
		}
	}
	return true
}

func (c *candidate) parsedHeader() *mail.Header {
	if c.header == nil {
		h, err := textproto.ReadHeader(bufio.NewReader(bytes.NewReader(c.body)))
		if err != nil && h.Len() == 0 {
			h = textproto.Header{}
		}
		c.header = &mail.Header{Header: gomessage.Header{Header: h}}
	}
	return c.header
}

// matchText looks for text in the decoded text parts of the message and,
// for TEXT, in its header.
func (c *candidate) matchText(text string, withHeader bool) bool {
	if text == "" {
		return true
	}
	if withHeader && matchField(c.parsedHeader().Fields(), text) {
		return true
	}
	if !c.textsMade && isASCII(text) {
		if t, ok := plainText(c.body); ok {
			return containsFold(t, text)
		}
	}
	if !c.textsMade {
		c.texts, c.textsMade = parseMIME(c.body).appendTexts(c.body, nil), true
	}
	return containsAny(c.texts, text)
}

// matchField reports whether any of the fields contains value (decoded,
// without regard to case); an empty value matches any present field.
func matchField(fields gomessage.HeaderFields, value string) bool {
	value = strings.ToLower(value)
	for fields.Next() {
		if value == "" {
			return true
		}
		t, err := fields.Text()
		if err != nil {
			t = fields.Value()
		}
		if strings.Contains(strings.ToLower(t), value) {
			return true
		}
		if isAddressField(fields.Key()) && strings.Contains(strings.ToLower(addressText(fields.Value())), value) {
			return true
		}
	}
	return false
}

// matchDate compares dates only, disregarding time and zone (RFC 9051
// section 6.4.4: SINCE, BEFORE, SENTSINCE, SENTBEFORE).
func matchDate(t, since, before time.Time) bool {
	d := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	if !since.IsZero() && d.Before(time.Date(since.Year(), since.Month(), since.Day(), 0, 0, 0, 0, time.UTC)) {
		return false
	}
	if !before.IsZero() && !d.Before(time.Date(before.Year(), before.Month(), before.Day(), 0, 0, 0, 0, time.UTC)) {
		return false
	}
	return true
}
