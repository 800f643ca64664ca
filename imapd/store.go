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
	idx := v.indices(numSet)
	uids := v.uids(idx)
	if len(uids) == 0 {
		return nil
	}
	changed, err := s.st.SetFlags(s.ctx, s.user.ID, v.folder.ID, uids, op, storeFlags(flags.Flags))
	if err != nil {
		return s.fail("store", err)
	}
	v.update(changed)
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
		rw.WriteFlags(toIMAPFlags(m.Flags))
		if err := rw.Close(); err != nil {
			return err
		}
	}
	return nil
}
