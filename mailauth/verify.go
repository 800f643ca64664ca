package mailauth

// Domain ownership: the proof a partner publishes that it controls a
// domain's DNS before the domain gets mail from other partners' mailboxes.
// It lives here, beside the records of DNSRecords, because it is the same
// kind of work (a record mailhost asks the customer to publish, and its
// reading back through the `dns` resolver) and knows neither protocol nor
// store: adminapi's POST /domains/{d}/verify and the service's daily
// re-check both call it.

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"strings"
)

// Names of the ownership record: a TXT record VerifyPrefix+token at
// VerifyLabel+"."+domain.
const (
	VerifyLabel  = "_mailhost"
	VerifyPrefix = "mailhost-verify="
)

// NewVerifyToken makes a domain's ownership token: 128 random bits in
// lower-case base32 (26 characters, crypto/rand.Text), random rather than
// derived from the name so that a record left published for a domain
// deleted since proves nothing for whoever creates the name next.
func NewVerifyToken() string {
	return strings.ToLower(rand.Text())
}

// VerifyRecord is the TXT record that proves ownership of domain, for
// GET /domains/{d}/dns.
func VerifyRecord(domain, token string) Record {
	return Record{Type: "TXT", Name: VerifyLabel + "." + domain, Value: VerifyPrefix + token,
		Purpose: "Proof of ownership for mailhost: publish it and verify before pointing the MX record here (the MX record proves ownership only while no other partner claims the name)"}
}

// OwnershipResolver is the DNS CheckOwnership asks; *net.Resolver and
// every Resolver satisfy it. A missing name or record must be a
// *net.DNSError with IsNotFound, as for Resolver.
type OwnershipResolver interface {
	LookupTXT(ctx context.Context, name string) ([]string, error)
	LookupMX(ctx context.Context, name string) ([]*net.MX, error)
}

// Ownership is the outcome of CheckOwnership.
type Ownership struct {
	// Verified: the TXT record or the MX record proves ownership.
	Verified bool
	// By names the proof found: "txt" or "mx"; empty when not verified.
	By string
	// Expected and Found say, in words for the partner, which records
	// would prove ownership and what DNS holds instead (when verified by
	// the MX record, what it held at the TXT record's name, and the MX:
	// a caller that does not take the MX proof says so with them).
	Expected, Found string
}

// ErrDNSUnanswered is CheckOwnership's error when DNS gave no definite
// answer (timeout, SERVFAIL): ownership is then neither proven nor lost.
var ErrDNSUnanswered = errors.New("DNS gave no answer")

// CheckOwnership asks DNS whether domain is proven to be hosted here, as
// the issue "a domain is verified before it receives mail from outside its
// own tenant" asks: by a TXT record "mailhost-verify=<token>" at
// "_mailhost.<domain>" (a token that is empty proves nothing), or by an MX
// record of domain whose host is mxHost (this server's `hostname`: mail to
// the domain already comes here, so whoever runs its DNS chose this
// server). The TXT record is asked first and the MX only when it does not
// prove it.
//
// A name or record that does not exist is a definite "not proven"
// (Verified false, nil error). Any other failure of a query that could
// have proven it answers ErrDNSUnanswered, wrapped with the query: the
// caller keeps what it knew (a verified domain is not dropped for a DNS
// outage) and asks again later.
//
// r should not cache "not found": a partner who has just published the
// record and checks again expects it to be seen.
func CheckOwnership(ctx context.Context, r OwnershipResolver, domain, token, mxHost string) (Ownership, error) {
	txtName := VerifyLabel + "." + domain
	want := VerifyPrefix + token
	mxHost = strings.ToLower(strings.TrimSuffix(mxHost, "."))
	o := Ownership{Expected: fmt.Sprintf("a TXT record %q at %s, or an MX record of %s pointing to %s", want, txtName, domain, mxHost)}

	var found []string
	var unanswered error
	txt, err := r.LookupTXT(ctx, txtName)
	switch {
	case notFound(err):
		found = append(found, "no TXT record at "+txtName)
	case err != nil:
		unanswered = fmt.Errorf("TXT %s: %w: %v", txtName, ErrDNSUnanswered, err)
		found = append(found, "no answer for the TXT record at "+txtName)
	default:
		var quoted []string
		for _, v := range txt {
			if token != "" && strings.TrimSpace(v) == want {
				o.Verified, o.By = true, "txt"
				return o, nil
			}
			quoted = append(quoted, fmt.Sprintf("%q", v))
		}
		found = append(found, "TXT at "+txtName+": "+strings.Join(quoted, ", "))
	}

	mx, err := r.LookupMX(ctx, domain)
	switch {
	case notFound(err):
		found = append(found, "no MX record for "+domain)
	case err != nil:
		if unanswered == nil {
			unanswered = fmt.Errorf("MX %s: %w: %v", domain, ErrDNSUnanswered, err)
		}
		found = append(found, "no answer for the MX records of "+domain)
	default:
		var hosts []string
		for _, m := range mx {
			h := strings.ToLower(strings.TrimSuffix(m.Host, "."))
			if h != "" && h == mxHost {
				o.Verified, o.By = true, "mx"
				o.Found = strings.Join(append(found, "MX of "+domain+": "+h), "; ")
				return o, nil
			}
			if h == "" {
				h = `"." (null MX)`
			}
			hosts = append(hosts, h)
		}
		found = append(found, "MX of "+domain+": "+strings.Join(hosts, ", "))
	}
	o.Found = strings.Join(found, "; ")
	if unanswered != nil {
		return o, unanswered
	}
	return o, nil
}

// notFound reports whether err says the name or record does not exist.
func notFound(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de) && de.IsNotFound
}
