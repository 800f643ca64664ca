package policy

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mailhost/mailhost/mailstore"
)

// ReservedDomain reports whether name, a normalised domain name, is the
// server's own host name (the `hostname` setting) or a name under it: no
// partner may claim those, since mail to postmaster@ and
// mailer-daemon@ of the host name is the operator's, and a tenant
// holding them could forge the server's bounces. The host name's parent
// is a name like any other. An empty hostname reserves nothing.
func ReservedDomain(name, hostname string) bool {
	host := strings.ToLower(strings.TrimSuffix(hostname, "."))
	if host == "" {
		return false
	}
	return name == host || strings.HasSuffix(name, "."+host)
}

// NoPartner is the sender partner of mail that comes from this server
// but from no partner's mailbox or alias: the queue's own bounces, and
// entries of a domain deleted since they were queued. It matches no
// partner, so DeliverLocally takes it to verified domains only, never
// to one a partner named without proving it owns it.
const NoPartner int64 = -1

// DeliverLocally reports whether mail to a hosted domain is delivered
// into its mailboxes here, or routed as for a domain not hosted here (the
// queue, to the domain's MX or the relay): the rule against a partner
// taking over mail for a domain it does not own.
//
// senderPartnerID is the partner whose mailbox, alias or forward the mail
// comes from; 0 means none, mail from outside through the MX, which is
// always delivered: the MX accepts mail for every hosted domain, verified
// or not, since whoever points a domain's MX here chose this server.
// Otherwise the mail is delivered here when the domain is verified, or
// when it belongs to the sender's own partner, so that a partner's
// mailboxes mail each other before its DNS is set up. An unverified
// domain of another partner gets the mail only if its DNS sends it here.
// NoPartner, for mail no partner stands behind, gets verified domains
// only.
func DeliverLocally(senderPartnerID int64, to mailstore.Domain) bool {
	return senderPartnerID == 0 || to.Verified || to.PartnerID == senderPartnerID
}

// ErrSenderNotVerified: a mailbox of a domain that is not verified
// submitted mail for someone other than its own partner's mailboxes (see
// MayReach).
var ErrSenderNotVerified = errors.New("sender domain not verified")

// MayReach decides whether a submission of a user of partner
// senderPartnerID that sends as an address of domain from (its own
// mailbox's, or that of an alias it sends as) may go to the local
// mailboxes ms and to remote addresses (the partner contract,
// "Domain ownership": "Until a domain is verified, its mailboxes send
// only to mailboxes of their own partner"). A verified domain may reach
// anyone. An unverified one reaches its own partner's mailboxes only:
// another partner's mailbox, or any remote address (also one an alias
// expands to), is an error matching ErrSenderNotVerified. Otherwise a
// partner that names bigbank.example without owning it would send as
// bigbank.example to everyone else, signed by this server.
func MayReach(from mailstore.Domain, senderPartnerID int64, ms []mailstore.Mailbox, remote []string) error {
	if from.Verified {
		return nil
	}
	if len(remote) > 0 {
		return fmt.Errorf("%s to %s, not hosted here: %w", from.Name, remote[0], ErrSenderNotVerified)
	}
	for _, m := range ms {
		if m.PartnerID != senderPartnerID {
			return fmt.Errorf("%s to %s, another partner's mailbox: %w", from.Name, m.Email, ErrSenderNotVerified)
		}
	}
	return nil
}

// FromOutside reports whether mail from senderPartnerID (as
// DeliverLocally takes it) to mailbox to is checked as mail from outside
// is on the MX: an Authentication-Results field, the DMARC policy, the
// spam filter of to's domain. Mail from outside is (0, and NoPartner),
// and so is one partner's user writing to another partner's mailbox:
// partners do not vouch for each other, so a message between them
// carries what a message from elsewhere would. A partner's mail between
// its own mailboxes is not checked.
func FromOutside(senderPartnerID int64, to mailstore.Mailbox) bool {
	return senderPartnerID <= 0 || to.PartnerID != senderPartnerID
}
