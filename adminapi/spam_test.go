package adminapi

import "testing"

// TestSpamFilter: GET and PUT /domains/{domain_name}/spam.
func TestSpamFilter(t *testing.T) {
	e := newEnv(t)
	e.seed()
	const p = "/domains/alpha.example/spam"
	if o := must(t, "GET default", e.a("GET", p, ""), 200).obj(); o["filter"] != "junk" || o["default"] != true || o["name"] != "alpha.example" {
		t.Errorf("GET = %v, want junk, default", o)
	}
	for _, f := range []string{"reject", "off", "junk"} {
		if o := must(t, "PUT "+f, e.a("PUT", p, `{"filter":"`+f+`"}`), 200).obj(); o["filter"] != f || o["default"] != false {
			t.Errorf("PUT %s = %v", f, o)
		}
		if o := must(t, "GET", e.a("GET", p, ""), 200).obj(); o["filter"] != f {
			t.Errorf("GET after PUT %s = %v", f, o)
		}
	}
	if o := must(t, "PUT null", e.a("PUT", p, `{"filter":null}`), 200).obj(); o["filter"] != "junk" || o["default"] != true {
		t.Errorf("PUT null = %v, want the default", o)
	}
	for _, tc := range []struct{ name, body string }{
		{"bad value", `{"filter":"maybe"}`},
		{"missing", `{}`},
		{"not a string", `{"filter":1}`},
	} {
		t.Run(tc.name, func(t *testing.T) { must(t, "PUT", e.a("PUT", p, tc.body), 422) })
	}
	must(t, "PUT another partner's domain", e.b("PUT", p, `{"filter":"off"}`), 404)
	must(t, "GET another partner's domain", e.b("GET", p, ""), 404)
}
