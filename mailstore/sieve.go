package mailstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// SieveScript is one of a mailbox's Sieve scripts (RFC 5228), named as
// ManageSieve (RFC 5804) names them. At most one of a mailbox's scripts is
// active: the one delivery runs.
type SieveScript struct {
	MailboxID int64
	Name      string
	Script    string
	Active    bool
	UpdatedAt time.Time
	// Version is the active script's stamp, as ActiveSieveScript and
	// MailboxByEmail (Mailbox.SieveVersion) read it; other reads leave
	// it 0. Every write that changes which script is active or the
	// active script's text gives a new one, never used before in the
	// store.
	Version int64 `json:"-"`
}

// The limits on a mailbox's scripts, the same on every store: what
// ManageSieve's HAVESPACE and PUTSCRIPT answer and the partner API
// refuses beyond.
const (
	// MaxSieveScripts is the most scripts a mailbox keeps.
	MaxSieveScripts = 20
	// MaxSieveScriptBytes is the largest script, in bytes.
	MaxSieveScriptBytes = 64 << 10
	// MaxSieveNameBytes is the longest script name, in bytes of UTF-8.
	MaxSieveNameBytes = 128
)

// Errors of SieveScripts.
var (
	// ErrSieveLimit: the script is over MaxSieveScriptBytes, or a new one
	// would be the mailbox's MaxSieveScripts+1st.
	ErrSieveLimit = errors.New("sieve script limit reached")
	// ErrSieveActive: the active script cannot be deleted (RFC 5804
	// section 2.10: deactivate it first).
	ErrSieveActive = errors.New("sieve script is active")
	// ErrSieveExists: a rename to a name the mailbox already has.
	ErrSieveExists = errors.New("sieve script already exists")
)

// ValidSieveName reports whether name may name a script: 1 to
// MaxSieveNameBytes bytes of UTF-8 without control characters (RFC 5804
// section 1.6 forbids CR, LF, NUL and the other controls), and not
// starting or ending with white space, which would make two names look
// alike.
func ValidSieveName(name string) bool {
	if name == "" || len(name) > MaxSieveNameBytes || !utf8.ValidString(name) || strings.TrimSpace(name) != name {
		return false
	}
	for _, r := range name {
		if unicode.IsControl(r) || r == 0x2028 || r == 0x2029 {
			return false
		}
	}
	return true
}

// CheckSieveScript is the rule PutSieveScript keeps on both stores before
// writing: a valid name, a script within the size limit.
func CheckSieveScript(s SieveScript) error {
	if !ValidSieveName(s.Name) {
		return fmt.Errorf("sieve script name %q: %w", s.Name, ErrInvalidArgument)
	}
	if len(s.Script) > MaxSieveScriptBytes {
		return fmt.Errorf("sieve script %q: %d bytes, over %d: %w", s.Name, len(s.Script), MaxSieveScriptBytes, ErrSieveLimit)
	}
	return nil
}

// SieveScripts keeps the mailboxes' Sieve scripts. A mailbox's scripts
// go with the mailbox when it is deleted. Scripts are stored as given:
// whether one parses is the caller's concern (package sieve), so that a
// store never depends on the language.
type SieveScripts interface {
	// SieveScripts answers the mailbox's scripts by name (byte order),
	// with their text.
	SieveScripts(ctx context.Context, mailboxID int64) ([]SieveScript, error)
	// SieveScript answers one script, or ErrNotFound.
	SieveScript(ctx context.Context, mailboxID int64, name string) (SieveScript, error)
	// ActiveSieveScript answers the mailbox's active script, with its
	// Version, or ErrNotFound when none is active.
	ActiveSieveScript(ctx context.Context, mailboxID int64) (SieveScript, error)
	// PutSieveScript stores s, replacing the mailbox's script of that
	// name (which stays active if it was); when s.Active, s becomes the
	// mailbox's one active script in the same transaction. UpdatedAt is
	// stored in UTC to the second. ErrMailboxNotFound when the mailbox
	// does not exist; ErrInvalidArgument for a name ValidSieveName
	// refuses; ErrSieveLimit over MaxSieveScriptBytes or, for a new name,
	// MaxSieveScripts.
	PutSieveScript(ctx context.Context, s SieveScript) error
	// DeleteSieveScript removes one script: ErrNotFound when there is
	// none of that name, ErrSieveActive when it is the active one.
	DeleteSieveScript(ctx context.Context, mailboxID int64, name string) error
	// RenameSieveScript renames a script, which stays active if it was:
	// ErrNotFound, ErrSieveExists when newName is taken,
	// ErrInvalidArgument for a name ValidSieveName refuses.
	RenameSieveScript(ctx context.Context, mailboxID int64, oldName, newName string) error
	// SetActiveSieveScript makes the named script the active one, or,
	// with "", leaves none active (RFC 5804 section 2.8). ErrNotFound
	// for a name the mailbox does not have.
	SetActiveSieveScript(ctx context.Context, mailboxID int64, name string) error
}
