package adminapi

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/mailhost/mailhost/mailauth"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/policy"
)

// dnsJSON is what GET /domains/{domain_name}/dns answers.
type dnsJSON struct {
	Name    string            `json:"name"`
	Records []mailauth.Record `json:"records"`
	// Warnings say why the records would not work as given, such as a
	// server host name that is not fully qualified; absent when none.
	Warnings []string `json:"warnings,omitempty"`
}

// domainDNS answers GET /domains/{domain_name}/dns: the records the
// customer publishes for the domain, the ownership proof last. A domain made before DKIM keys
// existed gets its keys here, once (EnsureDKIMKeys keeps the first ones
// stored when two requests race).
func (a *API) domainDNS(w http.ResponseWriter, r *http.Request, c call) error {
	name, err := domainParam(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	d, err := a.store.Domain(ctx, c.partnerID, name)
	if err != nil {
		return err
	}
	keys, err := a.store.DKIMKeys(ctx, d.ID)
	if err != nil {
		return err
	}
	if len(keys) == 0 {
		gen, err := a.dkimKeys(ctx, a.now())
		if err != nil {
			return err
		}
		if keys, err = a.store.EnsureDKIMKeys(ctx, d.ID, gen); err != nil {
			return err
		}
	}
	if d, err = a.verifyToken(ctx, c.partnerID, d); err != nil {
		return err
	}
	records := append(mailauth.DNSRecords(d.Name, a.hostname, keys), mailauth.VerifyRecord(d.Name, d.VerifyToken))
	out := dnsJSON{Name: d.Name, Records: records}
	if p := policy.HostnameProblem(a.hostname); p != "" {
		out.Warnings = append(out.Warnings, p+": the MX, SPF and SRV records name it; the operator sets the server's public name in the hostname setting")
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// verifyToken answers d with its ownership token: a domain made before
// verification existed gets one here, once (EnsureVerifyToken keeps the
// first one stored when two requests race).
func (a *API) verifyToken(ctx context.Context, partnerID int64, d mailstore.Domain) (mailstore.Domain, error) {
	if d.VerifyToken != "" {
		return d, nil
	}
	return a.store.EnsureVerifyToken(ctx, partnerID, d.Name, mailauth.NewVerifyToken())
}

// dkimKeys generates a domain's DKIM keys, at most len(a.keySlots) at a
// time.
func (a *API) dkimKeys(ctx context.Context, now time.Time) ([]mailstore.DKIMKey, error) {
	select {
	case a.keySlots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-a.keySlots }()
	keys, err := a.genKeys(now)
	if err != nil {
		return nil, fmt.Errorf("generate DKIM keys: %w", err)
	}
	return keys, nil
}
