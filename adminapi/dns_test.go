package adminapi

import (
	"context"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailauth"
	"github.com/mailhost/mailhost/mailstore"
)

// dnsRecords gets a domain's records as "TYPE name value [priority weight port]".
func dnsRecords(t *testing.T, e *env, domain string) []string {
	t.Helper()
	r := must(t, "GET dns", e.a("GET", "/domains/"+domain+"/dns", ""), 200)
	o := r.obj()
	if o["name"] != strings.ToLower(domain) {
		t.Errorf("GET dns name = %v, want %s", o["name"], domain)
	}
	var out []string
	for _, x := range o["records"].([]any) {
		rec := x.(map[string]any)
		s := fmt.Sprintf("%v %v %v", rec["type"], rec["name"], rec["value"])
		if rec["priority"] != nil {
			s += fmt.Sprintf(" %v", rec["priority"])
		}
		if rec["port"] != nil {
			s += fmt.Sprintf(" %v %v", rec["weight"], rec["port"])
		}
		out = append(out, s)
	}
	return out
}

// wantRecords are the records of domain with the given keys and
// ownership token on mx.mailhost.test.
func wantRecords(t *testing.T, domain string, keys []mailstore.DKIMKey, token string) []string {
	t.Helper()
	const mx = "mx.mailhost.test"
	out := []string{
		"MX " + domain + " " + mx + " 10",
		"TXT " + domain + " v=spf1 mx a:" + mx + " ~all",
	}
	for _, k := range keys {
		txt, err := mailauth.PublicKeyRecord(k)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, "TXT "+k.Selector+"._domainkey."+domain+" "+txt)
	}
	return append(out,
		"TXT _dmarc."+domain+" v=DMARC1; p=none; adkim=r; aspf=r",
		"SRV _submissions._tcp."+domain+" "+mx+" 5 1 465",
		"SRV _submission._tcp."+domain+" "+mx+" 10 1 587",
		"SRV _imaps._tcp."+domain+" "+mx+" 5 1 993",
		"SRV _imap._tcp."+domain+" "+mx+" 10 1 143",
		"CNAME autoconfig."+domain+" "+mx,
		"CNAME autodiscover."+domain+" "+mx,
		"TXT _mailhost."+domain+" mailhost-verify="+token,
	)
}

func TestDomainDNS(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	keys, err := testKeys()
	if err != nil {
		t.Fatal(err)
	}

	t.Run("new domain", func(t *testing.T) {
		must(t, "create", e.a("POST", "/domains/", `{"name":"Example.COM"}`), 201)
		d, err := e.store.Domain(ctx, e.idA, "example.com")
		if err != nil {
			t.Fatal(err)
		}
		stored, err := e.store.DKIMKeys(ctx, d.ID)
		if err != nil || len(stored) != 2 || stored[0].Selector != keys[0].Selector || stored[1].Selector != keys[1].Selector {
			t.Fatalf("DKIMKeys() = %d keys, %v; want the generated two", len(stored), err)
		}
		if d.VerifyToken == "" {
			t.Fatalf("Domain(example.com).VerifyToken is empty, want one made with the domain")
		}
		got, want := dnsRecords(t, e, "example.com"), wantRecords(t, "example.com", stored, d.VerifyToken)
		if !slices.Equal(got, want) {
			t.Errorf("GET dns =\n%q\nwant\n%q", got, want)
		}
		// The name is matched as in the other domain routes.
		if again := dnsRecords(t, e, "EXAMPLE.com"); !slices.Equal(again, got) {
			t.Errorf("GET dns by upper-case name = %q, want %q", again, got)
		}
	})

	t.Run("domain made before keys existed", func(t *testing.T) {
		d, err := e.store.CreateDomain(ctx, e.idA, newDomain("old.example"), testNow)
		if err != nil {
			t.Fatal(err)
		}
		if ks, err := e.store.DKIMKeys(ctx, d.ID); err != nil || len(ks) != 0 {
			t.Fatalf("DKIMKeys(old) = %d keys, %v; want none", len(ks), err)
		}
		first := dnsRecords(t, e, "old.example")
		stored, err := e.store.DKIMKeys(ctx, d.ID)
		if err != nil || len(stored) != 2 {
			t.Fatalf("DKIMKeys(old) after GET dns = %d keys, %v; want 2", len(stored), err)
		}
		d, err = e.store.Domain(ctx, e.idA, "old.example")
		if err != nil || d.VerifyToken == "" {
			t.Fatalf("Domain(old.example) after GET dns = token %q, %v; want a token", d.VerifyToken, err)
		}
		if want := wantRecords(t, "old.example", stored, d.VerifyToken); !slices.Equal(first, want) {
			t.Errorf("GET dns =\n%q\nwant\n%q", first, want)
		}
		if second := dnsRecords(t, e, "old.example"); !slices.Equal(second, first) {
			t.Errorf("second GET dns =\n%q\nwant the first\n%q", second, first)
		}
	})

	t.Run("unknown domain", func(t *testing.T) {
		r := must(t, "GET dns", e.a("GET", "/domains/nowhere.example/dns", ""), 404)
		if r.detail() != "Domain not found" {
			t.Errorf("detail = %q, want Domain not found", r.detail())
		}
		must(t, "GET dns of a bad name", e.a("GET", "/domains/-bad-/dns", ""), 404)
	})
}

// TestDomainKeysGenerated runs the default generator once: a domain gets
// an Ed25519 and an RSA-2048 key with dated selectors.
func TestDomainKeysGenerated(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.GenerateDKIMKeys = nil })
	must(t, "create", e.a("POST", "/domains/", `{"name":"example.com"}`), 201)
	d, err := e.store.Domain(context.Background(), e.idA, "example.com")
	if err != nil {
		t.Fatal(err)
	}
	ks, err := e.store.DKIMKeys(context.Background(), d.ID)
	if err != nil || len(ks) != 2 {
		t.Fatalf("DKIMKeys() = %d keys, %v; want 2", len(ks), err)
	}
	for i, want := range []struct{ sel, alg string }{{"ed20261122", "ed25519"}, {"rsa20261122", "rsa"}} {
		k := ks[i]
		key, err := x509.ParsePKCS8PrivateKey(k.Private)
		if err != nil || k.Selector != want.sel || k.Algorithm != want.alg {
			t.Fatalf("key %d = %s %s, %v; want %s %s", i, k.Selector, k.Algorithm, err, want.sel, want.alg)
		}
		switch key := key.(type) {
		case ed25519.PrivateKey:
		case *rsa.PrivateKey:
			if key.N.BitLen() != 2048 {
				t.Errorf("RSA key of %d bits", key.N.BitLen())
			}
		default:
			t.Errorf("key %d is a %T", i, key)
		}
	}
}

// TestDomainKeysFail: when keys cannot be made the domain is not created.
func TestDomainKeysFail(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.GenerateDKIMKeys = func(time.Time) ([]mailstore.DKIMKey, error) { return nil, errors.New("no entropy") }
	})
	r := must(t, "create", e.a("POST", "/domains/", `{"name":"example.com"}`), 500)
	if r.detail() != "Internal server error" {
		t.Errorf("detail = %q", r.detail())
	}
	must(t, "get", e.a("GET", "/domains/example.com", ""), 404)
	if _, err := e.store.CreateDomain(context.Background(), e.idA, newDomain("old.example"), testNow); err != nil {
		t.Fatal(err)
	}
	must(t, "GET dns", e.a("GET", "/domains/old.example/dns", ""), 500)
}

// TestDomainKeysNotMadeForTakenName: a repeated creation, and one of a
// name another partner has verified, is refused before any key is made.
func TestDomainKeysNotMadeForTakenName(t *testing.T) {
	var made atomic.Int32
	e := newEnv(t, func(c *Config) {
		c.GenerateDKIMKeys = func(now time.Time) ([]mailstore.DKIMKey, error) {
			made.Add(1)
			return fastKeys(now)
		}
	})
	must(t, "create", e.a("POST", "/domains/", `{"name":"example.com"}`), 201)
	if _, err := e.store.SetVerified(context.Background(), e.idA, "example.com", true, testNow); err != nil {
		t.Fatal(err)
	}
	for _, r := range []resp{
		e.a("POST", "/domains/", `{"name":"example.com"}`),
		e.b("POST", "/domains/", `{"name":"EXAMPLE.com"}`),
	} {
		if r.status != 400 || r.detail() != "Domain already exists" {
			t.Errorf("create again = %d %s, want 400 Domain already exists", r.status, r.body)
		}
	}
	if n := made.Load(); n != 1 {
		t.Errorf("keys made %d times, want 1", n)
	}
}

// TestDomainDNSWarnsShortHostname: a server whose host name is not fully
// qualified would have customers publish "MX 10 vm"; the answer says so,
// and says nothing when the name is fine.
func TestDomainDNSWarnsShortHostname(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Hostname = "vm" })
	must(t, "POST domain", e.a("POST", "/domains/", `{"name":"example.com"}`), 201)
	o := must(t, "GET dns", e.a("GET", "/domains/example.com/dns", ""), 200).obj()
	w, _ := o["warnings"].([]any)
	if len(w) != 1 || !strings.Contains(fmt.Sprint(w[0]), "vm is not a fully qualified") || !strings.Contains(fmt.Sprint(w[0]), "hostname setting") {
		t.Errorf("GET dns with hostname vm: warnings = %v, want one naming vm and the hostname setting", o["warnings"])
	}

	e = newEnv(t)
	must(t, "POST domain", e.a("POST", "/domains/", `{"name":"example.com"}`), 201)
	if o := must(t, "GET dns", e.a("GET", "/domains/example.com/dns", ""), 200).obj(); o["warnings"] != nil {
		t.Errorf("GET dns with hostname mx.mailhost.test: warnings = %v, want none", o["warnings"])
	}
}
