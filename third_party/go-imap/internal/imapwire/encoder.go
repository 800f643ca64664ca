package imapwire

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/internal/utf7"
)

// An Encoder writes IMAP data.
//
// Most methods don't return an error, instead they defer error handling until
// CRLF is called. These methods return the Encoder so that calls can be
// chained.
type Encoder struct {
	// NoFlush leaves the buffered writer unflushed at the end of a line
	// (CRLF), for responses written together; the caller flushes.
	//
	// mailhost patch: see PATCHES.md (responses of a command written
	// together).
	NoFlush bool
	// QuotedUTF8 allows raw UTF-8 in quoted strings. This requires IMAP4rev2
	// to be available, or UTF8=ACCEPT to be enabled.
	QuotedUTF8 bool
	// LiteralMinus enables non-synchronizing literals for short payloads.
	// This requires IMAP4rev2 or LITERAL-. This is only meaningful for
	// clients.
	LiteralMinus bool
	// LiteralPlus enables non-synchronizing literals for all payloads. This
	// requires LITERAL+. This is only meaningful for clients.
	LiteralPlus bool
	// NewContinuationRequest creates a new continuation request. This is only
	// meaningful for clients.
	NewContinuationRequest func() *ContinuationRequest

	w       *bufio.Writer
	side    ConnSide
	err     error
	literal bool
}

// NewEncoder creates a new encoder.
func NewEncoder(w *bufio.Writer, side ConnSide) *Encoder {
	return &Encoder{w: w, side: side}
}

func (enc *Encoder) setErr(err error) *Encoder {
	if enc.err == nil {
		enc.err = err
	}
	return enc
}

func (enc *Encoder) writeString(s string) *Encoder {
	if enc.err != nil {
		return enc
	}
	if enc.literal {
		enc.err = fmt.Errorf("imapwire: cannot encode while a literal is open")
		return enc
	}
	if _, err := enc.w.WriteString(s); err != nil {
		enc.err = err
	}
	return enc
}

// CRLF writes a "\r\n" sequence and flushes the buffered writer.
func (enc *Encoder) CRLF() error {
	enc.writeString("\r\n")
	if enc.err != nil {
		return enc.err
	}
	if enc.NoFlush {
		return nil
	}
	return enc.w.Flush()
}

func (enc *Encoder) Atom(s string) *Encoder {
	return enc.writeString(s)
}

func (enc *Encoder) SP() *Encoder {
	return enc.writeString(" ")
}

func (enc *Encoder) Special(ch byte) *Encoder {
	// mailhost patch: one byte, without a string (see PATCHES.md, the
	// FETCH encoder).
	if enc.writable() {
		enc.setErr(enc.w.WriteByte(ch))
	}
	return enc
}

// writable reports whether something may be written now, recording why
// not when a literal is open.
//
// mailhost patch: see PATCHES.md (the FETCH encoder).
func (enc *Encoder) writable() bool {
	if enc.err != nil {
		return false
	}
	if enc.literal {
		enc.err = fmt.Errorf("imapwire: cannot encode while a literal is open")
		return false
	}
	return true
}

// Quoted writes s as a quoted string, its quotes and backslashes escaped.
//
// mailhost patch: appended to the write buffer's free space, where
// upstream made a copy in a strings.Builder for every string (see
// PATCHES.md, the FETCH encoder).
func (enc *Encoder) Quoted(s string) *Encoder {
	if !enc.writable() {
		return enc
	}
	b := append(enc.w.AvailableBuffer(), '"')
	b = appendQuotedBody(b, s)
	return enc.Raw(append(b, '"'))
}

func (enc *Encoder) String(s string) *Encoder {
	if !enc.validQuoted(s) {
		enc.stringLiteral(s)
		return enc
	}
	return enc.Quoted(s)
}

// StringJoin writes prefix, the elements of elems separated by sep, and
// suffix as one string, as String writes their concatenation, without
// making it (an ENVELOPE's "<id1> <id2>", say).
//
// mailhost patch: see PATCHES.md (the FETCH encoder).
func (enc *Encoder) StringJoin(prefix string, elems []string, sep, suffix string) *Encoder {
	b, ok := enc.AppendQuotedJoin(enc.w.AvailableBuffer(), prefix, elems, sep, suffix)
	if !ok {
		return enc.String(prefix + strings.Join(elems, sep) + suffix)
	}
	return enc.Raw(b)
}

// AvailableBuffer is an empty slice over the free space of the write
// buffer, for a caller to append a whole item to and hand to Raw: one
// write instead of one per token. It is valid until the next write.
//
// mailhost patch: see PATCHES.md (the FETCH encoder).
func (enc *Encoder) AvailableBuffer() []byte {
	return enc.w.AvailableBuffer()
}

// Raw writes b as it is; the caller has made it valid IMAP (with the
// Append functions, say).
//
// mailhost patch: see PATCHES.md (the FETCH encoder).
func (enc *Encoder) Raw(b []byte) *Encoder {
	if !enc.writable() {
		return enc
	}
	_, err := enc.w.Write(b)
	return enc.setErr(err)
}

// AppendQuoted appends s to b as String writes it when String quotes
// it; ok is false when String would write a literal (b is then to be
// dropped).
//
// mailhost patch: see PATCHES.md (the FETCH encoder).
func (enc *Encoder) AppendQuoted(b []byte, s string) (_ []byte, ok bool) {
	// validQuoted and the search for escapes in one pass.
	if len(s) > 4096 {
		return b, false
	}
	escape := false
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case ch == 0, ch == '\r', ch == '\n', ch > unicode.MaxASCII && !enc.QuotedUTF8:
			return b, false
		case ch == '"', ch == '\\':
			escape = true
		}
	}
	b = append(b, '"')
	if escape {
		b = appendQuotedBody(b, s)
	} else {
		b = append(b, s...)
	}
	return append(b, '"'), true
}

// AppendQuotedJoin is AppendQuoted of prefix, the elements of elems
// separated by sep, and suffix, without making the string.
//
// mailhost patch: see PATCHES.md (the FETCH encoder).
func (enc *Encoder) AppendQuotedJoin(b []byte, prefix string, elems []string, sep, suffix string) (_ []byte, ok bool) {
	n := len(prefix) + len(suffix)
	if len(elems) > 1 {
		n += len(sep) * (len(elems) - 1)
	}
	valid := enc.validQuoted(prefix) && enc.validQuoted(sep) && enc.validQuoted(suffix)
	for _, e := range elems {
		n += len(e)
		valid = valid && enc.validQuoted(e)
	}
	if !valid || n > 4096 {
		return b, false
	}
	b = append(b, '"')
	b = appendQuotedBody(b, prefix)
	for i, e := range elems {
		if i > 0 {
			b = appendQuotedBody(b, sep)
		}
		b = appendQuotedBody(b, e)
	}
	b = appendQuotedBody(b, suffix)
	return append(b, '"'), true
}

func appendQuotedBody(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		if ch := s[i]; ch == '"' || ch == '\\' {
			b = append(b, s[start:i]...)
			b = append(b, '\\')
			start = i
		}
	}
	return append(b, s[start:]...)
}

// AppendFlag appends flag to b as Flag writes it; ok is false when Flag
// would refuse it.
//
// mailhost patch: see PATCHES.md (the FETCH encoder).
func AppendFlag(b []byte, flag imap.Flag) (_ []byte, ok bool) {
	if flag != "\\*" && !isValidFlag(string(flag)) {
		return b, false
	}
	return append(b, flag...), true
}

// QuotedTime writes t.Format(layout) as a quoted string. The layouts of
// an IMAP date-time and of an ENVELOPE's date are written by hand, for
// years 1000 to 9999, without time.Format's reading of the layout.
//
// mailhost patch: see PATCHES.md (the FETCH encoder).
func (enc *Encoder) QuotedTime(t time.Time, layout string) *Encoder {
	if !enc.writable() {
		return enc
	}
	// The bytes go straight into the buffer when it has the room.
	b := append(enc.w.AvailableBuffer(), '"')
	b = AppendTime(b, t, layout)
	b = append(b, '"')
	_, err := enc.w.Write(b)
	return enc.setErr(err)
}

func (enc *Encoder) validQuoted(s string) bool {
	if len(s) > 4096 {
		return false
	}

	for i := 0; i < len(s); i++ {
		ch := s[i]

		// NUL, CR and LF are never valid
		switch ch {
		case 0, '\r', '\n':
			return false
		}

		if !enc.QuotedUTF8 && ch > unicode.MaxASCII {
			return false
		}
	}
	return true
}

func (enc *Encoder) stringLiteral(s string) {
	var sync *ContinuationRequest
	if enc.side == ConnSideClient && (!enc.LiteralMinus || len(s) > 4096) && !enc.LiteralPlus {
		if enc.NewContinuationRequest != nil {
			sync = enc.NewContinuationRequest()
		}
		if sync == nil {
			enc.setErr(fmt.Errorf("imapwire: cannot send synchronizing literal"))
			return
		}
	}
	wc := enc.Literal(int64(len(s)), sync)
	_, writeErr := io.WriteString(wc, s)
	closeErr := wc.Close()
	if writeErr != nil {
		enc.setErr(writeErr)
	} else if closeErr != nil {
		enc.setErr(closeErr)
	}
}

func (enc *Encoder) Mailbox(name string) *Encoder {
	if strings.EqualFold(name, "INBOX") {
		return enc.Atom("INBOX")
	} else {
		if enc.QuotedUTF8 {
			name = utf7.Escape(name)
		} else {
			name = utf7.Encode(name)
		}
		return enc.String(name)
	}
}

func (enc *Encoder) NumSet(numSet imap.NumSet) *Encoder {
	s := numSet.String()
	if s == "" {
		enc.setErr(fmt.Errorf("imapwire: cannot encode empty sequence set"))
		return enc
	}
	return enc.writeString(s)
}

func (enc *Encoder) Flag(flag imap.Flag) *Encoder {
	if flag != "\\*" && !isValidFlag(string(flag)) {
		enc.setErr(fmt.Errorf("imapwire: invalid flag %q", flag))
		return enc
	}
	return enc.writeString(string(flag))
}

func (enc *Encoder) MailboxAttr(attr imap.MailboxAttr) *Encoder {
	if !strings.HasPrefix(string(attr), "\\") || !isValidFlag(string(attr)) {
		enc.setErr(fmt.Errorf("imapwire: invalid mailbox attribute %q", attr))
		return enc
	}
	return enc.writeString(string(attr))
}

// isValidFlag checks whether the provided string satisfies
// flag-keyword / flag-extension.
func isValidFlag(s string) bool {
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch == '\\' {
			if i != 0 {
				return false
			}
		} else {
			if !IsAtomChar(ch) {
				return false
			}
		}
	}
	return len(s) > 0
}

func (enc *Encoder) Number(v uint32) *Encoder {
	return enc.uint(uint64(v))
}

func (enc *Encoder) Number64(v int64) *Encoder {
	// TODO: disallow negative values
	if v < 0 {
		return enc.writeString(strconv.FormatInt(v, 10))
	}
	return enc.uint(uint64(v))
}

func (enc *Encoder) ModSeq(v uint64) *Encoder {
	// TODO: disallow zero values
	return enc.uint(v)
}

// uint writes v in decimal into the buffer, where strconv.FormatUint
// allocated a string for every number from 100 up.
//
// mailhost patch: see PATCHES.md (the FETCH encoder).
func (enc *Encoder) uint(v uint64) *Encoder {
	if !enc.writable() {
		return enc
	}
	_, err := enc.w.Write(strconv.AppendUint(enc.w.AvailableBuffer(), v, 10))
	return enc.setErr(err)
}

// List writes a parenthesized list.
func (enc *Encoder) List(n int, f func(i int)) *Encoder {
	enc.Special('(')
	for i := 0; i < n; i++ {
		if i > 0 {
			enc.SP()
		}
		f(i)
	}
	enc.Special(')')
	return enc
}

func (enc *Encoder) BeginList() *ListEncoder {
	enc.Special('(')
	return &ListEncoder{enc: enc}
}

func (enc *Encoder) NIL() *Encoder {
	return enc.Atom("NIL")
}

func (enc *Encoder) Text(s string) *Encoder {
	return enc.writeString(s)
}

func (enc *Encoder) UID(uid imap.UID) *Encoder {
	return enc.Number(uint32(uid))
}

// Literal writes a literal.
//
// The caller must write exactly size bytes to the returned writer.
//
// If sync is non-nil, the literal is synchronizing: the encoder will wait for
// nil to be sent to the channel before writing the literal data. If an error
// is sent to the channel, the literal will be cancelled.
func (enc *Encoder) Literal(size int64, sync *ContinuationRequest) io.WriteCloser {
	if sync != nil && enc.side == ConnSideServer {
		panic("imapwire: sync must be nil on a server-side Encoder.Literal")
	}

	// TODO: literal8
	enc.writeString("{")
	enc.Number64(size)
	if sync == nil && enc.side == ConnSideClient {
		enc.writeString("+")
	}
	enc.writeString("}")

	if sync == nil {
		enc.writeString("\r\n")
	} else {
		if err := enc.CRLF(); err != nil {
			return errorWriter{err}
		}
		if _, err := sync.Wait(); err != nil {
			enc.setErr(err)
			return errorWriter{err}
		}
	}

	enc.literal = true
	return &literalWriter{
		enc: enc,
		n:   size,
	}
}

type errorWriter struct {
	err error
}

func (ew errorWriter) Write(b []byte) (int, error) {
	return 0, ew.err
}

func (ew errorWriter) Close() error {
	return ew.err
}

type literalWriter struct {
	enc *Encoder
	n   int64
}

func (lw *literalWriter) Write(b []byte) (int, error) {
	if lw.n-int64(len(b)) < 0 {
		return 0, fmt.Errorf("wrote too many bytes in literal")
	}
	n, err := lw.enc.w.Write(b)
	lw.n -= int64(n)
	return n, err
}

func (lw *literalWriter) Close() error {
	lw.enc.literal = false
	if lw.n != 0 {
		return fmt.Errorf("wrote too few bytes in literal (%v remaining)", lw.n)
	}
	return nil
}

type ListEncoder struct {
	enc *Encoder
	n   int
}

func (le *ListEncoder) Item() *Encoder {
	if le.n > 0 {
		le.enc.SP()
	}
	le.n++
	return le.enc
}

func (le *ListEncoder) End() {
	le.enc.Special(')')
	le.enc = nil
}
