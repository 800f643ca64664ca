package delivery

import (
	"context"
	"errors"
	"fmt"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/policy"
)

// isSRS reports whether a normalised address has an SRS local part
// (policy.IsSRS, which the API also refuses for mailboxes and aliases).
func isSRS(addr string) bool { return policy.IsSRS(addr) }

// bounce routes an MX recipient in SRS form at a hosted domain: mail to
// it is a bounce (or another notification) of a message this server
// forwarded, for the original sender. It answers handled false when
// addr's domain is not hosted, for Resolve to refuse.
//
//   - Mail with a non-null reverse path is ErrSRSNotBounce, before the
//     address is checked: only bounces and other notifications come back
//     to an SRS address (see below), and anything else would make this
//     server relay third parties' mail to whoever the address names, for
//     anyone who forged or harvested one. Checking the sender first also
//     keeps the hash from being guessed with ordinary mail.
//   - A forged, malformed or expired address is ErrBadSRS: it names
//     nobody (even where a catch-all would take it).
//   - An original sender in a hosted domain is a recipient like any other
//     (see accept), without a second SRS round, if the partner of the
//     alias's domain may deliver to it (policy.DeliverLocally); in a
//     domain another partner named and has not verified, it is queued
//     as below.
//   - Any other is queued as a bounce with the null envelope sender it
//     came with. Notifications are sent with a null reverse path (RFC
//     5321 section 4.5.5, RFC 3464, RFC 3834 section 3.3), so that nothing
//     bounces back a bounce. postsrsd passes on mail of any sender; here
//     only the null one is taken.
//
// raw is the address as the client wrote it, reversed as it is so that
// the original sender's local part keeps its case.
func (t *Transaction) bounce(ctx context.Context, addr, raw string) (p plan, handled bool, err error) {
	st := t.a.cfg.Store
	via, err := st.DomainByName(ctx, policy.DomainOf(addr))
	if err != nil {
		if errors.Is(err, mailstore.ErrNotFound) {
			return plan{}, false, nil
		}
		return plan{}, true, fmt.Errorf("%s: %w", addr, err)
	}
	if t.from != "" {
		return plan{}, true, fmt.Errorf("%s from %q: %w", addr, t.from, ErrSRSNotBounce)
	}
	orig, err := t.a.cfg.SRS.Reverse(raw)
	if err != nil {
		return plan{}, true, fmt.Errorf("%s: %w: %w", addr, ErrBadSRS, err)
	}
	norm, err := policy.NormalizeAddress(orig)
	if err != nil {
		return plan{}, true, fmt.Errorf("%s reverses to %q: %w", addr, orig, ErrBadSRS)
	}
	// The bounce goes back on behalf of the domain whose alias made the
	// SRS address: into the original sender's mailboxes here only where
	// its partner may deliver (policy.DeliverLocally), else out, as to
	// any domain not hosted here.
	d, err := st.DomainByName(ctx, policy.DomainOf(norm))
	switch {
	case err == nil && policy.DeliverLocally(via.PartnerID, d):
		p, err := t.accept(ctx, norm, "", via.PartnerID)
		return p, true, err
	case err != nil && !errors.Is(err, mailstore.ErrNotFound):
		return plan{}, true, fmt.Errorf("%s reverses to %s: %w", addr, norm, err)
	}
	// The remote address as it was sent: its local part's case is the
	// remote server's business (RFC 5321 section 2.4). It goes out on
	// behalf of the domain whose alias made the SRS address: counted in
	// its transfer, held at its cap and while it is suspended, as its
	// forwards are, so that the SRS addresses a customer's forward hands
	// out are no free way out for mail.
	return plan{relays: []queued{{mailstore.KindBounce, via.ID, "", orig}}}, true, nil
}
