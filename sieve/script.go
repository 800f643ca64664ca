package sieve

import (
	"regexp"
)

// The checked script: commands and tests with typed arguments.

type cmdKind int

const (
	cmdIf cmdKind = iota
	cmdStop
	cmdKeep
	cmdDiscard
	cmdRedirect
	cmdFileInto
	cmdReject
	cmdEReject
	cmdSetFlag
	cmdAddFlag
	cmdRemoveFlag
	cmdVacation
	cmdSet
)

type branch struct {
	cond  *test // nil for else
	block []*command
}

type command struct {
	pos  Pos
	kind cmdKind

	branches []branch // if

	arg      *value   // redirect address, fileinto folder, reject reason, set value, vacation reason
	varName  string   // set: the variable; flag commands: the variable or ""
	list     []*value // flag commands: the flags
	flags    []*value // :flags of keep and fileinto
	hasFlags bool
	copy     bool
	create   bool
	mods     []string // set modifiers, highest precedence first

	vacation *vacationArgs
}

type vacationArgs struct {
	days      int
	subject   *value
	from      *value
	addresses []*value
	mime      bool
	handle    *value
}

type testKind int

const (
	testTrue testKind = iota
	testFalse
	testNot
	testAllOf
	testAnyOf
	testAddress
	testEnvelope
	testHeader
	testExists
	testSize
	testBody
	testString
	testHasFlag
	testMailboxExists
	testDate
	testCurrentDate
)

type addrPart int

const (
	partAll addrPart = iota
	partLocal
	partDomain
	partUser
	partDetail
)

type bodyTransform int

const (
	bodyText bodyTransform = iota
	bodyRaw
	bodyContent
)

type test struct {
	pos   Pos
	kind  testKind
	tests []*test

	m       *matchSpec
	names   []*value // header names, envelope parts, sources, mailbox names, variable names of hasflag
	part    addrPart
	over    bool
	limit   uint64
	index   int // 0: none
	last    bool
	zone    *value
	origTZ  bool
	date    *value // date part
	header  *value // date test's header
	body    bodyTransform
	content []*value
}

type matchType int

const (
	matchIs matchType = iota
	matchContains
	matchMatches
	matchRegex
	matchCount
	matchValue
)

type comparator int

const (
	cmpCasemap comparator = iota
	cmpOctet
	cmpNumeric
)

type relOp int

const (
	relGT relOp = iota
	relGE
	relLT
	relLE
	relEQ
	relNE
)

type matchSpec struct {
	cmp  comparator
	typ  matchType
	rel  relOp
	keys []*value
	// re holds the regular expression of each constant key, compiled
	// at parse time (nil for keys with variables).
	re []*regexp.Regexp
	// glob holds the pattern of each constant key of :matches.
	glob []*glob
}

// value is a string argument: constant, or with variable references
// (RFC 5229 section 3) expanded at run time.
type value struct {
	lit   string
	low   string // asciiLower(lit), for constants
	parts []part // nil for a constant
}

type part struct {
	lit   string
	name  string // a variable, lower case
	num   int    // a match variable, when name == ""
	isVar bool
}

// Script is a parsed and checked script, ready to Run any number of
// times, concurrently.
type Script struct {
	cmds     []*command
	exts     map[string]bool
	usesVars bool
	maxRe    int
}

// Requires reports whether the script requires the extension.
func (s *Script) Requires(ext string) bool { return s.exts[ext] }
