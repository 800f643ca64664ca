package policy

import (
	"context"
	"errors"
	"fmt"

	"github.com/mailhost/mailhost/mailstore"
)

// ErrNotOwner: a submitting user named a sender address that is not its
// own (see MaySendAs).
var ErrNotOwner = errors.New("sender address not owned by the user")

// MaySendAs decides whether the user of mailbox user may send as addr,
// both in the envelope (MAIL FROM) and in the From: header field
// (the partner contract, docs/mail.md: "only as its own address or as an
// alias source that delivers to it"). It answers nil when addr is
//
//   - the user's own address, or
//   - the source of an alias of its own ("info@a.test", not the catch-all
//     "@a.test") whose destination resolves (see Resolve, chains included)
//     to the user's mailbox, among others or alone.
//
// An address taken only by a domain's catch-all is not the catch-all
// owner's to send as: the catch-all receives what nobody claims, it does
// not give its owner every unclaimed name of the domain (ceo@, billing@,
// addresses a partner means to create later), which would let one user
// impersonate the whole domain.
//
// Anything else is an error matching ErrNotOwner; a failed lookup is
// returned as it is, for the caller to answer as temporary. addr must be
// normalised (see NormalizeAddress).
func MaySendAs(ctx context.Context, dir Directory, user mailstore.Mailbox, addr string) error {
	if addr == user.Email {
		return nil
	}
	if _, err := dir.AliasBySource(ctx, addr); err != nil {
		if errors.Is(err, mailstore.ErrNotFound) {
			return fmt.Errorf("%s as %s: not an alias: %w", user.Email, addr, ErrNotOwner)
		}
		return fmt.Errorf("%s as %s: %w", user.Email, addr, err)
	}
	res, err := Resolve(ctx, dir, addr, user.PartnerID)
	switch {
	case isResolutionRefusal(err):
		return fmt.Errorf("%s as %s: %w: %w", user.Email, addr, ErrNotOwner, err)
	case err != nil:
		return fmt.Errorf("%s as %s: %w", user.Email, addr, err)
	}
	for _, m := range res.Mailboxes {
		if m.ID == user.ID {
			return nil
		}
	}
	return fmt.Errorf("%s as %s: the alias delivers elsewhere: %w", user.Email, addr, ErrNotOwner)
}

// isResolutionRefusal reports whether err is Resolve's answer about the
// address rather than a failed lookup.
func isResolutionRefusal(err error) bool {
	for _, e := range []error{ErrNotHosted, ErrUnknownUser, ErrAliasLoop, ErrAliasTooDeep, ErrBadAddress} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
