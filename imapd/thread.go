package imapd

import (
	"bytes"
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/emersion/go-imap/v2"
)

// THREAD (RFC 5256 section 3): ORDEREDSUBJECT and REFERENCES, and REFS
// (draft-ietf-morg-inthread), as pure
// functions of the messages' summaries, like sortMessages (sort.go), and
// the wire form of their answer.

// threadNode is one node of a thread tree: a message (Seq, UID), or a
// dummy standing for a message that is not there (Seq 0), which only a
// top-level node of THREAD=REFERENCES can be.
type threadNode struct {
	Seq, UID uint32
	Children []*threadNode
}

// threadWire is the THREAD response's data for threads (RFC 5256 section
// 4): "(1 2)(3 (4)(5))", with UIDs for UID THREAD.
func threadWire(threads []*threadNode, uids bool) string {
	var b strings.Builder
	for _, t := range threads {
		b.WriteByte('(')
		writeThread(&b, t, uids)
		b.WriteByte(')')
	}
	return b.String()
}

// writeThread writes a node and what is below it: a message with one
// child is followed by it ("1 2"), one with several by each in its own
// parentheses ("1 (2)(3)"); a dummy writes nothing of its own.
func writeThread(b *strings.Builder, n *threadNode, uids bool) {
	if n.Seq != 0 {
		id := n.Seq
		if uids {
			id = n.UID
		}
		b.WriteString(strconv.FormatUint(uint64(id), 10))
	}
	switch {
	case len(n.Children) == 1:
		if n.Seq != 0 {
			b.WriteByte(' ')
		}
		writeThread(b, n.Children[0], uids)
	case len(n.Children) > 1:
		if n.Seq != 0 {
			b.WriteByte(' ')
		}
		for _, c := range n.Children {
			b.WriteByte('(')
			writeThread(b, c, uids)
			b.WriteByte(')')
		}
	}
}

// threadOrderedSubject is THREAD=ORDEREDSUBJECT (RFC 5256 section 3):
// messages grouped by base subject; in each group, by sent date (then
// sequence number), the first is the parent of all the others; groups
// in the order of their first messages.
func threadOrderedSubject(msgs []sortMsg) []*threadNode {
	msgs = withKeys(msgs, groupDate|groupSubject)
	byDate := func(a, b *sortMsg) int {
		return cmp.Or(a.K.compareSent(b.K), cmp.Compare(a.Seq, b.Seq))
	}
	idx := make([]*sortMsg, len(msgs))
	for i := range msgs {
		idx[i] = &msgs[i]
	}
	slices.SortFunc(idx, func(a, b *sortMsg) int {
		return cmp.Or(strings.Compare(a.K.subject, b.K.subject), byDate(a, b))
	})
	type group struct {
		first *sortMsg
		node  *threadNode
	}
	var groups []group
	for i := 0; i < len(idx); {
		j := i + 1
		for j < len(idx) && idx[j].K.subject == idx[i].K.subject {
			j++
		}
		root := &threadNode{Seq: idx[i].Seq, UID: idx[i].UID}
		for _, m := range idx[i+1 : j] {
			root.Children = append(root.Children, &threadNode{Seq: m.Seq, UID: m.UID})
		}
		groups = append(groups, group{idx[i], root})
		i = j
	}
	slices.SortStableFunc(groups, func(a, b group) int { return byDate(a.first, b.first) })
	out := make([]*threadNode, len(groups))
	for i, g := range groups {
		out[i] = g.node
	}
	return out
}

// container is a node of the REFERENCES algorithm: a message, or a
// message-id nothing in the set has (info nil, a dummy).
type container struct {
	info     *sortMsg
	parent   *container
	children []*container
	// gone marks a top-level dummy merged into another (step 5.C).
	gone bool
}

// ancestorOf reports whether c is p or above it.
func (c *container) ancestorOf(p *container) bool {
	for ; p != nil; p = p.parent {
		if p == c {
			return true
		}
	}
	return false
}

// link makes c a child of p unless that makes a loop (RFC 5256 section
// 3, steps 1.A and 1.B): a loop needs c at or above p, which can only be
// when c is p or has children, so the walk up from p is only taken then.
func link(p, c *container) bool {
	if p == c || len(c.children) > 0 && c.ancestorOf(p) {
		return false
	}
	if c.parent != nil {
		c.parent.children = slices.DeleteFunc(c.parent.children, func(x *container) bool { return x == c })
	}
	c.parent = p
	p.children = append(p.children, c)
	return true
}

// threadReferences is THREAD=REFERENCES (RFC 5256 section 3, steps 1 to
// 6).
func threadReferences(msgs []sortMsg) []*threadNode {
	top := threadLinks(withKeys(msgs, groupDate|groupSubject|groupRefs))

	// Step 4: sort the top level by sent date (a dummy by its first
	// child, once its children are sorted).
	for _, c := range top {
		if c.info == nil {
			sortSiblings(c.children)
		}
	}
	sortSiblings(top)

	// Step 5: gather threads of the same base subject.
	top = mergeSubjects(top)

	// Step 6: sort every set of siblings, the deepest first (sortTree
	// sorts children before their parents' siblings).
	for _, c := range top {
		sortTree(c)
	}
	sortSiblings(top)
	return nodes(top)
}

// threadRefs is THREAD=REFS (draft-ietf-morg-inthread section 3.1):
// REFERENCES' steps 1 to 3, no gathering by subject, siblings sorted by
// sent date as in step 6, and the threads in the order of their latest
// message, so that a thread a reply just came to sorts last. Webmail
// (Roundcube) asks for it before REFERENCES: with it, the thread view
// needs no SORT of its own to order the threads by their latest message.
func threadRefs(msgs []sortMsg) []*threadNode {
	top := threadLinks(withKeys(msgs, groupDate|groupRefs))
	for _, c := range top {
		sortTree(c)
	}
	type keyed struct {
		c      *container
		latest *msgKeys
		seq    uint32
	}
	ks := make([]keyed, len(top))
	for i, c := range top {
		ks[i] = keyed{c: c, latest: c.latest()}
		if c.info != nil {
			ks[i].seq = c.info.Seq
		}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int {
		return cmp.Or(compareSentOrNone(a.latest, b.latest), cmp.Compare(a.seq, b.seq))
	})
	for i := range ks {
		top[i] = ks[i].c
	}
	return nodes(top)
}

// latest is the keys of the latest sent message in the tree under c,
// c's included; nil for none.
func (c *container) latest() *msgKeys {
	var t *msgKeys
	if c.info != nil {
		t = c.info.K
	}
	for _, k := range c.children {
		if kt := k.latest(); compareSentOrNone(kt, t) > 0 {
			t = kt
		}
	}
	return t
}

// compareSentOrNone orders by sent date, none (nil) before any.
func compareSentOrNone(a, b *msgKeys) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	return a.compareSent(b)
}

func nodes(top []*container) []*threadNode {
	out := make([]*threadNode, len(top))
	for i, c := range top {
		out[i] = c.node()
	}
	return out
}

// threadLinks is steps 1 to 3 of REFERENCES, which REFS shares: the
// top-level containers, linked by Message-ID, In-Reply-To and
// References, dummies pruned.
func threadLinks(msgs []sortMsg) []*container {
	ids := make(map[uint64]*container, len(msgs))
	get := func(id uint64) *container {
		c := ids[id]
		if c == nil {
			c = &container{}
			ids[id] = c
		}
		return c
	}
	conts := make([]*container, len(msgs))
	for i := range msgs {
		m := &msgs[i]
		// Step 1: the message's own container. A message without a
		// valid Message-ID, or whose Message-ID an earlier message has,
		// gets one of its own that nothing references.
		var c *container
		if m.K.id != 0 {
			if ex := ids[m.K.id]; ex == nil || ex.info == nil {
				c = get(m.K.id)
			}
		}
		if c == nil {
			c = &container{}
		}
		c.info = m
		conts[i] = c
		// 1.A: each reference the parent of the next, where the next
		// has no parent yet and no loop comes of it.
		var prev *container
		for _, r := range m.K.refs {
			rc := get(r)
			if prev != nil && rc.parent == nil {
				link(prev, rc)
			}
			prev = rc
		}
		// 1.B: the last reference is the parent of the message, in
		// place of any parent an earlier message's References gave it.
		if prev != nil && c.parent != prev {
			link(prev, c)
		}
	}

	// Step 2: the containers without a parent are the root's children,
	// in the order their messages (or first references) came.
	var roots []*container
	seen := make(map[*container]bool)
	addRoot := func(c *container) {
		for c.parent != nil {
			c = c.parent
		}
		if !seen[c] {
			seen[c] = true
			roots = append(roots, c)
		}
	}
	for _, c := range conts {
		addRoot(c)
	}

	// Step 3: prune dummies.
	var top []*container
	for _, r := range roots {
		top = append(top, prune(r, true)...)
	}
	return top
}

// msgIDs appends to out the message-ids of a References, In-Reply-To or
// Message-ID field's value: each "<...>" with an "@" inside and no white
// space (RFC 5322 section 3.6.4), as written between the brackets; the
// rest (comments, the phrases of old In-Reply-To fields, malformed ids)
// is ignored.
func msgIDs(out [][]byte, v []byte) [][]byte {
	for {
		lt := bytes.IndexByte(v, '<')
		if lt < 0 {
			return out
		}
		v = v[lt+1:]
		at, end := -1, -1
	scan:
		for i, c := range v {
			switch c {
			case '>':
				end = i
				break scan
			case '<', ' ', '\t', '\r', '\n':
				break scan
			case '@':
				at = i
			}
		}
		if end < 0 {
			continue // v now starts after the '<': the scan goes on from there
		}
		if at > 0 && at < end-1 {
			out = append(out, v[:end:end])
		}
		v = v[end+1:]
	}
}

// prune is step 3 for the tree under c: its dummies without children
// go, a dummy's children take its place, except a top-level dummy with
// more than one child (its children would become top-level threads of
// their own). It answers what takes c's place.
func prune(c *container, top bool) []*container {
	var kids []*container
	for _, k := range c.children {
		kids = append(kids, prune(k, false)...)
	}
	c.children = kids
	for _, k := range kids {
		k.parent = c
	}
	if c.info != nil {
		return []*container{c}
	}
	switch {
	case len(kids) == 0:
		return nil
	case top && len(kids) > 1:
		return []*container{c}
	}
	for _, k := range kids {
		k.parent = c.parent
	}
	return kids
}

// date is the sent date a node sorts by: its message's, or its first
// child's for a dummy (RFC 5256 section 3, steps 4 and 6).
func (c *container) date() (*msgKeys, uint32) {
	for c.info == nil && len(c.children) > 0 {
		c = c.children[0]
	}
	if c.info == nil {
		return nil, 0
	}
	return c.info.K, c.info.Seq
}

func sortSiblings(cs []*container) {
	slices.SortStableFunc(cs, func(a, b *container) int {
		ta, sa := a.date()
		tb, sb := b.date()
		return cmp.Or(compareSentOrNone(ta, tb), cmp.Compare(sa, sb))
	})
}

// sortTree sorts the siblings under c, the deepest first.
func sortTree(c *container) {
	for _, k := range c.children {
		sortTree(k)
	}
	sortSiblings(c.children)
}

// subjectOf is a top-level node's thread subject (step 5.B.i): its
// message's base subject, or its first child's for a dummy.
func (c *container) subjectOf() string {
	if c.info == nil && len(c.children) > 0 {
		c = c.children[0]
	}
	if c.info == nil {
		return ""
	}
	return c.info.K.subject
}

func (c *container) replyOrForward() bool { return c.info != nil && c.info.K.replyOrForward }

// mergeSubjects is step 5: top-level threads of the same base subject
// become one. It answers the new top level.
func mergeSubjects(top []*container) []*container {
	table := make(map[string]*container)
	for _, c := range top {
		subj := c.subjectOf()
		if subj == "" {
			continue
		}
		old, ok := table[subj]
		switch {
		case !ok:
			table[subj] = c
		case old.info != nil && (c.info == nil || old.replyOrForward() && !c.replyOrForward()):
			table[subj] = c
		}
	}
	// A thread merged into another gets a parent, or is marked gone (a
	// dummy whose children went to another dummy); new dummies join
	// the top level.
	all := slices.Clone(top)
	for _, c := range top {
		subj := c.subjectOf()
		t := table[subj]
		if subj == "" || t == c || c.parent != nil || c.gone {
			continue
		}
		switch {
		case t.info == nil && c.info == nil:
			for _, k := range c.children {
				k.parent = t
			}
			t.children = append(t.children, c.children...)
			c.children, c.gone = nil, true
		case t.info == nil, c.replyOrForward() && !t.replyOrForward():
			c.parent = t
			t.children = append(t.children, c)
		default:
			d := &container{children: []*container{t, c}}
			t.parent, c.parent = d, d
			table[subj] = d
			all = append(all, d)
		}
	}
	return slices.DeleteFunc(all, func(c *container) bool { return c.parent != nil || c.gone })
}

// node is the threadNode tree of c.
func (c *container) node() *threadNode {
	n := &threadNode{}
	if c.info != nil {
		n.Seq, n.UID = c.info.Seq, c.info.UID
	}
	for _, k := range c.children {
		n.Children = append(n.Children, k.node())
	}
	return n
}

// threadAlgRefs is THREAD=REFS, which go-imap does not name.
const threadAlgRefs imap.ThreadAlgorithm = "REFS"
