package adminapi

import "testing"

// TestAutoReply: PUT, GET and DELETE /users/{email}/autoreply, its
// validation, and another partner's mailbox answered as missing.
func TestAutoReply(t *testing.T) {
	e := newEnv(t)
	e.seed()
	const path = "/users/alice@alpha.example/autoreply"
	got := must(t, "GET unset", e.a("GET", path, ""), 200).obj()
	if got["enabled"] != false || got["subject"] != "" || got["start"] != nil {
		t.Errorf("GET unset = %v, want disabled and empty", got)
	}
	got = must(t, "PUT", e.a("PUT", path, `{"enabled":true,"subject":"Away","body":"Back soon.\nAlice","start":"2026-12-20T17:00:00","end":"2027-01-05T08:00:00+01:00"}`), 200).obj()
	if got["start"] != "2026-12-20T17:00:00" || got["end"] != "2027-01-05T07:00:00" || got["enabled"] != true {
		t.Errorf("PUT = %v, want the times in UTC without offset", got)
	}
	got = must(t, "GET", e.a("GET", path, ""), 200).obj()
	if got["subject"] != "Away" || got["body"] != "Back soon.\nAlice" || got["end"] != "2027-01-05T07:00:00" {
		t.Errorf("GET = %v", got)
	}
	got = must(t, "PUT without times", e.a("PUT", path, `{"enabled":false,"subject":"Away","body":"b","start":null}`), 200).obj()
	if got["start"] != nil || got["end"] != nil || got["enabled"] != false {
		t.Errorf("PUT without times = %v", got)
	}
	for _, tt := range []struct{ name, body, field string }{
		{"no enabled", `{"subject":"s","body":"b"}`, "enabled"},
		{"enabled not bool", `{"enabled":"yes","subject":"s","body":"b"}`, "enabled"},
		{"empty subject", `{"enabled":true,"subject":" ","body":"b"}`, "subject"},
		{"subject with a line break", `{"enabled":true,"subject":"a\r\nBcc: x@y","body":"b"}`, "subject"},
		{"no body", `{"enabled":true,"subject":"s"}`, "body"},
		{"bad start", `{"enabled":true,"subject":"s","body":"b","start":"tomorrow"}`, "start"},
		{"end before start", `{"enabled":true,"subject":"s","body":"b","start":"2026-12-20T17:00:00","end":"2026-12-20T16:00:00"}`, "end"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := must(t, "PUT", e.a("PUT", path, tt.body), 422)
			if d := r.detail(); len(d) < len(tt.field) || d[:len(tt.field)] != tt.field {
				t.Errorf("detail = %q, want it to name %s", d, tt.field)
			}
		})
	}
	must(t, "other partner GET", e.b("GET", path, ""), 404)
	must(t, "other partner PUT", e.b("PUT", path, `{"enabled":true,"subject":"s","body":"b"}`), 404)
	must(t, "DELETE", e.a("DELETE", path, ""), 200)
	must(t, "DELETE again", e.a("DELETE", path, ""), 200)
	if got := must(t, "GET after delete", e.a("GET", path, ""), 200).obj(); got["enabled"] != false || got["subject"] != "" {
		t.Errorf("GET after delete = %v", got)
	}
	must(t, "unknown mailbox", e.a("PUT", "/users/nobody@alpha.example/autoreply", `{"enabled":true,"subject":"s","body":"b"}`), 404)
}
