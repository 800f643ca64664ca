package imapd

import (
	"cmp"
	"errors"
	"slices"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"

	"github.com/mailhost/mailhost/mailstore"
)

// view is a session's picture of its selected folder: the messages the
// client has been told about, in sequence-number order (msgs[i] is
// sequence number i+1).
type view struct {
	folder   mailstore.Folder
	readOnly bool
	msgs     []viewMsg
	// maxUID is the highest UID the view has held; anything above it in
	// the store is new (UIDs only grow, RFC 9051 section 2.3.1.1).
	maxUID uint32
	// searchRes is the saved result of SEARCH RETURN (SAVE), "$" (RFC 5182).
	searchRes imap.UIDSet
	// nGone counts the messages of msgs marked gone.
	nGone int
	// recent holds the UIDs this session claimed as \Recent (recent.go);
	// claimNew claims among new messages, and rev1 says whether the
	// session reports RECENT at all.
	recent   map[uint32]struct{}
	claimNew func(uids []uint32)
	rev1     bool
	// recentDropped is set when a recent message left the view since
	// RECENT was last sent (recent.go's tellRecent).
	recentDropped bool
	// flagList is the folder's flags as FLAGS lists them: the system
	// flags, then every other flag a message of the view has held since
	// SELECT, in the order seen; flagKeys holds their mailstore.FoldFlag
	// keys. Kept as messages come and change (noteFlags), so that a
	// STORE costs what it changes, not a pass over every message's
	// flags.
	flagList []imap.Flag
	flagKeys map[string]struct{}
	// condStore and qresync say CONDSTORE and QRESYNC are enabled
	// (condstore.go): apply then sends MODSEQ with flags, and VANISHED
	// instead of EXPUNGE.
	condStore, qresync bool
}

type viewMsg struct {
	mailstore.Message
	// gone marks a message removed from the store while EXPUNGE could not
	// be sent (during FETCH, STORE or SEARCH, RFC 9051 section 7.5.1); it
	// keeps its sequence number until the next command that allows one.
	gone bool
}

// Select opens a folder (SELECT, or EXAMINE read-only).
func (s *session) Select(name string, options *imap.SelectOptions) (*imap.SelectData, error) {
	if s.user == nil {
		return nil, errNotLoggedIn
	}
	s.sel = nil
	if _, err := s.account(); err != nil {
		return nil, s.fail("select", err)
	}
	f, err := s.st.Folder(s.ctx, s.user.ID, name)
	if err != nil {
		return nil, s.fail("select", err)
	}
	// Anything signalled before the load is in it. The folder record was
	// read first, so the view's HighestModSeq is at most that of the
	// messages loaded: changes read again later are already in the view
	// and change nothing, and none is missed.
	s.noteChanges()
	s.changed = false
	msgs, err := s.st.Messages(s.ctx, s.user.ID, f.ID)
	if err != nil {
		return nil, s.fail("select", err)
	}
	v := &view{folder: f, readOnly: options.ReadOnly, msgs: make([]viewMsg, len(msgs))}
	var firstUnseen uint32
	for i, m := range msgs {
		v.msgs[i] = viewMsg{Message: m}
		v.noteFlags(m.Flags)
		v.maxUID = max(v.maxUID, m.UID)
		if firstUnseen == 0 && !hasFlag(m.Flags, imap.FlagSeen) {
			firstUnseen = uint32(i + 1)
		}
	}
	s.markRecent(v, msgs)
	v.rev1 = s.rev1()
	v.claimNew = func(uids []uint32) { s.markNewRecent(v, uids) }
	s.sel = v
	flags := v.flags()
	// A read-only folder lets the client change no flag for good: an
	// empty PERMANENTFLAGS says so (RFC 9051 section 7.1, as Dovecot
	// answers EXAMINE).
	permanent := []imap.Flag{}
	if !options.ReadOnly {
		permanent = append(slices.Clone(flags), imap.FlagWildcard)
	}
	return &imap.SelectData{
		Flags:             flags,
		PermanentFlags:    permanent,
		NumMessages:       uint32(len(v.msgs)),
		UIDNext:           imap.UID(max(f.UIDNext, v.maxUID+1)),
		UIDValidity:       f.UIDValidity,
		FirstUnseenSeqNum: firstUnseen,
		NumRecent:         v.numRecent(),
		HighestModSeq:     v.highestModSeq(),
		MailboxID:         mailboxObjectID(f.ID),
	}, nil
}

// Unselect leaves the selected folder (CLOSE expunges first, through
// Expunge, as imapserver arranges).
func (s *session) Unselect() error {
	s.sel = nil
	return nil
}

// flags lists the system flags and every keyword the view's messages
// have held since SELECT (RFC 9051 section 7.3.5 lets FLAGS name flags
// no message holds).
func (v *view) flags() []imap.Flag {
	if v.flagKeys == nil {
		v.noteFlags(nil)
	}
	return v.flagList
}

// noteFlags adds to the view's flags those of flags it lacks and reports
// whether it did. Its cost is that of flags.
func (v *view) noteFlags(flags []string) (grew bool) {
	if v.flagKeys == nil {
		v.flagKeys = make(map[string]struct{}, len(systemFlags))
		for _, f := range systemFlags {
			v.flagKeys[mailstore.FoldFlag(string(f))] = struct{}{}
			v.flagList = append(v.flagList, f)
		}
	}
	for _, f := range flags {
		k := mailstore.FoldFlag(f)
		if _, ok := v.flagKeys[k]; ok {
			continue
		}
		v.flagKeys[k] = struct{}{}
		v.flagList = append(v.flagList, imap.Flag(f))
		grew = true
	}
	return grew
}

// Poll brings the client up to date after a command (imapserver calls it
// after most commands, and for NOOP).
func (s *session) Poll(w *imapserver.UpdateWriter, allowExpunge bool) error {
	if s.user == nil {
		return nil
	}
	if err := s.stillOpen(); err != nil {
		return err
	}
	s.noteChanges()
	if s.sel == nil {
		s.changed = false // Select loads afresh
		return nil
	}
	if !s.changed && !(allowExpunge && s.sel.hasGone()) {
		return s.sel.tellRecent(w) // after this session's own EXPUNGE
	}
	return s.refresh(w, allowExpunge)
}

// refresh tells the client what changed in the selected folder since its
// view was last brought up to date: EXPUNGE for removed messages (when
// allowed), FETCH FLAGS for changed flags, EXISTS for new messages. It
// reads only the changes after the view's HighestModSeq from the
// folder's change log; a view further behind than the log reaches
// (mailstore.ErrChangesGone) re-reads the folder instead (reload).
func (s *session) refresh(w *imapserver.UpdateWriter, allowExpunge bool) error {
	v := s.sel
	v.condStore, v.qresync = s.modes()
	s.changed = false
	f, changes, err := s.st.Changes(s.ctx, s.user.ID, v.folder.ID, v.folder.HighestModSeq)
	switch {
	case errors.Is(err, mailstore.ErrChangesGone):
		return s.reload(w, allowExpunge)
	case errors.Is(err, mailstore.ErrFolderNotFound):
		return v.apply(w, allowExpunge, folderDeleted())
	case err != nil:
		return s.fail("refresh", err)
	}
	v.folder = f
	return v.apply(w, allowExpunge, changesDelta(changes))
}

// reload re-reads the selected folder whole and tells the client how it
// differs from the view. The folder record is read before its messages,
// so the view's HighestModSeq is at most that of the messages it holds:
// changes it later reads again from the log are already in the view and
// change nothing (apply is idempotent), none is missed.
func (s *session) reload(w *imapserver.UpdateWriter, allowExpunge bool) error {
	v := s.sel
	v.condStore, v.qresync = s.modes()
	folders, err := s.st.Folders(s.ctx, s.user.ID)
	if err != nil {
		return s.fail("refresh", err)
	}
	i := slices.IndexFunc(folders, func(f mailstore.Folder) bool { return f.ID == v.folder.ID })
	if i < 0 {
		return v.apply(w, allowExpunge, folderDeleted())
	}
	cur, err := s.st.Messages(s.ctx, s.user.ID, v.folder.ID)
	if errors.Is(err, mailstore.ErrFolderNotFound) {
		return v.apply(w, allowExpunge, folderDeleted())
	} else if err != nil {
		return s.fail("refresh", err)
	}
	v.folder = folders[i]
	return v.apply(w, allowExpunge, v.folderDelta(cur))
}

// delta is what changed in the selected folder since the view was last
// brought up to date.
type delta struct {
	// all says every message has left the folder (it was deleted).
	all bool
	// gone are UIDs removed from the folder; some may not be in the view.
	gone map[uint32]bool
	// flags are the flags now of messages whose flags may have changed,
	// and modseqs their ModSeqs now.
	flags   map[uint32][]string
	modseqs map[uint32]uint64
	// added are messages that may be new to the view, in UID order.
	added []mailstore.Message
}

// changesDelta sums up changes from the log, in ModSeq order: a message
// added and removed since is never shown; one changed several times is
// shown once, as it is now.
func changesDelta(changes []mailstore.Change) delta {
	d := delta{gone: map[uint32]bool{}, flags: map[uint32][]string{}, modseqs: map[uint32]uint64{}}
	for _, c := range changes {
		uid := c.Message.UID
		switch c.Kind {
		case mailstore.ChangeAdd:
			d.added = append(d.added, c.Message)
			d.flags[uid] = c.Message.Flags
			d.modseqs[uid] = c.Message.ModSeq
		case mailstore.ChangeFlags:
			d.flags[uid] = c.Message.Flags
			d.modseqs[uid] = c.Message.ModSeq
		case mailstore.ChangeExpunge:
			d.gone[uid] = true
			delete(d.flags, uid)
		}
	}
	added := d.added[:0]
	for _, m := range d.added {
		if !d.gone[m.UID] {
			m.Flags, m.ModSeq = d.flags[m.UID], d.modseqs[m.UID]
			added = append(added, m)
		}
	}
	d.added = added
	return d
}

// folderDelta compares the folder as it is now, cur, with the view.
func (v *view) folderDelta(cur []mailstore.Message) delta {
	d := delta{gone: map[uint32]bool{}, flags: make(map[uint32][]string, len(cur)), modseqs: make(map[uint32]uint64, len(cur))}
	for _, m := range cur {
		d.flags[m.UID] = m.Flags
		d.modseqs[m.UID] = m.ModSeq
		if m.UID > v.maxUID {
			d.added = append(d.added, m)
		}
	}
	for _, m := range v.msgs {
		if _, ok := d.flags[m.UID]; !ok {
			d.gone[m.UID] = true
		}
	}
	return d
}

// folderDeleted is the delta of a folder deleted by another session.
func folderDeleted() delta { return delta{all: true} }

// find is the index in msgs of the message with the UID; msgs are in UID
// order (sequence numbers follow UIDs, RFC 9051 section 2.3.1.2).
func (v *view) find(uid uint32) (int, bool) {
	return slices.BinarySearchFunc(v.msgs, uid, func(m viewMsg, uid uint32) int { return cmp.Compare(m.UID, uid) })
}

// apply brings the view up to date with d and tells the client. Its cost
// is that of d, not of the view (but for a folder deleted, or messages
// still marked gone).
//
// Expunges go first, from the end, so that earlier sequence numbers hold;
// where EXPUNGE may not be sent (during FETCH, STORE and SEARCH, RFC 9051
// section 7.5.1) the message is marked gone and keeps its sequence number
// until a command that allows it. Then FETCH FLAGS for changed flags, in
// sequence order, and EXISTS once for the new messages.
func (v *view) apply(w *imapserver.UpdateWriter, allowExpunge bool, d delta) error {
	var out []int // indices of messages that left, in any order
	switch {
	case d.all:
		for i := range v.msgs {
			out = append(out, i)
		}
	default:
		for uid := range d.gone {
			if i, ok := v.find(uid); ok {
				out = append(out, i)
			}
		}
		if allowExpunge && v.nGone > 0 {
			for i, m := range v.msgs {
				if m.gone && !d.gone[m.UID] {
					out = append(out, i)
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b int) int { return cmp.Compare(b, a) })
	var vanished []uint32 // with QRESYNC, one VANISHED for them all
	for _, i := range out {
		m := &v.msgs[i]
		if !allowExpunge {
			if !m.gone {
				m.gone = true
				v.nGone++
			}
			continue
		}
		if v.qresync {
			vanished = append(vanished, m.UID)
		} else if err := w.WriteExpunge(uint32(i + 1)); err != nil {
			return err
		}
		if m.gone {
			v.nGone--
		}
		v.dropRecent(m.UID)
		v.msgs = slices.Delete(v.msgs, i, i+1)
	}
	if len(vanished) > 0 {
		if err := w.WriteVanished(uidSet(vanished)); err != nil {
			return err
		}
	}

	if err := v.announceNewFlags(w, d); err != nil {
		return err
	}

	uids := make([]uint32, 0, len(d.flags))
	for uid := range d.flags {
		uids = append(uids, uid)
	}
	slices.Sort(uids)
	for _, uid := range uids {
		i, ok := v.find(uid)
		if !ok || v.msgs[i].gone {
			continue
		}
		m := &v.msgs[i]
		now := d.flags[uid]
		modseq, ok := d.modseqs[uid]
		if !ok {
			modseq = m.ModSeq
		}
		// Once CONDSTORE is enabled a new MODSEQ is news even with the
		// same flags (RFC 7162 section 3.1: the client's cache keeps it).
		if changed := !sameFlags(now, m.Flags); changed || (v.condStore && modseq != m.ModSeq) {
			if changed {
				v.noteFlags(now)
			}
			m.Flags, m.ModSeq = now, modseq
			var err error
			if v.condStore {
				err = w.WriteMessageFlagsModSeq(uint32(i+1), imap.UID(m.UID), toIMAPFlags(v.withRecent(m.Message).Flags), imapModSeq(modseq))
			} else {
				err = w.WriteMessageFlags(uint32(i+1), imap.UID(m.UID), toIMAPFlags(v.withRecent(m.Message).Flags))
			}
			if err != nil {
				return err
			}
		}
		m.ModSeq = modseq
	}

	var added []uint32
	for _, m := range d.added {
		if m.UID > v.maxUID {
			v.noteFlags(m.Flags)
			v.msgs = append(v.msgs, viewMsg{Message: m})
			v.maxUID = m.UID
			added = append(added, m.UID)
		}
	}
	if len(added) == 0 {
		return v.tellRecent(w)
	}
	if v.claimNew != nil {
		v.claimNew(added)
	}
	if err := w.WriteNumMessages(uint32(len(v.msgs))); err != nil {
		return err
	}
	if v.rev1 {
		// RFC 3501 section 7.3.2: RECENT goes with EXISTS when it changes.
		v.recentDropped = false
		return w.WriteNumRecent(v.numRecent())
	}
	return nil
}

func (v *view) hasGone() bool { return v.nGone > 0 }

// announceNewFlags sends FLAGS and PERMANENTFLAGS again when the changes
// d bring a keyword the view's folder did not have (set by another
// session, or on a message delivered with it), before any FETCH FLAGS
// names it: RFC 9051 section 7.3.5 has FLAGS sent when the list
// changes, and a client that keeps the list would otherwise meet an
// unknown keyword, as Dovecot's conformance tests check. (This
// session's own STORE announces its keywords itself, store.go.)
func (v *view) announceNewFlags(w *imapserver.UpdateWriter, d delta) error {
	grew := false
	for uid, flags := range d.flags {
		if i, ok := v.find(uid); ok && !v.msgs[i].gone && v.noteFlags(flags) {
			grew = true
		}
	}
	for _, m := range d.added {
		if m.UID > v.maxUID && v.noteFlags(m.Flags) {
			grew = true
		}
	}
	if !grew {
		return nil
	}
	flags := v.flags()
	if err := w.WriteMailboxFlags(flags); err != nil {
		return err
	}
	if v.readOnly {
		return nil // EXAMINE: PERMANENTFLAGS stays ()
	}
	return w.WritePermanentFlags(append(slices.Clone(flags), imap.FlagWildcard))
}

// indices resolves a sequence or UID set, "*" and "$" included, to
// positions in msgs, in order. Numbers that name no message are ignored.
func (v *view) indices(numSet imap.NumSet) []int {
	if imap.IsSearchRes(numSet) {
		numSet = v.searchRes
	}
	var out []int
	switch set := numSet.(type) {
	case imap.SeqSet:
		set = slices.Clone(set)
		n := uint32(len(v.msgs))
		for i := range set {
			staticRange(&set[i].Start, &set[i].Stop, n)
		}
		for i := range v.msgs {
			if set.Contains(uint32(i + 1)) {
				out = append(out, i)
			}
		}
	case imap.UIDSet:
		set = v.staticUIDs(set)
		for i, m := range v.msgs {
			if set.Contains(imap.UID(m.UID)) {
				out = append(out, i)
			}
		}
	}
	return out
}

// checkSeqSet answers BAD for a message sequence set that names a number
// beyond the last message, or "*" in an empty folder (RFC 9051 section 9,
// seq-number: "The server should respond with a tagged BAD response"), as
// Dovecot does; a UID set may name UIDs that are gone.
func (v *view) checkSeqSet(numSet imap.NumSet) error {
	set, ok := numSet.(imap.SeqSet)
	if !ok {
		return nil
	}
	n := uint32(len(v.msgs))
	for _, r := range set {
		if r.Start > n || r.Stop > n || (n == 0 && (r.Start == 0 || r.Stop == 0)) {
			return &imap.Error{Type: imap.StatusResponseTypeBad, Code: imap.ResponseCodeClientBug, Text: "Invalid message sequence number"}
		}
	}
	return nil
}

// staticUIDs is a copy of set with "*" resolved.
func (v *view) staticUIDs(set imap.UIDSet) imap.UIDSet {
	set = slices.Clone(set)
	for i := range set {
		staticRange((*uint32)(&set[i].Start), (*uint32)(&set[i].Stop), v.lastUID())
	}
	return set
}

// lastUID is the largest UID in the view, what "*" means in a UID set.
func (v *view) lastUID() uint32 {
	if len(v.msgs) == 0 {
		return 0
	}
	return v.msgs[len(v.msgs)-1].UID
}

// staticRange replaces "*" (0) by the largest number in use; a range is
// the same either way round (RFC 9051 section 9, seq-range).
func staticRange(start, stop *uint32, largest uint32) {
	if *start == 0 {
		*start = largest
	}
	if *stop == 0 {
		*stop = largest
	}
	if *start > *stop {
		*start, *stop = *stop, *start
	}
}

// uids lists the UIDs of the messages at idx that are still in the store.
func (v *view) uids(idx []int) []uint32 {
	out := make([]uint32, 0, len(idx))
	for _, i := range idx {
		if !v.msgs[i].gone {
			out = append(out, v.msgs[i].UID)
		}
	}
	return out
}

// update takes the new flags and ModSeqs of changed messages into the
// view and reports whether the view's flags grew (a keyword new to the
// folder).
func (v *view) update(changed []mailstore.Message) (grew bool) {
	for _, m := range changed {
		if i, ok := v.find(m.UID); ok {
			v.msgs[i].Flags, v.msgs[i].ModSeq = m.Flags, m.ModSeq
		}
		if v.noteFlags(m.Flags) {
			grew = true
		}
	}
	return grew
}

// remove drops expunged UIDs from the view and returns their sequence
// numbers, highest first, ready to be sent as EXPUNGE.
func (v *view) remove(uids []uint32) []uint32 {
	del := make(map[uint32]bool, len(uids))
	for _, u := range uids {
		del[u] = true
	}
	var seqs []uint32
	for i := len(v.msgs) - 1; i >= 0; i-- {
		if del[v.msgs[i].UID] {
			seqs = append(seqs, uint32(i+1))
			if v.msgs[i].gone {
				v.nGone--
			}
			v.dropRecent(v.msgs[i].UID)
			v.msgs = slices.Delete(v.msgs, i, i+1)
		}
	}
	return seqs
}
