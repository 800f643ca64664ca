package adminapi

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// auditJSON is an audit entry as GET /audit/ shows it.
type auditJSON struct {
	ID        int64  `json:"id"`
	Time      string `json:"time"`
	PartnerID int64  `json:"partner_id"`
	KeyPrefix string `json:"key_prefix"`
	Method    string `json:"method"`
	Route     string `json:"route"`
	Object    string `json:"object"`
	Status    int    `json:"status"`
}

// listAudit answers GET /audit/: the partner's entries, newest first.
func (a *API) listAudit(w http.ResponseWriter, r *http.Request, c call) error {
	lim, off, err := page(r)
	if err != nil {
		return err
	}
	es, total, err := a.store.AuditEntries(r.Context(), c.partnerID, mailstore.Page{Limit: lim, Offset: off})
	if err != nil {
		return err
	}
	out := make([]auditJSON, 0, len(es))
	for _, e := range es {
		out = append(out, auditJSON{
			ID: e.ID, Time: timestamp(e.Time), PartnerID: e.PartnerID, KeyPrefix: e.KeyPrefix,
			Method: e.Method, Route: e.Route, Object: e.Object, Status: e.Status,
		})
	}
	writeList(w, total, out)
	return nil
}

// setObject names what a request wrote, for its audit entry, where the
// path does not (a create names it in its body).
func setObject(r *http.Request, object string) {
	state(r.Context()).object = object
}

// wildcards are the path wildcards of a route pattern.
var wildcards = regexp.MustCompile(`\{([a-z_]+)\}`)

// noteObject records, for the audit, the values of r's path wildcards
// (the domain, address, alias source or id the route names), unless the
// handler named the object itself.
func noteObject(r *http.Request, st *reqState) {
	if st.object != "" {
		return
	}
	var vals []string
	for _, m := range wildcards.FindAllStringSubmatch(r.Pattern, -1) {
		if v := r.PathValue(m[1]); v != "" {
			vals = append(vals, v)
		}
	}
	st.object = strings.Join(vals, " ")
}

// audit records a write (POST, PUT, DELETE) of an authenticated partner
// once it is answered, whatever its status, except 429: a client held
// back by the rate limit would otherwise write as fast as it is refused.
// A failure to record is logged, not answered: the write is done.
func (a *API) audit(r *http.Request, st *reqState, status int) {
	if st.partnerID == 0 || r.Method == http.MethodGet || r.Method == http.MethodHead || status == http.StatusTooManyRequests {
		return
	}
	route := st.pattern
	if _, p, ok := strings.Cut(route, " "); ok {
		route = p
	}
	route = strings.TrimSuffix(route, "{$}")
	e := mailstore.AuditEntry{
		Time: a.now(), PartnerID: st.partnerID, KeyPrefix: st.keyPrefix,
		Method: r.Method, Route: route, Object: st.object, Status: status,
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Second)
	defer cancel()
	if _, err := a.store.AddAudit(ctx, e); err != nil {
		a.log.Error("audit entry", "method", r.Method, "route", route, "partner_id", st.partnerID, "err", err)
	}
}
