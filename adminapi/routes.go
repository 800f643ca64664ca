package adminapi

import (
	"net/http"

	"github.com/mailhost/mailhost/autoconfig"
)

// routes is the whole route table; New hands it the mux's HandleFunc. Collections are registered with their
// trailing slash; ServeHTTP maps "/users" to "/users/" and so on, so both
// name the same resource without a redirect. openapi_test.go checks that
// this table and openapi.json describe the same operations.
func (a *API) routes(handle func(pattern string, h func(http.ResponseWriter, *http.Request))) {
	handle("GET /healthz", a.open(a.health))
	handle("GET /openapi.json", a.open(a.openAPI))

	// Mail client set-up (package autoconfig), without a key.
	handle("GET "+autoconfig.PathThunderbird, a.open(a.clientConfig))
	handle("GET "+autoconfig.PathWellKnown, a.open(a.clientConfig))
	handle("POST "+autoconfig.PathAutodiscover, a.open(a.autodiscover))
	handle("POST "+autoconfig.PathAutodiscoverCaps, a.open(a.autodiscover))

	handle("GET /plans", a.authed(a.listPlans))

	handle("POST /domains/{$}", a.authed(a.createDomain))
	handle("GET /domains/{$}", a.authed(a.listDomains))
	handle("GET /domains/{domain_name}", a.authed(a.getDomain))
	handle("DELETE /domains/{domain_name}", a.authed(a.deleteDomain))
	handle("PUT /domains/{domain_name}/plan", a.authed(a.setPlan))
	handle("PUT /domains/{domain_name}/limits", a.authed(a.setLimits))
	handle("GET /domains/{domain_name}/usage", a.authed(a.domainUsage))
	handle("GET /domains/{domain_name}/dns", a.authed(a.domainDNS))
	handle("POST /domains/{domain_name}/verify", a.authed(a.verifyDomain))
	handle("POST /domains/{domain_name}/suspend", a.authed(a.suspend))
	handle("POST /domains/{domain_name}/resume", a.authed(a.resume))
	handle("GET /domains/{domain_name}/retention", a.authed(a.getRetention))
	handle("PUT /domains/{domain_name}/retention", a.authed(a.setRetention))
	handle("GET /domains/{domain_name}/spam", a.authed(a.getSpam))
	handle("PUT /domains/{domain_name}/spam", a.authed(a.setSpam))
	handle("GET /domains/{domain_name}/transfer", a.authed(a.getTransfer))
	handle("PUT /domains/{domain_name}/transfer", a.authed(a.setTransfer))

	handle("POST /users/{$}", a.authed(a.createMailbox))
	handle("GET /users/{$}", a.authed(a.listMailboxes))
	handle("PUT /users/{email}", a.authed(a.setPassword))
	handle("DELETE /users/{email}", a.authed(a.deleteMailbox))
	handle("GET /users/{email}/quota", a.authed(a.getQuota))
	handle("PUT /users/{email}/quota", a.authed(a.setQuota))
	handle("GET /users/{email}/usage", a.authed(a.mailboxUsage))
	handle("GET /users/{email}/mobileconfig", a.authed(a.mobileConfig))
	handle("GET /users/{email}/autoreply", a.authed(a.getAutoReply))
	handle("PUT /users/{email}/autoreply", a.authed(a.setAutoReply))
	handle("DELETE /users/{email}/autoreply", a.authed(a.deleteAutoReply))
	handle("GET /users/{email}/sieve", a.authed(a.getSieve))
	handle("PUT /users/{email}/sieve", a.authed(a.setSieve))
	handle("DELETE /users/{email}/sieve", a.authed(a.deleteSieve))

	handle("POST /aliases/{$}", a.authed(a.createAlias))
	handle("GET /aliases/{$}", a.authed(a.listAliases))
	handle("DELETE /aliases/{source}", a.authed(a.deleteAlias))

	handle("POST /webhooks/{$}", a.authed(a.createWebhook))
	handle("GET /webhooks/{$}", a.authed(a.listWebhooks))
	handle("DELETE /webhooks/{id}", a.authed(a.deleteWebhook))

	handle("GET /audit/{$}", a.authed(a.listAudit))
}
