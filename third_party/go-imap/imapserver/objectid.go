package imapserver

import (
	"strings"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/internal/imapwire"
)

// mailhost patch: OBJECTID (RFC 8474) and PREVIEW (RFC 8970). The items,
// the STATUS item and the search keys are parsed where the others are
// (fetch.go, status.go, search.go); this file has what is new.

// SessionMailboxID is what a session implements to answer CREATE with
// the new mailbox's MAILBOXID (RFC 8474 section 4.1): MailboxID is called
// after a successful Create with the name it was given. SELECT and STATUS
// take the id from SelectData and StatusData.
type SessionMailboxID interface {
	Session
	MailboxID(mailbox string) (string, error)
}

func (c *Conn) writeMailboxID(id string) error {
	enc := newResponseEncoder(c)
	defer enc.end()
	enc.Atom("*").SP().Atom("OK").SP()
	enc.Special('[').Atom("MAILBOXID").SP().Special('(').Atom(id).Special(')').Special(']').SP().Text("Ok")
	return enc.CRLF()
}

// WriteEmailID writes the message's EMAILID (RFC 8474 section 5.1).
func (w *FetchResponseWriter) WriteEmailID(id string) {
	w.writeItemSep()
	w.enc.Atom("EMAILID").SP().Special('(').Atom(id).Special(')')
}

// WriteThreadID writes the message's THREADID (RFC 8474 section 5.2): NIL
// when id is empty, as for a server that does not know threads.
func (w *FetchResponseWriter) WriteThreadID(id string) {
	w.writeItemSep()
	w.enc.Atom("THREADID").SP()
	if id == "" {
		w.enc.NIL()
		return
	}
	w.enc.Special('(').Atom(id).Special(')')
}

// WritePreview writes the message's PREVIEW (RFC 8970 section 3): NIL
// when ok is false (a LAZY fetch the server chose not to compute).
func (w *FetchResponseWriter) WritePreview(text string, ok bool) {
	w.writeItemSep()
	w.enc.Atom("PREVIEW").SP()
	if !ok {
		w.enc.NIL()
		return
	}
	w.enc.String(text)
}

// readPreviewModifiers reads what may follow PREVIEW: SP "(" preview-mod
// *(SP preview-mod) ")", of which RFC 8970 defines LAZY. It looks ahead
// for " (LAZY" before reading, since " (" could also start the
// fetch-modifiers after a lone PREVIEW.
func readPreviewModifiers(dec *imapwire.Decoder, options *imap.FetchOptions) error {
	options.Preview = &imap.FetchItemPreview{}
	if !dec.PeekFold(" (LAZY") {
		return nil
	}
	if !dec.ExpectSP() {
		return dec.Err()
	}
	return dec.ExpectList(func() error {
		var mod string
		if !dec.ExpectAtom(&mod) {
			return dec.Err()
		}
		if strings.ToUpper(mod) != "LAZY" {
			return newClientBugError("Unknown PREVIEW modifier")
		}
		options.Preview.Lazy = true
		return nil
	})
}
