package imapserver

// mailhost patch: CONDSTORE and QRESYNC (RFC 7162). Everything of this
// file is new; the command handlers call into it where marked.

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/internal/imapwire"
)

// SessionQResync is an IMAP session which supports the QRESYNC parameter of
// SELECT and EXAMINE (RFC 7162 section 3.2.5).
type SessionQResync interface {
	Session

	// ResyncMailbox is called after a successful SELECT or EXAMINE with
	// the QRESYNC parameter whose UIDVALIDITY is the mailbox's, before
	// the tagged OK. It tells the client what changed since options.ModSeq:
	// the UIDs expunged since, with FetchWriter.WriteVanished (earlier),
	// then a FETCH response with UID, FLAGS and MODSEQ for each message
	// changed since.
	ResyncMailbox(w *FetchWriter, options *imap.SelectQResync) error
}

var errNoExpunge = errors.New("imapserver: EXPUNGE updates are not allowed in this context")

// enableCondStore records a CONDSTORE enabling command (RFC 7162 section
// 3.1): from now on the session reports MODSEQ in its untagged FETCH
// responses.
func (c *Conn) enableCondStore() {
	if !c.server.options.caps().Has(imap.CapCondStore) {
		return
	}
	c.mutex.Lock()
	c.enabled[imap.CapCondStore] = struct{}{}
	c.mutex.Unlock()
}

// readSelectParams reads select-params: "(" select-param *(SP
// select-param) ")", of which CONDSTORE and QRESYNC are known.
func (c *Conn) readSelectParams(dec *imapwire.Decoder, options *imap.SelectOptions) error {
	return dec.ExpectList(func() error {
		var name string
		if !dec.ExpectAtom(&name) {
			return dec.Err()
		}
		switch strings.ToUpper(name) {
		case "CONDSTORE":
			options.CondStore = true
		case "QRESYNC":
			q, err := readSelectQResync(dec)
			if err != nil {
				return err
			}
			options.QResync = q
		default:
			return newClientBugError("Unknown SELECT parameter")
		}
		return nil
	})
}

// readSelectQResync reads the QRESYNC parameter's value: SP "("
// uidvalidity SP mod-sequence-value [SP known-uids] [SP seq-match-data]
// ")".
func readSelectQResync(dec *imapwire.Decoder) (*imap.SelectQResync, error) {
	var q imap.SelectQResync
	if !dec.ExpectSP() || !dec.ExpectSpecial('(') || !dec.ExpectNumber(&q.UIDValidity) || !dec.ExpectSP() || !dec.ExpectModSeq(&q.ModSeq) {
		return nil, dec.Err()
	}
	if q.UIDValidity == 0 || q.ModSeq == 0 {
		return nil, newClientBugError("QRESYNC needs a non-zero UIDVALIDITY and mod-sequence")
	}
	for dec.SP() {
		if dec.Special('(') {
			var seqs, uids imap.NumSet
			if !dec.ExpectNumSet(imapwire.NumKindSeq, &seqs) || !dec.ExpectSP() || !dec.ExpectNumSet(imapwire.NumKindUID, &uids) || !dec.ExpectSpecial(')') {
				return nil, dec.Err()
			}
			q.SeqMatch = &imap.SelectSeqMatch{SeqNums: seqs.(imap.SeqSet), UIDs: uids.(imap.UIDSet)}
			break
		}
		if q.KnownUIDs != nil {
			return nil, newClientBugError("Unexpected QRESYNC parameter")
		}
		var uids imap.NumSet
		if !dec.ExpectNumSet(imapwire.NumKindUID, &uids) {
			return nil, dec.Err()
		}
		q.KnownUIDs = uids.(imap.UIDSet)
	}
	if !dec.ExpectSpecial(')') {
		return nil, dec.Err()
	}
	return &q, nil
}

func (c *Conn) writeHighestModSeq(modSeq uint64) error {
	enc := newResponseEncoder(c)
	defer enc.end()
	enc.Atom("*").SP().Atom("OK").SP()
	if modSeq == 0 {
		enc.Special('[').Atom("NOMODSEQ").Special(']').SP().Text("No permanent modsequences")
	} else {
		enc.Special('[').Atom("HIGHESTMODSEQ").SP().ModSeq(modSeq).Special(']').SP().Text("Highest")
	}
	return enc.CRLF()
}

// writeVanished writes a VANISHED response (RFC 7162 section 3.2.10).
func (c *Conn) writeVanished(uids imap.UIDSet, earlier bool) error {
	if len(uids) == 0 {
		return nil
	}
	enc := newResponseEncoder(c)
	defer enc.end()
	enc.Atom("*").SP().Atom("VANISHED").SP()
	if earlier {
		enc.Atom("(EARLIER)").SP()
	}
	enc.NumSet(uids)
	return enc.CRLF()
}

// WriteVanished writes a VANISHED response: with earlier, VANISHED
// (EARLIER), for UIDs expunged before this command (FETCH's VANISHED
// modifier, SELECT's QRESYNC parameter).
func (cmd *FetchWriter) WriteVanished(uids imap.UIDSet, earlier bool) error {
	cmd.deadlineSet = time.Time{} // its writer clears the write deadline
	return cmd.conn.writeVanished(uids, earlier)
}

// WriteModified records the messages that failed STORE's UNCHANGEDSINCE
// test (RFC 7162 section 3.1.3): the tagged OK names them in a MODIFIED
// response code. numSet holds sequence numbers for STORE, UIDs for UID
// STORE.
func (cmd *FetchWriter) WriteModified(numSet imap.NumSet) {
	cmd.modified = numSet
}

// WriteVanished writes a VANISHED response, what a session for which
// QRESYNC is enabled sends instead of EXPUNGE (RFC 7162 section 3.2.10).
func (w *UpdateWriter) WriteVanished(uids imap.UIDSet) error {
	if !w.allowExpunge {
		return errNoExpunge
	}
	return w.conn.writeVanished(uids, false)
}

// WriteVanished writes a VANISHED response, instead of EXPUNGE once QRESYNC
// is enabled.
func (w *ExpungeWriter) WriteVanished(uids imap.UIDSet) error {
	if w.conn == nil {
		return nil
	}
	return w.conn.writeVanished(uids, false)
}

// WriteVanished writes a VANISHED response, instead of EXPUNGE once QRESYNC
// is enabled.
func (w *MoveWriter) WriteVanished(uids imap.UIDSet) error {
	return w.conn.writeVanished(uids, false)
}

// WriteMessageFlagsModSeq writes a FETCH response with UID, FLAGS and,
// when modSeq is not 0, MODSEQ: what a session for which CONDSTORE is
// enabled sends when a message's flags change (RFC 7162 section 3.1).
func (w *UpdateWriter) WriteMessageFlagsModSeq(seqNum uint32, uid imap.UID, flags []imap.Flag, modSeq uint64) error {
	fetchWriter := &FetchWriter{conn: w.conn}
	respWriter := fetchWriter.CreateMessage(seqNum)
	if uid != 0 {
		respWriter.WriteUID(uid)
	}
	respWriter.WriteFlags(flags)
	if modSeq != 0 {
		respWriter.WriteModSeq(modSeq)
	}
	return respWriter.Close()
}

// WriteModSeq writes the message's MODSEQ.
func (w *FetchResponseWriter) WriteModSeq(modSeq uint64) {
	w.writeItemSep()
	w.enc.Atom("MODSEQ").SP().Special('(').ModSeq(modSeq).Special(')')
}

// readFetchModifiers reads FETCH's modifiers after SP: "(" fetch-modifier
// *(SP fetch-modifier) ")", CHANGEDSINCE and VANISHED.
func (c *Conn) readFetchModifiers(dec *imapwire.Decoder, numKind NumKind, options *imap.FetchOptions) error {
	changedSince := false
	err := dec.ExpectList(func() error {
		var name string
		if !dec.ExpectAtom(&name) {
			return dec.Err()
		}
		switch strings.ToUpper(name) {
		case "CHANGEDSINCE":
			if !dec.ExpectSP() || !dec.ExpectModSeq(&options.ChangedSince) {
				return dec.Err()
			}
			changedSince = true
		case "VANISHED":
			options.Vanished = true
		default:
			return newClientBugError("Unknown FETCH modifier")
		}
		return nil
	})
	if err != nil {
		return err
	}
	if options.Vanished {
		// RFC 7162 section 3.2.6: BAD unless UID FETCH with CHANGEDSINCE,
		// once QRESYNC is enabled.
		switch {
		case numKind != NumKindUID:
			return newClientBugError("VANISHED needs UID FETCH")
		case !changedSince:
			return newClientBugError("VANISHED needs CHANGEDSINCE")
		case !c.EnabledCaps().Has(imap.CapQResync):
			return newClientBugError("QRESYNC must be enabled first")
		}
	}
	if changedSince {
		// CHANGEDSINCE implies the MODSEQ item (RFC 7162 section 3.1.4.1).
		options.ModSeq = true
	}
	return nil
}

// readStoreModifiers reads STORE's modifiers: "(" store-modifier *(SP
// store-modifier) ")", of which UNCHANGEDSINCE is known. isList reports
// whether there were any.
func readStoreModifiers(dec *imapwire.Decoder, options *imap.StoreOptions) (isList bool, err error) {
	return dec.List(func() error {
		var name string
		if !dec.ExpectAtom(&name) {
			return dec.Err()
		}
		if !strings.EqualFold(name, "UNCHANGEDSINCE") {
			return newClientBugError("Unknown STORE modifier")
		}
		if !dec.ExpectSP() || !dec.ExpectModSeq(&options.UnchangedSince) {
			return dec.Err()
		}
		options.HasUnchangedSince = true
		return nil
	})
}

// readSearchModSeq reads the MODSEQ search key after its name: SP
// [entry-name SP entry-type-req SP] mod-sequence-valzer (RFC 7162
// section 3.1.5).
func readSearchModSeq(criteria *imap.SearchCriteria, dec *imapwire.Decoder) error {
	var ms imap.SearchCriteriaModSeq
	if !dec.ExpectSP() {
		return dec.Err()
	}
	var name string
	if dec.Quoted(&name) {
		var typ string
		if !dec.ExpectSP() || !dec.ExpectAtom(&typ) || !dec.ExpectSP() {
			return dec.Err()
		}
		ms.MetadataName = name
		switch t := imap.SearchCriteriaMetadataType(strings.ToLower(typ)); t {
		case imap.SearchCriteriaMetadataAll, imap.SearchCriteriaMetadataPrivate, imap.SearchCriteriaMetadataShared:
			ms.MetadataType = t
		default:
			return newClientBugError("Unknown MODSEQ entry type")
		}
	}
	if !dec.ExpectModSeq(&ms.ModSeq) {
		return dec.Err()
	}
	criteria.ModSeq = &ms
	return nil
}

// searchHasModSeq reports whether criteria use the MODSEQ key anywhere.
func searchHasModSeq(criteria *imap.SearchCriteria) bool {
	if criteria.ModSeq != nil {
		return true
	}
	for i := range criteria.Not {
		if searchHasModSeq(&criteria.Not[i]) {
			return true
		}
	}
	for i := range criteria.Or {
		if searchHasModSeq(&criteria.Or[i][0]) || searchHasModSeq(&criteria.Or[i][1]) {
			return true
		}
	}
	return false
}

// SessionHighestModSeq is what a session implements to answer EXPUNGE and
// UID EXPUNGE, once QRESYNC is enabled, with the mailbox's HIGHESTMODSEQ
// in the tagged OK (RFC 7162 section 3.2.7 and 3.2.9), and MOVE and UID
// MOVE likewise, as they expunge too (Dovecot does): HighestModSeq is
// called after the command's own updates and those of the poll that
// follows, and answers the mod-sequence the client is now up to date
// with (0: none sent).
type SessionHighestModSeq interface {
	Session
	HighestModSeq() uint64
}

// expungeModSeqCode is the HIGHESTMODSEQ code of EXPUNGE's tagged OK, or
// "" before QRESYNC is enabled.
func (c *Conn) expungeModSeqCode() imap.ResponseCode {
	sess, ok := c.session.(SessionHighestModSeq)
	if !ok || !c.EnabledCaps().Has(imap.CapQResync) {
		return ""
	}
	modSeq := sess.HighestModSeq()
	if modSeq == 0 {
		return ""
	}
	return imap.ResponseCode(fmt.Sprintf("HIGHESTMODSEQ %d", modSeq))
}
