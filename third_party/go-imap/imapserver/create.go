package imapserver

import (
	"strings"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/internal"
	"github.com/emersion/go-imap/v2/internal/imapwire"
)

func (c *Conn) handleCreate(dec *imapwire.Decoder) error {
	var (
		name    string
		options imap.CreateOptions
	)
	if !dec.ExpectSP() || !dec.ExpectMailbox(&name) {
		return dec.Err()
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
