package imapd

import (
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
	// Anything signalled before the load is in it.
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
		v.maxUID = max(v.maxUID, m.UID)
		if firstUnseen == 0 && !hasFlag(m.Flags, imap.FlagSeen) {
			firstUnseen = uint32(i + 1)
		}
	}
	s.sel = v
	flags := v.flags()
	return &imap.SelectData{
		Flags:             flags,
		PermanentFlags:    append(slices.Clone(flags), imap.FlagWildcard),
		NumMessages:       uint32(len(v.msgs)),
		UIDNext:           imap.UID(max(f.UIDNext, v.maxUID+1)),
		UIDValidity:       f.UIDValidity,
		FirstUnseenSeqNum: firstUnseen,
	}, nil
}

// Unselect leaves the selected folder (CLOSE expunges first, through
// Expunge, as imapserver arranges).
func (s *session) Unselect() error {
	s.sel = nil
	return nil
}

// flags lists the system flags and every keyword in use in the folder.
func (v *view) flags() []imap.Flag {
	flags := []imap.Flag{imap.FlagSeen, imap.FlagAnswered, imap.FlagFlagged, imap.FlagDeleted, imap.FlagDraft}
	for _, m := range v.msgs {
		for _, f := range m.Flags {
			if !hasFlag(flags, imap.Flag(f)) {
				flags = append(flags, imap.Flag(f))
			}
		}
	}
	return flags
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
		return nil
	}
	return s.refresh(w, allowExpunge)
}

// refresh reloads the selected folder and tells the client what changed:
// EXPUNGE for removed messages (when allowed), FETCH FLAGS for changed
// flags, EXISTS for new messages.
func (s *session) refresh(w *imapserver.UpdateWriter, allowExpunge bool) error {
	v := s.sel
	s.changed = false
	cur, err := s.st.Messages(s.ctx, s.user.ID, v.folder.ID)
	if errors.Is(err, mailstore.ErrFolderNotFound) {
		cur = nil // deleted by another session: every message is gone
	} else if err != nil {
		return s.fail("refresh", err)
	}
	byUID := make(map[uint32]mailstore.Message, len(cur))
	for _, m := range cur {
		byUID[m.UID] = m
	}

	// Expunges from the end, so that earlier sequence numbers hold.
	for i := len(v.msgs) - 1; i >= 0; i-- {
		if _, ok := byUID[v.msgs[i].UID]; ok && !v.msgs[i].gone {
			continue
		}
		if !allowExpunge {
			v.msgs[i].gone = true
			continue
		}
		if err := w.WriteExpunge(uint32(i + 1)); err != nil {
			return err
		}
		v.msgs = slices.Delete(v.msgs, i, i+1)
	}

	for i := range v.msgs {
		m := &v.msgs[i]
		if m.gone {
			continue
		}
		if now := byUID[m.UID]; !sameFlags(now.Flags, m.Flags) {
			m.Flags = now.Flags
			if err := w.WriteMessageFlags(uint32(i+1), imap.UID(m.UID), toIMAPFlags(m.Flags)); err != nil {
				return err
			}
		}
	}

	added := false
	for _, m := range cur {
		if m.UID > v.maxUID {
			v.msgs = append(v.msgs, viewMsg{Message: m})
			v.maxUID = m.UID
			added = true
		}
	}
	if added {
		return w.WriteNumMessages(uint32(len(v.msgs)))
	}
	return nil
}

func (v *view) hasGone() bool {
	for _, m := range v.msgs {
		if m.gone {
			return true
		}
	}
	return false
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

// update takes the new flags of changed messages into the view.
func (v *view) update(changed []mailstore.Message) {
	byUID := make(map[uint32][]string, len(changed))
	for _, m := range changed {
		byUID[m.UID] = m.Flags
	}
	for i := range v.msgs {
		if f, ok := byUID[v.msgs[i].UID]; ok {
			v.msgs[i].Flags = f
		}
	}
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
			v.msgs = slices.Delete(v.msgs, i, i+1)
		}
	}
	return seqs
}
