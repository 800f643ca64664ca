package adminapi

import (
	"net/http"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/policy"
)

// aliasJSON is the Alias resource.
type aliasJSON struct {
	ID          int64  `json:"id"`
	DomainID    int64  `json:"domain_id"`
	Source      string `json:"source"`
	Destination string `json:"destination"`
	CreatedAt   string `json:"created_at"`
}

func toAlias(al mailstore.Alias) aliasJSON {
	return aliasJSON{ID: al.ID, DomainID: al.DomainID, Source: al.Source, Destination: al.Destination, CreatedAt: timestamp(al.CreatedAt)}
}

// createAlias answers POST /aliases/. The source is local@domain_name or
// "@domain_name" (catch-all); the destination any valid address but the
// source.
func (a *API) createAlias(w http.ResponseWriter, r *http.Request, c call) error {
	b, err := readBody(w, r)
	if err != nil {
		return err
	}
	rawDomain, err := b.str("domain_name")
	if err != nil {
		return err
	}
	rawSource, err := b.str("source")
	if err != nil {
		return err
	}
	// Read before the rest is checked, so that the audit names the
	// source whichever check refuses the create.
	source, sourceErr := policy.NormalizeAliasSource(rawSource)
	if sourceErr == nil {
		setObject(r, source)
	}
	rawDest, err := b.str("destination")
	if err != nil {
		return err
	}
	domain, err := policy.NormalizeDomain(rawDomain)
	if err != nil {
		return errDomainNotFound
	}
	if sourceErr != nil {
		return unprocessable("source", "invalid address (local@domain or @domain)")
	}
	dest, err := policy.NormalizeAddress(rawDest)
	if err != nil {
		return unprocessable("destination", "invalid email address")
	}
	// An unknown domain_name is 404 whatever the source (the contract's
	// condition names domain_name alone); the store checks it again in
	// its transaction.
	if _, err := a.store.Domain(r.Context(), c.partnerID, domain); err != nil {
		return err
	}
	if policy.DomainOf(source) != domain {
		return unprocessable("source", "must be an address of domain_name")
	}
	if policy.IsSRS(source) {
		return unprocessable("source", errSRSLocalPart)
	}
	if dest == source {
		return unprocessable("destination", "must differ from source")
	}
	al, err := a.store.CreateAlias(r.Context(), c.partnerID, domain, source, dest, a.now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, toAlias(al))
	return nil
}

// listAliases answers GET /aliases/[?domain_id=].
func (a *API) listAliases(w http.ResponseWriter, r *http.Request, c call) error {
	domainID, err := domainIDQuery(r)
	if err != nil {
		return err
	}
	lim, off, err := page(r)
	if err != nil {
		return err
	}
	as, total, err := fetchList(func(p mailstore.Page) ([]mailstore.Alias, int, error) {
		return a.store.Aliases(r.Context(), c.partnerID, domainID, p)
	}, func(al mailstore.Alias) int64 { return al.ID }, mailstore.Page{Limit: lim, Offset: off})
	if err != nil {
		return err
	}
	out := make([]aliasJSON, 0, len(as))
	for _, al := range as {
		out = append(out, toAlias(al))
	}
	writeList(w, total, out)
	return nil
}

// deleteAlias answers DELETE /aliases/{source}; the source may come raw
// ("@example.com") or percent-encoded ("%40example.com"): the mux decodes
// the path segment either way.
func (a *API) deleteAlias(w http.ResponseWriter, r *http.Request, c call) error {
	source, err := policy.NormalizeAliasSource(r.PathValue("source"))
	if err != nil {
		return errAliasNotFound
	}
	if err := a.store.DeleteAlias(r.Context(), c.partnerID, source); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, message("Alias deleted"))
	return nil
}
