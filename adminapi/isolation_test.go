package adminapi

import (
	"strings"
	"testing"
)

// TestIsolation calls each of partner alpha's objects on every endpoint
// with partner beta's key: each answer must be exactly the answer alpha
// gets for an object that does not exist (404, same detail), and alpha's
// data must be unchanged afterwards.
func TestIsolation(t *testing.T) {
	e := newEnv(t)
	e.seed()
	views := []string{
		"/domains/alpha.example", "/domains/", "/users/", "/aliases/",
		"/users/alice@alpha.example/quota", "/users/alice@alpha.example/usage",
		"/domains/alpha.example/retention", "/domains/alpha.example/transfer",
		"/domains/alpha.example/usage", "/domains/alpha.example/dns",
	}
	snapshot := func() map[string]string {
		s := map[string]string{}
		for _, v := range views {
			s[v] = string(must(t, "GET "+v, e.a("GET", v, ""), 200).body)
		}
		return s
	}
	before := snapshot()

	// Each call names alpha's object; the missing variant names an object
	// that exists for nobody, with "alpha" replaced by "nowhere" and
	// domain id 1 by 999.
	calls := []struct{ method, path, body string }{
		{"GET", "/domains/alpha.example", ""},
		{"DELETE", "/domains/alpha.example", ""},
		{"DELETE", "/domains/alpha.example?force=true", ""},
		{"PUT", "/domains/alpha.example/plan", `{"plan":"enterprise"}`},
		{"PUT", "/domains/alpha.example/limits", `{"max_mailboxes":0}`},
		{"GET", "/domains/alpha.example/usage", ""},
		{"GET", "/domains/alpha.example/dns", ""},
		{"POST", "/domains/alpha.example/suspend", ""},
		{"POST", "/domains/alpha.example/resume", ""},
		{"GET", "/domains/alpha.example/retention", ""},
		{"PUT", "/domains/alpha.example/retention", `{"retention_days":1}`},
		{"GET", "/domains/alpha.example/transfer", ""},
		{"PUT", "/domains/alpha.example/transfer", `{"transfer_monthly_mb":1}`},
		{"POST", "/users/", `{"domain_name":"alpha.example","email":"eve@alpha.example","password":"password123"}`},
		{"GET", "/users/?domain_id=1", ""},
		{"PUT", "/users/alice@alpha.example", `{"password":"stolen password"}`},
		{"DELETE", "/users/alice@alpha.example", ""},
		{"GET", "/users/alice@alpha.example/quota", ""},
		{"PUT", "/users/alice@alpha.example/quota", `{"quota_mb":1}`},
		{"GET", "/users/alice@alpha.example/usage", ""},
		{"POST", "/aliases/", `{"domain_name":"alpha.example","source":"eve@alpha.example","destination":"eve@evil.example"}`},
		{"POST", "/aliases/", `{"domain_name":"alpha.example","source":"@alpha.example","destination":"eve@evil.example"}`},
		{"GET", "/aliases/?domain_id=1", ""},
		{"DELETE", "/aliases/sales@alpha.example", ""},
		{"DELETE", "/aliases/sales%40alpha.example", ""},
	}
	missing := strings.NewReplacer("alpha", "nowhere", "domain_id=1", "domain_id=999")
	for _, c := range calls {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			got := e.b(c.method, c.path, c.body)
			want := e.a(c.method, missing.Replace(c.path), missing.Replace(c.body))
			if got.status != 404 || got.status != want.status || got.detail() != want.detail() {
				t.Errorf("beta %s %s = %d %s, want 404 and alpha's answer for a missing object, %d %s",
					c.method, c.path, got.status, got.body, want.status, want.body)
			}
		})
	}

	after := snapshot()
	for _, v := range views {
		if before[v] != after[v] {
			t.Errorf("alpha's GET %s changed:\nbefore %s\nafter  %s", v, before[v], after[v])
		}
	}
	for _, l := range []string{"/users/", "/aliases/"} {
		r := must(t, "beta GET "+l, e.b("GET", l, ""), 200)
		if len(r.list()) != 0 || r.header.Get("X-Total-Count") != "0" {
			t.Errorf("beta GET %s = %s, want []", l, r.body)
		}
	}
	if r := must(t, "beta GET /domains/", e.b("GET", "/domains/", ""), 200); len(r.list()) != 1 {
		t.Errorf("beta GET /domains/ = %s, want beta.example only", r.body)
	}
}
