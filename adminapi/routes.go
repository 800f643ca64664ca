package adminapi

import "net/http"

// routes is the whole route table. Collections are registered with their
// trailing slash; ServeHTTP maps "/users" to "/users/" and so on, so both
// name the same resource without a redirect. openapi_test.go checks that
// this table and openapi.json describe the same operations.
func (a *API) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /healthz", a.open(a.health))
	mux.HandleFunc("GET /openapi.json", a.open(a.openAPI))

	mux.HandleFunc("GET /plans", a.authed(a.listPlans))

	mux.HandleFunc("POST /domains/{$}", a.authed(a.createDomain))
	mux.HandleFunc("GET /domains/{$}", a.authed(a.listDomains))
	mux.HandleFunc("GET /domains/{domain_name}", a.authed(a.getDomain))
	mux.HandleFunc("DELETE /domains/{domain_name}", a.authed(a.deleteDomain))
	mux.HandleFunc("PUT /domains/{domain_name}/plan", a.authed(a.setPlan))
	mux.HandleFunc("PUT /domains/{domain_name}/limits", a.authed(a.setLimits))
	mux.HandleFunc("GET /domains/{domain_name}/usage", a.authed(a.domainUsage))
	mux.HandleFunc("POST /domains/{domain_name}/suspend", a.authed(a.suspend))
	mux.HandleFunc("POST /domains/{domain_name}/resume", a.authed(a.resume))
	mux.HandleFunc("GET /domains/{domain_name}/retention", a.authed(a.getRetention))
	mux.HandleFunc("PUT /domains/{domain_name}/retention", a.authed(a.setRetention))
	mux.HandleFunc("GET /domains/{domain_name}/transfer", a.authed(a.getTransfer))
	mux.HandleFunc("PUT /domains/{domain_name}/transfer", a.authed(a.setTransfer))

	mux.HandleFunc("POST /users/{$}", a.authed(a.createMailbox))
	mux.HandleFunc("GET /users/{$}", a.authed(a.listMailboxes))
	mux.HandleFunc("PUT /users/{email}", a.authed(a.setPassword))
	mux.HandleFunc("DELETE /users/{email}", a.authed(a.deleteMailbox))
	mux.HandleFunc("GET /users/{email}/quota", a.authed(a.getQuota))
	mux.HandleFunc("PUT /users/{email}/quota", a.authed(a.setQuota))
	mux.HandleFunc("GET /users/{email}/usage", a.authed(a.mailboxUsage))

	mux.HandleFunc("POST /aliases/{$}", a.authed(a.createAlias))
	mux.HandleFunc("GET /aliases/{$}", a.authed(a.listAliases))
	mux.HandleFunc("DELETE /aliases/{source}", a.authed(a.deleteAlias))
}
