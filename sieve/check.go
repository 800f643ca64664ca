package sieve

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
)

// Parse parses and checks a script: its syntax (RFC 5228 section 8), that
// each command and test is known with the arguments it takes, and that
// every extension used is required and every extension required is
// offered. Errors are *Error with the line and column.
func Parse(src []byte, opts ParseOptions) (*Script, error) {
	max := opts.MaxSize
	if max <= 0 {
		max = DefaultMaxScriptSize
	}
	if len(src) > max {
		return nil, fmt.Errorf("script of %d bytes is larger than %d: %w", len(src), max, ErrLimit)
	}
	// Strings need not be UTF-8 (RFC 5228 section 2.4.2): the script is
	// taken as octets.
	raw, err := parseRaw(string(src))
	if err != nil {
		return nil, err
	}
	c := &checker{offered: map[string]bool{}, exts: map[string]bool{}, maxRe: opts.MaxRegexps}
	if c.maxRe <= 0 {
		c.maxRe = DefaultMaxRegexps
	}
	offered := opts.Extensions
	if offered == nil {
		offered = Extensions
	}
	for _, e := range offered {
		if Supported(e) {
			c.offered[e] = true
		}
	}
	c.offered["comparator-i;octet"] = true
	c.offered["comparator-i;ascii-casemap"] = true
	cmds, err := c.commands(raw, true)
	if err != nil {
		return nil, err
	}
	return &Script{cmds: cmds, exts: c.exts, usesVars: c.exts["variables"], maxRe: c.maxRe}, nil
}

type checker struct {
	offered map[string]bool
	exts    map[string]bool // required
	maxRe   int
	nRe     int
}

func errAt(p Pos, format string, a ...any) error {
	return &Error{Pos: p, Msg: fmt.Sprintf(format, a...)}
}

// need fails unless the script required ext.
func (c *checker) need(p Pos, what, ext string) error {
	if !c.exts[ext] {
		return errAt(p, "%s needs require %q", what, ext)
	}
	return nil
}

// commandExt is the extension each command beyond the base spec needs.
var commandExt = map[string]string{
	"fileinto":   "fileinto",
	"reject":     "reject",
	"ereject":    "ereject",
	"setflag":    "imap4flags",
	"addflag":    "imap4flags",
	"removeflag": "imap4flags",
	"vacation":   "vacation",
	"set":        "variables",
}

var testExt = map[string]string{
	"envelope":      "envelope",
	"body":          "body",
	"string":        "variables",
	"hasflag":       "imap4flags",
	"mailboxexists": "mailbox",
	"date":          "date",
	"currentdate":   "date",
}

func (c *checker) commands(raws []*rawCommand, top bool) ([]*command, error) {
	var out []*command
	others := false
	for i := 0; i < len(raws); i++ {
		r := raws[i]
		switch r.name {
		case "require":
			if !top || others {
				return nil, errAt(r.pos, "require must come before any other command")
			}
			if err := c.require(r); err != nil {
				return nil, err
			}
			continue
		case "elsif", "else":
			return nil, errAt(r.pos, "%s without a preceding if", r.name)
		}
		others = true
		if r.name == "if" {
			cmd := &command{pos: r.pos, kind: cmdIf}
			for j := i; j < len(raws); j++ {
				b := raws[j]
				if j > i && b.name != "elsif" && b.name != "else" {
					break
				}
				if b.name == "else" {
					if len(b.args) > 0 || b.tests != nil {
						return nil, errAt(b.pos, "else takes no test")
					}
				} else if len(b.args) > 0 || len(b.tests) != 1 || b.list {
					return nil, errAt(b.pos, "%s takes one test", b.name)
				}
				if !b.hasBlock {
					return nil, errAt(b.pos, "%s needs a block", b.name)
				}
				var br branch
				if b.name != "else" {
					t, err := c.test(b.tests[0])
					if err != nil {
						return nil, err
					}
					br.cond = t
				}
				block, err := c.commands(b.block, false)
				if err != nil {
					return nil, err
				}
				br.block = block
				cmd.branches = append(cmd.branches, br)
				i = j
				if b.name == "else" {
					break
				}
			}
			out = append(out, cmd)
			continue
		}
		cmd, err := c.command(r)
		if err != nil {
			return nil, err
		}
		out = append(out, cmd)
	}
	return out, nil
}

func (c *checker) require(r *rawCommand) error {
	if len(r.args) != 1 || r.tests != nil || r.hasBlock || (r.args[0].kind != argString && r.args[0].kind != argStringList) {
		return errAt(r.pos, "require takes one string list")
	}
	for i, e := range r.args[0].strs {
		if !c.offered[e] {
			return errAt(r.args[0].spos[i], "extension %q is not supported", e)
		}
		c.exts[e] = true
	}
	return nil
}

// args walks the arguments of one command or test: tags first, then the
// positional arguments (RFC 5228 section 2.6).
type args struct {
	what string // `command "fileinto"`
	pos  Pos
	list []arg
	i    int
}

func (a *args) more() bool { return a.i < len(a.list) }

func (a *args) next() arg {
	x := a.list[a.i]
	a.i++
	return x
}

func (a *args) str(tag arg) (string, Pos, error) {
	if !a.more() || (a.list[a.i].kind != argString && !(a.list[a.i].kind == argStringList && len(a.list[a.i].strs) == 1)) {
		return "", tag.pos, errAt(tag.pos, "%s: :%s needs a string", a.what, tag.tag)
	}
	x := a.next()
	return x.strs[0], x.pos, nil
}

func (a *args) strList(tag arg) (arg, error) {
	if !a.more() || (a.list[a.i].kind != argString && a.list[a.i].kind != argStringList) {
		return arg{}, errAt(tag.pos, "%s: :%s needs a string list", a.what, tag.tag)
	}
	return a.next(), nil
}

func (a *args) num(tag arg) (uint64, error) {
	if !a.more() || a.list[a.i].kind != argNumber {
		return 0, errAt(tag.pos, "%s: :%s needs a number", a.what, tag.tag)
	}
	return a.next().num, nil
}

// tagsThen reads the tags with handle, then returns the positional
// arguments, which must be as many as want (strings or string lists).
func (a *args) tagsThen(handle func(tag arg) (bool, error), want ...argKind) ([]arg, error) {
	pos, err := a.tags(handle)
	if err != nil {
		return nil, err
	}
	return a.positional(pos, want...)
}

// tags reads the tags with handle and returns the positional arguments.
func (a *args) tags(handle func(tag arg) (bool, error)) ([]arg, error) {
	var pos []arg
	for a.more() {
		x := a.next()
		if x.kind == argTag {
			if len(pos) > 0 {
				return nil, errAt(x.pos, "%s: tag :%s must come before the other arguments", a.what, x.tag)
			}
			ok, err := handle(x)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, errAt(x.pos, "%s: unknown tag :%s", a.what, x.tag)
			}
			continue
		}
		pos = append(pos, x)
	}
	return pos, nil
}

// positional checks the positional arguments against want.
func (a *args) positional(pos []arg, want ...argKind) ([]arg, error) {
	if len(pos) != len(want) {
		return nil, errAt(a.pos, "%s takes %d positional arguments, not %d", a.what, len(want), len(pos))
	}
	for i, w := range want {
		switch {
		case w == argNumber && pos[i].kind != argNumber:
			return nil, errAt(pos[i].pos, "%s: argument %d must be a number", a.what, i+1)
		case w == argString && !(pos[i].kind == argString || pos[i].kind == argStringList && len(pos[i].strs) == 1):
			return nil, errAt(pos[i].pos, "%s: argument %d must be a string", a.what, i+1)
		case w == argStringList && pos[i].kind != argString && pos[i].kind != argStringList:
			return nil, errAt(pos[i].pos, "%s: argument %d must be a string list", a.what, i+1)
		}
	}
	return pos, nil
}

func noTags(arg) (bool, error) { return false, nil }

func (c *checker) command(r *rawCommand) (*command, error) {
	what := `command "` + r.name + `"`
	ext, known := commandExt[r.name]
	switch r.name {
	case "stop", "keep", "discard", "redirect":
		known = true
	}
	if !known {
		return nil, errAt(r.pos, "unknown command %q", r.name)
	}
	if ext != "" {
		if err := c.need(r.pos, what, ext); err != nil {
			return nil, err
		}
	}
	if r.hasBlock {
		return nil, errAt(r.pos, "%s takes no block", what)
	}
	if r.tests != nil {
		return nil, errAt(r.tests[0].pos, "%s takes no test", what)
	}
	a := &args{what: what, pos: r.pos, list: r.args}
	cmd := &command{pos: r.pos}
	flagsTag := func(x arg) (bool, error) {
		if x.tag != "flags" {
			return false, nil
		}
		if err := c.need(x.pos, "tag :flags", "imap4flags"); err != nil {
			return false, err
		}
		l, err := a.strList(x)
		if err != nil {
			return false, err
		}
		if cmd.flags, err = c.values(l); err != nil {
			return false, err
		}
		cmd.hasFlags = true
		return true, nil
	}
	copyTag := func(x arg) (bool, error) {
		if x.tag != "copy" {
			return false, nil
		}
		cmd.copy = true
		return true, c.need(x.pos, "tag :copy", "copy")
	}
	var err error
	var pos []arg
	switch r.name {
	case "stop", "discard":
		cmd.kind = cmdStop
		if r.name == "discard" {
			cmd.kind = cmdDiscard
		}
		_, err = a.tagsThen(noTags)
	case "keep":
		cmd.kind = cmdKeep
		_, err = a.tagsThen(flagsTag)
	case "redirect":
		cmd.kind = cmdRedirect
		pos, err = a.tagsThen(copyTag, argString)
		if err == nil {
			cmd.arg, err = c.value(pos[0].strs[0], pos[0].pos)
		}
		if err == nil && cmd.arg.parts == nil && !validAddress(angleAddr(cmd.arg.lit)) {
			err = errAt(pos[0].pos, "redirect to %q, which is not an address", cmd.arg.lit)
		}
	case "fileinto":
		cmd.kind = cmdFileInto
		pos, err = a.tagsThen(func(x arg) (bool, error) {
			if x.tag == "create" {
				cmd.create = true
				return true, c.need(x.pos, "tag :create", "mailbox")
			}
			if ok, err := copyTag(x); ok || err != nil {
				return ok, err
			}
			return flagsTag(x)
		}, argString)
		if err == nil {
			cmd.arg, err = c.value(pos[0].strs[0], pos[0].pos)
		}
		// A name known when the script is stored is checked then, as
		// redirect's address is, rather than found wrong at each delivery.
		if err == nil && cmd.arg.parts == nil && !folderName(cmd.arg.lit) {
			err = errAt(pos[0].pos, "fileinto %q: not a folder name", cmd.arg.lit)
		}
	case "reject", "ereject":
		cmd.kind = cmdReject
		if r.name == "ereject" {
			cmd.kind = cmdEReject
		}
		pos, err = a.tagsThen(noTags, argString)
		if err == nil {
			cmd.arg, err = c.value(pos[0].strs[0], pos[0].pos)
		}
	case "setflag", "addflag", "removeflag":
		cmd.kind = map[string]cmdKind{"setflag": cmdSetFlag, "addflag": cmdAddFlag, "removeflag": cmdRemoveFlag}[r.name]
		want := []argKind{argStringList}
		if len(r.args) == 2 {
			if err := c.need(r.args[0].pos, what+" with a variable name", "variables"); err != nil {
				return nil, err
			}
			want = []argKind{argString, argStringList}
		}
		pos, err = a.tagsThen(noTags, want...)
		if err == nil && len(pos) == 2 {
			cmd.varName, err = c.varName(pos[0].strs[0], pos[0].pos)
			pos = pos[1:]
		}
		if err == nil {
			cmd.list, err = c.values(pos[0])
		}
	case "vacation":
		cmd.kind = cmdVacation
		cmd.vacation, pos, err = c.vacation(a)
		if err == nil {
			cmd.arg, err = c.value(pos[0].strs[0], pos[0].pos)
		}
	case "set":
		cmd.kind = cmdSet
		pos, err = a.tagsThen(func(x arg) (bool, error) {
			prec, ok := modifiers[x.tag]
			if !ok {
				return false, nil
			}
			for _, m := range cmd.mods {
				if modifiers[m] == prec {
					return false, errAt(x.pos, "%s: :%s and :%s together", what, m, x.tag)
				}
			}
			cmd.mods = append(cmd.mods, x.tag)
			return true, nil
		}, argString, argString)
		if err == nil {
			// RFC 5229 section 4.1: the highest precedence applies first.
			for i := 1; i < len(cmd.mods); i++ {
				for j := i; j > 0 && modifiers[cmd.mods[j]] > modifiers[cmd.mods[j-1]]; j-- {
					cmd.mods[j], cmd.mods[j-1] = cmd.mods[j-1], cmd.mods[j]
				}
			}
			cmd.varName, err = c.varName(pos[0].strs[0], pos[0].pos)
		}
		if err == nil {
			cmd.arg, err = c.value(pos[1].strs[0], pos[1].pos)
		}
	}
	if err != nil {
		return nil, err
	}
	return cmd, nil
}

// modifiers of set and their precedence (RFC 5229 section 4.1).
var modifiers = map[string]int{
	"lower": 40, "upper": 40,
	"lowerfirst": 30, "upperfirst": 30,
	"quotewildcard": 20,
	"length":        10,
}

func (c *checker) vacation(a *args) (*vacationArgs, []arg, error) {
	v := &vacationArgs{days: 7}
	seen := map[string]bool{}
	pos, err := a.tagsThen(func(x arg) (bool, error) {
		if seen[x.tag] {
			return false, errAt(x.pos, "%s: :%s given twice", a.what, x.tag)
		}
		seen[x.tag] = true
		var err error
		switch x.tag {
		case "days":
			var n uint64
			if n, err = a.num(x); err == nil {
				v.days = int(min(max(n, 1), 365))
			}
		case "subject", "from", "handle":
			s, p, e := a.str(x)
			if e != nil {
				return false, e
			}
			val, e := c.value(s, p)
			if e != nil {
				return false, e
			}
			switch x.tag {
			case "subject":
				v.subject = val
			case "from":
				if val.parts == nil && !validAddress(val.lit) && !validAddress(angleAddr(val.lit)) {
					return false, errAt(p, "%s: :from %q is not an address", a.what, val.lit)
				}
				v.from = val
			case "handle":
				v.handle = val
			}
		case "addresses":
			var l arg
			if l, err = a.strList(x); err == nil {
				v.addresses, err = c.values(l)
			}
		case "mime":
			v.mime = true
		default:
			return false, nil
		}
		return true, err
	}, argString)
	return v, pos, err
}

func (c *checker) varName(s string, p Pos) (string, error) {
	if !isIdentifier(s) {
		return "", errAt(p, "%q is not a variable name", s)
	}
	return strings.ToLower(s), nil
}

func isIdentifier(s string) bool {
	if s == "" || !(isAlpha(s[0]) || s[0] == '_') {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !(isAlpha(s[i]) || isDigit(s[i]) || s[i] == '_') {
			return false
		}
	}
	return true
}

func (c *checker) values(a arg) ([]*value, error) {
	out := make([]*value, len(a.strs))
	for i, s := range a.strs {
		v, err := c.value(s, a.spos[i])
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// value decodes encoded characters (RFC 5228 section 2.4.2.4) and finds
// the variable references (RFC 5229 section 3), when those extensions
// are required.
func (c *checker) value(s string, p Pos) (*value, error) {
	if c.exts["encoded-character"] && strings.Contains(s, "${") {
		var err error
		if s, err = decodeEncoded(s); err != nil {
			return nil, errAt(p, "%v", err)
		}
	}
	if !c.exts["variables"] || !strings.Contains(s, "${") {
		return &value{lit: s, low: asciiLower(s)}, nil
	}
	parts, err := parseVars(s)
	if err != nil {
		return nil, errAt(p, "%v", err)
	}
	if parts == nil {
		return &value{lit: s, low: asciiLower(s)}, nil
	}
	return &value{lit: s, parts: parts}, nil
}

// addressHeaders are the fields the address test takes (RFC 5228 section
// 5.1 asks to restrict it to fields that hold addresses).
var addressHeaders = map[string]bool{
	"from": true, "sender": true, "reply-to": true, "to": true, "cc": true, "bcc": true,
	"resent-from": true, "resent-sender": true, "resent-reply-to": true, "resent-to": true, "resent-cc": true, "resent-bcc": true,
	"return-path": true, "delivered-to": true, "x-original-to": true, "envelope-to": true, "x-envelope-to": true,
	"errors-to": true, "disposition-notification-to": true, "original-recipient": true,
	"mail-followup-to": true, "mail-reply-to": true, "approved": true,
}

var datePartNames = map[string]bool{
	"year": true, "month": true, "day": true, "date": true, "julian": true, "hour": true, "minute": true,
	"second": true, "time": true, "iso8601": true, "std11": true, "zone": true, "weekday": true,
}

func (c *checker) test(r *rawTest) (*test, error) {
	what := `test "` + r.name + `"`
	if ext := testExt[r.name]; ext != "" {
		if err := c.need(r.pos, what, ext); err != nil {
			return nil, err
		}
	}
	t := &test{pos: r.pos}
	switch r.name {
	case "true", "false", "not", "allof", "anyof":
		if len(r.args) > 0 {
			return nil, errAt(r.args[0].pos, "%s takes no arguments", what)
		}
		switch r.name {
		case "true", "false":
			if r.tests != nil {
				return nil, errAt(r.tests[0].pos, "%s takes no test", what)
			}
			t.kind = testTrue
			if r.name == "false" {
				t.kind = testFalse
			}
			return t, nil
		case "not":
			if len(r.tests) != 1 || r.list {
				return nil, errAt(r.pos, "not takes one test")
			}
			t.kind = testNot
		default:
			if !r.list {
				return nil, errAt(r.pos, "%s takes a test list", r.name)
			}
			t.kind = testAllOf
			if r.name == "anyof" {
				t.kind = testAnyOf
			}
		}
		for _, rt := range r.tests {
			sub, err := c.test(rt)
			if err != nil {
				return nil, err
			}
			t.tests = append(t.tests, sub)
		}
		return t, nil
	}
	if r.tests != nil {
		return nil, errAt(r.tests[0].pos, "%s takes no test", what)
	}
	a := &args{what: what, pos: r.pos, list: r.args}
	m := &matchSpec{}
	var mt, cmpSeen, partSeen, idxSeen, zoneSeen, bodySeen bool
	matchTags := func(x arg) (bool, error) {
		switch x.tag {
		case "comparator":
			if cmpSeen {
				return false, errAt(x.pos, "%s: more than one comparator", what)
			}
			cmpSeen = true
			s, p, err := a.str(x)
			if err != nil {
				return false, err
			}
			switch s {
			case "i;octet":
				m.cmp = cmpOctet
			case "i;ascii-casemap":
				m.cmp = cmpCasemap
			case "i;ascii-numeric":
				m.cmp = cmpNumeric
				if err := c.need(p, `comparator "i;ascii-numeric"`, "comparator-i;ascii-numeric"); err != nil {
					return false, err
				}
			default:
				return false, errAt(p, "unknown comparator %q", s)
			}
			return true, nil
		case "is", "contains", "matches", "regex", "count", "value":
			if mt {
				return false, errAt(x.pos, "%s: more than one match type", what)
			}
			mt = true
			switch x.tag {
			case "is":
				m.typ = matchIs
			case "contains":
				m.typ = matchContains
			case "matches":
				m.typ = matchMatches
			case "regex":
				m.typ = matchRegex
				return true, c.need(x.pos, "match type :regex", "regex")
			case "count", "value":
				m.typ = matchCount
				if x.tag == "value" {
					m.typ = matchValue
				}
				if err := c.need(x.pos, "match type :"+x.tag, "relational"); err != nil {
					return false, err
				}
				s, p, err := a.str(x)
				if err != nil {
					return false, err
				}
				op, ok := relOps[strings.ToLower(s)]
				if !ok {
					return false, errAt(p, "unknown relational operator %q", s)
				}
				m.rel = op
			}
			return true, nil
		}
		return false, nil
	}
	partTags := func(x arg) (bool, error) {
		var p addrPart
		switch x.tag {
		case "all":
			p = partAll
		case "localpart":
			p = partLocal
		case "domain":
			p = partDomain
		case "user", "detail":
			if err := c.need(x.pos, "tag :"+x.tag, "subaddress"); err != nil {
				return false, err
			}
			p = partUser
			if x.tag == "detail" {
				p = partDetail
			}
		default:
			return matchTags(x)
		}
		if partSeen {
			return false, errAt(x.pos, "%s: more than one address part", what)
		}
		partSeen = true
		t.part = p
		return true, nil
	}
	indexTags := func(next func(arg) (bool, error)) func(arg) (bool, error) {
		return func(x arg) (bool, error) {
			switch x.tag {
			case "index":
				if err := c.need(x.pos, "tag :index", "index"); err != nil {
					return false, err
				}
				if idxSeen {
					return false, errAt(x.pos, "%s: :index given twice", what)
				}
				idxSeen = true
				n, err := a.num(x)
				if err != nil {
					return false, err
				}
				if n < 1 || n > 1<<20 {
					return false, errAt(x.pos, "%s: :index must be at least 1", what)
				}
				t.index = int(n)
				return true, nil
			case "last":
				if err := c.need(x.pos, "tag :last", "index"); err != nil {
					return false, err
				}
				t.last = true
				return true, nil
			}
			return next(x)
		}
	}
	zoneTags := func(next func(arg) (bool, error)) func(arg) (bool, error) {
		return func(x arg) (bool, error) {
			switch x.tag {
			case "zone", "originalzone":
				if zoneSeen {
					return false, errAt(x.pos, "%s: :zone and :originalzone together", what)
				}
				zoneSeen = true
				if x.tag == "originalzone" {
					if r.name == "currentdate" {
						return false, nil
					}
					t.origTZ = true
					return true, nil
				}
				s, p, err := a.str(x)
				if err != nil {
					return false, err
				}
				if t.zone, err = c.value(s, p); err != nil {
					return false, err
				}
				if t.zone.parts == nil {
					if _, ok := parseZone(t.zone.lit); !ok {
						return false, errAt(p, "%s: zone %q is not of the form +hhmm", what, s)
					}
				}
				return true, nil
			}
			return next(x)
		}
	}
	var pos []arg
	var err error
	switch r.name {
	case "header":
		t.kind = testHeader
		pos, err = a.tagsThen(indexTags(matchTags), argStringList, argStringList)
	case "address":
		t.kind = testAddress
		pos, err = a.tagsThen(indexTags(partTags), argStringList, argStringList)
	case "envelope":
		t.kind = testEnvelope
		pos, err = a.tagsThen(partTags, argStringList, argStringList)
	case "exists":
		t.kind = testExists
		pos, err = a.tagsThen(noTags, argStringList)
	case "size":
		t.kind = testSize
		var seen bool
		pos, err = a.tagsThen(func(x arg) (bool, error) {
			if x.tag != "over" && x.tag != "under" {
				return false, nil
			}
			if seen {
				return false, errAt(x.pos, "size takes one of :over and :under")
			}
			seen = true
			t.over = x.tag == "over"
			return true, nil
		}, argNumber)
		if err == nil && !seen {
			err = errAt(r.pos, "size needs :over or :under")
		}
		if err == nil {
			t.limit = pos[0].num
		}
		if err != nil {
			return nil, err
		}
		return t, nil
	case "body":
		t.kind = testBody
		pos, err = a.tagsThen(func(x arg) (bool, error) {
			switch x.tag {
			case "raw", "text", "content":
				if bodySeen {
					return false, errAt(x.pos, "%s: more than one body transform", what)
				}
				bodySeen = true
				switch x.tag {
				case "raw":
					t.body = bodyRaw
				case "text":
					t.body = bodyText
				case "content":
					t.body = bodyContent
					l, err := a.strList(x)
					if err != nil {
						return false, err
					}
					if t.content, err = c.values(l); err != nil {
						return false, err
					}
				}
				return true, nil
			}
			return matchTags(x)
		}, argStringList)
	case "string":
		t.kind = testString
		pos, err = a.tagsThen(matchTags, argStringList, argStringList)
	case "hasflag":
		t.kind = testHasFlag
		pos, err = a.tags(matchTags)
		if err == nil {
			want := []argKind{argStringList}
			if len(pos) == 2 {
				want = []argKind{argStringList, argStringList}
			}
			pos, err = a.positional(pos, want...)
		}
		if err == nil && len(pos) == 2 {
			if err = c.need(pos[0].pos, "hasflag with variable names", "variables"); err == nil {
				for i, s := range pos[0].strs {
					name, e := c.varName(s, pos[0].spos[i])
					if e != nil {
						return nil, e
					}
					t.names = append(t.names, &value{lit: name})
				}
				pos = pos[1:]
			}
		}
	case "mailboxexists":
		t.kind = testMailboxExists
		pos, err = a.tagsThen(noTags, argStringList)
	case "date":
		t.kind = testDate
		pos, err = a.tagsThen(indexTags(zoneTags(matchTags)), argString, argString, argStringList)
	case "currentdate":
		t.kind = testCurrentDate
		pos, err = a.tagsThen(zoneTags(matchTags), argString, argStringList)
	default:
		return nil, errAt(r.pos, "unknown test %q", r.name)
	}
	if err != nil {
		return nil, err
	}
	if t.last && t.index == 0 {
		return nil, errAt(r.pos, "%s: :last needs :index", what)
	}
	// The positional arguments: names (if any) then the keys.
	var keys arg
	switch t.kind {
	case testExists, testMailboxExists:
		if t.names, err = c.values(pos[0]); err != nil {
			return nil, err
		}
		return t, nil
	case testBody, testHasFlag:
		keys = pos[0]
	case testDate:
		if t.header, err = c.value(pos[0].strs[0], pos[0].pos); err != nil {
			return nil, err
		}
		pos = pos[1:]
		fallthrough
	case testCurrentDate:
		if t.date, err = c.value(pos[0].strs[0], pos[0].pos); err != nil {
			return nil, err
		}
		if t.date.parts == nil && !datePartNames[strings.ToLower(t.date.lit)] {
			return nil, errAt(pos[0].pos, "%s: unknown date part %q", what, t.date.lit)
		}
		keys = pos[1]
	default:
		if t.names, err = c.values(pos[0]); err != nil {
			return nil, err
		}
		// A name that is no field name matches no field, and is no
		// error (RFC 5228 section 2.4.2.2).
		if t.kind == testAddress {
			for i, v := range t.names {
				if v.parts == nil && !addressHeaders[strings.ToLower(v.lit)] {
					return nil, errAt(pos[0].spos[i], "%s: header %q holds no addresses", what, v.lit)
				}
			}
		}
		if t.kind == testEnvelope {
			for i, v := range t.names {
				switch strings.ToLower(v.lit) {
				case "from", "to", "auth":
				default:
					if v.parts == nil {
						return nil, errAt(pos[0].spos[i], "%s: unknown envelope part %q", what, v.lit)
					}
				}
			}
		}
		keys = pos[1]
	}
	if m.keys, err = c.values(keys); err != nil {
		return nil, err
	}
	if err := c.compileMatch(m, keys, what); err != nil {
		return nil, err
	}
	t.m = m
	return t, nil
}

var relOps = map[string]relOp{"gt": relGT, "ge": relGE, "lt": relLT, "le": relLE, "eq": relEQ, "ne": relNE}

// validFieldName: printable US-ASCII but ":" (RFC 5322 section 3.6.8).
func validFieldName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' || s[i] == ':' {
			return false
		}
	}
	return true
}

// maxPattern bounds a regular expression's source.
const maxPattern = 4 << 10

func (c *checker) compileMatch(m *matchSpec, keys arg, what string) error {
	if m.cmp == cmpNumeric {
		switch m.typ {
		case matchContains, matchMatches, matchRegex:
			return errAt(keys.pos, "%s: comparator i;ascii-numeric does not do substring or pattern matches", what)
		}
	}
	switch m.typ {
	case matchRegex:
		m.re = make([]*regexp.Regexp, len(m.keys))
		for i, k := range m.keys {
			if k.parts != nil {
				continue
			}
			c.nRe++
			if c.nRe > c.maxRe {
				return fmt.Errorf("%s: more than %d regular expressions: %w", keys.spos[i], c.maxRe, ErrLimit)
			}
			re, err := compileRegex(k.lit, m.cmp)
			if err != nil {
				return errAt(keys.spos[i], "%s: %v", what, err)
			}
			m.re[i] = re
		}
	case matchMatches:
		m.glob = make([]*glob, len(m.keys))
		for i, k := range m.keys {
			if k.parts == nil {
				m.glob[i] = compileGlob(k.lit)
			}
		}
	}
	return nil
}

func compileRegex(pat string, cmp comparator) (*regexp.Regexp, error) {
	if len(pat) > maxPattern {
		return nil, fmt.Errorf("regular expression longer than %d bytes: %w", maxPattern, ErrLimit)
	}
	if cmp == cmpCasemap {
		pat = "(?i)" + pat
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		var se *syntax.Error
		if errors.As(err, &se) {
			return nil, fmt.Errorf("bad regular expression: %s", se.Code)
		}
		return nil, fmt.Errorf("bad regular expression: %v", err)
	}
	return re, nil
}
