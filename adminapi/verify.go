package adminapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/mailhost/mailhost/mailauth"
	"github.com/mailhost/mailhost/mailstore"
)

// verifyTimeout bounds the DNS queries of one verification: Go's resolver
// gives each query up to 5 s and a retry.
const verifyTimeout = 20 * time.Second

// verifyDomain answers POST /domains/{domain_name}/verify: it checks the
// domain's ownership proof in DNS now (mailauth.CheckOwnership) and
// answers 200 with the domain, verified; 409 with what was expected and
// what was found; 503 when DNS gave no definite answer, which changes
// nothing (a verified domain stays verified through a DNS outage). A
// verified domain whose proof is gone is unverified here as in the daily
// re-check.
//
// The TXT record names the partner (its own token); the MX record does
// not, so it proves the name only while no other partner claims it
// (SetVerifiedSole): a squatter's claim must not win the name when its
// real owner points the MX here. Both answer 409 when another partner
// has verified the name. Verifying ends the other partners' claims
// (mailstore.Control.SetVerified; docs/security.md).
func (a *API) verifyDomain(w http.ResponseWriter, r *http.Request, c call) error {
	name, err := domainParam(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	d, err := a.store.Domain(ctx, c.partnerID, name)
	if err != nil {
		return err
	}
	if d, err = a.verifyToken(ctx, c.partnerID, d); err != nil {
		return err
	}
	dctx, cancel := context.WithTimeout(ctx, verifyTimeout)
	o, err := mailauth.CheckOwnership(dctx, a.dns, d.Name, d.VerifyToken, a.hostname)
	cancel()
	if errors.Is(err, mailauth.ErrDNSUnanswered) {
		a.log.Warn("domain verification: no DNS answer", "domain", d.Name, "partner_id", c.partnerID, "err", err)
		return newError(http.StatusServiceUnavailable,
			"Domain not verified: DNS did not answer ("+o.Found+"); try again later")
	}
	if err != nil {
		return err
	}
	if !o.Verified {
		if d.Verified {
			if _, err := a.store.SetVerified(ctx, c.partnerID, d.Name, false, a.now()); err != nil {
				return err
			}
			a.log.Warn("domain verification lost", "domain", d.Name, "partner_id", c.partnerID, "found", o.Found)
		}
		return newError(http.StatusConflict, "Domain not verified: expected "+o.Expected+"; found "+o.Found)
	}
	var v mailstore.Domain
	if o.By == "mx" {
		v, err = a.store.SetVerifiedSole(ctx, c.partnerID, d.Name, a.now())
	} else {
		v, err = a.store.SetVerified(ctx, c.partnerID, d.Name, true, a.now())
	}
	switch {
	case errors.Is(err, mailstore.ErrDomainShared):
		return newError(http.StatusConflict, "Domain not verified: another partner also holds "+d.Name+
			", so an MX record pointing to "+a.hostname+" does not prove it is yours; expected a TXT record \""+
			mailauth.VerifyPrefix+d.VerifyToken+"\" at "+mailauth.VerifyLabel+"."+d.Name+"; found "+o.Found)
	case errors.Is(err, mailstore.ErrDomainOwned):
		return newError(http.StatusConflict, "Domain not verified: another partner has verified "+d.Name)
	case err != nil:
		return err
	}
	d = v
	a.log.Info("domain verified", "domain", d.Name, "partner_id", c.partnerID, "by", o.By)
	writeJSON(w, http.StatusOK, toDomain(d))
	return nil
}
