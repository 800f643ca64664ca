package sieve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/emersion/go-message/charset"
)

// errStop unwinds the interpreter at "stop".
var errStop = errors.New("stop")

type run struct {
	ctx  context.Context
	s    *Script
	msg  Message
	env  Envelope
	opts RunOptions
	now  time.Time

	steps int
	work  int // pattern-matching work, charged to steps by the thousand

	vars      map[string]string
	matchVars []string
	flags     []string

	res       Result
	keep      int // index of the Keep action, -1 if none
	folders   map[string]int
	redirects map[string]bool
	cancelled bool
	delivered string // the first action that delivers: keep, fileinto or redirect
	rejected  bool
	vacation  bool
	discarded bool

	headers map[string][]string   // decoded, by lower-case name
	addrs   map[string][][]string // addresses of each field, by lower-case name
	body    *bodyParts
	res2    map[string]*regexp.Regexp
	nRe     int
}

var wordDecoder = &mime.WordDecoder{CharsetReader: charset.Reader}

// Run evaluates the script against a message. A run-time error (a limit,
// a conflict of actions such as reject with fileinto, a failing
// Mailboxes or Message) returns the error and a Result with only the
// implicit keep: the caller then keeps the message (RFC 5228 section
// 2.10.6).
func (s *Script) Run(ctx context.Context, msg Message, env Envelope, opts RunOptions) (Result, error) {
	if opts.SubaddressSeparator == "" {
		opts.SubaddressSeparator = "+"
	}
	if opts.Location == nil {
		opts.Location = time.UTC
	}
	if opts.MaxSteps <= 0 {
		opts.MaxSteps = DefaultMaxSteps
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.MaxVariableSize <= 0 {
		opts.MaxVariableSize = DefaultMaxVariableSize
	}
	if opts.MaxRedirects <= 0 {
		opts.MaxRedirects = DefaultMaxRedirects
	}
	if opts.MaxMatchInput <= 0 {
		opts.MaxMatchInput = DefaultMaxMatchInput
	}
	r := &run{ctx: ctx, s: s, msg: msg, env: env, opts: opts, keep: -1}
	if err := r.block(s.cmds); err != nil && err != errStop {
		return Result{ImplicitKeep: true, Steps: r.steps}, err
	}
	r.res.ImplicitKeep = !r.cancelled
	r.res.Flags = r.flags
	r.res.Steps = r.steps
	return r.res, nil
}

func (r *run) step(n int) error {
	r.steps += n
	if r.work >= workPerStep {
		r.steps += r.work / workPerStep
		r.work %= workPerStep
	}
	if r.steps > r.opts.MaxSteps {
		return fmt.Errorf("more than %d steps: %w", r.opts.MaxSteps, ErrLimit)
	}
	if r.steps&63 == 0 {
		if err := r.ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) block(cmds []*command) error {
	for _, c := range cmds {
		if err := r.step(1); err != nil {
			return err
		}
		if err := r.command(c); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) expand(v *value) string {
	if v.parts == nil {
		return v.lit
	}
	var b strings.Builder
	for _, p := range v.parts {
		var s string
		switch {
		case !p.isVar:
			s = p.lit
		case p.name != "":
			s = r.vars[p.name]
		case p.num >= 0 && p.num < len(r.matchVars):
			s = r.matchVars[p.num]
		}
		// A string of many references to a long variable stays
		// within maxExpanded.
		if b.Len()+len(s) > maxExpanded {
			b.WriteString(truncate(s, maxExpanded-b.Len()))
			break
		}
		b.WriteString(s)
	}
	r.work += b.Len()
	return b.String()
}

// maxExpanded bounds a string after variable expansion.
const maxExpanded = 64 << 10

// lower is the ASCII lower case of a value, computed once for constants.
func (r *run) lower(v *value) string {
	if v.parts == nil {
		return v.low
	}
	return asciiLower(r.expand(v))
}

func (r *run) expandAll(vs []*value) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = r.expand(v)
	}
	return out
}

func (r *run) errAt(p Pos, format string, a ...any) error {
	return fmt.Errorf("%s: %s", p, fmt.Sprintf(format, a...))
}

func (r *run) command(c *command) error {
	switch c.kind {
	case cmdIf:
		for _, b := range c.branches {
			ok := true
			if b.cond != nil {
				var err error
				if ok, err = r.test(b.cond); err != nil {
					return err
				}
			}
			if ok {
				return r.block(b.block)
			}
		}
		return nil
	case cmdStop:
		return errStop
	case cmdKeep:
		flags := r.flags
		if c.hasFlags {
			flags = parseFlags(r.expandAll(c.flags))
		}
		return r.addKeep(c.pos, flags, "keep")
	case cmdDiscard:
		r.cancelled = true
		if !r.discarded {
			r.discarded = true
			r.res.Actions = append(r.res.Actions, Discard{})
		}
		return nil
	case cmdFileInto:
		folder := r.expand(c.arg)
		if !folderName(folder) {
			return r.errAt(c.pos, "fileinto %q: not a folder name", folder)
		}
		flags := r.flags
		if c.hasFlags {
			flags = parseFlags(r.expandAll(c.flags))
		}
		if strings.EqualFold(folder, "INBOX") {
			// The same as keep (RFC 5228 section 4.1): one store into
			// INBOX however it was asked for.
			return r.addKeep(c.pos, flags, "fileinto")
		}
		if err := r.delivering(c.pos, "fileinto"); err != nil {
			return err
		}
		if !c.copy {
			r.cancelled = true
		}
		if r.folders == nil {
			r.folders = map[string]int{}
		}
		if i, ok := r.folders[folder]; ok {
			f := r.res.Actions[i].(FileInto)
			f.Flags = mergeFlags(f.Flags, flags)
			f.Create = f.Create || c.create
			f.Copy = f.Copy && c.copy
			r.res.Actions[i] = f
			return nil
		}
		r.folders[folder] = len(r.res.Actions)
		r.res.Actions = append(r.res.Actions, FileInto{Folder: folder, Flags: flags, Create: c.create, Copy: c.copy})
		return nil
	case cmdRedirect:
		// A sieve-address may be "phrase <addr-spec>" (RFC 5228
		// section 2.4.2.3): the action carries the addr-spec.
		addr := strings.TrimSpace(angleAddr(r.expand(c.arg)))
		if !validAddress(addr) {
			return r.errAt(c.pos, "redirect to %q, which is not an address", addr)
		}
		if err := r.delivering(c.pos, "redirect"); err != nil {
			return err
		}
		if !c.copy {
			r.cancelled = true
		}
		key := strings.ToLower(addr)
		if r.redirects[key] {
			return nil
		}
		if len(r.redirects) >= r.opts.MaxRedirects {
			return fmt.Errorf("%s: more than %d redirects: %w", c.pos, r.opts.MaxRedirects, ErrLimit)
		}
		if r.redirects == nil {
			r.redirects = map[string]bool{}
		}
		r.redirects[key] = true
		r.res.Actions = append(r.res.Actions, Redirect{Address: addr, Copy: c.copy})
		return nil
	case cmdReject, cmdEReject:
		// RFC 5429 section 2.4: one reject per script, never with
		// vacation; with the actions that deliver it is not
		// recommended, and refused here, so the message is either
		// delivered or refused.
		switch {
		case r.rejected:
			return r.errAt(c.pos, "more than one reject")
		case r.vacation:
			return r.errAt(c.pos, "reject after vacation")
		case r.delivered != "":
			return r.errAt(c.pos, "reject after %s", r.delivered)
		}
		r.rejected = true
		r.cancelled = true
		r.res.Actions = append(r.res.Actions, Reject{Reason: r.expand(c.arg), Extended: c.kind == cmdEReject})
		return nil
	case cmdSetFlag, cmdAddFlag, cmdRemoveFlag:
		list := parseFlags(r.expandAll(c.list))
		cur := r.flags
		if c.varName != "" {
			cur = parseFlags([]string{r.vars[c.varName]})
		}
		r.work += (len(cur) + 1) * (len(list) + 1)
		if err := r.step(0); err != nil {
			return err
		}
		switch c.kind {
		case cmdSetFlag:
			cur = list
		case cmdAddFlag:
			cur = mergeFlags(cur, list)
		case cmdRemoveFlag:
			cur = removeFlags(cur, list)
		}
		if c.varName != "" {
			r.setVar(c.varName, strings.Join(cur, " "))
		} else {
			r.flags = cur
		}
		return nil
	case cmdVacation:
		if r.rejected {
			return r.errAt(c.pos, "vacation after reject")
		}
		if r.vacation {
			return r.errAt(c.pos, "more than one vacation")
		}
		r.vacation = true
		v := c.vacation
		act := Vacation{Days: v.days, MIME: v.mime, Reason: r.expand(c.arg)}
		if v.subject != nil {
			act.Subject = r.expand(v.subject)
		}
		if v.from != nil {
			act.From = r.expand(v.from)
		}
		act.Addresses = r.expandAll(v.addresses)
		if v.handle != nil {
			act.Handle = r.expand(v.handle)
		} else {
			// RFC 5230 section 4.2: without :handle, the reply is
			// identified by its arguments.
			h := sha256.New()
			fmt.Fprintf(h, "%q %q %q %t", act.Subject, act.From, act.Reason, act.MIME)
			act.Handle = hex.EncodeToString(h.Sum(nil)[:16])
		}
		r.res.Actions = append(r.res.Actions, act)
		return nil
	case cmdSet:
		val := r.expand(c.arg)
		for _, m := range c.mods {
			val = applyModifier(m, val)
		}
		r.setVar(c.varName, val)
		return nil
	}
	return fmt.Errorf("%s: command not implemented", c.pos)
}

// setMatchVars keeps ${0} to ${9}, each truncated like a variable.
func (r *run) setMatchVars(v []string) {
	if len(v) > 10 {
		v = v[:10]
	}
	out := make([]string, len(v))
	for i, s := range v {
		out[i] = truncate(s, r.opts.MaxVariableSize)
	}
	r.matchVars = out
}

func (r *run) setVar(name, val string) {
	if r.vars == nil {
		r.vars = map[string]string{}
	}
	r.vars[name] = truncate(val, r.opts.MaxVariableSize)
}

func (r *run) delivering(p Pos, what string) error {
	if r.rejected {
		return r.errAt(p, "%s after reject", what)
	}
	if r.delivered == "" {
		r.delivered = what
	}
	return nil
}

func (r *run) addKeep(p Pos, flags []string, what string) error {
	if err := r.delivering(p, what); err != nil {
		return err
	}
	r.cancelled = true
	if r.keep >= 0 {
		k := r.res.Actions[r.keep].(Keep)
		k.Flags = mergeFlags(k.Flags, flags)
		r.res.Actions[r.keep] = k
		return nil
	}
	r.keep = len(r.res.Actions)
	r.res.Actions = append(r.res.Actions, Keep{Flags: flags})
	return nil
}

// maxFlags bounds the flags of one list; more are dropped.
const maxFlags = 256

// parseFlags splits flag lists at blanks and drops duplicates, ignoring
// case (RFC 5232 section 3).
func parseFlags(lists []string) []string {
	var out []string
	for _, l := range lists {
		for _, f := range strings.Fields(l) {
			out = mergeFlags(out, []string{f})
		}
	}
	return out
}

func mergeFlags(cur, add []string) []string {
	out := append([]string(nil), cur...)
next:
	for _, f := range add {
		if len(out) >= maxFlags {
			break
		}
		for _, g := range out {
			if strings.EqualFold(f, g) {
				continue next
			}
		}
		out = append(out, f)
	}
	return out
}

func removeFlags(cur, del []string) []string {
	var out []string
next:
	for _, f := range cur {
		for _, g := range del {
			if strings.EqualFold(f, g) {
				continue next
			}
		}
		out = append(out, f)
	}
	return out
}

// header returns the decoded values of the fields named name.
func (r *run) header(name string) []string {
	key := strings.ToLower(name)
	if v, ok := r.headers[key]; ok {
		return v
	}
	var raw []string
	if validFieldName(name) {
		raw = r.msg.Header(name)
	}
	out := make([]string, len(raw))
	for i, v := range raw {
		if strings.Contains(v, "=?") {
			if d, err := wordDecoder.DecodeHeader(v); err == nil {
				v = d
			}
		}
		out[i] = strings.TrimSpace(v)
	}
	if r.headers == nil {
		r.headers = map[string][]string{}
	}
	r.headers[key] = out
	return out
}

// indexed applies :index and :last (RFC 5260 section 6).
func indexed[T any](vals []T, t *test) []T {
	if t.index == 0 {
		return vals
	}
	i := t.index - 1
	if t.last {
		i = len(vals) - t.index
	}
	if i < 0 || i >= len(vals) {
		return nil
	}
	return vals[i : i+1]
}

// addressLists returns the addresses of each field named name, parsed
// once per run.
func (r *run) addressLists(name string) [][]string {
	key := strings.ToLower(name)
	if l, ok := r.addrs[key]; ok {
		return l
	}
	vals := r.header(name)
	l := make([][]string, len(vals))
	for i, v := range vals {
		l[i] = addresses(v)
	}
	if r.addrs == nil {
		r.addrs = map[string][][]string{}
	}
	r.addrs[key] = l
	return l
}

func (r *run) test(t *test) (bool, error) {
	if err := r.step(1); err != nil {
		return false, err
	}
	switch t.kind {
	case testTrue:
		return true, nil
	case testFalse:
		return false, nil
	case testNot:
		ok, err := r.test(t.tests[0])
		return !ok, err
	case testAllOf:
		for _, s := range t.tests {
			if ok, err := r.test(s); err != nil || !ok {
				return false, err
			}
		}
		return true, nil
	case testAnyOf:
		for _, s := range t.tests {
			if ok, err := r.test(s); err != nil || ok {
				return ok, err
			}
		}
		return false, nil
	case testHeader:
		var vals []string
		for _, n := range t.names {
			vals = append(vals, indexed(r.header(r.expand(n)), t)...)
		}
		return r.match(t.m, vals, true)
	case testAddress:
		var vals []string
		for _, n := range t.names {
			for _, list := range indexed(r.addressLists(r.expand(n)), t) {
				for _, a := range list {
					if p, ok := addressPart(a, t.part, r.opts.SubaddressSeparator); ok {
						vals = append(vals, p)
					}
				}
			}
		}
		return r.match(t.m, vals, true)
	case testEnvelope:
		var vals []string
		for _, n := range t.names {
			var a string
			switch strings.ToLower(r.expand(n)) {
			case "from":
				a = r.env.From
			case "to":
				a = r.env.To
			case "auth":
				if r.env.AuthUser == "" {
					continue
				}
				a = r.env.AuthUser
			default:
				continue
			}
			a = strings.TrimSuffix(strings.TrimPrefix(a, "<"), ">")
			if a == "" {
				// RFC 5228 section 5.4: the null reverse-path is the
				// empty string whatever the address part.
				vals = append(vals, "")
				continue
			}
			if p, ok := addressPart(a, t.part, r.opts.SubaddressSeparator); ok {
				vals = append(vals, p)
			}
		}
		return r.match(t.m, vals, true)
	case testExists:
		for _, n := range t.names {
			if name := r.expand(n); !validFieldName(name) || len(r.msg.Header(name)) == 0 {
				return false, nil
			}
		}
		return true, nil
	case testSize:
		if t.over {
			return r.msg.Size() > int64(t.limit), nil
		}
		return r.msg.Size() < int64(t.limit), nil
	case testString:
		vals := r.expandAll(t.names)
		if t.m.typ == matchCount {
			// RFC 5229 section 5: empty strings are not counted.
			var n []string
			for _, v := range vals {
				if v != "" {
					n = append(n, v)
				}
			}
			vals = n
		}
		return r.match(t.m, vals, true)
	case testHasFlag:
		flags := r.flags
		if t.names != nil {
			var l []string
			for _, n := range t.names {
				l = append(l, r.vars[n.lit])
			}
			flags = parseFlags(l)
		}
		m := t.m
		if m.typ != matchCount {
			// Each key is a list of flags too: "b A" asks for b or
			// A (RFC 5232 section 5).
			var keys []*value
			for _, k := range r.expandAll(m.keys) {
				for _, f := range strings.Fields(k) {
					keys = append(keys, &value{lit: f, low: asciiLower(f)})
				}
			}
			m = &matchSpec{cmp: m.cmp, typ: m.typ, rel: m.rel, keys: keys,
				re: make([]*regexp.Regexp, len(keys)), glob: make([]*glob, len(keys))}
		}
		return r.match(m, flags, true)
	case testMailboxExists:
		for _, n := range t.names {
			if r.opts.Mailboxes == nil {
				return false, nil
			}
			ok, err := r.opts.Mailboxes.MailboxExists(r.ctx, r.expand(n))
			if err != nil {
				return false, fmt.Errorf("%s: mailboxexists: %w", t.pos, err)
			}
			if !ok {
				return false, nil
			}
		}
		return true, nil
	case testDate, testCurrentDate:
		return r.dateTest(t)
	case testBody:
		vals, err := r.bodyValues(t)
		if err != nil {
			return false, err
		}
		if err := r.step(0); err != nil {
			return false, err
		}
		// RFC 5173 section 5: the body test sets no match variables.
		return r.match(t.m, vals, false)
	}
	return false, fmt.Errorf("%s: test not implemented", t.pos)
}

// match compares values with the keys (RFC 5228 section 2.7): true when
// any value matches any key, or for :count when the count does.
func (r *run) match(m *matchSpec, vals []string, setVars bool) (bool, error) {
	setVars = setVars && r.s.usesVars
	if m.typ == matchCount {
		n := strconv.Itoa(len(vals))
		for _, k := range m.keys {
			if err := r.step(1); err != nil {
				return false, err
			}
			if relation(m.rel, compare(m.cmp, n, r.expand(k))) {
				return true, nil
			}
		}
		return false, nil
	}
	var caps []string
	for _, v := range vals {
		lv := v
		if m.typ == matchContains && m.cmp != cmpOctet {
			lv = asciiLower(v)
		}
		for i, k := range m.keys {
			if err := r.step(1); err != nil {
				return false, err
			}
			switch m.typ {
			case matchIs:
				if equal(m.cmp, v, r.expand(k)) {
					return true, nil
				}
			case matchContains:
				if m.cmp == cmpOctet {
					if strings.Contains(v, r.expand(k)) {
						return true, nil
					}
				} else if strings.Contains(lv, r.lower(k)) {
					return true, nil
				}
			case matchValue:
				if relation(m.rel, compare(m.cmp, v, r.expand(k))) {
					return true, nil
				}
			case matchMatches:
				g := m.glob[i]
				if g == nil {
					g = compileGlob(r.expand(k))
				}
				var cp *[]string
				if setVars {
					cp = &caps
				}
				limit := (r.opts.MaxSteps-r.steps)*workPerStep - r.work + 1
				ok := g.match(truncate(v, r.opts.MaxMatchInput), m.cmp == cmpCasemap, cp, &r.work, limit)
				if err := r.step(0); err != nil {
					return false, err
				}
				if ok {
					if setVars {
						r.setMatchVars(caps)
					}
					return true, nil
				}
			case matchRegex:
				re := m.re[i]
				if re == nil {
					var err error
					if re, err = r.regex(r.expand(k), m.cmp); err != nil {
						return false, err
					}
				}
				in := truncate(v, r.opts.MaxMatchInput)
				r.work += len(in)
				if !setVars {
					if re.MatchString(in) {
						return true, nil
					}
					continue
				}
				if sm := re.FindStringSubmatch(in); sm != nil {
					r.setMatchVars(sm[:min(len(sm), 10)])
					return true, nil
				}
			}
		}
	}
	return false, nil
}

// regex compiles a pattern that holds variables, at most maxRe per run.
func (r *run) regex(pat string, cmp comparator) (*regexp.Regexp, error) {
	key := strconv.Itoa(int(cmp)) + pat
	if re, ok := r.res2[key]; ok {
		return re, nil
	}
	r.nRe++
	if r.nRe > r.s.maxRe {
		return nil, fmt.Errorf("more than %d regular expressions compiled: %w", r.s.maxRe, ErrLimit)
	}
	re, err := compileRegex(pat, cmp)
	if err != nil {
		return nil, err
	}
	if r.res2 == nil {
		r.res2 = map[string]*regexp.Regexp{}
	}
	r.res2[key] = re
	return re, nil
}

// workPerStep is how many octets compared, decoded or backtracked over
// count as one step.
const workPerStep = 256

// folderName reports whether fileinto may name folder: not empty, UTF-8,
// no line breaks or NUL.
func folderName(folder string) bool {
	return folder != "" && utf8.ValidString(folder) && !strings.ContainsAny(folder, "\r\n\x00")
}
