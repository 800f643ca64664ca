package adminapi

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailhost/mailhost/credential"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
	"github.com/mailhost/mailhost/policy"
)

func TestOpenEndpoints(t *testing.T) {
	e := newEnv(t)
	r := must(t, "GET /healthz", e.raw("GET", "/healthz", "", ""), 200)
	if got := r.obj()["status"]; got != "ok" {
		t.Errorf("GET /healthz status = %v, want ok", got)
	}
	r = must(t, "GET /openapi.json", e.raw("GET", "/openapi.json", "", ""), 200)
	if got := r.obj()["openapi"]; got != "3.1.0" {
		t.Errorf("GET /openapi.json openapi = %v, want 3.1.0", got)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("GET /openapi.json Content-Type = %q", ct)
	}
}

func TestAuth(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	// A key whose lookup exists but whose secret is wrong.
	lookup := strings.SplitN(strings.TrimPrefix(e.keyA, credential.APIKeyPrefix), "_", 2)[0]
	wrongSecret := credential.APIKeyPrefix + lookup + "_" + strings.Repeat("A", 43)
	unknown, _, _, _, _ := credential.NewAPIKey()
	// A revoked key of partner alpha.
	key, lk, prefix, hash, _ := credential.NewAPIKey()
	k, err := e.store.AddAPIKey(ctx, e.idA, mailstore.APIKey{Lookup: lk, Prefix: prefix, SecretHash: hash, CreatedAt: testNow})
	if err != nil {
		t.Fatal(err)
	}
	must(t, "GET /domains/ before revoke", e.raw("GET", "/domains/", key, ""), 200)
	if _, err := e.store.RevokeAPIKey(ctx, k.ID, testNow); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		header string // the whole Authorization header; "-" for none
		status int
		detail string
	}{
		{"no header", "-", 401, "Not authenticated"},
		{"empty", "", 401, "Not authenticated"},
		{"basic scheme", "Basic dXNlcjpwYXNz", 401, "Not authenticated"},
		{"bearer without token", "Bearer", 401, "Not authenticated"},
		{"bearer and spaces", "Bearer   ", 401, "Not authenticated"},
		{"not a key", "Bearer hello", 401, "Invalid API key"},
		{"unknown key", "Bearer " + unknown, 401, "Invalid API key"},
		{"wrong secret", "Bearer " + wrongSecret, 401, "Invalid API key"},
		{"revoked key", "Bearer " + key, 401, "Invalid API key"},
		{"good key", "Bearer " + e.keyA, 200, ""},
		{"scheme in lower case", "bearer " + e.keyA, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hdr []string
			if tt.header != "-" {
				hdr = []string{"Authorization", tt.header}
			}
			r := e.raw("GET", "/domains/", "", "", hdr...)
			if r.status != tt.status || r.detail() != tt.detail {
				t.Fatalf("GET /domains/ with %q = %d %q, want %d %q", tt.header, r.status, r.detail(), tt.status, tt.detail)
			}
			if tt.detail == "Not authenticated" && r.header.Get("WWW-Authenticate") != "Bearer" {
				t.Errorf("WWW-Authenticate = %q, want Bearer", r.header.Get("WWW-Authenticate"))
			}
		})
	}
}

// TestFailedAuthThrottled: an address that keeps sending wrong keys is
// answered 429 after failureBurst failures, while a request without a key
// is still answered 401 and a right key from it still works.
func TestFailedAuthThrottled(t *testing.T) {
	e := newEnv(t)
	unknown, _, _, _, _ := credential.NewAPIKey()
	for i := range failureBurst {
		must(t, fmt.Sprintf("bad key %d", i+1), e.raw("GET", "/domains/", unknown, ""), 401)
	}
	r := must(t, "one bad key too many", e.raw("GET", "/domains/", unknown, ""), 429)
	if r.detail() != "Too many requests" || r.header.Get("Retry-After") == "" {
		t.Errorf("throttled failure = %q, Retry-After %q", r.detail(), r.header.Get("Retry-After"))
	}
	for i := range failureBurst + 1 {
		if r := must(t, fmt.Sprintf("no key %d once throttled", i+1), e.raw("GET", "/domains/", "", ""), 401); r.detail() != "Not authenticated" {
			t.Fatalf("no key = %q, want Not authenticated", r.detail())
		}
	}
	must(t, "the right key from the same address", e.a("GET", "/domains/", ""), 200)
}

func TestRouting(t *testing.T) {
	e := newEnv(t)
	e.seed()
	tests := []struct {
		name, method, path string
		status             int
		detail             string
	}{
		{"unknown path", "GET", "/nothing", 404, "Not found"},
		{"unknown path without key", "GET", "/nothing", 404, "Not found"},
		{"unknown sub-resource", "GET", "/users/alice@alpha.example/folders", 404, "Not found"},
		{"item with trailing slash", "GET", "/domains/alpha.example/", 404, "Not found"},
		{"unclean path", "GET", "/users//x", 404, "Not found"},
		{"dot segment", "GET", "/domains/../plans", 404, "Not found"},
		{"wrong method on collection", "PATCH", "/users/", 405, "Method not allowed"},
		{"wrong method on item", "POST", "/users/alice@alpha.example", 405, "Method not allowed"},
		{"wrong method on plans", "DELETE", "/plans", 405, "Method not allowed"},
		{"users without slash", "GET", "/users", 200, ""},
		{"users with slash", "GET", "/users/", 200, ""},
		{"aliases without slash", "GET", "/aliases", 200, ""},
		{"aliases with slash", "GET", "/aliases/", 200, ""},
		{"domains without slash", "GET", "/domains", 200, ""},
		{"domains with slash", "GET", "/domains/", 200, ""},
		{"plans", "GET", "/plans", 200, ""},
		{"plans with slash", "GET", "/plans/", 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := e.keyA
			if strings.Contains(tt.name, "without key") {
				key = ""
			}
			r := e.raw(tt.method, tt.path, key, "")
			if r.status != tt.status || (tt.detail != "" && r.detail() != tt.detail) {
				t.Fatalf("%s %s = %d %s, want %d %q", tt.method, tt.path, r.status, r.body, tt.status, tt.detail)
			}
			if tt.status == 405 && r.header.Get("Allow") == "" {
				t.Errorf("%s %s: no Allow header", tt.method, tt.path)
			}
		})
	}
	// POST to a collection without the slash creates, without a redirect.
	must(t, "POST /aliases", e.a("POST", "/aliases", `{"domain_name":"alpha.example","source":"info@alpha.example","destination":"alice@alpha.example"}`), 201)
	must(t, "POST /domains", e.a("POST", "/domains", `{"name":"gamma.example"}`), 201)
}

func TestDomains(t *testing.T) {
	e := newEnv(t)
	r := must(t, "create", e.a("POST", "/domains/", `{"name":"Example.COM"}`), 201)
	d := r.obj()
	want := map[string]any{"name": "example.com", "plan": "starter", "max_mailboxes": 1000.0, "max_aliases": 1000.0,
		"quota_mb": 1024.0, "retention_days": 30.0, "transfer_monthly_mb": 5120.0, "suspended": false, "verified": false, "created_at": "2026-11-22T09:30:00"}
	for k, v := range want {
		if d[k] != v {
			t.Errorf("created domain %s = %v, want %v", k, d[k], v)
		}
	}

	t.Run("create", func(t *testing.T) {
		tests := []struct {
			name, body string
			status     int
			detail     string
			check      map[string]any
		}{
			{"plan and limits", `{"name":"b.example","plan":"Business","max_mailboxes":5,"max_aliases":0}`, 201, "",
				map[string]any{"plan": "business", "quota_mb": 2048.0, "retention_days": 60.0, "transfer_monthly_mb": 10240.0, "max_mailboxes": 5.0, "max_aliases": 0.0}},
			{"enterprise", `{"name":"e.example","plan":"enterprise"}`, 201, "",
				map[string]any{"quota_mb": 5120.0, "retention_days": 90.0, "transfer_monthly_mb": 51200.0}},
			{"IDNA name", `{"name":"bücher.example"}`, 201, "", map[string]any{"name": "xn--bcher-kva.example"}},
			{"IDNA name taken in other form", `{"name":"xn--bcher-kva.example"}`, 400, "Domain already exists", nil},
			{"taken", `{"name":"example.com"}`, 400, "Domain already exists", nil},
			{"taken in upper case", `{"name":"EXAMPLE.com"}`, 400, "Domain already exists", nil},
			{"unknown plan", `{"name":"c.example","plan":"gold"}`, 422, "Unknown plan", nil},
			{"invalid name", `{"name":"not a domain"}`, 422, "name: invalid domain name", nil},
			{"single label", `{"name":"localhost"}`, 422, "name: invalid domain name", nil},
			{"missing name", `{"plan":"starter"}`, 422, "name: field required", nil},
			{"name not a string", `{"name":5}`, 422, "name: must be a string", nil},
			{"negative limit", `{"name":"c.example","max_mailboxes":-1}`, 422, "", nil},
			{"fractional limit", `{"name":"c.example","max_aliases":1.5}`, 422, "", nil},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r := e.a("POST", "/domains/", tt.body)
				if r.status != tt.status || (tt.detail != "" && r.detail() != tt.detail) {
					t.Fatalf("POST /domains/ %s = %d %s, want %d %q", tt.body, r.status, r.body, tt.status, tt.detail)
				}
				for k, v := range tt.check {
					if got := r.obj()[k]; got != v {
						t.Errorf("POST /domains/ %s: %s = %v, want %v", tt.body, k, got, v)
					}
				}
			})
		}
	})

	t.Run("held by another partner, unverified", func(t *testing.T) {
		// A claim of its own (claims_test.go), which beta drops again.
		must(t, "beta POST /domains/ example.com", e.b("POST", "/domains/", `{"name":"example.com"}`), 201)
		must(t, "beta DELETE", e.b("DELETE", "/domains/example.com", ""), 200)
		must(t, "alpha's still there", e.a("GET", "/domains/example.com", ""), 200)
	})

	t.Run("list and get", func(t *testing.T) {
		r := must(t, "list", e.a("GET", "/domains/", ""), 200)
		if n := len(r.list()); n != 4 || r.header.Get("X-Total-Count") != "4" {
			t.Fatalf("GET /domains/ = %d domains, X-Total-Count %q, want 4", n, r.header.Get("X-Total-Count"))
		}
		r = must(t, "page", e.a("GET", "/domains/?limit=2&offset=1", ""), 200)
		if l := r.list(); len(l) != 2 || l[0]["name"] != "b.example" || r.header.Get("X-Total-Count") != "4" {
			t.Fatalf("GET /domains/?limit=2&offset=1 = %s, X-Total-Count %q", r.body, r.header.Get("X-Total-Count"))
		}
		r = must(t, "get", e.a("GET", "/domains/EXAMPLE.com", ""), 200)
		if r.obj()["name"] != "example.com" {
			t.Errorf("GET /domains/EXAMPLE.com name = %v", r.obj()["name"])
		}
		must(t, "get IDNA", e.a("GET", "/domains/bücher.example", ""), 200)
		r = must(t, "get unknown", e.a("GET", "/domains/nowhere.example", ""), 404)
		if r.detail() != "Domain not found" {
			t.Errorf("GET unknown domain detail = %q", r.detail())
		}
		must(t, "get invalid", e.a("GET", "/domains/-bad-", ""), 404)
		must(t, "bad limit", e.a("GET", "/domains/?limit=x", ""), 422)
		must(t, "negative offset", e.a("GET", "/domains/?offset=-1", ""), 422)
	})

	t.Run("plan", func(t *testing.T) {
		must(t, "mailbox", e.a("POST", "/users/", `{"domain_name":"example.com","email":"u@example.com","password":"password123"}`), 201)
		for range 2 { // idempotent
			r := must(t, "PUT plan", e.a("PUT", "/domains/example.com/plan", `{"plan":"ENTERPRISE"}`), 200)
			if o := r.obj(); o["plan"] != "enterprise" || o["quota_mb"] != 5120.0 || o["retention_days"] != 90.0 || o["transfer_monthly_mb"] != 51200.0 {
				t.Fatalf("PUT plan = %s", r.body)
			}
		}
		if q := must(t, "quota", e.a("GET", "/users/u@example.com/quota", ""), 200).obj()["quota_mb"]; q != 5120.0 {
			t.Errorf("mailbox quota after plan = %v, want 5120", q)
		}
		r := e.a("PUT", "/domains/example.com/plan", `{"plan":"platinum"}`)
		if r.status != 422 || r.detail() != "Unknown plan" {
			t.Errorf("PUT unknown plan = %d %s, want 422 Unknown plan", r.status, r.body)
		}
		must(t, "missing plan", e.a("PUT", "/domains/example.com/plan", `{}`), 422)
		must(t, "plan of unknown domain", e.a("PUT", "/domains/nowhere.example/plan", `{"plan":"starter"}`), 404)
		// A later mailbox gets the plan's quota.
		must(t, "mailbox", e.a("POST", "/users/", `{"domain_name":"example.com","email":"v@example.com","password":"password123"}`), 201)
		if q := must(t, "quota", e.a("GET", "/users/v@example.com/quota", ""), 200).obj()["quota_mb"]; q != 5120.0 {
			t.Errorf("new mailbox quota = %v, want 5120", q)
		}
	})

	t.Run("limits", func(t *testing.T) {
		r := must(t, "limits", e.a("PUT", "/domains/example.com/limits", `{"max_mailboxes":50,"max_aliases":200}`), 200)
		if o := r.obj(); o["max_mailboxes"] != 50.0 || o["max_aliases"] != 200.0 {
			t.Fatalf("PUT limits = %s", r.body)
		}
		r = must(t, "one limit", e.a("PUT", "/domains/example.com/limits", `{"max_aliases":7}`), 200)
		if o := r.obj(); o["max_mailboxes"] != 50.0 || o["max_aliases"] != 7.0 {
			t.Fatalf("PUT limits max_aliases = %s", r.body)
		}
		must(t, "none", e.a("PUT", "/domains/example.com/limits", `{}`), 422)
		must(t, "string", e.a("PUT", "/domains/example.com/limits", `{"max_mailboxes":"5"}`), 422)
		must(t, "unknown domain", e.a("PUT", "/domains/nowhere.example/limits", `{"max_mailboxes":5}`), 404)
	})

	t.Run("suspend and resume", func(t *testing.T) {
		for _, step := range []struct {
			path      string
			suspended bool
		}{{"suspend", true}, {"suspend", true}, {"resume", false}, {"resume", false}} {
			r := must(t, step.path, e.a("POST", "/domains/example.com/"+step.path, ""), 200)
			if r.obj()["suspended"] != step.suspended {
				t.Fatalf("POST %s: suspended = %v, want %v", step.path, r.obj()["suspended"], step.suspended)
			}
		}
		must(t, "suspend unknown", e.a("POST", "/domains/nowhere.example/suspend", ""), 404)
	})

	t.Run("usage", func(t *testing.T) {
		must(t, "alias", e.a("POST", "/aliases/", `{"domain_name":"example.com","source":"@example.com","destination":"u@example.com"}`), 201)
		r := must(t, "usage", e.a("GET", "/domains/example.com/usage", ""), 200)
		o := r.obj()
		for k, v := range map[string]any{"name": "example.com", "month": "2026-11", "mailbox_count": 2.0, "alias_count": 1.0,
			"message_count": 0.0, "storage_used_bytes": 0.0, "storage_used_mb": 0.0, "transfer_total_mb": 0.0, "transfer_monthly_mb": 51200.0} {
			if o[k] != v {
				t.Errorf("usage %s = %v, want %v", k, o[k], v)
			}
		}
		must(t, "usage unknown", e.a("GET", "/domains/nowhere.example/usage", ""), 404)
	})

	t.Run("delete", func(t *testing.T) {
		r := e.a("DELETE", "/domains/example.com", "")
		if r.status != 409 || r.detail() != "Domain is not empty" {
			t.Fatalf("DELETE non-empty = %d %s, want 409 Domain is not empty", r.status, r.body)
		}
		must(t, "bad force", e.a("DELETE", "/domains/example.com?force=maybe", ""), 422)
		r = must(t, "force", e.a("DELETE", "/domains/example.com?force=true", ""), 200)
		if r.obj()["message"] == nil {
			t.Errorf("DELETE body = %s, want a message", r.body)
		}
		must(t, "gone", e.a("GET", "/domains/example.com", ""), 404)
		must(t, "mailbox gone", e.a("GET", "/users/u@example.com/quota", ""), 404)
		must(t, "delete empty", e.a("DELETE", "/domains/e.example", ""), 200)
		must(t, "delete again", e.a("DELETE", "/domains/e.example", ""), 404)
		// The name is free again, for anyone.
		must(t, "recreate", e.b("POST", "/domains/", `{"name":"example.com"}`), 201)
	})
}

func TestPlans(t *testing.T) {
	e := newEnv(t)
	r := must(t, "GET /plans", e.a("GET", "/plans", ""), 200)
	want := "starter 1024 30 5120,business 2048 60 10240,enterprise 5120 90 51200"
	var got []string
	for _, p := range r.list() {
		got = append(got, fmt.Sprintf("%v %v %v %v", p["name"], p["quota_mb"], p["retention_days"], p["transfer_monthly_mb"]))
	}
	if strings.Join(got, ",") != want {
		t.Errorf("GET /plans = %v, want %s", got, want)
	}
	// Paged like every list (docs/api.md, "Conventions").
	r = must(t, "GET /plans?limit=1&offset=1", e.a("GET", "/plans?limit=1&offset=1", ""), 200)
	if l := r.list(); len(l) != 1 || l[0]["name"] != "business" || r.header.Get("X-Total-Count") != "3" {
		t.Errorf("GET /plans?limit=1&offset=1 = %s (X-Total-Count %q), want business alone of 3", r.body, r.header.Get("X-Total-Count"))
	}
	must(t, "GET /plans?limit=-1", e.a("GET", "/plans?limit=-1", ""), 422)
}

// TestQueryParameters: a query the client sent is honoured or refused,
// never dropped; url.Values would drop a pair with a bad escape or a
// semicolon, and a filtered list would answer every domain's objects.
func TestQueryParameters(t *testing.T) {
	e := newEnv(t)
	e.seed()
	tests := []struct {
		path   string
		status int
		detail string
	}{
		{"/users/?domain_id=1;x", 422, "domain_id: must be an integer"},
		{"/users/?domain_id=%zz", 422, "domain_id: could not be decoded"},
		{"/aliases/?domain_id=1;x", 422, "domain_id: must be an integer"},
		{"/users/?domain_id=abc", 422, "domain_id: must be an integer"},
		{"/users/?domain_id=-1", 404, "Domain not found"},
		{"/users/?domain_id=0", 404, "Domain not found"},
		{"/users/?limit=1;x", 422, "limit: must be a non-negative integer"},
		{"/domains/?offset=%zz", 422, "offset: could not be decoded"},
		{"/domains/?offset=2147483649", 422, "offset: must be at most 2147483648"},
		{"/domains/?limit=2147483649", 422, "limit: must be at most 2147483648"},
		{"/domains/?limit=%31", 200, ""}, // "1", escaped
		{"/users/?domain_id=1", 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			r := e.a("GET", tt.path, "")
			if r.status != tt.status || (tt.detail != "" && r.detail() != tt.detail) {
				t.Fatalf("GET %s = %d %s, want %d %q", tt.path, r.status, r.body, tt.status, tt.detail)
			}
		})
	}
	r := must(t, "DELETE with a bad force", e.a("DELETE", "/domains/alpha.example?force=%zz", ""), 422)
	if r.detail() != "force: could not be decoded" {
		t.Errorf("DELETE ?force=%%zz detail %q", r.detail())
	}
}

// TestInterfaceErrors covers every error the partner contract fixes
// (docs/api.md), and its address rules.
func TestInterfaceErrors(t *testing.T) {
	e := newEnv(t)
	e.seed()
	must(t, "small domain", e.a("POST", "/domains/", `{"name":"small.example","max_mailboxes":1,"max_aliases":1}`), 201)
	must(t, "fill mailboxes", e.a("POST", "/users/", `{"domain_name":"small.example","email":"one@small.example","password":"password123"}`), 201)
	must(t, "fill aliases", e.a("POST", "/aliases/", `{"domain_name":"small.example","source":"a@small.example","destination":"x@remote.example"}`), 201)
	const pw = `"password":"password123"`
	tests := []struct {
		name, path, body string
		status           int
		detail           string
	}{
		{"mailbox: email exists", "/users/", `{"domain_name":"alpha.example","email":"alice@alpha.example",` + pw + `}`, 400, "Email already exists"},
		{"mailbox: email exists in other case", "/users/", `{"domain_name":"alpha.example","email":"ALICE@alpha.example",` + pw + `}`, 400, "Email already exists"},
		{"mailbox: address is an alias source", "/users/", `{"domain_name":"alpha.example","email":"sales@alpha.example",` + pw + `}`, 400, "Email already exists"},
		{"mailbox: quota exceeded", "/users/", `{"domain_name":"small.example","email":"two@small.example",` + pw + `}`, 403, "Mailbox quota exceeded for this domain"},
		{"mailbox: domain not found", "/users/", `{"domain_name":"nowhere.example","email":"x@nowhere.example",` + pw + `}`, 404, "Domain not found"},
		{"mailbox: other partner's domain", "/users/", `{"domain_name":"beta.example","email":"x@beta.example",` + pw + `}`, 404, "Domain not found"},
		{"mailbox: domain not found, email of another domain", "/users/", `{"domain_name":"nowhere.example","email":"x@alpha.example",` + pw + `}`, 404, "Domain not found"},
		{"mailbox: other partner's domain, email of ours", "/users/", `{"domain_name":"beta.example","email":"x@alpha.example",` + pw + `}`, 404, "Domain not found"},
		{"mailbox: email not in domain_name", "/users/", `{"domain_name":"alpha.example","email":"x@small.example",` + pw + `}`, 422, "email: must be an address of domain_name"},
		{"mailbox: invalid email", "/users/", `{"domain_name":"alpha.example","email":"not an address",` + pw + `}`, 422, "email: invalid email address"},
		{"mailbox: password too short", "/users/", `{"domain_name":"alpha.example","email":"x@alpha.example","password":"1234567"}`, 422, "password: must be 8 to 1024 characters"},
		{"mailbox: password too long", "/users/", `{"domain_name":"alpha.example","email":"x@alpha.example","password":"` + strings.Repeat("p", 1025) + `"}`, 422, "password: must be 8 to 1024 characters"},
		// A NUL could never log in (it separates AUTH PLAIN's
		// fields), and the MX takes SRS0=/SRS1= addresses only as bounces.
		{"mailbox: password with a NUL", "/users/", `{"domain_name":"alpha.example","email":"x@alpha.example","password":"pass\u0000word123"}`, 422, "password: must not contain the NUL character (U+0000)"},
		{"mailbox: SRS0 local part", "/users/", `{"domain_name":"alpha.example","email":"SRS0=abcd=TT=remote.example=joe@alpha.example",` + pw + `}`, 422, "email: local part must not start with SRS0= or SRS1= (reserved for bounces of forwarded mail)"},
		{"mailbox: srs1 local part", "/users/", `{"domain_name":"alpha.example","email":"srs1=x@alpha.example",` + pw + `}`, 422, "email: local part must not start with SRS0= or SRS1= (reserved for bounces of forwarded mail)"},
		{"alias: SRS0 source", "/aliases/", `{"domain_name":"alpha.example","source":"srs0=x@alpha.example","destination":"x@remote.example"}`, 422, "source: local part must not start with SRS0= or SRS1= (reserved for bounces of forwarded mail)"},
		{"mailbox: password missing", "/users/", `{"domain_name":"alpha.example","email":"x@alpha.example"}`, 422, "password: field required"},
		{"mailbox: password not a string", "/users/", `{"domain_name":"alpha.example","email":"x@alpha.example","password":12345678}`, 422, "password: must be a string"},
		{"mailbox: domain_name missing", "/users/", `{"email":"x@alpha.example",` + pw + `}`, 422, "domain_name: field required"},
		{"mailbox: email missing", "/users/", `{"domain_name":"alpha.example",` + pw + `}`, 422, "email: field required"},
		{"alias: source exists", "/aliases/", `{"domain_name":"alpha.example","source":"sales@alpha.example","destination":"x@remote.example"}`, 400, "Alias source already exists"},
		{"alias: source is a mailbox", "/aliases/", `{"domain_name":"alpha.example","source":"alice@alpha.example","destination":"x@remote.example"}`, 400, "Alias source already exists"},
		{"alias: quota exceeded", "/aliases/", `{"domain_name":"small.example","source":"b@small.example","destination":"x@remote.example"}`, 403, "Alias quota exceeded"},
		{"alias: domain not found", "/aliases/", `{"domain_name":"nowhere.example","source":"a@nowhere.example","destination":"x@remote.example"}`, 404, "Domain not found"},
		{"alias: other partner's domain", "/aliases/", `{"domain_name":"beta.example","source":"a@beta.example","destination":"x@remote.example"}`, 404, "Domain not found"},
		{"alias: domain not found, source of another domain", "/aliases/", `{"domain_name":"nowhere.example","source":"a@alpha.example","destination":"x@remote.example"}`, 404, "Domain not found"},
		{"alias: source not in domain_name", "/aliases/", `{"domain_name":"alpha.example","source":"a@small.example","destination":"x@remote.example"}`, 422, "source: must be an address of domain_name"},
		{"alias: catch-all of another domain", "/aliases/", `{"domain_name":"alpha.example","source":"@small.example","destination":"x@remote.example"}`, 422, "source: must be an address of domain_name"},
		{"alias: destination is the source", "/aliases/", `{"domain_name":"alpha.example","source":"loop@alpha.example","destination":"LOOP@alpha.example"}`, 422, "destination: must differ from source"},
		{"alias: invalid destination", "/aliases/", `{"domain_name":"alpha.example","source":"b@alpha.example","destination":"nobody"}`, 422, "destination: invalid email address"},
		{"alias: destination missing", "/aliases/", `{"domain_name":"alpha.example","source":"b@alpha.example"}`, 422, "destination: field required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.a("POST", tt.path, tt.body)
			if r.status != tt.status || r.detail() != tt.detail {
				t.Fatalf("POST %s %.80s = %d %s, want %d %q", tt.path, tt.body, r.status, r.body, tt.status, tt.detail)
			}
		})
	}
}

func TestMailboxes(t *testing.T) {
	e := newEnv(t)
	e.seed()
	must(t, "second domain", e.a("POST", "/domains/", `{"name":"other.example"}`), 201)
	r := must(t, "create", e.a("POST", "/users/", `{"domain_name":"OTHER.example","email":"Bob@Other.Example","password":"`+strings.Repeat("é", 8)+`"}`), 201)
	bob := r.obj()
	if bob["email"] != "bob@other.example" || bob["domain_id"] != 3.0 || bob["created_at"] != "2026-11-22T09:30:00" {
		t.Fatalf("created mailbox = %s", r.body)
	}
	t.Run("list", func(t *testing.T) {
		tests := []struct {
			query  string
			status int
			emails string
			total  string
		}{
			{"", 200, "alice@alpha.example,bob@other.example", "2"},
			{"?domain_id=1", 200, "alice@alpha.example", "1"},
			{"?domain_id=3", 200, "bob@other.example", "1"},
			{"?limit=1", 200, "alice@alpha.example", "2"},
			{"?limit=1&offset=1", 200, "bob@other.example", "2"},
			{"?offset=5", 200, "", "2"},
			{"?domain_id=2", 404, "", ""}, // beta's domain
			{"?domain_id=99", 404, "", ""},
			{"?domain_id=0", 404, "", ""},
			{"?domain_id=abc", 422, "", ""},
			{"?domain_id=1.5", 422, "", ""},
			{"?limit=-1", 422, "", ""},
		}
		for _, tt := range tests {
			t.Run(tt.query, func(t *testing.T) {
				r := e.a("GET", "/users/"+tt.query, "")
				if r.status != tt.status {
					t.Fatalf("GET /users/%s = %d %s, want %d", tt.query, r.status, r.body, tt.status)
				}
				if r.status == 404 && r.detail() != "Domain not found" {
					t.Errorf("GET /users/%s detail = %q, want Domain not found", tt.query, r.detail())
				}
				if r.status != 200 {
					return
				}
				var emails []string
				for _, m := range r.list() {
					emails = append(emails, m["email"].(string))
				}
				if got := strings.Join(emails, ","); got != tt.emails || r.header.Get("X-Total-Count") != tt.total {
					t.Errorf("GET /users/%s = %s (X-Total-Count %s), want %s (%s)", tt.query, got, r.header.Get("X-Total-Count"), tt.emails, tt.total)
				}
			})
		}
	})
	t.Run("password", func(t *testing.T) {
		before, err := e.store.Mailbox(context.Background(), e.idA, "alice@alpha.example")
		if err != nil {
			t.Fatal(err)
		}
		r := must(t, "PUT password", e.a("PUT", "/users/ALICE@alpha.example", `{"password":"a new password","extra":1}`), 200)
		if m, _ := r.obj()["message"].(string); m == "" {
			t.Errorf("PUT password body = %s, want a message", r.body)
		}
		after, _ := e.store.Mailbox(context.Background(), e.idA, "alice@alpha.example")
		if after.PasswordHash == before.PasswordHash || credential.VerifyPassword(after.PasswordHash, "a new password") != nil {
			t.Errorf("password hash not replaced by one of the new password")
		}
		if strings.Contains(e.logs.String(), "a new password") {
			t.Errorf("the log holds the password")
		}
		must(t, "short", e.a("PUT", "/users/alice@alpha.example", `{"password":"short"}`), 422)
		must(t, "missing", e.a("PUT", "/users/alice@alpha.example", `{}`), 422)
		r = must(t, "unknown", e.a("PUT", "/users/nobody@alpha.example", `{"password":"a new password"}`), 404)
		if r.detail() != "Mailbox not found" {
			t.Errorf("PUT unknown mailbox detail = %q", r.detail())
		}
	})
	t.Run("usage", func(t *testing.T) {
		r := must(t, "usage", e.a("GET", "/users/bob@other.example/usage", ""), 200)
		o := r.obj()
		if o["last_login"] != nil || o["quota_mb"] != 1024.0 || o["message_count"] != 0.0 || o["storage_used_bytes"] != 0.0 {
			t.Errorf("usage = %s", r.body)
		}
		must(t, "usage unknown", e.a("GET", "/users/nobody@other.example/usage", ""), 404)
	})
	t.Run("delete", func(t *testing.T) {
		r := must(t, "delete", e.a("DELETE", "/users/Bob@other.example", ""), 200)
		if m, _ := r.obj()["message"].(string); m == "" {
			t.Errorf("DELETE body = %s, want a message", r.body)
		}
		r = must(t, "delete again", e.a("DELETE", "/users/bob@other.example", ""), 404)
		if r.detail() != "Mailbox not found" {
			t.Errorf("DELETE again detail = %q", r.detail())
		}
		must(t, "invalid address", e.a("DELETE", "/users/not-an-address", ""), 404)
		if n := must(t, "count", e.a("GET", "/domains/other.example/usage", ""), 200).obj()["mailbox_count"]; n != 0.0 {
			t.Errorf("mailbox_count after delete = %v", n)
		}
	})
}

func TestLimits(t *testing.T) {
	e := newEnv(t)
	e.seed()
	type limit struct {
		path, field string
		lo, hi      int64
		get         string // the GET answer's key field and value
	}
	limits := []limit{
		{"/users/alice@alpha.example/quota", "quota_mb", 1, 1 << 20, `"email":"alice@alpha.example"`},
		{"/domains/alpha.example/retention", "retention_days", 1, 36500, `"name":"alpha.example"`},
		{"/domains/alpha.example/transfer", "transfer_monthly_mb", 1, 1 << 30, `"name":"alpha.example"`},
	}
	for _, l := range limits {
		t.Run(l.field, func(t *testing.T) {
			tests := []struct {
				name, value string
				status      int
			}{
				{"minimum", fmt.Sprint(l.lo), 200},
				{"maximum", fmt.Sprint(l.hi), 200},
				{"middle", "500", 200},
				{"zero", "0", 422},
				{"negative", "-1", 422},
				{"above maximum", fmt.Sprint(l.hi + 1), 422},
				{"huge", "99999999999999999999999", 422},
				{"fraction", "1.5", 422},
				{"integral float", "100.0", 422},
				{"exponent", "1e3", 422},
				{"string", `"100"`, 422},
				{"boolean", "true", 422},
				{"null", "null", 422},
				{"object", `{}`, 422},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					body := fmt.Sprintf(`{%q:%s}`, l.field, tt.value)
					r := e.a("PUT", l.path, body)
					if r.status != tt.status {
						t.Fatalf("PUT %s %s = %d %s, want %d", l.path, body, r.status, r.body, tt.status)
					}
					if r.status == 422 && !strings.HasPrefix(r.detail(), l.field+":") {
						t.Errorf("PUT %s %s detail = %q, want it to name %s", l.path, body, r.detail(), l.field)
					}
					if r.status == 200 {
						want := fmt.Sprintf(`{%s,%q:%s}`, l.get, l.field, tt.value)
						if got := strings.TrimSpace(string(r.body)); got != want {
							t.Errorf("PUT %s = %s, want %s", l.path, got, want)
						}
						// GET answers the same object.
						if g := strings.TrimSpace(string(e.a("GET", l.path, "").body)); g != want {
							t.Errorf("GET %s = %s, want %s", l.path, g, want)
						}
					}
				})
			}
			t.Run("missing", func(t *testing.T) {
				r := e.a("PUT", l.path, `{"other":1}`)
				if r.status != 422 || r.detail() != l.field+": field required" {
					t.Errorf("PUT %s {} = %d %s", l.path, r.status, r.body)
				}
			})
			t.Run("repeat", func(t *testing.T) {
				body := fmt.Sprintf(`{%q:42}`, l.field)
				a := must(t, "first", e.a("PUT", l.path, body), 200)
				b := must(t, "second", e.a("PUT", l.path, body), 200)
				if string(a.body) != string(b.body) {
					t.Errorf("repeated PUT %s = %s then %s", l.path, a.body, b.body)
				}
			})
		})
	}
	must(t, "quota of unknown mailbox", e.a("GET", "/users/nobody@alpha.example/quota", ""), 404)
	must(t, "set quota of unknown mailbox", e.a("PUT", "/users/nobody@alpha.example/quota", `{"quota_mb":5}`), 404)
	must(t, "retention of unknown domain", e.a("GET", "/domains/nowhere.example/retention", ""), 404)
	must(t, "set retention of unknown domain", e.a("PUT", "/domains/nowhere.example/retention", `{"retention_days":5}`), 404)
	must(t, "transfer of unknown domain", e.a("GET", "/domains/nowhere.example/transfer", ""), 404)
	must(t, "set transfer of unknown domain", e.a("PUT", "/domains/nowhere.example/transfer", `{"transfer_monthly_mb":5}`), 404)
}

func TestBodies(t *testing.T) {
	e := newEnv(t)
	e.seed()
	const path = "/domains/alpha.example/retention"
	big := `{"retention_days":5,"pad":"` + strings.Repeat("x", 1<<20) + `"}`
	tests := []struct {
		name, body string
		status     int
		detail     string
	}{
		{"unknown fields ignored", `{"retention_days":5,"color":"blue","nested":{"a":[1]}}`, 200, ""},
		{"not JSON", `retention_days=5`, 422, "body: must be a JSON object"},
		{"empty", ``, 422, "body: must be a JSON object"},
		{"array", `[{"retention_days":5}]`, 422, "body: must be a JSON object"},
		{"null", `null`, 422, "body: must be a JSON object"},
		{"truncated", `{"retention_days":5`, 422, "body: must be a JSON object"},
		{"trailing data", `{"retention_days":5} {}`, 422, "body: must be a single JSON object"},
		{"number in a string", `{"retention_days":"5"}`, 422, "retention_days: must be an integer"},
		{"boolean", `{"retention_days":true}`, 422, "retention_days: must be an integer"},
		{"integer too large", `{"retention_days":99999999999999999999}`, 422, "retention_days: must be between 1 and 36500"},
		{"over 1 MiB", big, 413, "Request body too large"},
		{"just under 1 MiB", `{"retention_days":5,"pad":"` + strings.Repeat("x", 1<<20-40) + `"}`, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.raw("PUT", path, e.keyA, tt.body)
			if tt.body == "" {
				r = e.a("PUT", path, "")
			}
			if r.status != tt.status || (tt.detail != "" && r.detail() != tt.detail) {
				t.Fatalf("PUT %s %.40q = %d %.200s, want %d %q", path, tt.body, r.status, r.body, tt.status, tt.detail)
			}
		})
	}
}

func TestAliases(t *testing.T) {
	e := newEnv(t)
	e.seed()
	r := must(t, "catch-all", e.a("POST", "/aliases/", `{"domain_name":"alpha.example","source":"@ALPHA.example","destination":"Someone@Remote.Example"}`), 201)
	if o := r.obj(); o["source"] != "@alpha.example" || o["destination"] != "someone@remote.example" || o["domain_id"] != 1.0 {
		t.Fatalf("catch-all = %s", r.body)
	}
	must(t, "catch-all again", e.a("POST", "/aliases/", `{"domain_name":"alpha.example","source":"@alpha.example","destination":"alice@alpha.example"}`), 400)
	must(t, "info", e.a("POST", "/aliases/", `{"domain_name":"alpha.example","source":"info@alpha.example","destination":"alice@alpha.example"}`), 201)
	r = must(t, "list", e.a("GET", "/aliases/?domain_id=1", ""), 200)
	if n := len(r.list()); n != 3 || r.header.Get("X-Total-Count") != "3" {
		t.Errorf("GET /aliases/?domain_id=1 = %d aliases (X-Total-Count %s), want 3", n, r.header.Get("X-Total-Count"))
	}
	r = must(t, "page", e.a("GET", "/aliases/?limit=1&offset=2", ""), 200)
	if l := r.list(); len(l) != 1 || l[0]["source"] != "info@alpha.example" {
		t.Errorf("GET /aliases/?limit=1&offset=2 = %s", r.body)
	}
	must(t, "list of beta's domain", e.a("GET", "/aliases/?domain_id=2", ""), 404)
	must(t, "list of unknown domain", e.a("GET", "/aliases/?domain_id=42", ""), 404)
	must(t, "bad domain_id", e.a("GET", "/aliases/?domain_id=x", ""), 422)

	tests := []struct {
		name, path string
		status     int
		detail     string
	}{
		{"catch-all raw", "/aliases/@alpha.example", 200, ""},
		{"catch-all again", "/aliases/@alpha.example", 404, "Alias not found"},
		{"percent-encoded", "/aliases/info%40alpha.example", 200, ""},
		{"upper case", "/aliases/SALES@Alpha.Example", 200, ""},
		{"unknown", "/aliases/nobody@alpha.example", 404, "Alias not found"},
		{"a mailbox is not an alias", "/aliases/alice@alpha.example", 404, "Alias not found"},
		{"invalid", "/aliases/nothing", 404, "Alias not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.a("DELETE", tt.path, "")
			if r.status != tt.status || (tt.detail != "" && r.detail() != tt.detail) {
				t.Fatalf("DELETE %s = %d %s, want %d %q", tt.path, r.status, r.body, tt.status, tt.detail)
			}
			if r.status == 200 && r.obj()["message"] == nil {
				t.Errorf("DELETE %s body = %s, want a message", tt.path, r.body)
			}
		})
	}
	if n := len(must(t, "list", e.a("GET", "/aliases", ""), 200).list()); n != 0 {
		t.Errorf("aliases left = %d, want 0", n)
	}
}

func TestRateLimit(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.RateLimit, c.RateBurst = 0.5, 3 })
	for i := range 3 {
		must(t, fmt.Sprintf("request %d", i), e.a("GET", "/plans", ""), 200)
	}
	r := must(t, "over the burst", e.a("GET", "/plans", ""), 429)
	if r.header.Get("Retry-After") != "2" {
		t.Errorf("Retry-After = %q, want 2 (one token at 0.5/s)", r.header.Get("Retry-After"))
	}
	must(t, "another key", e.b("GET", "/plans", ""), 200)

	t.Run("bucket", func(t *testing.T) {
		l := policy.NewLimiter(10, 2)
		t0 := testNow
		steps := []struct {
			at    time.Duration
			ok    bool
			retry int
		}{{0, true, 0}, {0, true, 0}, {0, false, 1}, {100 * time.Millisecond, true, 0}, {100 * time.Millisecond, false, 1}, {time.Hour, true, 0}, {time.Hour, true, 0}, {time.Hour, false, 1}}
		for i, s := range steps {
			ok, wait := l.Take(1, t0.Add(s.at))
			retry := 0
			if !ok {
				retry = retryAfter(wait)
			}
			if ok != s.ok || retry != s.retry {
				t.Errorf("step %d: take() = %d, %v, want %d, %v", i, retry, ok, s.retry, s.ok)
			}
		}
	})
}

func TestRequestLog(t *testing.T) {
	e := newEnv(t)
	e.seed()
	log := e.logs.String()
	for _, want := range []string{`route="POST /users/{$}"`, "status=201", "partner_id=1", "duration_ms=", "method=POST"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	for _, secret := range []string{e.keyA, e.keyB, "password123"} {
		if strings.Contains(log, secret) {
			t.Errorf("log holds a secret %q", secret)
		}
	}
}

func TestRestart(t *testing.T) {
	e := newEnv(t)
	e.seed()
	e.srv.Close()
	if err := e.store.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := boltstore.Open(context.Background(), e.dir, boltstore.Options{})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	e.store = st
	e.start()
	if l := must(t, "users", e.a("GET", "/users/", ""), 200).list(); len(l) != 1 || l[0]["email"] != "alice@alpha.example" {
		t.Errorf("GET /users/ after restart = %v", l)
	}
	if l := must(t, "aliases", e.a("GET", "/aliases/", ""), 200).list(); len(l) != 1 || l[0]["source"] != "sales@alpha.example" {
		t.Errorf("GET /aliases/ after restart = %v", l)
	}
	must(t, "beta's domain", e.b("GET", "/domains/beta.example", ""), 200)
	m, err := st.Mailbox(context.Background(), e.idA, "alice@alpha.example")
	if err != nil || credential.VerifyPassword(m.PasswordHash, "password123") != nil {
		t.Errorf("password after restart does not verify: %v", err)
	}
	must(t, "write after restart", e.a("PUT", "/users/alice@alpha.example/quota", `{"quota_mb":7}`), 200)
}

// statusText keeps net/http imported for the table above's readers.
var _ = http.StatusOK

// TestResumeHook: Config.OnResume hears of every resume (it is safe to
// repeat), with the domain as resumed, and of no suspend.
func TestResumeHook(t *testing.T) {
	var resumed []string
	e := newEnv(t, func(c *Config) {
		c.OnResume = func(_ context.Context, d mailstore.Domain) {
			if d.Suspended {
				t.Errorf("OnResume(%s) with a suspended domain", d.Name)
			}
			resumed = append(resumed, d.Name)
		}
	})
	must(t, "domain", e.a("POST", "/domains/", `{"name":"example.com"}`), 201)
	for _, step := range []string{"suspend", "resume", "resume", "suspend"} {
		must(t, step, e.a("POST", "/domains/example.com/"+step, ""), 200)
	}
	must(t, "resume unknown", e.a("POST", "/domains/nowhere.example/resume", ""), 404)
	if want := []string{"example.com", "example.com"}; !slices.Equal(resumed, want) {
		t.Errorf("OnResume heard %v, want %v", resumed, want)
	}
}
