package imapd

import (
	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"

	"github.com/mailhost/mailhost/mailstore"
)

// Store answers STORE and UID STORE: it changes flags and, unless
// .SILENT, sends the resulting flags of every message named.
func (s *session) Store(w *imapserver.FetchWriter, numSet imap.NumSet, flags *imap.StoreFlags, options *imap.StoreOptions) error {
	v := s.sel
	if v == nil {
		return errNoSelection
	}
	if v.readOnly {
		return errReadOnly
	}
	var op mailstore.FlagOp
	switch flags.Op {
	case imap.StoreFlagsAdd:
		op = mailstore.FlagsAdd
	case imap.StoreFlagsDel:
		op = mailstore.FlagsRemove
	default:
		op = mailstore.FlagsReplace
	}
	if err := v.checkSeqSet(numSet); err != nil {
		return err
	}
	idx := v.indices(numSet)
	if condStore, _ := s.modes(); condStore || options.HasUnchangedSince {
		return s.storeCondStore(w, v, numSet, idx, op, flags, options)
	}
	uids := v.uids(idx)
	if len(uids) == 0 {
		return nil
	}
	changed, err := s.st.SetFlags(s.ctx, s.user.ID, v.folder.ID, uids, op, storeFlags(flags.Flags))
	if err != nil {
		return s.fail("store", err)
	}
	if v.update(changed) {
		if err := s.announceFlags(w, v.flags()); err != nil {
			return err
		}
	}
	if flags.Silent {
		return nil
	}
	for _, i := range idx {
		m := v.msgs[i]
		if m.gone {
			continue
		}
		rw := w.CreateMessage(uint32(i + 1))
		rw.WriteUID(imap.UID(m.UID))
		rw.WriteFlags(toIMAPFlags(v.withRecent(m.Message).Flags))
		if err := rw.Close(); err != nil {
			return err
		}
	}
	return nil
}

// announceFlags tells the client the folder's flags have grown, after a
// STORE set a keyword no message of the folder had: FLAGS and
// PERMANENTFLAGS again (RFC 3501 section 7.2.6: FLAGS is sent when the
// list changes), before the FETCH responses, as Dovecot does, so that a
// client that keeps the list sees its new keyword there.
func (s *session) announceFlags(w *imapserver.FetchWriter, flags []imap.Flag) error {
	return w.WriteMailboxFlags(flags)
}
