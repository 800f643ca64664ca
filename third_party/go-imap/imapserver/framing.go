package imapserver

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/emersion/go-imap/v2"
)

// mailhost patch: Options.CommandLimits (see PATCHES.md). Everything of
// this file is new.

// CommandLimits are limits on a client's commands, checked on each
// command's first line before the decoder reads any of it. Upstream's
// decoder meets the same limits only while it reads (and answers NO
// [SERVERBUG], or makes the client wait for a continuation request that
// never comes); with CommandLimits:
//
//   - A command line longer than 50 KiB besides its literals (RFC 2683
//     section 3.2.1.5 asks for 8,000 octets) is answered BAD and dropped
//     up to its end.
//   - A literal over 4096 bytes outside APPEND (what imapserver buffers),
//     or in an APPEND before login (imapserver read its messages whole,
//     any number of them, before refusing it), is answered BAD
//     [TOOBIG]: the client sends nothing more of a synchronizing one (RFC
//     9051 section 7.5); a non-synchronizing one is read and dropped
//     with the rest of the command. A command a
//     session serves (SessionCommands, and STARTTLS) gets imapserver's
//     NO [TOOBIG] for a synchronizing literal, as RFC 9208's and RFC
//     2971's clients expect.
//   - Literals of one such command over 64 KiB in all (each within 4096
//     bytes, only the 50 KiB of the lines between them would bound their
//     number): BYE.
//   - More than MaxNesting parentheses open at once: BAD.
//   - A quoted string left open at the end of a line (a quoted string
//     holds no CR or LF, RFC 9051 section 4.3; the decoder would read the
//     next lines into it while the client waits for an answer): BAD.
//   - A line from which no tag and command name can be read (an empty
//     line, a tag alone, two spaces; upstream closes the connection
//     without a word): BAD, tagged when the line starts with a tag, else
//     untagged (RFC 9051 section 7.1.5); before login, then BYE, as
//     upstream ends a connection at an unknown command there.
//   - A line that the command being served reads itself (IDLE's DONE, a
//     SASL response) announces no literal, whatever its end.
//   - A limit met in a line after a literal, once part of the command
//     was read: BYE, and the connection is closed.
//   - A non-synchronizing literal of a command answered before the
//     literal was read (APPEND with a date that cannot be read, or over
//     APPENDLIMIT), the line after it and the literals that line
//     announces, are read and dropped rather than run as commands (RFC
//     7888 section 4 lets the server drop such a literal or close); more
//     than MaxDiscard in all ends the connection with BYE.
//   - Bytes between an APPEND's last literal and the end of its line
//     (where only CRLF, or ")" for UTF8 data, may be) are dropped and the
//     APPEND answered; upstream stored the message and answered nothing.
//   - An error of a command's handler that is no *imap.Error, while the
//     client's input was read without fault, is answered BAD [CLIENTBUG]
//     "Syntax error in the command's arguments" rather than NO
//     [SERVERBUG]: it comes from parsing the arguments (a number out of
//     range, an unknown SEARCH key). A session must then report its own
//     failures as *imap.Error (NO [SERVERBUG]).
type CommandLimits struct {
	// MaxNesting bounds the parentheses open at once in a command. 0
	// means 100.
	MaxNesting int
	// MaxDiscard bounds what is read and dropped of a refused command. 0
	// means 1 MiB.
	MaxDiscard int64
	// LiteralRead, when set, is called with the transport when the last
	// byte of a literal from the client has been read and nothing more
	// of its input is buffered: a client with Nagle's algorithm on that
	// sends the rest of its line in a second, small write holds it until
	// the literal is acknowledged, and the server, which has nothing to
	// send, acknowledges it only when its delayed-ACK timer fires (40 ms
	// on Linux), unless this asks the kernel to do it now
	// (TCP_QUICKACK).
	LiteralRead func(net.Conn)
}

const (
	// framerBuffer is the framer's read buffer: longer lines are read in
	// pieces (a command's first line is gathered whole, up to
	// maxCommandSize, to be checked).
	framerBuffer = 8 << 10
	// maxBufferedLiteral is what imapserver buffers of a literal outside
	// APPEND (checkBufferedLiteral).
	maxBufferedLiteral = 4096
	// maxBufferedLiterals bounds the literals of one command that
	// imapserver buffers, in all: each is at most maxBufferedLiteral,
	// and without this bound only the 50 KiB of the lines between them
	// would limit their number (some 5,000, 20 MB held for an ID
	// before login). Dovecot's imap_max_line_length, 64 KiB, counts
	// literals the same way.
	maxBufferedLiterals = 64 << 10
)

// inState is what the next bytes from the client are.
type inState int

const (
	// inLineStart: the start of a line, a command or a line that the
	// command being served reads (the DONE of IDLE, a SASL response).
	inLineStart inState = iota
	// inLineRest: the rest of a line, after a literal or after the part
	// of an overlong line already passed on.
	inLineRest
	// inLiteral: lit bytes of a literal.
	inLiteral
	// inSyncLiteral: a synchronizing literal of lit bytes was announced;
	// the client sends it only after "+" (RFC 9051 section 7.5), and the
	// command may be answered without one.
	inSyncLiteral
)

// framer is the reader between the transport and br when CommandLimits
// are set. It hands br at most one line or literal at a time, so that it
// sees the start of each command before the decoder does, and knows,
// when a command has been answered, what of it is left to drop.
//
// Only the connection's goroutine uses it.
type framer struct {
	c      *Conn
	limits CommandLimits
	br     *bufio.Reader

	state   inState
	lit     int64  // bytes of the literal (inLiteral, inSyncLiteral)
	pending []byte // the part of the current line br has yet to get, in br's buffer
	tail    []byte // the last bytes of an overlong line, to find a literal at its end
	// afterLiteral: the line being read follows a literal (appendRest).
	afterLiteral bool
	// commandRead: the line being read is one the command being served
	// reads itself (IDLE's DONE, a SASL response), which holds no
	// literal: "DONE {5+}" announces none.
	commandRead bool
	// inFlight: a command's first line was handed on and the command
	// is not yet answered (endCommand).
	inFlight bool
	cmd      cmdState // the command being read
	// contSeen: a continuation request was written (writeContReq).
	contSeen bool
	// readFailed: a read from the client failed; closed: the framer
	// said BYE and closed the connection.
	readFailed bool
	// err is the first failed read's error, returned by every Read
	// after it: imapserver sets its read deadline again for each
	// command, so a client past its deadline (one that trickles a
	// byte a second) would otherwise be read on.
	err    error
	closed bool
}

func newFramer(c *Conn, r io.Reader, limits CommandLimits) *framer {
	if limits.MaxNesting <= 0 {
		limits.MaxNesting = 100
	}
	if limits.MaxDiscard <= 0 {
		limits.MaxDiscard = 1 << 20
	}
	return &framer{c: c, limits: limits, br: bufio.NewReaderSize(r, framerBuffer)}
}

// buffered is what the framer has read from the transport and not handed
// on (Upgrade).
func (f *framer) buffered() []byte {
	b := append([]byte(nil), f.pending...)
	if n := f.br.Buffered(); n > 0 {
		more, _ := f.br.Peek(n)
		b = append(b, more...)
	}
	return b
}

// reset reads from r from now on (Upgrade).
func (f *framer) reset(r io.Reader) {
	f.br.Reset(r)
	f.pending, f.tail = nil, f.tail[:0]
	f.state, f.lit = inLineStart, 0
	f.commandRead = false
	f.err, f.readFailed = nil, false
}

// endCommand records that the command being served is answered.
func (f *framer) endCommand() {
	f.inFlight = false
}

// answered reports whether the command the framer still has input of (a
// literal, or the line after one) has been answered.
func (f *framer) answered() bool {
	return !f.inFlight && f.cmd.name != ""
}

// Read gives br the client's bytes, at most up to the end of the current
// line or literal, after refusing what CommandLimits refuse.
func (f *framer) Read(p []byte) (n int, err error) {
	if f.err != nil && len(f.pending) == 0 {
		return 0, f.err
	}
	defer func() {
		if err != nil {
			f.readFailed = true
			f.err = err
		}
	}()
	if (f.state == inLiteral || f.state == inLineRest) && len(f.pending) == 0 && f.answered() {
		if err := f.dropAnswered(); err != nil {
			return 0, err
		}
	}
	for len(f.pending) == 0 && f.state != inLiteral {
		if err := f.next(); err != nil {
			return 0, err
		}
	}
	if len(f.pending) > 0 {
		n = copy(p, f.pending)
		f.pending = f.pending[n:]
		return n, nil
	}
	// A literal: as much of it as has come, read into p directly.
	if int64(len(p)) > f.lit {
		p = p[:f.lit]
	}
	n, err = f.br.Read(p)
	f.lit -= int64(n)
	if f.lit == 0 {
		f.state, f.afterLiteral = inLineRest, true
		if f.limits.LiteralRead != nil && f.br.Buffered() == 0 {
			f.limits.LiteralRead(f.c.NetConn())
		}
	}
	return n, err
}

// next makes the next piece of input pending, refusing a command that
// comes first if it must be.
func (f *framer) next() error {
	if f.state == inSyncLiteral {
		switch {
		case f.contSeen && f.lit > 0:
			f.state = inLiteral
			return nil
		case f.contSeen:
			f.state = inLineRest
		default:
			// Refused, or never acknowledged: the client sends no
			// literal without "+".
			f.state = inLineStart
		}
	}
	first := f.state == inLineStart && !f.inFlight
	if f.state == inLineStart && f.inFlight {
		f.commandRead = true
	}
	commandRead := f.commandRead
	line, err := f.br.ReadSlice('\n')
	whole := err == nil
	long := false
	if errors.Is(err, bufio.ErrBufferFull) {
		err = nil
		if first {
			// The first line of a command is read whole, to be
			// checked against the limits.
			line, long, err = f.readFirstLine(line)
			whole = err == nil && !long
		}
	}
	if err != nil {
		if len(line) > 0 {
			// Give br what came; the error comes once it is read.
			f.pending = line
			f.state = inLineRest
			f.err = err
			return nil
		}
		return err
	}
	if first {
		tag, name, ok := commandName(line)
		if whole && !readsCommand(line) {
			return f.refuseUnreadable(tag, line)
		}
		if !ok && whole {
			// The decoder reads a name where commandName sees none
			// ("E)"): follow the decoder, so that the command is known
			// to be in flight and, once answered, the literal it
			// announced is dropped (dropAnswered).
			name = decoderName(line)
		}
		if resp := f.refusal(name, line, long); resp != "" {
			return f.refuse(tag, resp, line, long)
		}
		f.inFlight = true
		f.cmd = cmdState{name: name}
		f.cmd.scan(line, f.limits.MaxNesting)
		if n, _, ok := literalAtEnd(line); ok && f.buffersLiterals(name) {
			f.cmd.literals = n
		}
	} else if err := f.checkRest(line, whole && !commandRead); err != nil {
		return err
	} else {
		line = f.appendRest(line, whole)
	}
	f.afterLiteral = false
	f.pending = line
	if !whole {
		f.tail = appendTail(f.tail, line)
		f.state = inLineRest
		return nil
	}
	n, sync, ok := literalAtEnd(f.joinTail(line))
	f.tail = f.tail[:0]
	f.commandRead = false
	switch {
	case !ok || commandRead:
		f.state = inLineStart
	case sync:
		f.contSeen = false
		f.state, f.lit = inSyncLiteral, n
	case n > 0:
		f.state, f.lit = inLiteral, n
	default:
		f.state = inLineRest
	}
	return nil
}

// joinTail is the end of a line that may have come in pieces.
func (f *framer) joinTail(last []byte) []byte {
	if len(f.tail) == 0 || len(last) >= tailLen {
		return last
	}
	return append(f.tail, last...)
}

// tailLen is enough of a line's end to hold "{4294967295+}\r\n" with room
// to spare.
const tailLen = 32

func appendTail(tail, b []byte) []byte {
	if len(b) >= tailLen {
		return append(tail[:0], b[len(b)-tailLen:]...)
	}
	tail = append(tail, b...)
	if len(tail) > tailLen {
		tail = append(tail[:0], tail[len(tail)-tailLen:]...)
	}
	return tail
}

// literalAtEnd finds the literal a line announces at its end, "{n}" or
// "{n+}" before the CRLF (RFC 9051 section 4.3, RFC 7888; "~{n}" of RFC
// 3516 ends the same way). Nothing else in IMAP syntax ends a line with
// "}": a quoted string ends with '"', and '{' is no atom character.
func literalAtEnd(line []byte) (n int64, sync, ok bool) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	if !bytes.HasSuffix(line, []byte("}")) {
		return 0, false, false
	}
	open := bytes.LastIndexByte(line, '{')
	if open < 0 {
		return 0, false, false
	}
	digits := line[open+1 : len(line)-1]
	sync = true
	if d, found := bytes.CutSuffix(digits, []byte("+")); found {
		digits, sync = d, false
	}
	if len(digits) == 0 || len(digits) > 19 {
		return 0, false, false
	}
	for _, ch := range digits {
		if ch < '0' || ch > '9' {
			return 0, false, false
		}
	}
	n, err := strconv.ParseInt(string(digits), 10, 64)
	if err != nil {
		return 0, false, false
	}
	return n, sync, true
}

// commandName splits the start of a command line into its tag and its
// command name, upper case. ok is false for a line that does not start
// like a command; tag is then what the decoder would take for one, or "".
func commandName(line []byte) (tag, name string, ok bool) {
	sp := bytes.IndexByte(line, ' ')
	if sp <= 0 {
		return "", "", false
	}
	tag = string(line[:sp])
	for _, ch := range line[:sp] {
		if !isTagChar(ch) {
			return tag, "", false
		}
	}
	rest := line[sp+1:]
	end := 0
	for end < len(rest) && isAlpha(rest[end]) {
		end++
	}
	if end == 0 || end < len(rest) && rest[end] != ' ' && rest[end] != '\r' && rest[end] != '\n' {
		return tag, "", false
	}
	return tag, string(bytes.ToUpper(rest[:end])), true
}

// isTagChar: tag = 1*<any ASTRING-CHAR except "+"> (RFC 9051 section 9).
func isTagChar(ch byte) bool {
	switch ch {
	case '(', ')', '{', '%', '*', '"', '\\', '+':
		return false
	}
	return ch > ' ' && ch < 0x7f
}

func isAlpha(ch byte) bool { return ch >= 'A' && ch <= 'Z' || ch >= 'a' && ch <= 'z' }

// readsCommand reports whether the decoder can read a tag and a command
// name from the first line of a command: an atom, a space and an atom,
// and for UID a space and a second atom (readCommand).
func readsCommand(line []byte) bool {
	rest, ok := skipAtom(line)
	if !ok {
		return false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(" ")); !ok {
		return false
	}
	name := rest
	if rest, ok = skipAtom(rest); !ok {
		return false
	}
	if !bytes.EqualFold(name[:len(name)-len(rest)], []byte("UID")) {
		return true
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(" ")); !ok {
		return false
	}
	_, ok = skipAtom(rest)
	return ok
}

// decoderName is the command name the decoder reads from a line
// readsCommand accepts: its second atom, upper case.
func decoderName(line []byte) string {
	rest, _ := skipAtom(line)
	rest = bytes.TrimPrefix(rest, []byte(" "))
	after, _ := skipAtom(rest)
	return strings.ToUpper(string(rest[:len(rest)-len(after)]))
}

// skipAtom skips an atom as the decoder reads one (imapwire.IsAtomChar),
// reporting whether there was one.
func skipAtom(b []byte) (rest []byte, ok bool) {
	n := 0
	for n < len(b) && isAtomChar(b[n]) {
		n++
	}
	return b[n:], n > 0
}

func isAtomChar(ch byte) bool {
	switch ch {
	case '(', ')', '{', ' ', '%', '*', '"', '\\', ']':
		return false
	}
	return !unicode.IsControl(rune(ch))
}

// cmdState follows the command being read, for the limits it can meet
// only in the lines after a literal.
type cmdState struct {
	name  string // upper case, "" between commands
	bytes int    // non-literal bytes so far
	// literals: bytes of the literals announced so far, of a command
	// whose literals imapserver buffers (buffersLiterals).
	literals int64
	depth    int // parentheses open
	inQuote  bool
	escaped  bool
	// openAtEOL: a quoted string was still open at the end of a line.
	openAtEOL bool
}

// scan adds a piece of a command line (no literal data) and reports what
// limit it crosses, if any.
func (s *cmdState) scan(b []byte, maxNesting int) string {
	s.bytes += len(b)
	if s.bytes > maxCommandSize {
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
			if s.depth > maxNesting {
				return "Too many nested parentheses"
			}
		case ch == ')':
			if s.depth > 0 {
				s.depth--
			}
		}
	}
	return ""
}

// readFirstLine reads the first line of a command whole, up to
// maxCommandSize; piece is what ReadSlice gave before its buffer was
// full. long reports a line over the limit, of which the rest is still
// to be read.
func (f *framer) readFirstLine(piece []byte) (line []byte, long bool, err error) {
	line = append(make([]byte, 0, 2*len(piece)), piece...)
	for len(line) <= maxCommandSize {
		more, err := f.br.ReadSlice('\n')
		line = append(line, more...)
		if err == nil {
			return line, len(line) > maxCommandSize, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, false, err
		}
	}
	return line, true, nil
}

// refusal is the answer to the first line of a command that is refused,
// or "" for one that goes on to the decoder.
func (f *framer) refusal(name string, line []byte, long bool) string {
	if long {
		return fmt.Sprintf("BAD Command line too long: at most %d bytes besides literals", maxCommandSize)
	}
	var st cmdState
	if st.scan(line, f.limits.MaxNesting) != "" {
		return fmt.Sprintf("BAD [CLIENTBUG] Too many nested parentheses: at most %d", f.limits.MaxNesting)
	}
	if st.openAtEOL {
		return "BAD [CLIENTBUG] Syntax error: quoted string not closed before the end of the line"
	}
	// A synchronizing literal too big for a command the session serves
	// is answered NO [TOOBIG] by checkBufferedLiteral; a
	// non-synchronizing one must be dropped here, its bytes being on
	// their way.
	if n, sync, ok := literalAtEnd(line); ok && n > maxBufferedLiteral && f.buffersLiterals(name) && !(sync && f.c.sessionServes(name)) {
		return fmt.Sprintf("BAD [TOOBIG] Literal too big: at most %d bytes outside APPEND", maxBufferedLiteral)
	}
	return ""
}

// sessionServes reports whether the session serves command name itself
// (SessionCommands).
func (c *Conn) sessionServes(name string) bool {
	sc, ok := c.session.(SessionCommands)
	return ok && sc.ServesCommand(name)
}

// refuse answers the first line of a command with resp, then drops the
// rest of the command: of an overlong line (long), up to its end; then
// any non-synchronizing literal and the line after it. The client sends
// no synchronizing literal without "+".
func (f *framer) refuse(tag, resp string, line []byte, long bool) error {
	if tag == "" {
		tag = "*"
	}
	f.setReadDeadline(cmdReadTimeout)
	dropped := int64(len(line))
	tail := appendTail(nil, line)
	if long {
		var err error
		if tail, err = f.dropLine(tail, &dropped, "Command line too long"); err != nil {
			return err
		}
	}
	if err := f.c.writeRaw(fmt.Appendf(nil, "%s %s\r\n", tag, resp)); err != nil {
		return err
	}
	if err := f.dropLiterals(tail, &dropped); err != nil {
		return err
	}
	f.state = inLineStart
	f.rearm()
	return nil
}

// setReadDeadline bounds the framer's own reading (of a command it
// drops) without changing the timeout imapserver set (rearm).
func (f *framer) setReadDeadline(d time.Duration) {
	f.c.conn.SetReadDeadline(time.Now().Add(d))
}

// rearm gives the wait for the next command the timeout imapserver set
// for it.
func (f *framer) rearm() {
	f.c.setReadTimeout(f.c.readTimeout)
}

// dropLine reads and drops the rest of a line, up to and including its
// LF, adding it to tail (whose end tells a literal) and to dropped;
// beyond MaxDiscard in all the connection ends with BYE (text).
func (f *framer) dropLine(tail []byte, dropped *int64, text string) ([]byte, error) {
	for {
		more, err := f.br.ReadSlice('\n')
		*dropped += int64(len(more))
		tail = appendTail(tail, more)
		if *dropped > f.limits.MaxDiscard {
			return tail, f.bye(text)
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
// MaxDiscard in all.
func (f *framer) dropLiteral(n int64, dropped *int64) error {
	if *dropped+n > f.limits.MaxDiscard {
		return f.bye("Literal too big")
	}
	if _, err := io.CopyN(io.Discard, f.br, n); err != nil {
		return fmt.Errorf("read literal: %w", err)
	}
	*dropped += n
	return nil
}

// dropLiterals drops, while the line that tail ends announces a
// non-synchronizing literal, that literal and the line after it.
func (f *framer) dropLiterals(tail []byte, dropped *int64) error {
	for {
		n, sync, ok := literalAtEnd(tail)
		if !ok || sync {
			return nil
		}
		if err := f.dropLiteral(n, dropped); err != nil {
			return err
		}
		var err error
		if tail, err = f.dropLine(tail[:0], dropped, "Command too long"); err != nil {
			return err
		}
	}
}

// refuseUnreadable answers a line from which no command can be read
// (readsCommand) with BAD, tagged when the line starts with a tag;
// before login the connection is then closed with BYE.
func (f *framer) refuseUnreadable(tag string, line []byte) error {
	for i := 0; i < len(tag); i++ {
		if !isTagChar(tag[i]) {
			tag = ""
			break
		}
	}
	if err := f.refuse(tag, "BAD [CLIENTBUG] Syntax error: expected a tag, a space and a command name", line, false); err != nil {
		return err
	}
	if f.c.state == imap.ConnStateNotAuthenticated {
		return f.bye("Syntax error before login")
	}
	return nil
}

// dropAnswered reads and drops the rest of a command that was answered
// before it was read whole: the non-synchronizing literal it announced,
// the line after it and any literal that line announces, which the
// decoder would otherwise read as commands.
func (f *framer) dropAnswered() error {
	f.setReadDeadline(cmdReadTimeout)
	dropped := int64(0)
	if f.state == inLiteral {
		if err := f.dropLiteral(f.lit, &dropped); err != nil {
			return err
		}
		f.lit = 0
	}
	tail, err := f.dropLine(nil, &dropped, "Command too long")
	if err != nil {
		return err
	}
	if err := f.dropLiterals(tail, &dropped); err != nil {
		return err
	}
	f.state = inLineStart
	f.tail = f.tail[:0]
	f.commandRead = false
	f.cmd = cmdState{}
	f.rearm()
	return nil
}

// checkRest checks a piece of a command being read (a line after a
// literal, or a line the command reads such as IDLE's DONE): over a
// limit, the client is told BYE and the connection closed.
func (f *framer) checkRest(piece []byte, whole bool) error {
	if f.cmd.name == "" {
		return nil
	}
	if text := f.cmd.scan(piece, f.limits.MaxNesting); text != "" {
		return f.bye(text)
	}
	if !whole || !f.buffersLiterals(f.cmd.name) {
		return nil
	}
	n, _, ok := literalAtEnd(f.joinTail(piece))
	if !ok {
		return nil
	}
	if n > maxBufferedLiteral {
		return f.bye(fmt.Sprintf("Literal too big: at most %d bytes outside APPEND", maxBufferedLiteral))
	}
	if f.cmd.literals += n; f.cmd.literals > maxBufferedLiterals {
		return f.bye(fmt.Sprintf("Command too long: at most %d bytes of literals outside APPEND", maxBufferedLiterals))
	}
	return nil
}

// buffersLiterals reports whether the literals of command name are
// limited as imapserver's buffered ones are: those of every command but
// APPEND, and those of APPEND too before login, where it is refused
// after its messages are read and dropped (MULTIAPPEND reads any number
// of them, each with literalReadTimeout).
func (f *framer) buffersLiterals(name string) bool {
	return name != "APPEND" || f.c.state == imap.ConnStateNotAuthenticated
}

// appendRest is the line the decoder gets after an APPEND's literal:
// line, or a bare CRLF for one with other bytes before its end. Only CRLF
// (or ")" and CRLF, closing APPEND's UTF8 data) may follow the message,
// and handleAppend, finding anything else there after the message was
// stored, answered nothing. A line that ends in a literal (the message
// after a mailbox name sent as a literal) goes as it is.
func (f *framer) appendRest(line []byte, whole bool) []byte {
	if !f.afterLiteral || !whole || f.cmd.name != "APPEND" {
		return line
	}
	rest := bytes.TrimRight(line, "\r\n")
	if len(rest) == 0 || string(rest) == ")" {
		return line
	}
	if _, _, ok := literalAtEnd(line); ok {
		return line
	}
	f.c.server.logger().Printf("APPEND: %d bytes after the literal dropped", len(rest))
	return []byte("\r\n")
}

// bye ends the connection for a limit: the answer to the command being
// read, for the read that fails, goes nowhere.
func (f *framer) bye(text string) error {
	f.closed = true
	werr := f.c.writeRaw(fmt.Appendf(nil, "* BYE %s\r\n", text))
	f.c.mutex.Lock()
	f.c.conn.Close()
	f.c.mutex.Unlock()
	if werr != nil {
		return werr
	}
	return fmt.Errorf("imapserver: %s: %w", text, net.ErrClosed)
}

// writeRaw writes b, whole responses, and flushes.
func (c *Conn) writeRaw(b []byte) error {
	enc := newResponseEncoder(c)
	defer enc.end()
	if _, err := c.bw.Write(b); err != nil {
		return err
	}
	return c.bw.Flush()
}
