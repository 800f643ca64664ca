package imapd

import (
	"bytes"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
)

// SORT and THREAD (RFC 5256, with RFC 5957's DISPLAYFROM and DISPLAYTO
// and RFC 5267's ESORT): imapserver parses the commands and writes the
// answers; the session runs the search as SEARCH does, reads the matching
// messages' summaries (never their bodies: every key and both algorithms
// need only what mailstore.HeaderSummary keeps) and hands them to the
// pure functions of sort.go and thread.go.

var (
	_ imapserver.SessionSort   = (*session)(nil)
	_ imapserver.SessionThread = (*session)(nil)
)

// Sort answers SORT and UID SORT.
func (s *session) Sort(kind imapserver.NumKind, sortCriteria []imapserver.SortCriterion, criteria *imap.SearchCriteria) (*imapserver.SortData, error) {
	words := make([]string, 0, 2*len(sortCriteria))
	for _, c := range sortCriteria {
		if c.Reverse {
			words = append(words, "REVERSE")
		}
		words = append(words, string(c.Key))
	}
	crit, err := parseSortCriteria(words)
	if err != nil {
		// imapserver let through only the keys offered, all known here.
		return nil, s.fail("sort", err)
	}
	msgs, modSeq, err := s.sortMsgs(criteria, "sort")
	if err != nil {
		return nil, err
	}
	sorted := sortMessages(msgs, crit)
	data := &imapserver.SortData{Nums: make([]uint32, len(sorted)), ModSeq: modSeq}
	for i, m := range sorted {
		data.Nums[i] = m.Seq
		if kind == imapserver.NumKindUID {
			data.Nums[i] = m.UID
		}
	}
	return data, nil
}

// Thread answers THREAD and UID THREAD.
func (s *session) Thread(kind imapserver.NumKind, algorithm imap.ThreadAlgorithm, criteria *imap.SearchCriteria) ([]*imapserver.ThreadNode, error) {
	msgs, _, err := s.sortMsgs(criteria, "thread")
	if err != nil {
		return nil, err
	}
	var threads []*threadNode
	switch algorithm {
	case imap.ThreadOrderedSubject:
		threads = threadOrderedSubject(msgs)
	case imap.ThreadReferences:
		threads = threadReferences(msgs)
	case threadAlgRefs:
		threads = threadRefs(msgs)
	default:
		return nil, &imap.Error{Type: imap.StatusResponseTypeBad, Code: imap.ResponseCodeClientBug, Text: "Unknown threading algorithm"}
	}
	return wireThreads(threads, kind == imapserver.NumKindUID), nil
}

// wireThreads converts thread trees to imapserver's, numbered by sequence
// number or UID.
func wireThreads(threads []*threadNode, uids bool) []*imapserver.ThreadNode {
	out := make([]*imapserver.ThreadNode, len(threads))
	for i, t := range threads {
		n := &imapserver.ThreadNode{Num: t.Seq}
		if uids && t.Seq != 0 {
			n.Num = t.UID
		}
		n.Children = wireThreads(t.Children, uids)
		out[i] = n
	}
	return out
}

// sortMsgs runs the search of a SORT or THREAD over the selected folder
// and answers the matching messages with their summaries, in sequence
// order, and their highest MODSEQ for a search with the MODSEQ key (RFC
// 7162 section 3.1.5), else 0.
func (s *session) sortMsgs(criteria *imap.SearchCriteria, op string) ([]sortMsg, uint64, error) {
	v := s.sel
	if v == nil {
		return nil, 0, errNoSelection
	}
	data, err := s.Search(imapserver.NumKindSeq, criteria, &imap.SearchOptions{ReturnAll: true})
	if err != nil {
		return nil, 0, err
	}
	seqs, _ := data.All.(imap.SeqSet)
	nums, _ := seqs.Nums()
	idx := make([]int, len(nums))
	for i, n := range nums {
		idx[i] = int(n) - 1
	}
	msgs := make([]sortMsg, 0, len(idx))
	err = s.eachSummary(v, idx, op, func(i int, header []byte) error {
		m := v.msgs[i]
		msgs = append(msgs, sortMsg{
			Seq:     uint32(i + 1),
			UID:     m.UID,
			Size:    m.Size,
			Arrival: m.ReceivedAt,
			// The store's buffer may not outlive the call.
			Header: bytes.Clone(header),
		})
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return msgs, data.ModSeq, nil
}
