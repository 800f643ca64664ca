package adminapi

import (
	_ "embed"
	"net/http"
)

// planJSON is a plan on offer with its three limits.
type planJSON struct {
	Name              string `json:"name"`
	QuotaMB           int64  `json:"quota_mb"`
	RetentionDays     int64  `json:"retention_days"`
	TransferMonthlyMB int64  `json:"transfer_monthly_mb"`
}

// listPlans answers GET /plans: the plans on offer, the defaults first.
func (a *API) listPlans(w http.ResponseWriter, r *http.Request, c call) error {
	lim, off, err := page(r)
	if err != nil {
		return err
	}
	all := a.plans.All()
	out := make([]planJSON, 0, len(all))
	for i, p := range all {
		if i < off || (lim > 0 && len(out) == lim) {
			continue
		}
		out = append(out, planJSON{p.Name, p.QuotaMB, p.RetentionDays, p.TransferMonthlyMB})
	}
	writeList(w, len(all), out)
	return nil
}

// health answers GET /healthz.
func (a *API) health(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

//go:embed openapi.json
var openAPIDoc []byte

// openAPI answers GET /openapi.json with the embedded document.
func (a *API) openAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	w.Write(openAPIDoc)
	return nil
}
