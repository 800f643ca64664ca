package imapd

import (
	"reflect"
	"slices"

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
	var need keyGroup
	for _, c := range crit {
		need |= groupOf(c.Key)
	}
	msgs, f, modSeq, err := s.sortMsgs(criteria, need, "sort")
	if err != nil {
		return nil, err
	}
	defer f.mu.Unlock()
	order := orderMsgs(msgs, crit, func(k sortKey) []int32 {
		// Ranks cost a sort of the whole folder: worth it when most of
		// the folder is sorted, and for the next SORT.
		if f.ranks[k] != nil || 4*len(msgs) >= len(f.keys) {
			return f.rank(k)
		}
		return nil
	})
	data := &imapserver.SortData{Nums: make([]uint32, len(order)), ModSeq: modSeq}
	for i, j := range order {
		data.Nums[i] = msgs[j].Seq
		if kind == imapserver.NumKindUID {
			data.Nums[i] = msgs[j].UID
		}
	}
	return data, nil
}

// Thread answers THREAD and UID THREAD.
func (s *session) Thread(kind imapserver.NumKind, algorithm imap.ThreadAlgorithm, criteria *imap.SearchCriteria) ([]*imapserver.ThreadNode, error) {
	need := groupDate | groupRefs
	if algorithm != threadAlgRefs {
		need |= groupSubject
	}
	msgs, f, _, err := s.sortMsgs(criteria, need, "thread")
	if err != nil {
		return nil, err
	}
	defer f.mu.Unlock()
	var thread func([]sortMsg) []*threadNode
	switch algorithm {
	case imap.ThreadOrderedSubject:
		thread = threadOrderedSubject
	case imap.ThreadReferences:
		thread = threadReferences
	case threadAlgRefs:
		thread = threadRefs
	default:
		return nil, &imap.Error{Type: imap.StatusResponseTypeBad, Code: imap.ResponseCodeClientBug, Text: "Unknown threading algorithm"}
	}
	return wireThreads(f.thread(algorithm, msgs, thread), msgs, kind == imapserver.NumKindUID), nil
}

// wireThreads converts thread trees whose nodes number msgs from 1 (as
// folderKeys.thread answers them) to imapserver's, numbered by sequence
// number or UID.
func wireThreads(threads []*threadNode, msgs []sortMsg, uids bool) []*imapserver.ThreadNode {
	out := make([]*imapserver.ThreadNode, len(threads))
	for i, t := range threads {
		n := &imapserver.ThreadNode{}
		if t.Seq != 0 {
			n.Num = msgs[t.Seq-1].Seq
			if uids {
				n.Num = msgs[t.Seq-1].UID
			}
		}
		n.Children = wireThreads(t.Children, msgs, uids)
		out[i] = n
	}
	return out
}

// sortMsgs runs the search of a SORT or THREAD over the selected folder
// and answers the matching messages in sequence order, with their keys
// of the groups need (sortkeys.go, keptKeys), and their highest MODSEQ
// for a search with the MODSEQ key (RFC 7162 section 3.1.5), else 0. f
// is the folder's keys, locked: the caller unlocks f.mu once done with
// the keys.
func (s *session) sortMsgs(criteria *imap.SearchCriteria, need keyGroup, op string) (msgs []sortMsg, f *folderKeys, modSeq uint64, err error) {
	v := s.sel
	if v == nil {
		return nil, nil, 0, errNoSelection
	}
	var nums []uint32
	if reflect.ValueOf(*criteria).IsZero() {
		// ALL, what a client sorting a folder asks: every message
		// still there (keptKeys leaves out the gone), no search.
		nums = make([]uint32, len(v.msgs))
		for i := range nums {
			nums[i] = uint32(i + 1)
		}
	} else {
		data, err := s.Search(imapserver.NumKindSeq, criteria, &imap.SearchOptions{ReturnAll: true})
		if err != nil {
			return nil, nil, 0, err
		}
		seqs, _ := data.All.(imap.SeqSet)
		nums, _ = seqs.Nums()
		modSeq = data.ModSeq
	}
	msgs, f, err = s.keptKeys(v, nums, need, op)
	if err != nil {
		return nil, nil, 0, err
	}
	return msgs, f, modSeq, nil
}

// keptKeys answers the messages nums (ascending sequence numbers) of v
// that are still there, with their keys of the groups need: the
// folder's kept keys, decoded from the summaries of the messages that
// have none yet (new mail, or the first SORT since the server started).
// f is the folder's keys, locked: the caller unlocks f.mu once done with
// the keys.
func (s *session) keptKeys(v *view, nums []uint32, need keyGroup, op string) (msgs []sortMsg, f *folderKeys, err error) {
	f = s.srv.sortKeys.folder(v.folder.ID)
	f.mu.Lock()
	if len(f.uids) > 2*(len(v.msgs)-v.nGone)+1024 {
		// Many kept messages have left the folder.
		live := make([]uint32, 0, len(v.msgs))
		for _, m := range v.msgs {
			live = append(live, m.UID)
		}
		f.keepOnly(live)
	}
	msgs = make([]sortMsg, 0, len(nums))
	var missing []int // of msgs, lacking keys of need
	at := 0
	for _, n := range nums {
		m := v.msgs[n-1]
		if m.gone {
			continue
		}
		p, ok := f.find(m.UID, at)
		at = p
		if !ok {
			p = -1
		}
		if !ok || f.keys[p].have&need != need {
			missing = append(missing, len(msgs))
		}
		msgs = append(msgs, sortMsg{Seq: n, UID: m.UID, Size: m.Size, Arrival: m.ReceivedAt, pos: int32(p)})
	}
	if len(missing) > 0 {
		if msgs, err = s.decodeMissing(v, f, msgs, missing, need, op); err != nil {
			f.mu.Unlock()
			return nil, nil, err
		}
		s.srv.sortKeys.account(f, len(f.uids))
	}
	for i := range msgs {
		msgs[i].K = &f.keys[msgs[i].pos]
	}
	return msgs, f, nil
}

// decodeMissing decodes the keys of need of msgs[missing] from their
// summaries into f (locked), and answers msgs with every pos set; a
// message whose summary the store no longer has (expunged meanwhile)
// is left out, as a FETCH would leave it.
func (s *session) decodeMissing(v *view, f *folderKeys, msgs []sortMsg, missing []int, need keyGroup, op string) ([]sortMsg, error) {
	keys := make([]msgKeys, len(missing))
	got := make([]bool, len(missing))
	idx := make([]int, len(missing))
	for k, j := range missing {
		idx[k] = int(msgs[j].Seq) - 1
		if p := msgs[j].pos; p >= 0 {
			keys[k] = f.keys[p]
		}
	}
	next := 0
	err := s.eachSummary(v, idx, op, func(i int, header []byte) error {
		for idx[next] != i {
			next++
		}
		m := &msgs[missing[next]]
		decodeKeys(&keys[next], header, m.Arrival, need)
		got[next] = true
		next++
		return nil
	})
	if err != nil {
		return nil, err
	}
	var newUIDs []uint32
	var newKeys []msgKeys
	var added keyGroup
	if len(f.uids) == 0 && !slices.Contains(got, false) {
		// The folder's first command: every key is new, no copy.
		newUIDs, newKeys = make([]uint32, len(missing)), keys
		for k, j := range missing {
			newUIDs[k] = msgs[j].UID
		}
		missing = nil
	}
	for k, j := range missing {
		switch p := msgs[j].pos; {
		case !got[k]:
		case p >= 0:
			added |= keys[k].have &^ f.keys[p].have
			f.keys[p] = keys[k]
		default:
			newUIDs, newKeys = append(newUIDs, msgs[j].UID), append(newKeys, keys[k])
		}
	}
	for k := range f.ranks {
		if groupOf(sortKey(k))&added != 0 {
			f.ranks[k] = nil
		}
	}
	f.insert(newUIDs, newKeys)
	// Positions move with an insert below the end; find them again, and
	// leave out what has no keys.
	out := msgs[:0]
	at := 0
	for _, m := range msgs {
		p, ok := f.find(m.UID, at)
		at = p
		if ok && f.keys[p].have&need == need {
			m.pos = int32(p)
			out = append(out, m)
		}
	}
	return out, nil
}
