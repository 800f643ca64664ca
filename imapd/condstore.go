package imapd

// CONDSTORE and QRESYNC (RFC 7162) on the folders' change log.
//
// A message's MODSEQ is its mailstore.Message.ModSeq plus one, and a
// folder's HIGHESTMODSEQ its Folder.HighestModSeq plus one: the stores
// number a folder's changes from 1 and answer 0 for a folder with none
// and for a message last changed before they kept a ModSeq per message.
// IMAP's mod-sequences start at 1, and a client that was told
// HIGHESTMODSEQ must hear of every change after it, the first included,
// so the store's 0 becomes 1 and every change is counted one higher: an
// old message answers MODSEQ 1, lower than any change made since, and
// every value only grows.
//
// What a client away for a while gets: the change log keeps each
// folder's last mailstore.ChangeLogKeep (1,000) changes, expunges
// included, whatever their age. A client whose mod-sequence is within
// them gets the exact answer: VANISHED (EARLIER) with the UIDs expunged
// since, FETCH for the messages changed since (from their own MODSEQ,
// which the message records keep whatever the log's length). Further
// back (ErrChangesGone), the messages changed since are still exact, and
// VANISHED (EARLIER) lists every UID the client named (its known-uids, or
// 1 to the highest UID the folder has had) that is not in the folder
// now, as RFC 7162 allows (section 3.2.10): a client ignores the UIDs it
// did not have. That costs a walk of the folder's message list, which
// the session holds, never a read of the store beyond it.

import (
	"errors"
	"slices"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"

	"github.com/mailhost/mailhost/mailstore"
)

// imapModSeq is the mod-sequence IMAP reports for a store ModSeq.
func imapModSeq(storeModSeq uint64) uint64 { return storeModSeq + 1 }

// storeSince is the store ModSeq whose later changes are those above the
// IMAP mod-sequence n; all is true for n 0, above which every message is.
func storeSince(n uint64) (since uint64, all bool) {
	if n == 0 {
		return 0, true
	}
	return n - 1, false
}

// modes reports whether CONDSTORE and QRESYNC are enabled on the
// connection (RFC 7162 section 3.1: by ENABLE or a CONDSTORE enabling
// command; imapserver records both).
func (s *session) modes() (condStore, qresync bool) {
	if s.conn == nil {
		return false, false
	}
	caps := s.conn.EnabledCaps()
	return caps.Has(imap.CapCondStore), caps.Has(imap.CapQResync)
}

// expungeWriter is any of imapserver's writers that can tell a message
// left: UpdateWriter, ExpungeWriter and MoveWriter.
type expungeWriter interface {
	WriteExpunge(seqNum uint32) error
	WriteVanished(uids imap.UIDSet) error
}

// tellExpunged drops the expunged uids from the view and tells the
// client: EXPUNGE for each, highest sequence number first, or, once
// QRESYNC is enabled, one VANISHED with their UIDs (RFC 7162 section
// 3.2.10: "MUST" instead of EXPUNGE).
func (s *session) tellExpunged(w expungeWriter, v *view, uids []uint32) error {
	if _, qresync := s.modes(); qresync {
		inView := make([]uint32, 0, len(uids))
		for _, u := range uids {
			if _, ok := v.find(u); ok {
				inView = append(inView, u)
			}
		}
		v.remove(inView)
		return w.WriteVanished(uidSet(inView))
	}
	for _, seq := range v.remove(uids) {
		if err := w.WriteExpunge(seq); err != nil {
			return err
		}
	}
	return nil
}

// uidSet is uids as a set, ranges merged.
func uidSet(uids []uint32) imap.UIDSet {
	uids = slices.Clone(uids)
	slices.Sort(uids)
	var set imap.UIDSet
	for _, u := range uids {
		if n := len(set); n > 0 && uint32(set[n-1].Stop)+1 >= u {
			set[n-1].Stop = imap.UID(max(uint32(set[n-1].Stop), u))
			continue
		}
		set = append(set, imap.UIDRange{Start: imap.UID(u), Stop: imap.UID(u)})
	}
	return set
}

// highestModSeq is the HIGHESTMODSEQ of the view as loaded: that of the
// folder record, read before the messages, or of the latest message if
// later (the messages reflect every change up to their own).
func (v *view) highestModSeq() uint64 {
	h := v.folder.HighestModSeq
	for _, m := range v.msgs {
		h = max(h, m.ModSeq)
	}
	return imapModSeq(h)
}

// ResyncMailbox answers SELECT and EXAMINE's QRESYNC parameter (RFC 7162
// section 3.2.5): VANISHED (EARLIER) with the known UIDs expunged since
// q.ModSeq, then UID, FLAGS and MODSEQ of each message changed since.
func (s *session) ResyncMailbox(w *imapserver.FetchWriter, q *imap.SelectQResync) error {
	v := s.sel
	if v == nil {
		return errNoSelection
	}
	vanished, err := s.vanishedSince(v, q.ModSeq, q.KnownUIDs)
	if err != nil {
		return err
	}
	if err := w.WriteVanished(vanished, true); err != nil {
		return err
	}
	for i, m := range v.msgs {
		if m.gone || imapModSeq(m.ModSeq) <= q.ModSeq {
			continue
		}
		rw := w.CreateMessage(uint32(i + 1))
		rw.WriteUID(imap.UID(m.UID))
		rw.WriteFlags(toIMAPFlags(v.withRecent(m.Message).Flags))
		rw.WriteModSeq(imapModSeq(m.ModSeq))
		if err := rw.Close(); err != nil {
			return err
		}
	}
	return nil
}

// vanishedSince answers the UIDs of known (nil: any) expunged after the
// IMAP mod-sequence n and no longer in the view: from the change log, or,
// when it does not reach back to n, every UID of known up to the highest
// the view has had that is not in the view.
func (s *session) vanishedSince(v *view, n uint64, known imap.UIDSet) (imap.UIDSet, error) {
	if known != nil {
		known = v.staticUIDs(known)
	}
	since, all := storeSince(n)
	if !all {
		_, changes, err := s.st.Changes(s.ctx, s.user.ID, v.folder.ID, since)
		switch {
		case err == nil:
			var uids []uint32
			for _, c := range changes {
				u := c.Message.UID
				if c.Kind != mailstore.ChangeExpunge || (known != nil && !known.Contains(imap.UID(u))) {
					continue
				}
				if _, ok := v.find(u); !ok {
					uids = append(uids, u)
				}
			}
			return uidSet(uids), nil
		case errors.Is(err, mailstore.ErrChangesGone):
		case errors.Is(err, mailstore.ErrFolderNotFound):
			return nil, nil // the next poll says the folder went
		default:
			return nil, s.fail("qresync", err)
		}
	}
	if known == nil {
		known = imap.UIDSet{{Start: 1, Stop: imap.UID(max(v.maxUID, 1))}}
	}
	return v.missing(known), nil
}

// missing answers the UIDs of set, up to the highest the view has had,
// that are not in the view: a walk of the view's messages within set's
// ranges.
func (v *view) missing(set imap.UIDSet) imap.UIDSet {
	var out imap.UIDSet
	add := func(a, b uint32) {
		if a <= b {
			out = append(out, imap.UIDRange{Start: imap.UID(a), Stop: imap.UID(b)})
		}
	}
	for _, r := range set {
		start, stop := uint32(r.Start), min(uint32(r.Stop), v.maxUID)
		if start == 0 || start > stop {
			continue
		}
		next := start
		i, _ := v.find(start)
		for ; i < len(v.msgs) && v.msgs[i].UID <= stop; i++ {
			add(next, v.msgs[i].UID-1)
			next = v.msgs[i].UID + 1
		}
		add(next, stop)
	}
	return out
}

// changedSince narrows a FETCH's messages, idx, to those changed since
// its CHANGEDSINCE (RFC 7162 section 3.1.4.1), and with the VANISHED
// modifier first tells the client the UIDs of its set expunged since
// (section 3.2.6).
func (s *session) changedSince(w *imapserver.FetchWriter, v *view, numSet imap.NumSet, idx []int, o *imap.FetchOptions) ([]int, error) {
	if o.Vanished {
		set, ok := numSet.(imap.UIDSet)
		if ok && !imap.IsSearchRes(numSet) {
			vanished, err := s.vanishedSince(v, o.ChangedSince, set)
			if err != nil {
				return nil, err
			}
			if err := w.WriteVanished(vanished, true); err != nil {
				return nil, err
			}
		}
	}
	out := idx[:0:0]
	for _, i := range idx {
		if imapModSeq(v.msgs[i].ModSeq) > o.ChangedSince {
			out = append(out, i)
		}
	}
	return out, nil
}

// storeCondStore is Store once CONDSTORE is enabled, or for UNCHANGEDSINCE
// (RFC 7162 section 3.1.3): the messages changed since UNCHANGEDSINCE are
// left alone and named in the tagged OK's MODIFIED; the store compares
// in the transaction of the change (mailstore.Mail.SetFlagsIf). Every
// FETCH response carries UID and MODSEQ, and one is sent for each message
// changed even with .SILENT, so that the client learns its new MODSEQ.
func (s *session) storeCondStore(w *imapserver.FetchWriter, v *view, numSet imap.NumSet, idx []int, op mailstore.FlagOp, flags *imap.StoreFlags, options *imap.StoreOptions) error {
	uids := v.uids(idx)
	if len(uids) == 0 {
		return nil
	}
	var (
		changed  []mailstore.Message
		modified []uint32
		err      error
	)
	switch since, none := storeSince(options.UnchangedSince); {
	case !options.HasUnchangedSince:
		changed, err = s.st.SetFlags(s.ctx, s.user.ID, v.folder.ID, uids, op, storeFlags(flags.Flags))
	case none:
		modified = uids // UNCHANGEDSINCE 0: every message has a MODSEQ above it
	default:
		changed, modified, err = s.st.SetFlagsIf(s.ctx, s.user.ID, v.folder.ID, uids, op, storeFlags(flags.Flags), since)
	}
	if err != nil {
		return s.fail("store", err)
	}
	before := len(v.flags())
	v.update(changed)
	if flags := v.flags(); len(flags) > before {
		if err := s.announceFlags(w, flags); err != nil {
			return err
		}
	}
	wasChanged := make(map[uint32]bool, len(changed))
	for _, m := range changed {
		wasChanged[m.UID] = true
	}
	isModified := make(map[uint32]bool, len(modified))
	for _, u := range modified {
		isModified[u] = true
	}
	var modSeqs imap.SeqSet
	var modUIDs imap.UIDSet
	for _, i := range idx {
		m := v.msgs[i]
		if m.gone {
			continue
		}
		if isModified[m.UID] {
			modSeqs.AddNum(uint32(i + 1))
			modUIDs.AddNum(imap.UID(m.UID))
			continue
		}
		if flags.Silent && !wasChanged[m.UID] {
			continue
		}
		rw := w.CreateMessage(uint32(i + 1))
		rw.WriteUID(imap.UID(m.UID))
		if !flags.Silent {
			rw.WriteFlags(toIMAPFlags(v.withRecent(m.Message).Flags))
		}
		rw.WriteModSeq(imapModSeq(m.ModSeq))
		if err := rw.Close(); err != nil {
			return err
		}
	}
	if len(modified) > 0 {
		if _, ok := numSet.(imap.UIDSet); ok {
			w.WriteModified(modUIDs)
		} else {
			w.WriteModified(modSeqs)
		}
	}
	return nil
}

// searchModSeq reports whether criteria use the MODSEQ key anywhere:
// SEARCH then answers the highest MODSEQ of the messages found (RFC 7162
// section 3.1.5).
func searchModSeq(c *imap.SearchCriteria) bool {
	if c.ModSeq != nil {
		return true
	}
	for i := range c.Not {
		if searchModSeq(&c.Not[i]) {
			return true
		}
	}
	for i := range c.Or {
		if searchModSeq(&c.Or[i][0]) || searchModSeq(&c.Or[i][1]) {
			return true
		}
	}
	return false
}

// HighestModSeq answers the HIGHESTMODSEQ of EXPUNGE's tagged OK once
// QRESYNC is enabled (imapserver.SessionHighestModSeq): that of the
// view, which the poll after the command has brought up to date.
func (s *session) HighestModSeq() uint64 {
	if s.sel == nil {
		return 0
	}
	return s.sel.highestModSeq()
}
