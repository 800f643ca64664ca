package imapserver

import (
	"strings"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/internal"
	"github.com/emersion/go-imap/v2/internal/imapwire"
	"github.com/emersion/go-imap/v2/internal/utf7"
)

func (c *Conn) handleCreate(dec *imapwire.Decoder) error {
	var (
		name    string
		options imap.CreateOptions
	)
	if !dec.ExpectSP() {
		return dec.Err()
	}
	if err := readNewMailbox(dec, &name); err != nil { // mailhost patch
		return err
	}
	if dec.SP() {
		var name string
		if !dec.ExpectSpecial('(') || !dec.ExpectAtom(&name) || !dec.ExpectSP() {
			return dec.Err()
		}
		switch strings.ToUpper(name) {
		case "USE":
			var err error
			options.SpecialUse, err = internal.ExpectMailboxAttrList(dec)
			if err != nil {
				return err
			}
		default:
			return newClientBugError("unknown CREATE parameter")
		}
		if !dec.ExpectSpecial(')') {
			return dec.Err()
		}
	}
	if !dec.ExpectCRLF() {
		return dec.Err()
	}
	if err := c.checkState(imap.ConnStateAuthenticated); err != nil {
		return err
	}
	c.createdName = name // mailhost patch: OBJECTID (RFC 8474)
	return c.session.Create(name, &options)
}

// createdMailboxID is the code of CREATE's tagged OK: MAILBOXID (RFC
// 8474 section 4.1) when the session says what the new mailbox's is.
//
// mailhost patch: OBJECTID (RFC 8474).
func (c *Conn) createdMailboxID(dec *imapwire.Decoder) (imap.ResponseCode, error) {
	sess, ok := c.session.(SessionMailboxID)
	if !ok {
		return "", c.handleCreate(dec)
	}
	c.createdName = ""
	if err := c.handleCreate(dec); err != nil {
		return "", err
	}
	id, err := sess.MailboxID(c.createdName)
	if err != nil || id == "" {
		return "", nil // the mailbox is made: say so, without its id
	}
	return imap.ResponseCode("MAILBOXID (" + id + ")"), nil
}

// readNewMailbox reads the name of a mailbox that CREATE or RENAME makes.
// Unlike other commands' mailbox arguments (ExpectMailbox, which takes an
// "&" that begins no shift sequence for itself), it must be modified
// UTF-7 (RFC 3501 section 5.1.3), or UTF-8: a name made is a name the
// server keeps, and clients would write it back otherwise.
//
// mailhost patch: see PATCHES.md.
func readNewMailbox(dec *imapwire.Decoder, ptr *string) error {
	var raw string
	if !dec.ExpectAString(&raw) {
		return dec.Err()
	}
	if strings.EqualFold(raw, "INBOX") {
		*ptr = "INBOX"
		return nil
	}
	name, err := utf7.Decode(raw)
	if err != nil {
		return newClientBugError("Mailbox name is not modified UTF-7 (RFC 3501 section 5.1.3)")
	}
	*ptr = name
	return nil
}
