package imapd

import (
	"hash/maphash"
	"slices"
	"sync"
	"time"

	"github.com/emersion/go-imap/v2"
)

// Sort keys as SORT and THREAD compare them, decoded once from a
// message's summary and kept by the server per folder: a message's
// summary never changes under its UID (RFC 9051 section 2.3.1.1: a UID
// is never reused in a folder), so what is decoded of it stays true for
// as long as the message is in the folder, whoever asks, and a folder's
// keys need no invalidation, only additions (new mail, decoded at the
// next SORT) and a sweep of the expunged. The keys are decoded by group,
// as a command needs them: a SORT (DATE) decodes no addresses.

// keyGroup is a set of the groups of sort keys.
type keyGroup uint16

const (
	groupDate    keyGroup = 1 << iota // sent date
	groupSubject                      // base subject, reply or forward
	groupFrom                         // From: addr-mailbox, display
	groupTo                           // To: addr-mailbox, display
	groupCc                           // Cc: addr-mailbox
	groupRefs                         // Message-ID, References, In-Reply-To
	// SEARCH's texts of From, To, Cc and Subject, in the order of
	// keptFields (searchkept.go).
	groupHayFrom
	groupHayTo
	groupHayCc
	groupHaySubject
	groupHays = groupHayFrom | groupHayTo | groupHayCc | groupHaySubject
)

// groupOf is the group a SORT key is decoded in; 0 for ARRIVAL and SIZE,
// which the message's record holds.
func groupOf(k sortKey) keyGroup {
	switch k {
	case sortDate:
		return groupDate
	case sortSubject:
		return groupSubject
	case sortFrom, sortDisplayFrom:
		return groupFrom
	case sortTo, sortDisplayTo:
		return groupTo
	case sortCc:
		return groupCc
	}
	return 0
}

// msgKeys is what SORT and THREAD read of a message, for the groups in
// have.
type msgKeys struct {
	have keyGroup
	// replyOrForward says extracting the base subject took away a reply
	// or forward marker (RFC 5256 section 3, step 5).
	replyOrForward bool
	// sentNs and sent are the sent date (RFC 5256 section 2.2): Unix
	// seconds and the nanoseconds beyond, which compare as the instant
	// whatever the year (UnixNano would overflow outside 1678-2262).
	sentNs int32
	sent   int64
	// subject is the base subject; the address keys and it are
	// canonical (casemap), to compare octet by octet.
	subject                        string
	from, dispFrom, to, dispTo, cc string
	// id hashes the Message-ID, refs the References (or In-Reply-To)
	// of THREAD's step 1 (0: none); see idHash.
	id   uint64
	refs []uint64
	// hay is SEARCH's texts of the fields of keptFields (searchHays),
	// nil until some are decoded: most messages are only sorted.
	hay *[len(keptFields)][]string
}

// compareSent orders by sent date.
func (k *msgKeys) compareSent(o *msgKeys) int {
	if k.sent != o.sent {
		if k.sent < o.sent {
			return -1
		}
		return 1
	}
	return int(k.sentNs) - int(o.sentNs)
}

// idSeed keys idHash. It is chosen at start and never changes: random,
// so that message-ids written to collide cannot be made to thread
// together.
var idSeed = maphash.MakeSeed()

// idHash is the message-id threading links by. Two ids of the 64-bit
// hash are equal by chance about once in 2^64 pairs; 0 stands for none.
func idHash(id []byte) uint64 {
	return max(maphash.Bytes(idSeed, id), 1)
}

// decodeKeys adds to k the groups of want it lacks, from the message's
// summary (or whole header) and arrival.
func decodeKeys(k *msgKeys, header []byte, arrival time.Time, want keyGroup) {
	want &^= k.have
	if want == 0 {
		return
	}
	var fields [hdrFields]bool
	fields[hdrDate] = want&groupDate != 0
	fields[hdrSubject] = want&groupSubject != 0
	fields[hdrFrom] = want&groupFrom != 0
	fields[hdrTo] = want&groupTo != 0
	fields[hdrCc] = want&groupCc != 0
	fields[hdrMessageID] = want&groupRefs != 0
	fields[hdrReferences] = want&groupRefs != 0
	fields[hdrInReplyTo] = want&groupRefs != 0
	raw := headerValues(header, &fields)
	if want&groupDate != 0 {
		t := sentDate(unfoldValue(raw[hdrDate]), arrival)
		k.sent, k.sentNs = t.Unix(), int32(t.Nanosecond())
	}
	if want&groupSubject != 0 {
		k.subject, k.replyOrForward = baseSubject(unfoldValue(raw[hdrSubject]))
	}
	if want&groupFrom != 0 {
		a := firstAddress(unfoldValue(raw[hdrFrom]))
		k.from, k.dispFrom = casemap(a.Mailbox), casemap(displayValue(a))
	}
	if want&groupTo != 0 {
		a := firstAddress(unfoldValue(raw[hdrTo]))
		k.to, k.dispTo = casemap(a.Mailbox), casemap(displayValue(a))
	}
	if want&groupCc != 0 {
		k.cc = casemap(firstAddress(unfoldValue(raw[hdrCc])).Mailbox)
	}
	if want&groupRefs != 0 {
		k.id, k.refs = threadIDs(raw[hdrMessageID], raw[hdrReferences], raw[hdrInReplyTo])
	}
	if want&groupHays != 0 {
		hay := searchHays(header, want)
		// A new array: the one k has may be another copy's.
		if k.hay != nil {
			for i := range keptFields {
				if want&(groupHayFrom<<i) == 0 {
					hay[i] = k.hay[i]
				}
			}
		}
		k.hay = &hay
	}
	k.have |= want
}

// threadIDs is what step 1 of THREAD=REFERENCES reads of a message
// (RFC 5256 section 3): the hash of its Message-ID, 0 if it has no valid
// one, and those of its References, or else of the first message-id of
// In-Reply-To, without the message's own id (linking it would be a
// loop anyway).
func threadIDs(messageID, references, inReplyTo []byte) (id uint64, refs []uint64) {
	var buf [4][]byte
	if ids := msgIDs(buf[:0], messageID); len(ids) > 0 {
		id = idHash(ids[0])
	}
	ids := msgIDs(buf[:0], references)
	if len(ids) == 0 {
		ids = msgIDs(buf[:0], inReplyTo)
		ids = ids[:min(len(ids), 1)]
	}
	if len(ids) == 0 {
		return id, nil
	}
	refs = make([]uint64, 0, len(ids))
	for _, r := range ids {
		if h := idHash(r); h != id {
			refs = append(refs, h)
		}
	}
	return id, refs
}

// defaultSortKeyMessages bounds the messages whose keys a Server keeps,
// all folders together: some 200 bytes each beside their strings, so
// about 100 MB for 400,000.
const defaultSortKeyMessages = 400_000

// sortKeyCache is a server's sort keys, by folder, the least recently
// sorted folders dropped when more than max messages are kept.
type sortKeyCache struct {
	max int
	// mu guards folders, total and clock; it is never held while a
	// folder's own mutex is waited for.
	mu      sync.Mutex
	folders map[int64]*folderKeys
	total   int
	clock   uint64
}

func newSortKeyCache(max int) *sortKeyCache {
	return &sortKeyCache{max: max, folders: make(map[int64]*folderKeys)}
}

// folderKeys is one folder's keys, by UID.
type folderKeys struct {
	id int64
	// used (the cache's clock at the last use), counted (messages
	// counted in the cache's total) and dropped (no longer in the
	// cache) are guarded by the cache's mu.
	used    uint64
	counted int
	dropped bool

	// mu guards what follows; a SORT or THREAD holds it from reading
	// the keys to the end of its sort.
	mu sync.Mutex
	// uids ascend; keys[i] is message uids[i]'s.
	uids []uint32
	keys []msgKeys
	// ranks[k], when not nil, is the rank of each message's key k
	// among the folder's (sortorder.go): equal keys the same rank.
	ranks [rankedKeys][]int32
	// threads is the last THREAD answer of each algorithm.
	threads map[imap.ThreadAlgorithm]threadMemo
}

// threadMemo is a THREAD answer, its nodes numbering the messages threaded
// (uids) from 1.
type threadMemo struct {
	uids []uint32
	tree []*threadNode
}

// thread answers the threads algorithm (thread) makes of msgs, numbering
// msgs from 1, the answer kept while the same messages are asked again:
// their keys, so their threads, do not change while they are in the
// folder (sequence numbers may, but not their order). f.mu is held.
func (f *folderKeys) thread(algorithm imap.ThreadAlgorithm, msgs []sortMsg, thread func([]sortMsg) []*threadNode) []*threadNode {
	if m, ok := f.threads[algorithm]; ok && slices.EqualFunc(m.uids, msgs, func(u uint32, m sortMsg) bool { return u == m.UID }) {
		return m.tree
	}
	numbered := slices.Clone(msgs)
	uids := make([]uint32, len(msgs))
	for i := range numbered {
		numbered[i].Seq = uint32(i + 1)
		uids[i] = msgs[i].UID
	}
	tree := thread(numbered)
	if f.threads == nil {
		f.threads = make(map[imap.ThreadAlgorithm]threadMemo)
	}
	f.threads[algorithm] = threadMemo{uids: uids, tree: tree}
	return tree
}

// folder answers the keys of folder id, kept or new, not locked.
func (c *sortKeyCache) folder(id int64) *folderKeys {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clock++
	f := c.folders[id]
	if f == nil {
		f = &folderKeys{id: id}
		c.folders[id] = f
	}
	f.used = c.clock
	return f
}

// account records that f now holds n messages, and drops the least
// recently used folders while the cache holds more than its bound; f
// itself last, when it alone is over the bound.
func (c *sortKeyCache) account(f *folderKeys, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f.dropped {
		return
	}
	c.total += n - f.counted
	f.counted = n
	for c.total > c.max {
		var lru *folderKeys
		for _, g := range c.folders {
			if g != f && (lru == nil || g.used < lru.used) {
				lru = g
			}
		}
		if lru == nil {
			lru = f
		}
		c.total -= lru.counted
		lru.counted, lru.dropped = 0, true
		delete(c.folders, lru.id)
		if lru == f {
			return
		}
	}
}

// find is the position of uid in f.uids at or after from, and whether
// it is there; uids asked in ascending order make the walk one pass.
func (f *folderKeys) find(uid uint32, from int) (int, bool) {
	i := from
	// Gallop, then search: a folder's cache often holds long runs the
	// query skips.
	step := 1
	for i+step < len(f.uids) && f.uids[i+step] < uid {
		i += step
		step *= 2
	}
	j, ok := slices.BinarySearch(f.uids[i:min(i+step+1, len(f.uids))], uid)
	return i + j, ok
}

// insert adds messages not yet kept, in ascending UID order, with their
// keys, which f may keep as they are; every rank is dropped.
func (f *folderKeys) insert(uids []uint32, keys []msgKeys) {
	if len(uids) == 0 {
		return
	}
	f.ranks, f.threads = [rankedKeys][]int32{}, nil
	if len(f.uids) == 0 {
		// The first command on the folder: uids and keys are the
		// caller's to give.
		f.uids, f.keys = uids, keys
		return
	}
	if uids[0] > f.uids[len(f.uids)-1] {
		// New mail, the usual case: it goes at the end.
		f.uids = append(f.uids, uids...)
		f.keys = append(f.keys, keys...)
		return
	}
	nu := make([]uint32, 0, len(f.uids)+len(uids))
	nk := make([]msgKeys, 0, len(f.uids)+len(uids))
	i, j := 0, 0
	for i < len(f.uids) || j < len(uids) {
		if j == len(uids) || i < len(f.uids) && f.uids[i] < uids[j] {
			nu, nk = append(nu, f.uids[i]), append(nk, f.keys[i])
			i++
		} else {
			nu, nk = append(nu, uids[j]), append(nk, keys[j])
			j++
		}
	}
	f.uids, f.keys = nu, nk
}

// keepOnly drops the messages of f whose UIDs are not in live
// (ascending), with every rank.
func (f *folderKeys) keepOnly(live []uint32) {
	n, j := 0, 0
	for i, uid := range f.uids {
		for j < len(live) && live[j] < uid {
			j++
		}
		if j < len(live) && live[j] == uid {
			f.uids[n], f.keys[n] = uid, f.keys[i]
			n++
		}
	}
	clear(f.keys[n:])
	f.uids, f.keys = slices.Clip(f.uids[:n]), slices.Clip(f.keys[:n])
	f.ranks, f.threads = [rankedKeys][]int32{}, nil
}
