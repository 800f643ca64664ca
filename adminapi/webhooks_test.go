package adminapi

import (
	"fmt"
	"strings"
	"testing"
)

func TestAuditLog(t *testing.T) {
	e := newEnv(t)
	e.seed()
	must(t, "suspend", e.a("POST", "/domains/alpha.example/suspend", ""), 200)
	must(t, "quota", e.a("PUT", "/users/alice@alpha.example/quota", `{"quota_mb":5}`), 200)
	must(t, "unknown domain", e.a("PUT", "/domains/nope.example/retention", `{"retention_days":5}`), 404)
	must(t, "delete alias", e.a("DELETE", "/aliases/sales@alpha.example", ""), 200)
	// Refused creates name what they tried.
	must(t, "mailbox exists", e.a("POST", "/users/", `{"domain_name":"alpha.example","email":"alice@alpha.example","password":"password123"}`), 400)
	must(t, "domain exists", e.a("POST", "/domains/", `{"name":"alpha.example"}`), 400)
	must(t, "password too short", e.a("POST", "/users/", `{"domain_name":"alpha.example","email":"Zed@Alpha.example","password":"short"}`), 422)
	e.a("GET", "/domains/", "")                            // reads are not recorded
	e.raw("POST", "/domains/", "", `{"name":"x.example"}`) // nor unauthenticated calls

	r := must(t, "GET /audit/", e.a("GET", "/audit/", ""), 200)
	l := r.list()
	if r.header.Get("X-Total-Count") != "10" || len(l) != 10 {
		t.Fatalf("GET /audit/ = %d entries (X-Total-Count %s), want 10: %s", len(l), r.header.Get("X-Total-Count"), r.body)
	}
	prefix := e.keyA[:strings.LastIndex(e.keyA, "_")]
	want := []struct {
		method, route, object string
		status                int
	}{
		{"POST", "/users/", "zed@alpha.example", 422},
		{"POST", "/domains/", "alpha.example", 400},
		{"POST", "/users/", "alice@alpha.example", 400},
		{"DELETE", "/aliases/{source}", "sales@alpha.example", 200},
		{"PUT", "/domains/{domain_name}/retention", "nope.example", 404},
		{"PUT", "/users/{email}/quota", "alice@alpha.example", 200},
		{"POST", "/domains/{domain_name}/suspend", "alpha.example", 200},
		{"POST", "/aliases/", "sales@alpha.example", 201},
		{"POST", "/users/", "alice@alpha.example", 201},
		{"POST", "/domains/", "alpha.example", 201},
	}
	for i, w := range want {
		got := l[i]
		if got["method"] != w.method || got["route"] != w.route || got["object"] != w.object || got["status"] != float64(w.status) ||
			got["partner_id"] != float64(e.idA) || got["time"] != "2026-11-22T09:30:00" {
			t.Errorf("entry %d = %v, want %+v", i, got, w)
		}
		if kp, _ := got["key_prefix"].(string); kp == "" || !strings.HasPrefix(e.keyA, kp) || len(kp) > len(prefix) {
			t.Errorf("entry %d key_prefix = %q, want the key's listing prefix (of %q)", i, kp, prefix)
		}
	}
	// Paging, newest first.
	r = must(t, "GET /audit/?limit=2&offset=4", e.a("GET", "/audit?limit=2&offset=4", ""), 200)
	if l := r.list(); len(l) != 2 || l[0]["route"] != "/domains/{domain_name}/retention" || r.header.Get("X-Total-Count") != "10" {
		t.Errorf("GET /audit?limit=2&offset=4 = %s (X-Total-Count %s)", r.body, r.header.Get("X-Total-Count"))
	}
	// Beta sees its own entry only.
	r = must(t, "GET /audit/ as beta", e.b("GET", "/audit/", ""), 200)
	if l := r.list(); len(l) != 1 || l[0]["object"] != "beta.example" || l[0]["partner_id"] != float64(e.idB) {
		t.Errorf("beta's audit = %s, want its domain creation only", r.body)
	}
	must(t, "bad limit", e.a("GET", "/audit/?limit=-1", ""), 422)
}

func TestWebhooksAPI(t *testing.T) {
	e := newEnv(t)
	r := must(t, "create", e.a("POST", "/webhooks/", `{"url":"https://hooks.example.net/mh","events":["mailbox.quota_warning","domain.suspended","domain.suspended"]}`), 201)
	o := r.obj()
	secret, _ := o["secret"].(string)
	if o["id"] == nil || o["url"] != "https://hooks.example.net/mh" || fmt.Sprint(o["events"]) != "[mailbox.quota_warning domain.suspended]" ||
		o["created_at"] != "2026-11-22T09:30:00" || !strings.HasPrefix(secret, "whsec_") || len(secret) < 40 {
		t.Fatalf("POST /webhooks/ = %s", r.body)
	}
	id := int64(o["id"].(float64))
	r = must(t, "list", e.a("GET", "/webhooks", ""), 200)
	if l := r.list(); len(l) != 1 || l[0]["secret"] != nil || r.header.Get("X-Total-Count") != "1" {
		t.Errorf("GET /webhooks = %s, want one without its secret", r.body)
	}
	if l := must(t, "list as beta", e.b("GET", "/webhooks/", ""), 200).list(); len(l) != 0 {
		t.Errorf("beta's webhooks = %v, want none", l)
	}
	must(t, "delete as beta", e.b("DELETE", fmt.Sprintf("/webhooks/%d", id), ""), 404)

	for _, tt := range []struct{ name, body, detail string }{
		{"no url", `{"events":["domain.suspended"]}`, "url"},
		{"ftp", `{"url":"ftp://x.example/","events":["domain.suspended"]}`, "url"},
		{"loopback", `{"url":"http://127.0.0.1:8080/","events":["domain.suspended"]}`, "url"},
		{"private", `{"url":"http://10.1.2.3/","events":["domain.suspended"]}`, "url"},
		{"mapped", `{"url":"http://[::ffff:192.168.1.1]/","events":["domain.suspended"]}`, "url"},
		{"localhost", `{"url":"http://localhost/","events":["domain.suspended"]}`, "url"},
		{"no events", `{"url":"https://x.example/","events":[]}`, "events"},
		{"unknown event", `{"url":"https://x.example/","events":["mail.eaten"]}`, "events"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := must(t, "create", e.a("POST", "/webhooks/", tt.body), 422)
			if !strings.HasPrefix(r.detail(), tt.detail) {
				t.Errorf("detail = %q, want it to name %s", r.detail(), tt.detail)
			}
		})
	}
	must(t, "delete", e.a("DELETE", fmt.Sprintf("/webhooks/%d", id), ""), 200)
	must(t, "delete again", e.a("DELETE", fmt.Sprintf("/webhooks/%d", id), ""), 404)
	must(t, "delete junk", e.a("DELETE", "/webhooks/abc", ""), 404)

	// With private targets allowed (webhook_allow_private), loopback is fine.
	p := newEnv(t, func(c *Config) { c.AllowPrivateWebhooks = true })
	must(t, "create loopback", p.a("POST", "/webhooks/", `{"url":"http://127.0.0.1:9/x","events":["domain.resumed"]}`), 201)
}
