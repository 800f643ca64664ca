package adminapi

import (
	"context"
	"testing"

	"github.com/mailhost/mailhost/mailstore"
)

// TestPartnerDomainLimit: once the operator limits a partner's domains
// (mailhost partner limits), one more domain answers 403 and nothing is
// made; another partner is not affected; lifting the limit lets it through.
func TestPartnerDomainLimit(t *testing.T) {
	e := newEnv(t)
	e.seed()
	one := int64(1)
	if _, err := e.store.SetPartnerLimits(context.Background(), e.idA, mailstore.PartnerLimits{MaxDomains: &one}); err != nil {
		t.Fatal(err)
	}
	r := e.a("POST", "/domains/", `{"name":"second.example"}`)
	must(t, "second domain over the limit", r, 403)
	if got := r.detail(); got != "Domain quota exceeded for this partner" {
		t.Errorf("detail = %q", got)
	}
	must(t, "not made", e.a("GET", "/domains/second.example", ""), 404)
	must(t, "other partner unaffected", e.b("POST", "/domains/", `{"name":"gamma.example"}`), 201)
	zero := int64(0)
	if _, err := e.store.SetPartnerLimits(context.Background(), e.idA, mailstore.PartnerLimits{MaxDomains: &zero}); err != nil {
		t.Fatal(err)
	}
	must(t, "no limit", e.a("POST", "/domains/", `{"name":"second.example"}`), 201)
}
