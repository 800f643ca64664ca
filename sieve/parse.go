package sieve

import (
	"fmt"
)

// The generic syntax tree of RFC 5228 section 8.2, before the commands
// and tests are checked against their definitions (check.go).

type argKind int

const (
	argTag argKind = iota
	argNumber
	argString     // a single string
	argStringList // a bracketed list, possibly of one string
)

type arg struct {
	kind argKind
	pos  Pos
	tag  string
	num  uint64
	strs []string
	spos []Pos // position of each string
}

type rawTest struct {
	pos   Pos
	name  string
	args  []arg
	tests []*rawTest
	list  bool // tests came in a parenthesised list
}

type rawCommand struct {
	pos      Pos
	name     string
	args     []arg
	tests    []*rawTest
	list     bool
	block    []*rawCommand
	hasBlock bool
}

// maxNesting bounds blocks within blocks and tests within tests, so a
// script cannot exhaust the stack of the parser or the interpreter.
const maxNesting = 64

// maxListLen bounds the strings of one string list.
const maxListLen = 1024

type parser struct {
	lx    *lexer
	tok   token
	depth int
}

func (p *parser) advance() error {
	t, err := p.lx.next()
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

func (p *parser) errf(pos Pos, format string, a ...any) error {
	return &Error{Pos: pos, Msg: fmt.Sprintf(format, a...)}
}

func parseRaw(src string) ([]*rawCommand, error) {
	p := &parser{lx: newLexer(src)}
	if err := p.advance(); err != nil {
		return nil, err
	}
	cmds, err := p.commands()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tokEOF {
		return nil, p.errf(p.tok.pos, "unexpected %s", p.tok.describe())
	}
	return cmds, nil
}

func (p *parser) commands() ([]*rawCommand, error) {
	var cmds []*rawCommand
	for p.tok.kind == tokIdent {
		c, err := p.command()
		if err != nil {
			return nil, err
		}
		cmds = append(cmds, c)
	}
	return cmds, nil
}

func (p *parser) command() (*rawCommand, error) {
	c := &rawCommand{pos: p.tok.pos, name: p.tok.text}
	if err := p.advance(); err != nil {
		return nil, err
	}
	args, tests, list, err := p.arguments()
	if err != nil {
		return nil, err
	}
	c.args, c.tests, c.list = args, tests, list
	switch p.tok.kind {
	case tokSemicolon:
		return c, p.advance()
	case tokLBrace:
		p.depth++
		if p.depth > maxNesting {
			return nil, p.errf(p.tok.pos, "blocks nested more than %d deep", maxNesting)
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
		block, err := p.commands()
		if err != nil {
			return nil, err
		}
		if p.tok.kind != tokRBrace {
			return nil, p.errf(p.tok.pos, `expected a command or "}", found %s`, p.tok.describe())
		}
		p.depth--
		c.block, c.hasBlock = block, true
		return c, p.advance()
	}
	return nil, p.errf(p.tok.pos, `expected ";" or "{" after command %q, found %s`, c.name, p.tok.describe())
}

// arguments reads *argument [test / test-list].
func (p *parser) arguments() ([]arg, []*rawTest, bool, error) {
	var args []arg
	for {
		switch p.tok.kind {
		case tokTag:
			args = append(args, arg{kind: argTag, pos: p.tok.pos, tag: p.tok.text})
		case tokNumber:
			args = append(args, arg{kind: argNumber, pos: p.tok.pos, num: p.tok.num})
		case tokString:
			args = append(args, arg{kind: argString, pos: p.tok.pos, strs: []string{p.tok.text}, spos: []Pos{p.tok.pos}})
		case tokLBracket:
			a, err := p.stringList()
			if err != nil {
				return nil, nil, false, err
			}
			args = append(args, a)
			continue
		case tokIdent:
			t, err := p.test()
			if err != nil {
				return nil, nil, false, err
			}
			return args, []*rawTest{t}, false, nil
		case tokLParen:
			ts, err := p.testList()
			if err != nil {
				return nil, nil, false, err
			}
			return args, ts, true, nil
		default:
			return args, nil, false, nil
		}
		if err := p.advance(); err != nil {
			return nil, nil, false, err
		}
	}
}

func (p *parser) stringList() (arg, error) {
	a := arg{kind: argStringList, pos: p.tok.pos}
	if err := p.advance(); err != nil {
		return a, err
	}
	for {
		if p.tok.kind != tokString {
			return a, p.errf(p.tok.pos, "expected a string in the string list, found %s", p.tok.describe())
		}
		if len(a.strs) >= maxListLen {
			return a, p.errf(p.tok.pos, "string list longer than %d", maxListLen)
		}
		a.strs = append(a.strs, p.tok.text)
		a.spos = append(a.spos, p.tok.pos)
		if err := p.advance(); err != nil {
			return a, err
		}
		switch p.tok.kind {
		case tokComma:
			if err := p.advance(); err != nil {
				return a, err
			}
		case tokRBracket:
			return a, p.advance()
		default:
			return a, p.errf(p.tok.pos, `expected "," or "]" in the string list, found %s`, p.tok.describe())
		}
	}
}

func (p *parser) test() (*rawTest, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxNesting {
		return nil, p.errf(p.tok.pos, "tests nested more than %d deep", maxNesting)
	}
	t := &rawTest{pos: p.tok.pos, name: p.tok.text}
	if err := p.advance(); err != nil {
		return nil, err
	}
	args, tests, list, err := p.arguments()
	if err != nil {
		return nil, err
	}
	t.args, t.tests, t.list = args, tests, list
	return t, nil
}

func (p *parser) testList() ([]*rawTest, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxNesting {
		return nil, p.errf(p.tok.pos, "tests nested more than %d deep", maxNesting)
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	var tests []*rawTest
	for {
		if p.tok.kind != tokIdent {
			return nil, p.errf(p.tok.pos, "expected a test, found %s", p.tok.describe())
		}
		t, err := p.test()
		if err != nil {
			return nil, err
		}
		tests = append(tests, t)
		switch p.tok.kind {
		case tokComma:
			if err := p.advance(); err != nil {
				return nil, err
			}
		case tokRParen:
			return tests, p.advance()
		default:
			return nil, p.errf(p.tok.pos, `expected "," or ")" in the test list, found %s`, p.tok.describe())
		}
	}
}
