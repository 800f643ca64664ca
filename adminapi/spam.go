package adminapi

import (
	"net/http"

	"github.com/mailhost/mailhost/mailstore"
)

// spamJSON is the Domain spam filter resource: the filter in force
// ("off", "junk" or "reject") and whether it is the server's default
// (the spam_filter setting) rather than the domain's own.
type spamJSON struct {
	Name    string `json:"name"`
	Filter  string `json:"filter"`
	Default bool   `json:"default"`
}

func (a *API) spamOf(d mailstore.Domain) spamJSON {
	if d.SpamFilter == "" {
		return spamJSON{Name: d.Name, Filter: a.spamDefault, Default: true}
	}
	return spamJSON{Name: d.Name, Filter: d.SpamFilter}
}

// getSpam answers GET /domains/{domain_name}/spam.
func (a *API) getSpam(w http.ResponseWriter, r *http.Request, c call) error {
	name, err := domainParam(r)
	if err != nil {
		return err
	}
	d, err := a.store.Domain(r.Context(), c.partnerID, name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a.spamOf(d))
	return nil
}

// setSpam answers PUT /domains/{domain_name}/spam, {"filter": "off" |
// "junk" | "reject"}, with the same object as the GET. A filter of null
// goes back to the server's default.
func (a *API) setSpam(w http.ResponseWriter, r *http.Request, c call) error {
	name, err := domainParam(r)
	if err != nil {
		return err
	}
	b, err := readBody(w, r)
	if err != nil {
		return err
	}
	filter := ""
	if _, present := b["filter"]; !present {
		return unprocessable("filter", "field required")
	}
	if b.has("filter") {
		if filter, err = b.str("filter"); err != nil {
			return err
		}
		if !mailstore.ValidSpamFilter(filter) {
			return unprocessable("filter", "must be off, junk or reject")
		}
	}
	d, err := a.store.SetSpamFilter(r.Context(), c.partnerID, name, filter)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a.spamOf(d))
	return nil
}
