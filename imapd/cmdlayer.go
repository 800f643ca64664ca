package imapd

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-imap/v2"
)

// This file is the command layer: a net.Conn that sits between the client
// and imapserver, serves STARTTLS and COMPRESS (compress.go), which change
// the bytes under imapserver, and passes everything
// else through byte for byte. See the package doc for why, and for what
// to remove once imapserver can be extended.
//
// Invariants:
//
//   - Only imapserver's connection goroutine reads (Read, and through it
//     the layer's own commands and STARTTLS). It reads one client line or
//     literal at a time, never past the end of a line, so imapserver asks
//     for the next command only once it has answered the previous one:
//     when the layer serves a command, nothing of imapserver's is being
//     written, and responses stay in command order (RFC 9051 section 5.5).
//   - The layer serves a command only at the start of a client line, when
//     no command passed to imapserver is in flight (its tagged response
//     not yet written): so the DONE of IDLE, an AUTHENTICATE exchange and
//     the bytes of a literal ({n} and {n+}, RFC 9051 section 4.3 and RFC
//     7888) are never taken for commands.
//   - imapserver's output is passed on unchanged (but for the layer's
//     capabilities), each of its writes as one write, at once: imapserver
//     gathers a FETCH, SEARCH or STORE's responses itself, up to its
//     write buffer, and flushes at the status response, a continuation
//     request and a BYE. A line is passed on once its end has come.
//   - Lock order: wmu before mu.

const (
	// lineBuffer is the longest line the layer reads whole. Longer lines
	// pass to imapserver in pieces (its own limit, 50 KiB a command,
	// still holds); a command of the layer must have its first line
	// within it (RFC 2683 section 3.2.1.5 asks servers for 8,000 octets).
	lineBuffer = 8 << 10
	// maxOwnLiteral and maxOwnCommand bound the literals and the whole of
	// a command the layer serves, as imapserver bounds the commands it
	// buffers (4096-byte literals, 50 KiB).
	maxOwnLiteral = 4096
	maxOwnCommand = 50 << 10
	// ownReadTimeout bounds reading the rest of a command of the layer
	// (its literals), as imapserver's command read timeout does.
	ownReadTimeout = 30 * time.Second
	// ownWriteTimeout bounds writing a response of the layer, as
	// imapserver's response write timeout does.
	ownWriteTimeout = 30 * time.Second
	// holdMax is how much of a line imapserver writes the layer keeps
	// before passing it on, to recognise CAPABILITY data and tagged
	// responses. It exceeds imapserver's 50 KiB command limit, so any tag
	// imapserver echoes fits.
	holdMax = 64 << 10
)

// layerListener wraps every connection accepted in a cmdConn.
type layerListener struct {
	net.Listener
	srv *Server
}

func (l *layerListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return newCmdConn(l.srv, c), nil
}

// inState is what the next bytes from the client are.
type inState int

const (
	// inLineStart: the start of a line, a command or a line that the
	// command in flight reads (the DONE of IDLE, a SASL response).
	inLineStart inState = iota
	// inLineRest: the rest of a line, after a literal or after the part
	// of an overlong line already passed on.
	inLineRest
	// inLiteral: lit bytes of a literal.
	inLiteral
	// inSyncLiteral: a synchronizing literal of lit bytes was announced;
	// the client sends it only if the server answers "+" (RFC 9051
	// section 7.5), and imapserver may answer a tagged NO instead.
	inSyncLiteral
)

// cmdConn is one client connection as imapserver sees it.
type cmdConn struct {
	srv *Server
	raw net.Conn // as accepted; under TLS once STARTTLS has run

	// Read side: only imapserver's connection goroutine uses these.
	br      *bufio.Reader
	state   inState
	lit     int64  // bytes of the literal (inLiteral, inSyncLiteral)
	pending []byte // the part of the current line imapserver has yet to read, in br's buffer
	tail    []byte // the last bytes of an overlong line, to find a literal at its end
	// readTimeout is the read timeout imapserver last set: the layer
	// sets it again after each command it serves, so that a client
	// waiting between commands gets imapserver's timeout, not a
	// deadline set before the layer's command.
	readTimeout time.Duration
	// afterLiteral: the line being read follows a literal (appendRest).
	afterLiteral bool
	// readFailed: a read from the client failed (the connection ended,
	// or timed out); the writer side reads it (noteStatus).
	readFailed atomic.Bool
	sess       *session
	cmd        cmdState // the command imapserver is reading (cmdlimits.go)

	// wmu serialises writes to the client and guards out and wbuf
	// (Write's scratch buffer).
	wmu  sync.Mutex
	out  outState
	wbuf []byte

	// mu guards the fields below.
	mu           sync.Mutex
	transport    net.Conn // raw, or the *tls.Conn over it
	tls          bool
	inFlight     string // tag of the command imapserver is running, "" when none
	inFlightName string // and its name, upper case
	contSeen     bool   // imapserver wrote a continuation request ("+")
	closing      bool   // the layer said BYE for a limit: imapserver's output goes nowhere
}

// outState follows imapserver's output line by line.
type outState struct {
	held      []byte // the start of the current line, up to holdMax
	streaming bool   // the current line is longer than holdMax and passes on as it comes
	tail      []byte // the last bytes of a streamed line
	lit       int64  // literal bytes still to pass on
}

func newCmdConn(srv *Server, c net.Conn) *cmdConn {
	_, isTLS := c.(*tls.Conn)
	return &cmdConn{
		srv:       srv,
		raw:       c,
		br:        bufio.NewReaderSize(c, lineBuffer),
		transport: c,
		tls:       isTLS,
	}
}

// attachLayer lets c's layer serve its commands with sess. Every
// connection imapserver serves comes from a layerListener.
func attachLayer(c interface{ NetConn() net.Conn }, sess *session) {
	if cc, ok := c.NetConn().(*cmdConn); ok {
		cc.sess = sess
	}
}

// secure reports whether the connection is under TLS.
func (c *cmdConn) secure() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tls
}

func (c *cmdConn) conn() net.Conn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.transport
}

// Close closes the connection.
func (c *cmdConn) Close() error {
	return c.conn().Close()
}

func (c *cmdConn) LocalAddr() net.Addr                { return c.raw.LocalAddr() }
func (c *cmdConn) RemoteAddr() net.Addr               { return c.raw.RemoteAddr() }
func (c *cmdConn) SetDeadline(t time.Time) error      { return c.conn().SetDeadline(t) }
func (c *cmdConn) SetWriteDeadline(t time.Time) error { return c.conn().SetWriteDeadline(t) }

// SetReadDeadline is called by imapserver's connection goroutine only.
func (c *cmdConn) SetReadDeadline(t time.Time) error {
	c.readTimeout = 0
	if !t.IsZero() {
		c.readTimeout = time.Until(t)
	}
	return c.conn().SetReadDeadline(t)
}

// Read gives imapserver the client's bytes, at most up to the end of the
// current line or literal, after serving the layer's own commands.
func (c *cmdConn) Read(p []byte) (n int, err error) {
	defer func() {
		if err != nil {
			// imapserver answers a read that fails, too, with a NO
			// [SERVERBUG] that is no parse error (noteStatus).
			c.readFailed.Store(true)
		}
	}()
	if (c.state == inLiteral || c.state == inLineRest) && len(c.pending) == 0 && c.answered() {
		if err := c.dropAnswered(); err != nil {
			return 0, err
		}
	}
	for len(c.pending) == 0 && c.state != inLiteral {
		if err := c.next(); err != nil {
			return 0, err
		}
	}
	if len(c.pending) > 0 {
		n = copy(p, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	// A literal: as much of it as has come, read into p directly.
	if int64(len(p)) > c.lit {
		p = p[:c.lit]
	}
	n, err = c.br.Read(p)
	c.lit -= int64(n)
	if c.lit == 0 {
		c.state, c.afterLiteral = inLineRest, true
		if c.br.Buffered() == 0 {
			// The client may hold the line's end back until the
			// literal is acknowledged (quickack_linux.go).
			quickAck(c.raw)
		}
	}
	return n, err
}

// next makes the next piece of input pending, serving any command of the
// layer that comes first.
func (c *cmdConn) next() error {
	if c.state == inSyncLiteral {
		c.mu.Lock()
		cont, done := c.contSeen, c.inFlight == ""
		c.mu.Unlock()
		switch {
		case cont && c.lit > 0:
			c.state = inLiteral
			return nil
		case cont:
			c.state = inLineRest
		case done:
			// Refused: the client will not send the literal.
			c.state = inLineStart
		default:
			// imapserver reads on without either: never seen, but a
			// command is still in flight, so nothing is served here.
			c.state = inLineStart
		}
	}
	start := c.state == inLineStart
	idle := false
	if start {
		c.mu.Lock()
		idle = c.inFlight == ""
		c.mu.Unlock()
	}
	line, err := c.br.ReadSlice('\n')
	whole := err == nil
	long := false
	if errors.Is(err, bufio.ErrBufferFull) {
		err = nil
		if start && idle {
			// The first line of a command is read whole, to be
			// checked against the limits (cmdlimits.go).
			line, long, err = c.readFirstLine(line)
			whole = err == nil && !long
		}
	}
	if err != nil {
		if len(line) > 0 {
			// Give imapserver what came; the error comes again next time.
			c.pending = line
			c.state = inLineRest
			return nil
		}
		return err
	}
	if start && idle {
		tag, name, ok := commandName(line)
		if ok && whole && c.sess != nil && c.serves(name) {
			return c.serve(tag, name, line)
		}
		if whole && !imapserverReadsCommand(line) {
			return c.refuseUnreadable(tag, line)
		}
		if !ok && whole {
			// imapserver reads a name where the layer's scanner sees none
			// ("E)"): the layer follows imapserver's reading, so that it
			// knows a command is in flight and, once imapserver has
			// answered it, drops the literal it announced (dropAnswered).
			name = imapserverName(line)
		}
		if resp := refusal(name, line, long); resp != "" {
			return c.refuse(tag, resp, line, long)
		}
		c.mu.Lock()
		c.inFlight, c.inFlightName = tag, name
		c.mu.Unlock()
		c.cmd = cmdState{name: name}
		c.cmd.scan(line)
	} else if err := c.checkRest(line, whole); err != nil {
		return err
	} else {
		line = c.appendRest(line, whole)
	}
	c.afterLiteral = false
	c.pending = line
	if !whole {
		c.tail = appendTail(c.tail, line)
		c.state = inLineRest
		return nil
	}
	n, sync, ok := literalAtEnd(c.joinTail(line))
	c.tail = c.tail[:0]
	switch {
	case !ok:
		c.state = inLineStart
	case sync:
		c.mu.Lock()
		c.contSeen = false
		c.mu.Unlock()
		c.state, c.lit = inSyncLiteral, n
	case n > 0:
		c.state, c.lit = inLiteral, n
	default:
		c.state = inLineRest
	}
	return nil
}

// joinTail is the end of a line that may have come in pieces.
func (c *cmdConn) joinTail(last []byte) []byte {
	if len(c.tail) == 0 || len(last) >= tailLen {
		return last
	}
	return append(c.tail, last...)
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
// like a command; tag is then what imapserver would take for one, or "".
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

// serves reports whether the layer serves command name.
func (c *cmdConn) serves(name string) bool {
	switch name {
	case "COMPRESS":
		return true
	case "STARTTLS":
		return c.srv.cfg.TLS != nil
	}
	return false
}

// serve reads the rest of a command of the layer that began with line,
// answers it, and sets the read deadline imapserver had set for the wait
// for the next command.
func (c *cmdConn) serve(tag, name string, line []byte) error {
	cmd, err := c.readCommand(line)
	var resp []byte
	var imapErr *cmdError
	switch {
	case errors.As(err, &imapErr):
		resp = imapErr.response(tag)
	case err != nil:
		return err
	case name == "STARTTLS":
		if err := c.startTLS(tag, cmd); err != nil {
			return err
		}
	case name == "COMPRESS":
		if err := c.compress(tag, cmd); err != nil {
			return err
		}
	}
	if len(resp) > 0 {
		c.noteStatus(name, resp, false)
		if err := c.writeOwn(resp); err != nil {
			return err
		}
	}
	if imapErr != nil && imapErr.bye {
		c.Close()
		return fmt.Errorf("imapd: %s", imapErr.text)
	}
	return c.rearm()
}

// rearm gives the wait for the next command the timeout imapserver set
// for it.
func (c *cmdConn) rearm() error {
	var t time.Time
	if c.readTimeout > 0 {
		t = time.Now().Add(c.readTimeout)
	}
	return c.conn().SetReadDeadline(t)
}

// cmdError ends a command of the layer with a tagged response, or with
// BYE and the connection closed.
type cmdError struct {
	typ, code, text string
	bye             bool
}

func (e *cmdError) Error() string { return e.text }

func (e *cmdError) response(tag string) []byte {
	if e.bye {
		tag, e.typ, e.code = "*", "BYE", ""
	}
	b := fmt.Appendf(nil, "%s %s ", tag, e.typ)
	if e.code != "" {
		b = fmt.Appendf(b, "[%s] ", e.code)
	}
	return fmt.Appendf(b, "%s\r\n", e.text)
}

var (
	errOwnTooBig  = &cmdError{typ: "NO", code: "TOOBIG", text: "Literals are limited to 4096 bytes for this command"}
	errOwnTooLong = &cmdError{text: "Command too long", bye: true}
)

// readCommand reads the whole of a command of the layer that began with
// line: while a line ends with a literal, the literal (after "+" for a
// synchronizing one) and the line after it. The result holds the wire
// bytes, literals included, for parseArgs.
func (c *cmdConn) readCommand(line []byte) ([]byte, error) {
	cmd := append([]byte(nil), line...)
	deadline := false
	for {
		n, sync, ok := literalAtEnd(cmd)
		if !ok {
			return cmd, nil
		}
		if n > maxOwnLiteral || len(cmd)+int(n) > maxOwnCommand {
			if sync {
				// The client waits for "+" and sends nothing more.
				return nil, errOwnTooBig
			}
			return nil, errOwnTooLong
		}
		if !deadline {
			deadline = true
			if err := c.conn().SetReadDeadline(time.Now().Add(ownReadTimeout)); err != nil {
				return nil, err
			}
		}
		if sync {
			if err := c.writeOwn([]byte("+ Ready for literal data\r\n")); err != nil {
				return nil, err
			}
		}
		start := len(cmd)
		cmd = append(cmd, make([]byte, n)...)
		if _, err := io.ReadFull(c.br, cmd[start:]); err != nil {
			return nil, fmt.Errorf("read literal: %w", err)
		}
		more, err := c.br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) || len(cmd)+len(more) > maxOwnCommand {
			return nil, errOwnTooLong
		}
		if err != nil {
			return nil, fmt.Errorf("read command: %w", err)
		}
		cmd = append(cmd, more...)
	}
}

// writeOwn writes a response of the layer. imapserver writes nothing
// meanwhile (see the invariants above); wmu keeps out a BYE of Shutdown.
func (c *cmdConn) writeOwn(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	conn := c.conn()
	conn.SetWriteDeadline(time.Now().Add(ownWriteTimeout))
	_, err := conn.Write(b)
	conn.SetWriteDeadline(time.Time{})
	if err != nil {
		return fmt.Errorf("write response: %w", err)
	}
	return nil
}

// startTLS runs STARTTLS (RFC 9051 section 6.2.1) in the layer, so that
// the layer stays above TLS and reads the client's commands in the clear;
// imapserver is told nothing of it (its own STARTTLS would put TLS
// between it and the layer).
func (c *cmdConn) startTLS(tag string, cmd []byte) error {
	if !newArgParser(cmd).end() {
		return c.writeOwn(fmt.Appendf(nil, "%s BAD [CLIENTBUG] Syntax error\r\n", tag))
	}
	if c.secure() || c.sess.user != nil {
		return c.writeOwn(fmt.Appendf(nil, "%s BAD STARTTLS not available\r\n", tag))
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.raw.SetWriteDeadline(time.Now().Add(ownWriteTimeout))
	_, err := fmt.Fprintf(c.raw, "%s OK Begin TLS negotiation now\r\n", tag)
	c.raw.SetWriteDeadline(time.Time{})
	if err != nil {
		return fmt.Errorf("starttls: %w", err)
	}
	// Whatever the client sent after STARTTLS and before this answer is
	// clear text that a man in the middle may have added; it must not
	// run as commands under TLS (CVE-2011-0411 in SMTP servers, RFC
	// 3207 section 4.2's rule for the same case). The layer reads one
	// line at a time, so it is all in br.
	c.br.Discard(c.br.Buffered())
	tc := tls.Server(c.raw, c.srv.cfg.TLS)
	ctx, cancel := context.WithTimeout(c.sess.ctx, c.srv.cfg.HandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return fmt.Errorf("starttls: %w", err)
	}
	c.mu.Lock()
	c.transport, c.tls = tc, true
	c.mu.Unlock()
	c.br.Reset(tc)
	return nil
}

// Write passes imapserver's output on, adding the layer's capabilities to
// CAPABILITY data and noting continuation requests and the end of the
// command in flight.
func (c *cmdConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	closing := c.closing
	c.mu.Unlock()
	if closing {
		return len(p), nil
	}
	conn := c.conn()
	o := &c.out
	out := c.wbuf[:0] // scratch, kept between calls
	flush := func() error {
		if len(out) == 0 {
			return nil
		}
		_, err := conn.Write(out)
		out = out[:0]
		return err
	}
	rest := p
	for len(rest) > 0 {
		switch {
		case o.lit > 0:
			k := int(min(int64(len(rest)), o.lit))
			if len(out)+k > writeBatch || k >= writeBatch/2 {
				if err := flush(); err != nil {
					return 0, err
				}
			}
			if k >= writeBatch/2 {
				// A large literal goes out as it is, not copied, after
				// what came before it.
				if _, err := conn.Write(rest[:k]); err != nil {
					return 0, err
				}
			} else {
				out = append(out, rest[:k]...)
			}
			o.lit -= int64(k)
			rest = rest[k:]
		case o.streaming:
			seg := rest
			if i := bytes.IndexByte(rest, '\n'); i >= 0 {
				seg = rest[:i+1]
			}
			out = append(out, seg...)
			o.tail = appendTail(o.tail, seg)
			rest = rest[len(seg):]
			if seg[len(seg)-1] == '\n' {
				o.streaming = false
				o.lit, _, _ = literalAtEnd(o.tail)
				o.tail = o.tail[:0]
			}
		default:
			i := bytes.IndexByte(rest, '\n')
			if i < 0 {
				o.held = append(o.held, rest...)
				rest = nil
				if len(o.held) > holdMax {
					c.noteLine(o.held)
					out = append(out, o.held...)
					o.tail = appendTail(o.tail[:0], o.held)
					o.held, o.streaming = nil, true
				}
				continue
			}
			o.held = append(o.held, rest[:i+1]...)
			rest = rest[i+1:]
			line := c.noteLine(o.held)
			out = c.appendLine(out, line)
			o.lit, _, _ = literalAtEnd(o.held)
			if cap(o.held) > lineBuffer {
				o.held = nil
			} else {
				o.held = o.held[:0]
			}
		}
		if len(out) >= writeBatch {
			if err := flush(); err != nil {
				return 0, err
			}
		}
	}
	if err := flush(); err != nil {
		return 0, err
	}
	if cap(out) <= 2*writeBatch {
		c.wbuf = out
	} else {
		c.wbuf = nil
	}
	return len(p), nil
}

// writeBatch bounds what Write copies before writing it. imapserver
// (mailhost's copy) writes a FETCH, SEARCH or STORE's responses together,
// up to its 32 KiB write buffer, rather than one write (and one TLS
// record) per message; Write passes each of its writes on as one.
const writeBatch = 32 << 10

// noteLine records what a line of imapserver's output tells the read
// side: a continuation request, or the tagged response that ends the
// command in flight. It answers the line to send: line, or what replaces
// a tagged response (noteStatus).
func (c *cmdConn) noteLine(line []byte) []byte {
	c.mu.Lock()
	if len(line) > 0 && line[0] == '+' {
		c.contSeen = true
	}
	ended := ""
	if t := c.inFlight; t != "" && len(line) > len(t) && line[len(t)] == ' ' && string(line[:len(t)]) == t {
		c.inFlight, ended = "", c.inFlightName
	}
	c.mu.Unlock()
	if ended != "" {
		if r := c.noteStatus(ended, line, true); r != nil {
			return r
		}
	}
	return line
}

// appendLine appends line to out, with the layer's capabilities added if
// it carries a capability list: the CAPABILITY response, or the
// [CAPABILITY] code of the greeting and of LOGIN's and AUTHENTICATE's OK
// (RFC 9051 sections 7.2.2 and 7.1).
func (c *cmdConn) appendLine(out, line []byte) []byte {
	start, end, ok := capabilityList(line)
	if !ok {
		return append(out, line...)
	}
	out = append(out, line[:start]...)
	out = c.appendCaps(out, bytes.Fields(line[start:end]))
	return append(out, line[end:]...)
}

// capabilityList finds the list of capabilities in a line of imapserver's
// output: line[start:end] holds them.
func capabilityList(line []byte) (start, end int, ok bool) {
	if rest, found := bytes.CutPrefix(line, []byte("* CAPABILITY ")); found {
		return len(line) - len(rest), len(bytes.TrimRight(line, "\r\n")), true
	}
	sp := bytes.IndexByte(line, ' ')
	if sp < 0 {
		return 0, 0, false
	}
	rest := line[sp+1:]
	for _, typ := range []string{"OK [CAPABILITY ", "PREAUTH [CAPABILITY "} {
		if caps, found := bytes.CutPrefix(rest, []byte(typ)); found {
			close := bytes.IndexByte(caps, ']')
			if close < 0 {
				return 0, 0, false
			}
			start = len(line) - len(caps)
			return start, start + close, true
		}
	}
	return 0, 0, false
}

// appendCaps appends imapserver's capabilities with the layer's changes.
// imapserver runs with InsecureAuth and without TLSConfig (the layer does
// TLS), so it lists AUTH=PLAIN exactly before login, and never STARTTLS or
// LOGINDISABLED: the layer puts those right for the connection's TLS
// (RFC 9051 sections 6.2.1 and 7.2.2), and adds ID and, once logged in,
// QUOTA and COMPRESS=DEFLATE, which imapserver would not list (it lists only the capabilities
// it knows of its Options.Caps).
func (c *cmdConn) appendCaps(out []byte, caps [][]byte) []byte {
	secure := c.secure()
	canAuth := secure || c.srv.cfg.AllowInsecureAuth
	loggedIn := true
	first := true
	add := func(cp []byte) {
		if !first {
			out = append(out, ' ')
		}
		first = false
		out = append(out, cp...)
	}
	for _, cp := range caps {
		upper := bytes.ToUpper(cp)
		if bytes.HasPrefix(upper, []byte("AUTH=")) {
			loggedIn = false
			if !canAuth {
				continue
			}
		}
		if string(upper) == string(imap.CapStartTLS) || string(upper) == string(imap.CapLoginDisabled) {
			continue
		}
		// LITERAL+ includes LITERAL- (RFC 7888 section 4): once
		// imapserver lists both, after login, only LITERAL+ is said.
		if string(upper) == string(imap.CapLiteralMinus) && slices.ContainsFunc(caps, func(cp []byte) bool {
			return bytes.EqualFold(cp, []byte(imap.CapLiteralPlus))
		}) {
			continue
		}
		add(cp)
	}
	if !loggedIn {
		if !secure && c.srv.cfg.TLS != nil {
			add([]byte(imap.CapStartTLS))
		}
		if !canAuth {
			add([]byte(imap.CapLoginDisabled))
		}
	}
	add([]byte(capID))
	if loggedIn {
		add([]byte(capQuota))
		add([]byte(capQuotaStorage))
		add([]byte(capCompress))
	}
	return out
}

// errPrivacyRequired refuses a login in the clear, as imapserver would.
var errPrivacyRequired = no(imap.ResponseCodePrivacyRequired, "TLS is required to authenticate")

// requireTLS refuses LOGIN and AUTHENTICATE without TLS unless
// Config.AllowInsecureAuth (RFC 9051 section 11.1). imapserver, which
// cannot see the layer's TLS, takes them; this is where they are refused.
func (s *session) requireTLS() error {
	if s.srv.cfg.AllowInsecureAuth {
		return nil
	}
	if c, ok := s.conn.NetConn().(*cmdConn); ok && c.secure() {
		return nil
	}
	return errPrivacyRequired
}

// command is the name of the command imapserver is running, upper case,
// "" when none.
func (c *cmdConn) command() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inFlightName
}
