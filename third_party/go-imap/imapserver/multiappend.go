package imapserver

import (
	"fmt"
	"io"
	"strings"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/internal"
	"github.com/emersion/go-imap/v2/internal/imapwire"
)

// mailhost patch: MULTIAPPEND (RFC 3502) and APPEND of a literal8 (RFC
// 3516 section 4.4).

// SessionMultiAppend is what a session implements to take APPEND's
// messages as one transaction: MULTIAPPEND's several messages, all added
// or none (RFC 3502 section 6.3.11), and a single one the same way. The
// server calls BeginAppend once the first message's literal is accepted,
// then AppendTx.Append for each message in order (the literal must be
// read before it returns; the server discards what is left), then Commit,
// or Abort when a message or the command failed. Once Append has
// failed, the server asks for no more literals: it answers the error at
// the next synchronizing literal, or, for non-synchronizing ones, reads
// them to the end of the command first.
type SessionMultiAppend interface {
	Session
	BeginAppend(mailbox string) (AppendTx, error)
}

// AppendTx is one APPEND command's messages; see SessionMultiAppend.
type AppendTx interface {
	// Append adds a message. Binary is true for a literal8 (RFC 3516),
	// which may hold NUL octets.
	Append(r imap.LiteralReader, options *imap.AppendOptions, binary bool) error
	// Commit stores the messages; the UIDs are those of APPENDUID, in
	// order.
	Commit() (uidValidity uint32, uids []imap.UID, err error)
	Abort()
}

func (c *Conn) handleMultiAppend(tag string, dec *imapwire.Decoder, sess SessionMultiAppend, mailbox string) error {
	appendLimit := int64(defaultAppendLimit)
	if appendLimitSession, ok := c.session.(SessionAppendLimit); ok {
		appendLimit = int64(appendLimitSession.AppendLimit())
	}

	var (
		tx    AppendTx
		txErr error
	)
	defer func() {
		if tx != nil {
			tx.Abort()
		}
	}()
	if err := c.checkState(imap.ConnStateAuthenticated); err != nil {
		txErr = err
	}
	for n := 0; ; n++ {
		var options imap.AppendOptions
		hasFlagList, err := dec.List(func() error {
			flag, err := internal.ExpectFlag(dec)
			if err != nil {
				return err
			}
			options.Flags = append(options.Flags, flag)
			return nil
		})
		if err != nil {
			return err
		}
		if hasFlagList && !dec.ExpectSP() {
			return dec.Err()
		}
		t, err := internal.DecodeDateTime(dec)
		if err != nil {
			return err
		}
		if !t.IsZero() && !dec.ExpectSP() {
			return dec.Err()
		}
		options.Time = t

		var dataExt string
		binary := dec.Special('~')
		if !binary && dec.Atom(&dataExt) {
			switch strings.ToUpper(dataExt) {
			case "UTF8":
				// '~' is the literal8 prefix
				if !dec.ExpectSP() || !dec.ExpectSpecial('(') || !dec.ExpectSpecial('~') {
					return dec.Err()
				}
			default:
				return newClientBugError("Unknown APPEND data extension")
			}
		}

		lit, nonSync, err := dec.ExpectLiteralReader()
		if err != nil {
			return err
		}
		if lit.Size() > appendLimit {
			// As upstream's APPEND: answered at once, the literal unread
			// (the connection's reader drops a non-synchronizing one).
			return &imap.Error{
				Type: imap.StatusResponseTypeNo,
				Code: imap.ResponseCodeTooBig,
				Text: fmt.Sprintf("Literals are limited to %v bytes for this command", appendLimit),
			}
		}
		if txErr != nil && !nonSync {
			// The client sends nothing more until told to: fail now.
			return txErr
		}
		if err := c.acceptLiteral(lit.Size(), nonSync); err != nil {
			return err
		}

		c.setReadTimeout(literalReadTimeout)
		if txErr == nil && tx == nil {
			tx, txErr = sess.BeginAppend(mailbox)
		}
		if txErr == nil {
			txErr = tx.Append(lit, &options, binary)
		}
		_, discardErr := io.Copy(io.Discard, lit)
		c.setReadTimeout(cmdReadTimeout)
		if discardErr != nil {
			return discardErr
		}
		if dataExt != "" && !dec.ExpectSpecial(')') {
			return dec.Err()
		}
		if dec.SP() {
			continue // the next message (RFC 3502 section 6.3.11)
		}
		if !dec.ExpectCRLF() {
			return dec.Err()
		}
		break
	}
	if txErr != nil {
		return txErr
	}
	uidValidity, uids, err := tx.Commit()
	tx = nil
	if err != nil {
		return err
	}
	if err := c.poll("APPEND"); err != nil {
		return err
	}

	enc := newResponseEncoder(c)
	defer enc.end()
	enc.Atom(tag).SP().Atom("OK").SP()
	if uidValidity != 0 && len(uids) > 0 {
		var set imap.UIDSet
		for _, uid := range uids {
			set.AddNum(uid)
		}
		enc.Special('[').Atom("APPENDUID").SP().Number(uidValidity).SP().NumSet(set).Special(']').SP()
	}
	enc.Text("APPEND completed")
	return enc.CRLF()
}
