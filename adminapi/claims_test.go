package adminapi

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mailhost/mailhost/internal/dnstest"
	"github.com/mailhost/mailhost/mailstore"
)

// TestDomainClaims: a name another partner holds unverified does not
// block a create; the MX record does not verify a name two partners
// hold, the TXT record does; the first verification ends the other
// claim (claim_ended_at, an audit entry, a webhook event), which its
// partner still reads; the name is then taken for every other partner.
func TestDomainClaims(t *testing.T) {
	dns := dnstest.Start(t)
	e := newEnv(t, func(c *Config) { c.DNS = dns.Resolver() })
	ctx := context.Background()
	const name = "victimcorp.example"

	// beta, the squatter, claims first; alpha, the owner's provider, later.
	must(t, "beta create", e.b("POST", "/domains/", `{"name":"`+name+`"}`), 201)
	must(t, "alpha create", e.a("POST", "/domains/", `{"name":"`+name+`"}`), 201)
	for _, who := range []struct {
		what string
		call func(method, path, body string) resp
	}{{"alpha", e.a}, {"beta", e.b}} {
		r := must(t, who.what+" create again", who.call("POST", "/domains/", `{"name":"`+name+`"}`), 400)
		if r.detail() != "Domain already exists" {
			t.Errorf("%s create again detail = %q, want Domain already exists", who.what, r.detail())
		}
		must(t, who.what+" mailbox", who.call("POST", "/users/", `{"domain_name":"`+name+`","email":"info@`+name+`","password":"password123"}`), 201)
		if _, ok := must(t, who.what+" GET domain", who.call("GET", "/domains/"+name, ""), 200).obj()["claim_ended_at"]; ok {
			t.Errorf("%s's standing claim shows claim_ended_at", who.what)
		}
	}
	must(t, "beta webhook", e.b("POST", "/webhooks/", `{"url":"https://hooks.example/b","events":["domain.claim_ended"]}`), 201)

	// The owner points the MX here: with two claims, it proves nothing.
	dns.SetMX(name, "mx.mailhost.test")
	for _, who := range []struct {
		what string
		call func(method, path, body string) resp
	}{{"beta", e.b}, {"alpha", e.a}} {
		r := must(t, who.what+" verify by MX", who.call("POST", "/domains/"+name+"/verify", ""), 409)
		for _, want := range []string{"another partner also holds " + name, "an MX record pointing to mx.mailhost.test does not prove it is yours",
			`expected a TXT record "mailhost-verify=`, "at _mailhost." + name, "found no TXT record at _mailhost." + name, "MX of " + name + ": mx.mailhost.test"} {
			if !strings.Contains(r.detail(), want) {
				t.Errorf("%s verify by MX detail = %q, want it to say %q", who.what, r.detail(), want)
			}
		}
		if must(t, "GET", who.call("GET", "/domains/"+name, ""), 200).obj()["verified"] == true {
			t.Errorf("%s's claim verified by the MX record while another partner holds the name", who.what)
		}
	}

	// alpha's TXT record proves it is alpha's.
	txtName, value := verifyRecord(t, e, name)
	dns.SetTXT(txtName, value)
	if o := must(t, "alpha verify by TXT", e.a("POST", "/domains/"+name+"/verify", ""), 200).obj(); o["verified"] != true {
		t.Fatalf("alpha verify = %v, want verified", o)
	}
	r := must(t, "beta GET domain", e.b("GET", "/domains/"+name, ""), 200).obj()
	if r["claim_ended_at"] != "2026-11-22T09:30:00" || r["verified"] != false {
		t.Errorf("beta's claim after alpha's verification = %v, want claim_ended_at 2026-11-22T09:30:00, unverified", r)
	}
	if _, ok := must(t, "alpha GET domain", e.a("GET", "/domains/"+name, ""), 200).obj()["claim_ended_at"]; ok {
		t.Errorf("alpha's verified claim shows claim_ended_at")
	}
	// beta still reads its mailbox and may delete it; it verifies no more.
	must(t, "beta GET mailbox", e.b("GET", "/users/info@"+name+"/usage", ""), 200)
	if d := must(t, "beta verify", e.b("POST", "/domains/"+name+"/verify", ""), 409).detail(); d != "Domain not verified: another partner has verified "+name {
		t.Errorf("beta verify after alpha's detail = %q", d)
	}

	// beta's audit log says what happened to its claim, and who did it:
	// the server, for no key of beta's.
	var server []map[string]any
	for _, x := range must(t, "beta GET audit", e.b("GET", "/audit/", ""), 200).list() {
		if x["method"] == "SERVER" {
			server = append(server, x)
		}
	}
	if len(server) != 1 || server[0]["route"] != "domain claim ended" || server[0]["object"] != name ||
		server[0]["key_prefix"] != "" || server[0]["status"] != float64(200) || server[0]["time"] != "2026-11-22T09:30:00" {
		t.Errorf("beta's SERVER audit entries = %v, want one: domain claim ended %s", server, name)
	}
	for _, x := range must(t, "alpha GET audit", e.a("GET", "/audit/", ""), 200).list() {
		if x["method"] == "SERVER" {
			t.Errorf("alpha's audit log has %v, want beta's only", x)
		}
	}
	ds, err := e.store.ClaimWebhookDeliveries(ctx, testNow.Add(time.Hour), time.Minute, 10)
	if err != nil || len(ds) != 1 || ds[0].Event.Type != mailstore.EventDomainClaimEnded || ds[0].Event.PartnerID != e.idB ||
		!strings.Contains(string(ds[0].Event.Data), `"domain":"`+name+`"`) {
		t.Errorf("webhook deliveries = %+v, %v; want beta's one %s for %s", ds, err, mailstore.EventDomainClaimEnded, name)
	}

	// Verified by alpha, the name is taken for everyone else.
	_, keyC := addPartner(t, e.store, "gamma")
	r2 := must(t, "gamma create", e.raw("POST", "/domains/", keyC, `{"name":"`+name+`"}`), 400)
	if r2.detail() != "Domain already exists" {
		t.Errorf("gamma create detail = %q, want Domain already exists", r2.detail())
	}
	must(t, "beta delete mailbox", e.b("DELETE", "/users/info@"+name, ""), 200)
	must(t, "alpha GET mailbox", e.a("GET", "/users/info@"+name+"/usage", ""), 200)
	must(t, "beta delete domain", e.b("DELETE", "/domains/"+name, ""), 200)
	must(t, "alpha GET domain", e.a("GET", "/domains/"+name, ""), 200)
}

// TestDomainClaimAloneByMX: a partner alone on a name verifies it by
// the MX record.
func TestDomainClaimAloneByMX(t *testing.T) {
	dns := dnstest.Start(t)
	e := newEnv(t, func(c *Config) { c.DNS = dns.Resolver() })
	must(t, "create", e.a("POST", "/domains/", `{"name":"alone.example"}`), 201)
	dns.SetMX("alone.example", "mx.mailhost.test")
	if o := must(t, "verify by MX", e.a("POST", "/domains/alone.example/verify", ""), 200).obj(); o["verified"] != true {
		t.Errorf("verify by MX alone = %v, want verified", o)
	}
}

// TestReservedHostname: the server's own host name and the names under
// it are no partner's; its parent is.
func TestReservedHostname(t *testing.T) {
	e := newEnv(t)
	for _, n := range []string{"mx.mailhost.test", "MX.Mailhost.Test", "postmaster.mx.mailhost.test", "a.b.mx.mailhost.test"} {
		r := must(t, "create "+n, e.a("POST", "/domains/", `{"name":"`+n+`"}`), 422)
		if !strings.Contains(r.detail(), "reserved for the server's own host name") {
			t.Errorf("create %s detail = %q, want it to say the name is reserved for the server's own host name", n, r.detail())
		}
	}
	if l := must(t, "GET domains", e.a("GET", "/domains/", ""), 200).list(); len(l) != 0 {
		t.Errorf("domains after refused creates = %v, want none", l)
	}
	for _, n := range []string{"mailhost.test", "xmx.mailhost.test", "mx.mailhost.testing"} {
		must(t, "create "+n, e.a("POST", "/domains/", `{"name":"`+n+`"}`), 201)
	}
}
