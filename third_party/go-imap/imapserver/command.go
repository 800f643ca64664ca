package imapserver

import (
	"errors"

	"github.com/emersion/go-imap/v2/internal/imapwire"
)

// mailhost patch: commands a session serves (see PATCHES.md).

// SessionCommands is a session that serves commands imapserver does not
// know itself, such as ID (RFC 2971) or GETQUOTA (RFC 9208): an extension
// point for what would otherwise be answered "Unknown command".
type SessionCommands interface {
	Session

	// ServesCommand reports whether the session serves the command name
	// (upper case; "UID X" for a UID command) in the connection's
	// current state. It may serve STARTTLS when Options.TLSConfig is nil
	// (with Conn.Upgrade).
	ServesCommand(name string) bool
	// Command serves the command name. args is the rest of the command
	// as the client sent it, from just after the name to its final CRLF
	// included, each literal in place after its "{n}" and CRLF (read
	// whole: at most 4096 bytes each, as for any command but APPEND).
	// Untagged responses are written with w. A nil error is answered
	// "OK <name> completed"; an *imap.Error with its status (of type OK
	// too, for an OK with its own text).
	Command(w *CommandWriter, name string, args []byte) error
}

// CommandWriter writes the untagged responses of a command a session
// serves (SessionCommands).
type CommandWriter struct {
	conn *Conn
}

// WriteRaw writes b as it is: one or more whole untagged responses, each
// ending with CRLF.
func (w *CommandWriter) WriteRaw(b []byte) error {
	enc := newResponseEncoder(w.conn)
	defer enc.end()
	if _, err := w.conn.bw.Write(b); err != nil {
		return err
	}
	return w.conn.bw.Flush()
}

// handleSessionCommand serves a command of a SessionCommands session; ok
// is false when the session does not serve it.
func (c *Conn) handleSessionCommand(name string, dec *imapwire.Decoder) (ok bool, err error) {
	sc, isCmds := c.session.(SessionCommands)
	if !isCmds || !sc.ServesCommand(name) {
		return false, nil
	}
	var args []byte
	if !dec.RawLine(&args) {
		if err := dec.Err(); err != nil {
			return true, err
		}
		return true, errors.New("imapserver: reading the command failed")
	}
	return true, sc.Command(&CommandWriter{conn: c}, name, args)
}
