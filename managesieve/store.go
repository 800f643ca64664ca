package managesieve

import (
	"context"
	"errors"
	"net/netip"
)

// Errors a ScriptStore returns, each answered with its response code
// (RFC 5804 section 1.3).
var (
	// ErrNotFound: no script of that name (NONEXISTENT).
	ErrNotFound = errors.New("no such script")
	// ErrExists: a script of the new name exists (ALREADYEXISTS).
	ErrExists = errors.New("script already exists")
	// ErrActive: the active script cannot be deleted (ACTIVE).
	ErrActive = errors.New("script is active")
	// ErrQuotaSize: the script is larger than the user may store
	// (QUOTA/MAXSIZE).
	ErrQuotaSize = errors.New("script too large")
	// ErrQuotaScripts: the user has as many scripts as allowed
	// (QUOTA/MAXSCRIPTS).
	ErrQuotaScripts = errors.New("too many scripts")
	// ErrBadName: a name the store does not take (stricter than RFC
	// 5804 section 1.6, which the server checks).
	ErrBadName = errors.New("bad script name")
	// ErrAuth: wrong name or password.
	ErrAuth = errors.New("authentication failed")
	// ErrThrottled: too many failed logins lately; the login is refused
	// without a password check (TRYLATER) and counts as a failure.
	ErrThrottled = errors.New("too many failed logins")
)

// Script is a script's name and whether it is the active one.
type Script struct {
	Name   string
	Active bool
}

// ScriptStore keeps each user's scripts; user is what Authenticator
// returned. At most one script of a user is active.
type ScriptStore interface {
	ListScripts(ctx context.Context, user string) ([]Script, error)
	// GetScript returns the content, or ErrNotFound.
	GetScript(ctx context.Context, user, name string) ([]byte, error)
	// PutScript creates or replaces a script (the server has checked
	// it); an active script stays active.
	PutScript(ctx context.Context, user, name string, content []byte) error
	// DeleteScript removes a script: ErrNotFound, or ErrActive for the
	// active one.
	DeleteScript(ctx context.Context, user, name string) error
	// RenameScript renames, keeping the active mark: ErrNotFound or
	// ErrExists.
	RenameScript(ctx context.Context, user, oldName, newName string) error
	// SetActive makes name the active script, "" deactivating all;
	// ErrNotFound if there is no such script.
	SetActive(ctx context.Context, user, name string) error
	// HaveSpace tells whether a script of size bytes may be stored as
	// name: nil, ErrQuotaSize or ErrQuotaScripts.
	HaveSpace(ctx context.Context, user, name string, size int64) error
}

// Authenticator checks a SASL PLAIN login (RFC 4616).
type Authenticator interface {
	// Authenticate returns the user the scripts belong to, or ErrAuth,
	// or ErrThrottled (another error is answered as a temporary
	// failure). ip is the client's address, for throttling.
	Authenticate(ctx context.Context, username, password string, ip netip.Addr) (user string, err error)
}
