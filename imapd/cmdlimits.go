package imapd

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// This file is where the command layer (cmdlayer.go) answers commands that
// imapserver's limits would refuse with NO [SERVERBUG] (its decoder's
// errors are not syntax errors to it), or not at all: it sees each command
// line before imapserver does, and refuses it with BAD before imapserver
// reads any of it. What reaches imapserver is then within its limits. A
// limit found only after part of a command went to imapserver (in a line
// after a literal) ends the connection with BYE, since imapserver cannot
// be made to drop half a command.
//
// The limits, each imapserver's or below it:
//
//   - maxCommandBytes: 50 KiB of a command, literals aside (imapserver's
//     maxCommandSize; RFC 2683 section 3.2.1.5 asks for at least 8,000
//     octets). A longer first line is answered BAD and dropped up to its
//     end; more in the lines after literals, BYE.
//   - maxBufferedLiteral: 4096 bytes of a literal outside APPEND (what
//     imapserver buffers; it waits for the client otherwise, which waits
//     for "+": 30 s, then SERVERBUG). On the first line: a synchronizing
//     literal is answered BAD [TOOBIG] and the client sends nothing more
//     (RFC 9051 section 7.5); a non-synchronizing one is read and dropped
//     with the rest of the command, up to maxDiscard (RFC 7888 section 4
//     leaves the server to drop it or to close). Later: BYE.
//   - maxParenDepth: 100 levels of parentheses (imapserver stops at 1,000,
//     with SERVERBUG): BAD on the first line, BYE later.
//   - CREATE and RENAME names that are not modified UTF-7 (RFC 3501
//     section 5.1.3; imapserver's decoder fails with SERVERBUG): BAD.
//
// SERVERBUG is left to what is a bug of this server: each one, the
// layer's or imapserver's, is counted (Server.ServerBugs) and logged once
// with its command.

const (
	maxCommandBytes    = 50 << 10
	maxBufferedLiteral = 4096
	maxParenDepth      = 100
	// maxDiscard is the most the layer reads and drops of a command it
	// refused before it gives up on the connection.
	maxDiscard = 1 << 20
)

// cmdState follows the command imapserver is reading, for the limits it
// can only meet in the lines after a literal.
type cmdState struct {
	name    string // upper case, "" between commands
	bytes   int    // non-literal bytes so far
	depth   int    // parentheses open
	inQuote bool
	escaped bool
	// openAtEOL: a quoted string was still open at the end of a line.
	openAtEOL bool
}

// scan adds a piece of a command line (no literal data) and reports what
// limit it crosses, if any.
func (s *cmdState) scan(b []byte) string {
	s.bytes += len(b)
	if s.bytes > maxCommandBytes {
		return "Command too long"
	}
	for _, ch := range b {
		switch {
		case s.escaped:
			s.escaped = false
		case s.inQuote:
			switch ch {
			case '\\':
				s.escaped = true
			case '"':
				s.inQuote = false
			case '\n':
				s.inQuote, s.openAtEOL = false, true
			}
		case ch == '"':
			s.inQuote = true
		case ch == '(':
			s.depth++
			if s.depth > maxParenDepth {
				return "Too many nested parentheses"
			}
		case ch == ')':
			s.depth = max(s.depth-1, 0)
		}
	}
	return ""
}

// readFirstLine reads the first line of a command whole, up to
// maxCommandBytes; piece is what ReadSlice gave before its buffer was
// full. long reports a line over the limit, of which the rest is still
// to be read.
func (c *cmdConn) readFirstLine(piece []byte) (line []byte, long bool, err error) {
	line = append(make([]byte, 0, 2*len(piece)), piece...)
	for len(line) <= maxCommandBytes {
		more, err := c.br.ReadSlice('\n')
		line = append(line, more...)
		if err == nil {
			return line, len(line) > maxCommandBytes, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, false, err
		}
	}
	return line, true, nil
}

// refusal is the answer to the first line of a command that the layer
// refuses, or "" for one that goes on to imapserver.
func refusal(name string, line []byte, long bool) string {
	if long {
		return fmt.Sprintf("BAD Command line too long: at most %d bytes besides literals", maxCommandBytes)
	}
	var st cmdState
	if st.scan(line) != "" {
		return fmt.Sprintf("BAD [CLIENTBUG] Too many nested parentheses: at most %d", maxParenDepth)
	}
	if st.openAtEOL {
		// A quoted string holds no CR or LF (RFC 9051 section 4.3):
		// imapserver would read the next lines into it, and the client,
		// waiting for an answer, would send none.
		return "BAD [CLIENTBUG] Syntax error: quoted string not closed before the end of the line"
	}
	// imapserver answers a synchronizing literal too big for a command
	// of the session (commands.go) NO [TOOBIG] itself, as RFC 9208's
	// and RFC 2971's clients expect; a non-synchronizing one must be
	// dropped here, its bytes being on their way.
	if n, sync, ok := literalAtEnd(line); ok && n > maxBufferedLiteral && name != "APPEND" && !(sync && sessionCommand(name)) {
		return fmt.Sprintf("BAD [TOOBIG] Literal too big: at most %d bytes outside APPEND", maxBufferedLiteral)
	}
	if name == "CREATE" || name == "RENAME" {
		p := newArgParser(line)
		for range 2 {
			if !p.sp() {
				break
			}
			mbox, ok := p.astring()
			if !ok {
				break
			}
			if !strings.EqualFold(mbox, "INBOX") && !validModifiedUTF7(mbox) {
				return "BAD [CLIENTBUG] Mailbox name is not modified UTF-7 (RFC 3501 section 5.1.3)"
			}
		}
	}
	return ""
}

// refuse answers the first line of a command with resp, then drops the
// rest of the command: of an overlong line (long), up to its end; then
// any non-synchronizing literal and the line after it. The client sends
// no synchronizing literal without "+".
func (c *cmdConn) refuse(tag, resp string, line []byte, long bool) error {
	if tag == "" {
		tag = "*"
	}
	if err := c.conn().SetReadDeadline(time.Now().Add(ownReadTimeout)); err != nil {
		return err
	}
	dropped := int64(len(line))
	tail := appendTail(nil, line)
	if long {
		var err error
		if tail, err = c.dropLine(tail, &dropped, "Command line too long"); err != nil {
			return err
		}
	}
	if err := c.writeOwn(fmt.Appendf(nil, "%s %s\r\n", tag, resp)); err != nil {
		return err
	}
	if err := c.dropLiterals(tail, &dropped); err != nil {
		return err
	}
	c.state = inLineStart
	return c.rearm()
}

// dropLine reads and drops the rest of a line, up to and including its
// LF, adding it to tail (whose end tells a literal) and to dropped;
// beyond maxDiscard in all the connection ends with BYE (text).
func (c *cmdConn) dropLine(tail []byte, dropped *int64, text string) ([]byte, error) {
	for {
		more, err := c.br.ReadSlice('\n')
		*dropped += int64(len(more))
		tail = appendTail(tail, more)
		if *dropped > maxDiscard {
			return tail, c.bye(text)
		}
		if err == nil {
			return tail, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return tail, fmt.Errorf("read command: %w", err)
		}
	}
}

// dropLiteral reads and drops a literal of n bytes, BYE beyond
// maxDiscard in all.
func (c *cmdConn) dropLiteral(n int64, dropped *int64) error {
	if *dropped+n > maxDiscard {
		return c.bye("Literal too big")
	}
	if _, err := io.CopyN(io.Discard, c.br, n); err != nil {
		return fmt.Errorf("read literal: %w", err)
	}
	*dropped += n
	return nil
}

// dropLiterals drops, while the line that tail ends announces a
// non-synchronizing literal, that literal and the line after it. The
// client sends no synchronizing literal without "+".
func (c *cmdConn) dropLiterals(tail []byte, dropped *int64) error {
	for {
		n, sync, ok := literalAtEnd(tail)
		if !ok || sync {
			return nil
		}
		if err := c.dropLiteral(n, dropped); err != nil {
			return err
		}
		var err error
		if tail, err = c.dropLine(tail[:0], dropped, "Command too long"); err != nil {
			return err
		}
	}
}

// imapserverReadsCommand reports whether imapserver can read a tag and a
// command name from the first line of a command: an atom, a space and an
// atom, and for UID a space and a second atom (its Conn.readCommand).
// It closes the connection, without a word, on a line it cannot read
// (an empty line, a tag alone, two spaces, a tag with "*" or "{" in it).
func imapserverReadsCommand(line []byte) bool {
	rest, ok := imapAtom(line)
	if !ok {
		return false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(" ")); !ok {
		return false
	}
	name := rest
	if rest, ok = imapAtom(rest); !ok {
		return false
	}
	if !bytes.EqualFold(name[:len(name)-len(rest)], []byte("UID")) {
		return true
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(" ")); !ok {
		return false
	}
	_, ok = imapAtom(rest)
	return ok
}

// imapserverName is the command name imapserver reads from a line
// imapserverReadsCommand accepts: its second atom, upper case.
func imapserverName(line []byte) string {
	rest, _ := imapAtom(line)
	rest = bytes.TrimPrefix(rest, []byte(" "))
	after, _ := imapAtom(rest)
	return strings.ToUpper(string(rest[:len(rest)-len(after)]))
}

// imapAtom skips an atom as imapserver's decoder reads one
// (imapwire.IsAtomChar), reporting whether there was one.
func imapAtom(b []byte) (rest []byte, ok bool) {
	n := 0
	for n < len(b) && isImapserverAtomChar(b[n]) {
		n++
	}
	return b[n:], n > 0
}

func isImapserverAtomChar(ch byte) bool {
	switch ch {
	case '(', ')', '{', ' ', '%', '*', '"', '\\', ']':
		return false
	}
	return !unicode.IsControl(rune(ch))
}

// refuseUnreadable answers a line that imapserver cannot read a command
// from (imapserverReadsCommand) with BAD, tagged when the line starts
// with a tag (RFC 9051 section 7.1.5: untagged when the command cannot be
// told), instead of the silent close imapserver would make. Before login
// the connection is then closed with BYE, as imapserver closes it after
// an unknown command there (its defence against other protocols' clients
// talking to the port).
func (c *cmdConn) refuseUnreadable(tag string, line []byte) error {
	for i := 0; i < len(tag); i++ {
		if !isTagChar(tag[i]) {
			tag = ""
			break
		}
	}
	if err := c.refuse(tag, "BAD [CLIENTBUG] Syntax error: expected a tag, a space and a command name", line, false); err != nil {
		return err
	}
	if c.sess == nil || c.sess.user == nil {
		return c.bye("Syntax error before login")
	}
	return nil
}

// answered reports whether imapserver has answered the command it was
// reading (its tagged response is written), which the layer still has
// input of: a literal or the line after one.
func (c *cmdConn) answered() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inFlight == "" && c.cmd.name != ""
}

// dropAnswered reads and drops the rest of a command that imapserver
// answered before reading the whole of it: the non-synchronizing literal
// it announced (APPEND with a date it cannot read, or over APPENDLIMIT;
// a syntax error before a literal), the line after it and any literal
// that line announces. imapserver would read them as commands, so that a
// message's lines ran as IMAP commands. RFC 7888 section 4 leaves the
// server to read and drop such a literal or to close the connection: up
// to maxDiscard it is read, beyond it BYE.
func (c *cmdConn) dropAnswered() error {
	if err := c.conn().SetReadDeadline(time.Now().Add(ownReadTimeout)); err != nil {
		return err
	}
	dropped := int64(0)
	if c.state == inLiteral {
		if err := c.dropLiteral(c.lit, &dropped); err != nil {
			return err
		}
		c.lit = 0
	}
	tail, err := c.dropLine(nil, &dropped, "Command too long")
	if err != nil {
		return err
	}
	if err := c.dropLiterals(tail, &dropped); err != nil {
		return err
	}
	c.state = inLineStart
	c.tail = c.tail[:0]
	c.cmd = cmdState{}
	return c.rearm()
}

// checkRest checks a piece of a command that imapserver is reading (a
// line after a literal, or a line the command reads such as IDLE's DONE):
// over a limit, the client is told BYE and the connection closed.
func (c *cmdConn) checkRest(piece []byte, whole bool) error {
	if c.cmd.name == "" {
		return nil
	}
	if text := c.cmd.scan(piece); text != "" {
		return c.bye(text)
	}
	if !whole || c.cmd.name == "APPEND" {
		return nil
	}
	if n, _, ok := literalAtEnd(c.joinTail(piece)); ok && n > maxBufferedLiteral {
		return c.bye(fmt.Sprintf("Literal too big: at most %d bytes outside APPEND", maxBufferedLiteral))
	}
	return nil
}

// appendRest is the line imapserver gets after an APPEND's literal: line,
// or a bare CRLF for one with other bytes before its end. Only CRLF (or
// ")" and CRLF, closing APPEND's UTF8 data) may follow the message, and
// imapserver, finding anything else there after storing the message,
// answered nothing at all (its handler returns a nil error): the client
// waited for ever. The extra bytes are dropped and the APPEND answered.
// A line that ends in a literal (the message after a mailbox name sent
// as a literal) goes as it is.
func (c *cmdConn) appendRest(line []byte, whole bool) []byte {
	if !c.afterLiteral || !whole || c.cmd.name != "APPEND" {
		return line
	}
	rest := bytes.TrimRight(line, "\r\n")
	if len(rest) == 0 || string(rest) == ")" {
		return line
	}
	if _, _, ok := literalAtEnd(line); ok {
		return line
	}
	if c.sess != nil {
		c.sess.log.Info("bytes after the APPEND literal dropped", "bytes", len(rest))
	}
	return []byte("\r\n")
}

// bye ends the connection for a limit: imapserver's answer to the command
// it was reading, a SERVERBUG for the read that fails, goes nowhere.
func (c *cmdConn) bye(text string) error {
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	werr := c.writeOwn(fmt.Appendf(nil, "* BYE %s\r\n", text))
	c.Close()
	if werr != nil {
		return werr
	}
	return fmt.Errorf("imapd: %s: %w", text, net.ErrClosed)
}

// noteStatus counts and logs a tagged NO [SERVERBUG] of the command name
// that the session failed with (session.fail kept its error). It answers
// the line to send instead, or nil for line itself: a NO [SERVERBUG] of
// imapserver's own, with no error of the session behind it, is its
// decoder refusing the command's arguments (an unknown SEARCH key, a
// number that is not one: its parse errors are not typed as syntax
// errors), which is the client's error, BAD (RFC 9051 section 7.1.5).
// imapserver logs its parse error itself (Options.Logger).
func (c *cmdConn) noteStatus(name string, line []byte, fromImapserver bool) []byte {
	sp := bytes.IndexByte(line, ' ')
	if sp < 0 || !bytes.HasPrefix(line[sp+1:], []byte("NO [SERVERBUG]")) {
		return nil
	}
	log := c.srv.log
	var detail error
	if c.sess != nil {
		log = c.sess.log
		detail = c.sess.takeBug()
	}
	if detail == nil && fromImapserver {
		if c.readFailed.Load() {
			// The connection ended (or timed out, or the server is
			// shutting down) while imapserver read the command: no
			// parse error, no bug, and no one to answer.
			log.Info("command ended with its connection", "command", name, "tag", string(line[:sp]))
			return nil
		}
		log.Info("command refused: arguments imapserver cannot parse", "command", name, "tag", string(line[:sp]))
		return fmt.Appendf(nil, "%s BAD [CLIENTBUG] Syntax error in the command's arguments\r\n", line[:sp])
	}
	c.srv.serverBugs.Add(1)
	log.Error("server bug", "command", name, "tag", string(line[:sp]), "err", detail)
	return nil
}

// validModifiedUTF7 reports whether s is a mailbox name as RFC 3501
// section 5.1.3 encodes it (or raw UTF-8, RFC 6855), as go-imap's
// internal utf7.Decode accepts it: printable ASCII, "&-" for "&", and
// "&" base64 of UTF-16 "-" for the rest.
func validModifiedUTF7(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	ascii := true
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch < 0x20 || ch > 0x7e && ch < utf8.RuneSelf {
			return false
		}
		if ch != '&' {
			ascii = true
			continue
		}
		start := i + 1
		for i++; i < len(s) && s[i] != '-'; i++ {
			if s[i] == '\r' || s[i] == '\n' {
				return false
			}
		}
		if i == len(s) {
			return false
		}
		if i == start {
			ascii = true
			continue
		}
		if !ascii || !validUTF7Base64(s[start:i]) {
			return false
		}
		ascii = false
	}
	return true
}

// utf7Base64 is modified base64 (RFC 3501 section 5.1.3: "," for "/").
var utf7Base64 = base64.NewEncoding("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+,")

// validUTF7Base64 reports whether b64 is modified base64 of UTF-16BE that
// encodes no printable ASCII and no broken surrogate pair.
func validUTF7Base64(b64 string) bool {
	switch len(b64) % 4 {
	case 1:
		return false
	case 2:
		b64 += "=="
	case 3:
		b64 += "="
	}
	if strings.Contains(b64[:len(b64)-2], "=") {
		return false
	}
	b, err := utf7Base64.DecodeString(b64)
	if err != nil || len(b)%2 == 1 {
		return false
	}
	for i := 0; i < len(b); i += 2 {
		r := rune(b[i])<<8 | rune(b[i+1])
		if utf16.IsSurrogate(r) {
			if i += 2; i == len(b) {
				return false
			}
			if utf16.DecodeRune(r, rune(b[i])<<8|rune(b[i+1])) == utf8.RuneError {
				return false
			}
		} else if 0x20 <= r && r <= 0x7e {
			return false
		}
	}
	return true
}
