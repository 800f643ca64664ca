package policy

import (
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
// taking over mail for a domain it does not own (issue 11).
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
