package sieve

import (
	"fmt"
	"strings"
)

// Pos is a place in a script: 1-based line and column (in bytes).
type Pos struct {
	Line, Col int
}

func (p Pos) String() string { return fmt.Sprintf("line %d, column %d", p.Line, p.Col) }

// Error is a parse error at a place in the script.
type Error struct {
	Pos Pos
	Msg string
}

func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

type tokKind int

const (
	tokEOF tokKind = iota
	tokIdent
	tokTag
	tokNumber
	tokString
	tokLBracket
	tokRBracket
	tokLParen
	tokRParen
	tokComma
	tokSemicolon
	tokLBrace
	tokRBrace
)

func (k tokKind) String() string {
	switch k {
	case tokEOF:
		return "end of script"
	case tokIdent:
		return "identifier"
	case tokTag:
		return "tag"
	case tokNumber:
		return "number"
	case tokString:
		return "string"
	case tokLBracket:
		return `"["`
	case tokRBracket:
		return `"]"`
	case tokLParen:
		return `"("`
	case tokRParen:
		return `")"`
	case tokComma:
		return `","`
	case tokSemicolon:
		return `";"`
	case tokLBrace:
		return `"{"`
	case tokRBrace:
		return `"}"`
	}
	return "token"
}

type token struct {
	kind tokKind
	pos  Pos
	text string // identifier or tag name (lower case, tag without ':'), string value
	num  uint64
}

func (t token) describe() string {
	switch t.kind {
	case tokIdent:
		return fmt.Sprintf("identifier %q", t.text)
	case tokTag:
		return fmt.Sprintf("tag %q", ":"+t.text)
	case tokNumber:
		return fmt.Sprintf("number %d", t.num)
	case tokString:
		return "string"
	}
	return t.kind.String()
}

// lexer splits a script into tokens (RFC 5228 section 8.1).
type lexer struct {
	src  string
	off  int
	line int
	col  int // 1-based column of src[off]
}

func newLexer(src string) *lexer { return &lexer{src: src, line: 1, col: 1} }

func (l *lexer) pos() Pos { return Pos{l.line, l.col} }

func (l *lexer) errf(p Pos, format string, args ...any) error {
	return &Error{Pos: p, Msg: fmt.Sprintf(format, args...)}
}

// advance moves over n bytes, keeping line and column.
func (l *lexer) advance(n int) {
	for i := 0; i < n; i++ {
		if l.src[l.off] == '\n' {
			l.line++
			l.col = 1
		} else {
			l.col++
		}
		l.off++
	}
}

// skipSpace skips white space and both kinds of comments.
func (l *lexer) skipSpace() error {
	for l.off < len(l.src) {
		c := l.src[l.off]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			l.advance(1)
		case c == '#':
			i := strings.IndexByte(l.src[l.off:], '\n')
			if i < 0 {
				i = len(l.src) - l.off
			}
			l.advance(i)
		case c == '/' && strings.HasPrefix(l.src[l.off:], "/*"):
			p := l.pos()
			i := strings.Index(l.src[l.off+2:], "*/")
			if i < 0 {
				return l.errf(p, "unterminated comment")
			}
			l.advance(i + 4)
		default:
			return nil
		}
	}
	return nil
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// maxNumber bounds numbers: RFC 5228 section 2.4.1 asks for at least 31
// bits; 2^62 leaves room for sizes while nothing overflows.
const maxNumber = 1 << 62

func (l *lexer) next() (token, error) {
	if err := l.skipSpace(); err != nil {
		return token{}, err
	}
	p := l.pos()
	if l.off >= len(l.src) {
		return token{kind: tokEOF, pos: p}, nil
	}
	c := l.src[l.off]
	switch c {
	case '[':
		l.advance(1)
		return token{kind: tokLBracket, pos: p}, nil
	case ']':
		l.advance(1)
		return token{kind: tokRBracket, pos: p}, nil
	case '(':
		l.advance(1)
		return token{kind: tokLParen, pos: p}, nil
	case ')':
		l.advance(1)
		return token{kind: tokRParen, pos: p}, nil
	case ',':
		l.advance(1)
		return token{kind: tokComma, pos: p}, nil
	case ';':
		l.advance(1)
		return token{kind: tokSemicolon, pos: p}, nil
	case '{':
		l.advance(1)
		return token{kind: tokLBrace, pos: p}, nil
	case '}':
		l.advance(1)
		return token{kind: tokRBrace, pos: p}, nil
	case '"':
		return l.quoted()
	case ':':
		l.advance(1)
		if l.off >= len(l.src) || !(isAlpha(l.src[l.off]) || l.src[l.off] == '_') {
			return token{}, l.errf(p, `":" not followed by a tag name`)
		}
		name := l.ident()
		return token{kind: tokTag, pos: p, text: strings.ToLower(name)}, nil
	}
	if isDigit(c) {
		start := l.off
		for l.off < len(l.src) && isDigit(l.src[l.off]) {
			l.advance(1)
		}
		digits := l.src[start:l.off]
		var n uint64
		for i := 0; i < len(digits); i++ {
			n = n*10 + uint64(digits[i]-'0')
			if n > maxNumber {
				return token{}, l.errf(p, "number %s is too large", digits)
			}
		}
		if l.off < len(l.src) {
			mult := uint64(1)
			switch l.src[l.off] {
			case 'k', 'K':
				mult = 1 << 10
			case 'm', 'M':
				mult = 1 << 20
			case 'g', 'G':
				mult = 1 << 30
			}
			if mult > 1 {
				l.advance(1)
				if n > maxNumber/mult {
					return token{}, l.errf(p, "number %s is too large", l.src[start:l.off])
				}
				n *= mult
			}
		}
		if l.off < len(l.src) && (isAlpha(l.src[l.off]) || l.src[l.off] == '_') {
			return token{}, l.errf(l.pos(), "unexpected character %q after a number", l.src[l.off])
		}
		return token{kind: tokNumber, pos: p, num: n}, nil
	}
	if isAlpha(c) || c == '_' {
		name := l.ident()
		lname := strings.ToLower(name)
		if lname == "text" && l.off < len(l.src) && l.src[l.off] == ':' {
			l.advance(1)
			return l.multiline(p)
		}
		return token{kind: tokIdent, pos: p, text: lname}, nil
	}
	return token{}, l.errf(p, "unexpected character %q", c)
}

func (l *lexer) ident() string {
	start := l.off
	for l.off < len(l.src) {
		c := l.src[l.off]
		if !(isAlpha(c) || isDigit(c) || c == '_') {
			break
		}
		l.advance(1)
	}
	return l.src[start:l.off]
}

// quoted reads a quoted string: "\" followed by any character stands for
// that character (RFC 5228 section 2.4.2).
func (l *lexer) quoted() (token, error) {
	p := l.pos()
	l.advance(1)
	var b strings.Builder
	start := l.off
	for {
		if l.off >= len(l.src) {
			return token{}, l.errf(p, "unterminated string")
		}
		c := l.src[l.off]
		if c == '"' {
			b.WriteString(l.src[start:l.off])
			l.advance(1)
			return token{kind: tokString, pos: p, text: b.String()}, nil
		}
		if c == '\\' {
			b.WriteString(l.src[start:l.off])
			l.advance(1)
			if l.off >= len(l.src) {
				return token{}, l.errf(p, "unterminated string")
			}
			start = l.off
		}
		l.advance(1)
	}
}

// multiline reads a text: string after "text:": the rest of the line
// holds only blanks or a comment, then lines up to one holding only ".";
// a line's leading ".." stands for "." (RFC 5228 section 2.4.2).
func (l *lexer) multiline(p Pos) (token, error) {
	for l.off < len(l.src) && (l.src[l.off] == ' ' || l.src[l.off] == '\t') {
		l.advance(1)
	}
	if l.off < len(l.src) && l.src[l.off] == '#' {
		i := strings.IndexByte(l.src[l.off:], '\n')
		if i < 0 {
			return token{}, l.errf(p, "unterminated multi-line string")
		}
		l.advance(i)
	}
	if strings.HasPrefix(l.src[l.off:], "\r\n") {
		l.advance(2)
	} else if strings.HasPrefix(l.src[l.off:], "\n") {
		l.advance(1)
	} else {
		return token{}, l.errf(l.pos(), `"text:" must be followed by the end of the line`)
	}
	var b strings.Builder
	for {
		if l.off >= len(l.src) {
			return token{}, l.errf(p, "unterminated multi-line string")
		}
		i := strings.IndexByte(l.src[l.off:], '\n')
		var line string
		if i < 0 {
			line = l.src[l.off:]
		} else {
			line = l.src[l.off : l.off+i+1]
		}
		content := strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if content == "." {
			l.advance(len(line))
			return token{kind: tokString, pos: p, text: b.String()}, nil
		}
		if i < 0 {
			return token{}, l.errf(p, "unterminated multi-line string")
		}
		if strings.HasPrefix(line, "..") {
			line = line[1:]
		}
		b.WriteString(line)
		l.advance(i + 1)
	}
}
