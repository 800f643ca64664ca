package imapd

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
)

// This file holds the commands imapd adds to imapserver's through its
// SessionCommands hook (ID, GETQUOTA, GETQUOTAROOT, SETQUOTA, COMPRESS,
// and STARTTLS, which imapserver leaves to the session without its
// TLSConfig: imapserver reads each whole and hands over its arguments as
// sent), a parser for their arguments and the writing of their
// responses.

// ServesCommand reports whether the session serves command name
// (imapserver.SessionCommands).
func (s *session) ServesCommand(name string) bool {
	switch name {
	case "ID", "GETQUOTA", "GETQUOTAROOT", "SETQUOTA", "COMPRESS":
		return true
	case "STARTTLS":
		return s.srv.cfg.TLS != nil
	}
	return false
}

// Command answers a command of ServesCommand: args is the rest of the
// command as it came, from the space after the name, literals included.
// It runs on imapserver's connection goroutine like any other command.
func (s *session) Command(w *imapserver.CommandWriter, name string, args []byte) error {
	p := &argParser{b: args}
	var (
		data []byte
		err  error
	)
	switch name {
	case "ID":
		data, err = s.id(p)
	case "GETQUOTAROOT":
		data, err = s.getQuotaRoot(p)
	case "GETQUOTA":
		data, err = s.getQuota(p)
	case "SETQUOTA":
		err = s.setQuota(p)
	case "STARTTLS":
		err = s.startTLS(p)
	case "COMPRESS":
		err = s.compress(p)
	default:
		err = &imap.Error{Type: imap.StatusResponseTypeBad, Text: "Unknown command"}
	}
	if errors.Is(err, errSyntax) {
		err = &imap.Error{Type: imap.StatusResponseTypeBad, Code: imap.ResponseCodeClientBug, Text: "Syntax error"}
	}
	var imapErr *imap.Error
	if err != nil && !errors.As(err, &imapErr) {
		err = s.fail(strings.ToLower(name), err)
	}
	if len(data) > 0 {
		if werr := w.WriteRaw(data); werr != nil {
			return werr
		}
	}
	return err
}

// appendString appends s as a quoted string, or as a literal when it holds
// what a quoted string cannot (RFC 9051 section 4.3).
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			b = fmt.Appendf(b, "{%d}\r\n", len(s))
			return append(b, s...)
		}
	}
	return strconv.AppendQuote(b, s) // printable ASCII: Go's quoting is IMAP's
}

// appendAString appends s as an atom when it can be one, else as
// appendString does.
func appendAString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !isTagChar(s[i]) && s[i] != '+' {
			return appendString(b, s)
		}
	}
	if s == "" || strings.EqualFold(s, "NIL") {
		return appendString(b, s)
	}
	return append(b, s...)
}

// errSyntax is a command the parser cannot read.
var errSyntax = errors.New("syntax error")

// argParser reads the arguments of a command of the session from its wire
// bytes, literals included (imapserver has read them whole).
type argParser struct {
	b []byte
	i int
}

func (p *argParser) peek() byte {
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

func (p *argParser) special(ch byte) bool {
	if p.peek() == ch {
		p.i++
		return true
	}
	return false
}

func (p *argParser) sp() bool { return p.special(' ') }

// end reads the end of the command: CRLF, with the lone LF and the
// trailing space that imapserver also takes.
func (p *argParser) end() bool {
	p.special(' ')
	p.special('\r')
	return p.special('\n') && p.i == len(p.b)
}

// astring = 1*ASTRING-CHAR / string (RFC 9051 section 9).
func (p *argParser) astring() (string, bool) {
	if s, ok := p.str(); ok {
		return s, true
	}
	start := p.i
	for p.i < len(p.b) && (isTagChar(p.b[p.i]) || p.b[p.i] == '+') {
		p.i++
	}
	return string(p.b[start:p.i]), p.i > start
}

// nstring = string / NIL.
func (p *argParser) nstring() (s string, isNil, ok bool) {
	if s, ok := p.str(); ok {
		return s, false, true
	}
	if p.i+3 <= len(p.b) && bytes.EqualFold(p.b[p.i:p.i+3], []byte("NIL")) {
		p.i += 3
		return "", true, true
	}
	return "", false, false
}

// str = quoted / literal.
func (p *argParser) str() (string, bool) {
	switch p.peek() {
	case '"':
		return p.quoted()
	case '{':
		return p.literal()
	}
	return "", false
}

func (p *argParser) quoted() (string, bool) {
	var s []byte
	for p.i++; p.i < len(p.b); p.i++ {
		switch ch := p.b[p.i]; ch {
		case '"':
			p.i++
			return string(s), true
		case '\r', '\n':
			return "", false
		case '\\':
			p.i++
			if p.i == len(p.b) || p.b[p.i] != '"' && p.b[p.i] != '\\' {
				return "", false
			}
			s = append(s, p.b[p.i])
		default:
			s = append(s, ch)
		}
	}
	return "", false
}

func (p *argParser) literal() (string, bool) {
	nl := bytes.IndexByte(p.b[p.i:], '\n')
	if nl < 0 {
		return "", false
	}
	seg := p.b[p.i : p.i+nl+1]
	if bytes.LastIndexByte(seg, '{') != 0 {
		return "", false
	}
	n, _, ok := literalAtEnd(seg)
	start := p.i + nl + 1
	if !ok || int64(len(p.b)-start) < n {
		return "", false
	}
	p.i = start + int(n)
	return string(p.b[start:p.i]), true
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

// isTagChar: tag = 1*<any ASTRING-CHAR except "+"> (RFC 9051 section 9).
func isTagChar(ch byte) bool {
	switch ch {
	case '(', ')', '{', '%', '*', '"', '\\', '+':
		return false
	}
	return ch > ' ' && ch < 0x7f
}
