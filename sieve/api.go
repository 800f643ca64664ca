package sieve

import (
	"context"
	"errors"
	"io"
	"time"
)

// Extensions lists every extension this package implements, as the
// capability strings a script names in require (and ManageSieve
// announces in SIEVE).
var Extensions = []string{
	"body",
	"comparator-i;ascii-numeric",
	"copy",
	"date",
	"encoded-character",
	"envelope",
	"ereject",
	"fileinto",
	"imap4flags",
	"index",
	"mailbox",
	"regex",
	"reject",
	"relational",
	"subaddress",
	"vacation",
	"variables",
}

// Supported tells whether ext is one of Extensions.
func Supported(ext string) bool {
	for _, e := range Extensions {
		if e == ext {
			return true
		}
	}
	return false
}

// Default limits; each can be changed in ParseOptions or RunOptions.
const (
	DefaultMaxScriptSize   = 64 << 10
	DefaultMaxSteps        = 50000
	DefaultMaxBodyBytes    = 1 << 20
	DefaultMaxVariableSize = 4 << 10
	DefaultMaxRedirects    = 5
	DefaultMaxRegexps      = 64
	DefaultMaxMatchInput   = 64 << 10
)

// ErrLimit is wrapped by the errors of Parse and Run that come from a
// limit: the script's size, the step budget, the redirects, the regular
// expressions compiled.
var ErrLimit = errors.New("sieve limit reached")

// ParseOptions are the options of Parse. The zero value offers every
// extension with the default limits.
type ParseOptions struct {
	// Extensions are the extensions scripts may require; nil offers
	// all of Extensions, and names not in Extensions are ignored. The comparators i;octet and i;ascii-casemap
	// are always there (RFC 5228 section 2.7.3).
	Extensions []string
	// MaxSize is the largest script accepted, in bytes; 0 means
	// DefaultMaxScriptSize.
	MaxSize int
	// MaxRegexps bounds the regular expressions of a script compiled
	// at parse time, and those compiled during one Run from patterns
	// holding variables; 0 means DefaultMaxRegexps.
	MaxRegexps int
}

// Message is the message a script runs against.
type Message interface {
	// Header returns the values of the header fields named name (case
	// insensitively), in message order, unfolded and without the field
	// name and colon, as they are in the message: encoded-words are
	// decoded by the interpreter (RFC 2047), not here.
	Header(name string) []string
	// Size is the message's size in octets, for the size test.
	Size() int64
	// Open returns the whole message, header and body, for the body
	// test; Run calls it at most once, only for scripts with a body
	// test, and reads at most the header and RunOptions.MaxBodyBytes
	// of body from it.
	Open() (io.ReadCloser, error)
}

// Envelope is the SMTP envelope of the delivery.
type Envelope struct {
	// From is the reverse-path, "" for the null sender.
	From string
	// To is the original recipient, with its subaddress detail (the
	// address the sender wrote, before aliases were resolved).
	To string
	// AuthUser is the authenticated sender's identity, if any
	// (envelope "auth").
	AuthUser string
}

// Mailboxes answers the mailbox extension's test (RFC 5490).
type Mailboxes interface {
	// MailboxExists tells whether the user has the folder and mail may
	// be delivered into it.
	MailboxExists(ctx context.Context, name string) (bool, error)
}

// RunOptions are the options of Run. The zero value has the default
// limits, "+" as the subaddress separator, UTC and the wall clock.
type RunOptions struct {
	// Mailboxes answers mailboxexists; nil answers that no folder
	// exists.
	Mailboxes Mailboxes
	// SubaddressSeparator splits user and detail (RFC 5233); "" means "+".
	SubaddressSeparator string
	// Now is the current time for currentdate; nil means time.Now.
	Now func() time.Time
	// Location is the zone of the date tests without :zone or
	// :originalzone (RFC 5260 section 4: the local zone); nil means UTC.
	Location *time.Location
	// MaxSteps bounds the commands, tests and comparisons evaluated;
	// 0 means DefaultMaxSteps.
	MaxSteps int
	// MaxBodyBytes bounds the octets of body the body test reads; 0
	// means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxVariableSize bounds a variable's value in bytes (longer values
	// are truncated, RFC 5229 section 4); 0 means DefaultMaxVariableSize.
	MaxVariableSize int
	// MaxRedirects bounds the distinct redirect actions; one more is an
	// error. 0 means DefaultMaxRedirects.
	MaxRedirects int
	// MaxMatchInput bounds the octets of one value a regular expression
	// or wildcard pattern is matched against (the rest is not looked
	// at); 0 means DefaultMaxMatchInput.
	MaxMatchInput int
}

// Action is one of the actions of a Result: Keep, FileInto, Redirect,
// Reject, Discard or Vacation.
type Action interface {
	action()
}

// Keep stores the message in the user's INBOX (explicit keep, or
// fileinto "INBOX"), with Flags (imap4flags, RFC 5232).
type Keep struct {
	Flags []string
}

// FileInto stores the message in Folder.
type FileInto struct {
	Folder string
	Flags  []string
	// Create asks for Folder to be created if it is missing (RFC 5490 :create).
	Create bool
	// Copy is set when every fileinto to this folder had :copy (RFC
	// 3894); it does not change what the caller does.
	Copy bool
}

// Redirect sends the message on to Address.
type Redirect struct {
	Address string
	Copy    bool
}

// Reject refuses the message with Reason: Extended is ereject (refuse in
// the SMTP conversation when possible), otherwise reject (RFC 5429).
type Reject struct {
	Reason   string
	Extended bool
}

// Discard records that the script discarded the message; it has no
// effect but cancelling the implicit keep.
type Discard struct{}

// Vacation asks the responder to answer the sender (RFC 5230). Whether
// to answer (once per sender and Handle per Days, not to lists or
// bounces: see ShouldRespond) is the responder's decision.
type Vacation struct {
	// Days is the interval between replies to the same sender: the
	// script's :days brought within 1 to 365 (RFC 5230 section 4.1
	// lets the site bound it), 7 by default.
	Days int
	// Subject is the reply's subject; "" means the responder's default
	// ("Auto: " and the original subject).
	Subject string
	// From is the reply's From, "" for the recipient's address.
	From string
	// Addresses are the user's other addresses (:addresses).
	Addresses []string
	// MIME says Reason is a MIME entity, header and body.
	MIME bool
	// Handle identifies the reply for the once-per-Days memory: the
	// script's :handle, or a digest of the subject, from, reason and
	// mime arguments (RFC 5230 section 4.2).
	Handle string
	Reason string
}

func (Keep) action()     {}
func (FileInto) action() {}
func (Redirect) action() {}
func (Reject) action()   {}
func (Discard) action()  {}
func (Vacation) action() {}

// Result is what a script decided.
type Result struct {
	// Actions are the actions in the order the script executed them,
	// with duplicates merged (RFC 5228 section 2.10.3): one Keep, one
	// FileInto per folder, one Redirect per address.
	Actions []Action
	// ImplicitKeep is true when no action cancelled the implicit keep
	// (RFC 5228 section 2.10.2): the caller stores the message in INBOX
	// with Flags.
	ImplicitKeep bool
	// Flags are the imap4flags internal variable's flags at the end,
	// for the implicit keep.
	Flags []string
	// Steps is the number of steps the run took.
	Steps int
}
