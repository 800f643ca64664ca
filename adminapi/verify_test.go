package adminapi

import (
	"context"
	"strings"
	"testing"

	"github.com/mailhost/mailhost/internal/dnstest"
)

// verifyRecord is the ownership TXT record GET dns lists for domain, as
// name and value.
func verifyRecord(t *testing.T, e *env, domain string) (name, value string) {
	t.Helper()
	r := must(t, "GET dns", e.a("GET", "/domains/"+domain+"/dns", ""), 200)
	for _, x := range r.obj()["records"].([]any) {
		rec := x.(map[string]any)
		if n := rec["name"].(string); strings.HasPrefix(n, "_mailhost.") {
			return n, rec["value"].(string)
		}
	}
	t.Fatalf("GET dns of %s lists no _mailhost record: %s", domain, r.body)
	return "", ""
}

func TestVerifyDomain(t *testing.T) {
	dns := dnstest.Start(t)
	e := newEnv(t, func(c *Config) { c.DNS = dns.Resolver() })
	ctx := context.Background()
	must(t, "create", e.a("POST", "/domains/", `{"name":"alpha.example"}`), 201)
	name, value := verifyRecord(t, e, "alpha.example")
	if name != "_mailhost.alpha.example" || !strings.HasPrefix(value, "mailhost-verify=") || len(value) <= len("mailhost-verify=") {
		t.Fatalf("ownership record = %s %q, want _mailhost.alpha.example mailhost-verify=<token>", name, value)
	}

	verified := func(t *testing.T, domain string) bool {
		t.Helper()
		return must(t, "GET domain", e.a("GET", "/domains/"+domain, ""), 200).obj()["verified"] == true
	}

	t.Run("nothing published", func(t *testing.T) {
		dns.SetMX("alpha.example", "mx.elsewhere.test")
		r := must(t, "POST verify", e.a("POST", "/domains/alpha.example/verify", ""), 409)
		want := `Domain not verified: expected a TXT record "` + value + `" at _mailhost.alpha.example, or an MX record of alpha.example pointing to mx.mailhost.test; found no TXT record at _mailhost.alpha.example; MX of alpha.example: mx.elsewhere.test`
		if r.detail() != want {
			t.Errorf("POST verify detail = %q, want %q", r.detail(), want)
		}
		if verified(t, "alpha.example") {
			t.Errorf("alpha.example verified without its record")
		}
	})

	t.Run("TXT record", func(t *testing.T) {
		dns.SetTXT(name, "v=other", value)
		r := must(t, "POST verify", e.a("POST", "/domains/ALPHA.example/verify", ""), 200)
		if o := r.obj(); o["verified"] != true || o["name"] != "alpha.example" {
			t.Errorf("POST verify = %s, want alpha.example verified", r.body)
		}
		if !verified(t, "alpha.example") {
			t.Errorf("GET alpha.example after verify: not verified")
		}
		l := must(t, "GET domains", e.a("GET", "/domains/", ""), 200).list()
		if len(l) != 1 || l[0]["verified"] != true {
			t.Errorf("GET domains = %v, want alpha.example verified", l)
		}
		// Safe to repeat.
		must(t, "POST verify again", e.a("POST", "/domains/alpha.example/verify", ""), 200)
	})

	t.Run("other partner's relatives refused", func(t *testing.T) {
		const detail = "Domain is a subdomain or parent domain of a domain another partner has verified"
		for _, n := range []string{"sub.alpha.example", "a.b.alpha.example"} {
			r := must(t, "create "+n, e.b("POST", "/domains/", `{"name":"`+n+`"}`), 400)
			if r.detail() != detail {
				t.Errorf("create %s detail = %q, want %q", n, r.detail(), detail)
			}
		}
		// A parent: alpha verifies mail.parent.example by its MX.
		must(t, "create", e.a("POST", "/domains/", `{"name":"mail.parent.example"}`), 201)
		dns.SetMX("mail.parent.example", "MX.mailhost.test.")
		must(t, "POST verify by MX", e.a("POST", "/domains/mail.parent.example/verify", ""), 200)
		if r := must(t, "create parent", e.b("POST", "/domains/", `{"name":"parent.example"}`), 400); r.detail() != detail {
			t.Errorf("create parent.example detail = %q, want %q", r.detail(), detail)
		}
		// The same names are the owner's to make, and names beside
		// them are anyone's.
		must(t, "create own subdomain", e.a("POST", "/domains/", `{"name":"sub.alpha.example"}`), 201)
		must(t, "create a suffix that is no label", e.b("POST", "/domains/", `{"name":"xalpha.example"}`), 201)
	})

	t.Run("other partner", func(t *testing.T) {
		must(t, "POST verify", e.b("POST", "/domains/alpha.example/verify", ""), 404)
		must(t, "POST verify", e.a("POST", "/domains/nowhere.example/verify", ""), 404)
		must(t, "POST verify", e.a("POST", "/domains/not a name/verify", ""), 404)
	})

	t.Run("DNS does not answer", func(t *testing.T) {
		dns.Fail(name, true)
		dns.Fail("alpha.example", true)
		defer dns.Fail(name, false)
		defer dns.Fail("alpha.example", false)
		r := must(t, "POST verify", e.a("POST", "/domains/alpha.example/verify", ""), 503)
		if !strings.Contains(r.detail(), "DNS did not answer") || !strings.Contains(r.detail(), "try again later") {
			t.Errorf("POST verify detail = %q, want it to say DNS did not answer", r.detail())
		}
		if !verified(t, "alpha.example") {
			t.Errorf("alpha.example unverified by a DNS failure")
		}
	})

	t.Run("proof gone", func(t *testing.T) {
		dns.SetTXT(name)
		r := must(t, "POST verify", e.a("POST", "/domains/alpha.example/verify", ""), 409)
		if !strings.Contains(r.detail(), "found no TXT record at _mailhost.alpha.example") {
			t.Errorf("POST verify detail = %q, want it to say the TXT record is missing", r.detail())
		}
		if verified(t, "alpha.example") {
			t.Errorf("alpha.example still verified without its record")
		}
		if !strings.Contains(e.logs.String(), "domain verification lost") {
			t.Errorf("log has no line for the lost verification:\n%s", e.logs.String())
		}
		// Unverified, it no longer holds its relatives.
		must(t, "create", e.b("POST", "/domains/", `{"name":"beta.alpha.example"}`), 201)
	})

	t.Run("domain made before verification existed", func(t *testing.T) {
		if _, err := e.store.CreateDomain(ctx, e.idA, newDomain("old.example"), testNow); err != nil {
			t.Fatal(err)
		}
		r := must(t, "POST verify", e.a("POST", "/domains/old.example/verify", ""), 409)
		d, err := e.store.Domain(ctx, e.idA, "old.example")
		if err != nil || d.VerifyToken == "" {
			t.Fatalf("Domain(old.example) after verify = token %q, %v; want one", d.VerifyToken, err)
		}
		if !strings.Contains(r.detail(), `"mailhost-verify=`+d.VerifyToken+`"`) {
			t.Errorf("POST verify detail = %q, want the token %s", r.detail(), d.VerifyToken)
		}
		if _, v := verifyRecord(t, e, "old.example"); v != "mailhost-verify="+d.VerifyToken {
			t.Errorf("GET dns lists %q, want the token the check asked for", v)
		}
	})
}
