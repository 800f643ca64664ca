package managesieve

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The client's side of the syntax of RFC 5804 section 4: a command is
// atoms and strings (quoted, or literals "{n+}" and "{n}") on one line.

type tokKind int

const (
	tAtom tokKind = iota
	tString
)

type token struct {
	kind tokKind
	s    string
}

// errLine is a line the server cannot read on from: after it the
// connection closes.
type errLine struct{ msg string }

func (e *errLine) Error() string { return e.msg }

// errTooLarge is a literal over the limit, already skipped: the command
// is refused, the connection goes on.
var errTooLarge = errors.New("literal too large")

// errBadSyntax is a command line that does not parse, already read to
// its end.
type errBadSyntax struct{ msg string }

func (e *errBadSyntax) Error() string { return e.msg }

const (
	// maxLine bounds the octets of a command outside its literals.
	maxLine = 8 << 10
	// maxTokens bounds the atoms and strings of a command.
	maxTokens = 16
	// maxSkip bounds a too large literal the server reads and drops to
	// answer NO; a larger one closes the connection.
	maxSkip = 1 << 20
)

// readCommand reads one command line with its literals, each at most
// maxLiteral octets.
func readCommand(br *bufio.Reader, maxLiteral int64) ([]token, error) {
	var toks []token
	n := 0 // octets outside literals
	var syntaxErr error
	tooLarge := false
	next := func() (byte, error) {
		n++
		if n > maxLine {
			return 0, &errLine{"line too long"}
		}
		c, err := br.ReadByte()
		if err == io.EOF && n > 1 {
			err = io.ErrUnexpectedEOF
		}
		return c, err
	}
	for {
		c, err := next()
		if err != nil {
			return nil, err
		}
		switch {
		case c == '\r':
			c, err = next()
			if err != nil {
				return nil, err
			}
			if c != '\n' {
				return nil, &errLine{"CR without LF"}
			}
			fallthrough
		case c == '\n':
			if syntaxErr != nil {
				return nil, syntaxErr
			}
			if tooLarge {
				return nil, errTooLarge
			}
			return toks, nil
		case c == ' ' || c == '\t':
			continue
		}
		if len(toks) >= maxTokens && syntaxErr == nil {
			syntaxErr = &errBadSyntax{"too many arguments"}
		}
		switch {
		case c == '"':
			var b strings.Builder
			for {
				c, err = next()
				if err != nil {
					return nil, err
				}
				if c == '\\' {
					if c, err = next(); err != nil {
						return nil, err
					}
					if c != '"' && c != '\\' && syntaxErr == nil {
						syntaxErr = &errBadSyntax{"bad escape in quoted string"}
					}
				} else if c == '"' {
					break
				} else if c == '\r' || c == '\n' {
					return nil, &errLine{"line break in quoted string"}
				}
				b.WriteByte(c)
			}
			toks = append(toks, token{tString, b.String()})
		case c == '{':
			var digits []byte
			for {
				if c, err = next(); err != nil {
					return nil, err
				}
				if c < '0' || c > '9' {
					break
				}
				digits = append(digits, c)
			}
			if c == '+' {
				if c, err = next(); err != nil {
					return nil, err
				}
			}
			if c != '}' || len(digits) == 0 || len(digits) > 12 {
				return nil, &errLine{"bad literal"}
			}
			if c, err = next(); err == nil && c == '\r' {
				c, err = next()
			}
			if err != nil {
				return nil, err
			}
			if c != '\n' {
				return nil, &errLine{"literal not followed by a line end"}
			}
			size, _ := strconv.ParseInt(string(digits), 10, 64)
			if size > maxLiteral {
				if size > maxSkip {
					return nil, &errLine{fmt.Sprintf("literal of %d octets is too large", size)}
				}
				if _, err := io.CopyN(io.Discard, br, size); err != nil {
					return nil, err
				}
				tooLarge = true
				continue
			}
			buf := make([]byte, size)
			if _, err := io.ReadFull(br, buf); err != nil {
				return nil, err
			}
			toks = append(toks, token{tString, string(buf)})
		default:
			var b strings.Builder
			for {
				b.WriteByte(c)
				p, err := br.Peek(1)
				if err != nil || p[0] == ' ' || p[0] == '\r' || p[0] == '\n' || p[0] == '"' || p[0] == '{' {
					break
				}
				if c, err = next(); err != nil {
					return nil, err
				}
			}
			toks = append(toks, token{tAtom, b.String()})
		}
	}
}

// quote writes s as a ManageSieve string: quoted, or a literal when it
// holds a line break or is long.
func quote(s string) string {
	if len(s) > 1024 || strings.ContainsAny(s, "\r\n\x00") {
		return "{" + strconv.Itoa(len(s)) + "}\r\n" + s
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
}
