package imapd

import (
	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"

	"github.com/mailhost/mailhost/mailstore"
)

// Copy answers COPY and UID COPY, with COPYUID (RFC 4315). Over quota it
// answers NO [OVERQUOTA] and copies nothing.
func (s *session) Copy(numSet imap.NumSet, dest string) (*imap.CopyData, error) {
	v := s.sel
	if v == nil {
		return nil, errNoSelection
	}
	if err := v.checkSeqSet(numSet); err != nil {
		return nil, err
	}
	to, err := s.st.Folder(s.ctx, s.user.ID, dest)
	if err != nil {
		return nil, s.tryCreate("copy", err)
	}
	uids := v.uids(v.indices(numSet))
	if len(uids) == 0 {
		return nil, nil
	}
	newUIDs, err := s.st.Copy(s.ctx, s.user.ID, v.folder.ID, uids, to.ID)
	if err != nil {
		return nil, s.tryCreate("copy", err)
	}
	s.srv.recent.added(to.ID, newUIDs...)
	return copyData(to.UIDValidity, uids, newUIDs), nil
}

// Move answers MOVE and UID MOVE (RFC 6851): COPYUID, then EXPUNGE for
// each message moved.
func (s *session) Move(w *imapserver.MoveWriter, numSet imap.NumSet, dest string) error {
	v := s.sel
	if v == nil {
		return errNoSelection
	}
	if v.readOnly {
		return errReadOnly
	}
	to, err := s.st.Folder(s.ctx, s.user.ID, dest)
	if err != nil {
		return s.tryCreate("move", err)
	}
	if err := v.checkSeqSet(numSet); err != nil {
		return err
	}
	uids := v.uids(v.indices(numSet))
	if len(uids) == 0 {
		return nil
	}
	var newUIDs []uint32
	if to.ID == v.folder.ID {
		// RFC 6851 section 3.3 lets MOVE name the selected mailbox: the
		// messages get new UIDs (as after COPY and EXPUNGE), which is
		// what Dovecot does and clients expect. Store.Move is for two
		// folders, so this is Copy then Expunge, in two transactions: a
		// failure between them leaves a copy, never loses a message.
		newUIDs, err = s.st.Copy(s.ctx, s.user.ID, v.folder.ID, uids, to.ID)
		if err != nil {
			return s.tryCreate("move", err)
		}
		if _, err := s.st.Expunge(s.ctx, s.user.ID, v.folder.ID, uids); err != nil {
			return s.fail("move", err)
		}
	} else if newUIDs, err = s.st.Move(s.ctx, s.user.ID, v.folder.ID, uids, to.ID); err != nil {
		return s.tryCreate("move", err)
	}
	s.srv.recent.added(to.ID, newUIDs...)
	s.junkMoved(v.folder, to, newUIDs)
	if err := w.WriteCopyData(copyData(to.UIDValidity, uids, newUIDs)); err != nil {
		return err
	}
	return s.tellExpunged(w, v, uids)
}

// copyData pairs source and new UIDs; both ascend, so the two sets list
// them in matching order as COPYUID requires.
func copyData(validity uint32, from, to []uint32) *imap.CopyData {
	d := &imap.CopyData{UIDValidity: validity}
	for i := range from {
		if i < len(to) {
			d.SourceUIDs.AddNum(imap.UID(from[i]))
			d.DestUIDs.AddNum(imap.UID(to[i]))
		}
	}
	return d
}

// Expunge answers EXPUNGE, UID EXPUNGE (RFC 4315: only the given UIDs,
// and only if they are flagged \Deleted) and CLOSE. In a folder opened
// with EXAMINE it removes nothing, so that CLOSE still succeeds there.
func (s *session) Expunge(w *imapserver.ExpungeWriter, uids *imap.UIDSet) error {
	v := s.sel
	if v == nil {
		return errNoSelection
	}
	if v.readOnly {
		return nil
	}
	var which []uint32 // nil: every message flagged \Deleted
	if uids != nil {
		cur, err := s.st.Messages(s.ctx, s.user.ID, v.folder.ID)
		if err != nil {
			return s.fail("expunge", err)
		}
		set := v.staticUIDs(*uids)
		which = []uint32{}
		for _, m := range cur {
			if set.Contains(imap.UID(m.UID)) && hasFlag(m.Flags, imap.FlagDeleted) {
				which = append(which, m.UID)
			}
		}
		if len(which) == 0 {
			return nil
		}
	}
	removed, err := s.st.Expunge(s.ctx, s.user.ID, v.folder.ID, which)
	if err != nil {
		return s.fail("expunge", err)
	}
	return s.tellExpunged(w, v, removed)
}

// junkMoved tells Config.OnJunkMove of messages moved into or out of the
// \Junk folder.
func (s *session) junkMoved(from, to mailstore.Folder, newUIDs []uint32) {
	fn := s.srv.cfg.OnJunkMove
	if fn == nil || from.ID == to.ID || len(newUIDs) == 0 {
		return
	}
	fromJunk, toJunk := from.SpecialUse == `\Junk`, to.SpecialUse == `\Junk`
	if fromJunk != toJunk {
		fn(s.user.ID, to.ID, newUIDs, toJunk)
	}
}
