package imapd

import (
	"cmp"
	"slices"
	"strings"
)

// Sorting by decoded keys (sortkeys.go). A folder's keys can carry
// ranks: for a key, each message's place among the distinct values the
// folder holds, so that comparing two messages is comparing two
// integers, and a sort by one key is a counting sort, linear in the
// messages. Ranks are made by one sort of the folder's keys and kept
// until a message comes or goes.

// rankedKeys sizes the ranks of a folder: indexed by sortKey, of which
// ARRIVAL and SIZE, held by the message's record, have none.
const rankedKeys = int(sortDisplayTo) + 1

// ranked reports whether key k has ranks.
func ranked(k sortKey) bool { return groupOf(k) != 0 }

// compareKeys orders two messages' decoded keys by k, one of the
// ranked keys.
func compareKeys(a, b *msgKeys, k sortKey) int {
	switch k {
	case sortDate:
		return a.compareSent(b)
	case sortSubject:
		return strings.Compare(a.subject, b.subject)
	case sortFrom:
		return strings.Compare(a.from, b.from)
	case sortTo:
		return strings.Compare(a.to, b.to)
	case sortCc:
		return strings.Compare(a.cc, b.cc)
	case sortDisplayFrom:
		return strings.Compare(a.dispFrom, b.dispFrom)
	case sortDisplayTo:
		return strings.Compare(a.dispTo, b.dispTo)
	}
	return 0
}

// rank answers the ranks of key k over f's messages, making them if
// needed: the messages whose keys lack k's group rank -1. f.mu is held.
func (f *folderKeys) rank(k sortKey) []int32 {
	if r := f.ranks[k]; r != nil {
		return r
	}
	g := groupOf(k)
	idx := make([]int32, 0, len(f.keys))
	for i := range f.keys {
		if f.keys[i].have&g != 0 {
			idx = append(idx, int32(i))
		}
	}
	slices.SortFunc(idx, func(a, b int32) int { return compareKeys(&f.keys[a], &f.keys[b], k) })
	r := make([]int32, len(f.keys))
	for i := range r {
		r[i] = -1
	}
	next := int32(-1)
	for i, j := range idx {
		if i == 0 || compareKeys(&f.keys[idx[i-1]], &f.keys[j], k) != 0 {
			next++
		}
		r[j] = next
	}
	f.ranks[k] = r
	return r
}

// orderMsgs answers the order criteria make of msgs (in sequence order,
// keys decoded for every criterion), as indexes of msgs (RFC 5256
// section 3): ties in ascending sequence number whatever REVERSE says.
// rank, if not nil, answers for a ranked key the ranks msgs' pos index,
// or nil when it has none.
func orderMsgs(msgs []sortMsg, criteria []sortCriterion, rank func(sortKey) []int32) []int32 {
	ranks := make([][]int32, len(criteria))
	if rank != nil {
		for i, c := range criteria {
			if ranked(c.Key) {
				ranks[i] = rank(c.Key)
			}
		}
	}
	if len(criteria) == 1 && ranks[0] != nil {
		return countingSort(msgs, ranks[0], criteria[0].Reverse)
	}
	idx := make([]int32, len(msgs))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(a, b int32) int {
		ma, mb := &msgs[a], &msgs[b]
		for i, c := range criteria {
			var r int
			switch {
			case ranks[i] != nil:
				r = cmp.Compare(ranks[i][ma.pos], ranks[i][mb.pos])
			case c.Key == sortArrival:
				r = ma.Arrival.Compare(mb.Arrival)
			case c.Key == sortSize:
				r = cmp.Compare(ma.Size, mb.Size)
			default:
				r = compareKeys(ma.K, mb.K, c.Key)
			}
			if c.Reverse {
				r = -r
			}
			if r != 0 {
				return r
			}
		}
		return cmp.Compare(ma.Seq, mb.Seq)
	})
	return idx
}

// countingSort orders msgs (in sequence order) by their ranks, stably,
// so that ties stay in sequence order, reversed or not, and answers
// the order as indexes of msgs.
func countingSort(msgs []sortMsg, ranks []int32, reverse bool) []int32 {
	var top int32
	for i := range msgs {
		top = max(top, ranks[msgs[i].pos])
	}
	slot := func(m *sortMsg) int32 {
		if reverse {
			return top - ranks[m.pos]
		}
		return ranks[m.pos]
	}
	start := make([]int32, top+2)
	for i := range msgs {
		start[slot(&msgs[i])+1]++
	}
	for i := 1; i < len(start); i++ {
		start[i] += start[i-1]
	}
	out := make([]int32, len(msgs))
	for i := range msgs {
		s := slot(&msgs[i])
		out[start[s]] = int32(i)
		start[s]++
	}
	return out
}
