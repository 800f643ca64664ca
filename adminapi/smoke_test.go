package adminapi

import "testing"

func checkResponse(t *testing.T, method, path string, r resp) {}

func TestSmoke(t *testing.T) {
	e := newEnv(t)
	e.seed()
	for _, c := range []struct{ m, p, b string }{
		{"GET", "/domains", ""}, {"GET", "/users?domain_id=1", ""}, {"GET", "/aliases/", ""},
		{"GET", "/users/alice@alpha.example/quota", ""}, {"GET", "/domains/alpha.example/usage", ""},
		{"DELETE", "/plans", ""}, {"GET", "/nope", ""}, {"GET", "/plans/", ""},
		{"POST", "/users/", `{"domain_name":"alpha.example","email":"alice@alpha.example","password":"password123"}`},
		{"PUT", "/users/alice@alpha.example/quota", `{"quota_mb":1.5}`},
		{"DELETE", "/aliases/%40alpha.example", ""},
		{"GET", "/users/alice@alpha.example/usage", ""},
	} {
		r := e.a(c.m, c.p, c.b)
		t.Logf("%s %s -> %d %v %s", c.m, c.p, r.status, r.header, r.body)
	}
	t.Log(e.logs.String())
}
