package adminapi

import (
	"strings"
	"testing"

	"github.com/mailhost/mailhost/autoconfig"
)

// TestClientSetup: the mail clients' endpoints on the API listener, the
// public ones without a key, the Apple profile with the partner's.
func TestClientSetup(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.Clients = autoconfig.Servers{IMAPS: 993, IMAP: 143, Submissions: 465, Submission: 587}
	})
	e.seed()

	r := must(t, "Thunderbird", e.raw("GET", "/mail/config-v1.1.xml?emailaddress=alice%40alpha.example", "", ""), 200)
	if !strings.Contains(string(r.body), "<hostname>mx.mailhost.test</hostname>") || !strings.Contains(string(r.body), "<port>993</port>") {
		t.Errorf("Thunderbird config = %s", r.body)
	}
	must(t, "Thunderbird by Host", e.raw("GET", "/.well-known/autoconfig/mail/config-v1.1.xml", "", "", "Host", "autoconfig.beta.example"), 200)
	r = must(t, "Thunderbird, domain not hosted", e.raw("GET", "/mail/config-v1.1.xml?emailaddress=alice%40gamma.example", "", ""), 404)
	if r.detail() != "Domain not found" {
		t.Errorf("detail = %q", r.detail())
	}
	must(t, "Thunderbird, bad address", e.raw("GET", "/mail/config-v1.1.xml?emailaddress=alice", "", ""), 400)

	req := `<Autodiscover xmlns="http://schemas.microsoft.com/exchange/autodiscover/outlook/requestschema/2006"><Request>` +
		`<EMailAddress>alice@alpha.example</EMailAddress><AcceptableResponseSchema>http://schemas.microsoft.com/exchange/autodiscover/outlook/responseschema/2006a</AcceptableResponseSchema>` +
		`</Request></Autodiscover>`
	r = must(t, "Autodiscover", e.raw("POST", "/autodiscover/autodiscover.xml", "", req, "Content-Type", "text/xml"), 200)
	if !strings.Contains(string(r.body), "<LoginName>alice@alpha.example</LoginName>") {
		t.Errorf("Autodiscover = %s", r.body)
	}
	must(t, "Autodiscover, capitalised", e.raw("POST", "/Autodiscover/Autodiscover.xml", "", req, "Content-Type", "text/xml"), 200)

	r = must(t, "mobileconfig", e.a("GET", "/users/alice@alpha.example/mobileconfig", ""), 200)
	if ct := r.header.Get("Content-Type"); ct != "application/x-apple-aspen-config" {
		t.Errorf("mobileconfig Content-Type = %q", ct)
	}
	if cd := r.header.Get("Content-Disposition"); cd != `attachment; filename="mail-alpha.example.mobileconfig"` {
		t.Errorf("mobileconfig Content-Disposition = %q", cd)
	}
	if !strings.Contains(string(r.body), "<string>alice@alpha.example</string>") || strings.Contains(string(r.body), "password123") {
		t.Errorf("mobileconfig = %s", r.body)
	}
	must(t, "mobileconfig of another partner's mailbox", e.b("GET", "/users/alice@alpha.example/mobileconfig", ""), 404)
	must(t, "mobileconfig of an alias", e.a("GET", "/users/sales@alpha.example/mobileconfig", ""), 404)
	must(t, "mobileconfig without a key", e.raw("GET", "/users/alice@alpha.example/mobileconfig", "", ""), 401)
}

// TestClientSetupOff: without client ports the public endpoints answer
// as for a domain not hosted.
func TestClientSetupOff(t *testing.T) {
	e := newEnv(t)
	e.seed()
	must(t, "Thunderbird", e.raw("GET", "/mail/config-v1.1.xml?emailaddress=alice%40alpha.example", "", ""), 404)
	must(t, "mobileconfig", e.a("GET", "/users/alice@alpha.example/mobileconfig", ""), 404)
}
