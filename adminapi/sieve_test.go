package adminapi

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mailhost/mailhost/mailstore"
)

// TestSieve: PUT, GET and DELETE /users/{email}/sieve, the parse errors
// answered with line and column, the name of a script set over
// ManageSieve kept, and another partner's mailbox answered as missing.
func TestSieve(t *testing.T) {
	e := newEnv(t)
	e.seed()
	ctx := context.Background()
	const path = "/users/alice@alpha.example/sieve"
	if r := must(t, "GET unset", e.a("GET", path, ""), 404); r.detail() != "Sieve script not found" {
		t.Errorf("GET unset detail = %q", r.detail())
	}
	must(t, "DELETE unset", e.a("DELETE", path, ""), 204)

	script := "require \"fileinto\";\nif header :contains \"subject\" \"[list]\" { fileinto \"Lists\"; }\n"
	body, _ := json.Marshal(map[string]string{"script": script})
	if got := must(t, "PUT", e.a("PUT", path, string(body)), 200).obj(); got["script"] != script {
		t.Errorf("PUT = %v", got)
	}
	if got := must(t, "GET", e.a("GET", path, ""), 200).obj(); got["script"] != script {
		t.Errorf("GET = %v", got)
	}
	m, _, err := e.store.MailboxByEmail(ctx, "alice@alpha.example")
	if err != nil {
		t.Fatal(err)
	}
	if sc, err := e.store.ActiveSieveScript(ctx, m.ID); err != nil || sc.Name != "mailhost" || sc.Script != script {
		t.Errorf("active script = %+v, %v; want %q named mailhost", sc, err, script)
	}

	for _, tt := range []struct{ name, script, detail string }{
		{"unknown command", "require \"fileinto\";\n  filein \"x\";", `script: line 2, column 3: unknown command "filein"`},
		{"extension not required", `fileinto "x";`, `script: line 1, column 1: command "fileinto" needs require "fileinto"`},
		{"extension not offered", `require "enotify";`, `script: line 1, column 9: extension "enotify" is not supported`},
		{"too large", "keep;" + strings.Repeat(" ", mailstore.MaxSieveScriptBytes), "script: script of 65541 bytes is larger than 65536"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, _ := json.Marshal(map[string]string{"script": tt.script})
			r := must(t, "PUT", e.a("PUT", path, string(b)), 422)
			if !strings.HasPrefix(r.detail(), tt.detail) {
				t.Errorf("detail = %q, want it to start %q", r.detail(), tt.detail)
			}
		})
	}
	must(t, "PUT without script", e.a("PUT", path, `{}`), 422)
	if got := must(t, "GET after refused PUTs", e.a("GET", path, ""), 200).obj(); got["script"] != script {
		t.Errorf("GET after refused PUTs = %v", got)
	}

	// A script the user made active (over ManageSieve) keeps its name.
	if err := e.store.PutSieveScript(ctx, mailstore.SieveScript{MailboxID: m.ID, Name: "mine", Script: "keep;", Active: true}); err != nil {
		t.Fatal(err)
	}
	must(t, "PUT over the user's", e.a("PUT", path, `{"script":"discard;"}`), 200)
	if sc, err := e.store.ActiveSieveScript(ctx, m.ID); err != nil || sc.Name != "mine" || sc.Script != "discard;" {
		t.Errorf("active script = %+v, %v; want discard; named mine", sc, err)
	}

	must(t, "other partner GET", e.b("GET", path, ""), 404)
	if r := must(t, "other partner PUT", e.b("PUT", path, `{"script":"keep;"}`), 404); r.detail() != "Mailbox not found" {
		t.Errorf("other partner PUT detail = %q", r.detail())
	}
	must(t, "other partner DELETE", e.b("DELETE", path, ""), 404)
	must(t, "unknown mailbox", e.a("PUT", "/users/nobody@alpha.example/sieve", `{"script":"keep;"}`), 404)

	must(t, "DELETE", e.a("DELETE", path, ""), 204)
	must(t, "GET after DELETE", e.a("GET", path, ""), 404)
	must(t, "DELETE again", e.a("DELETE", path, ""), 204)
	list, err := e.store.SieveScripts(ctx, m.ID)
	if err != nil || len(list) != 1 || list[0].Name != "mailhost" || list[0].Active {
		t.Errorf("scripts after DELETE = %+v, %v; want the inactive mailhost alone", list, err)
	}

	// Writes are audited.
	es, _, err := e.store.AuditEntries(ctx, e.idA, mailstore.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, en := range es {
		if en.Route == "/users/{email}/sieve" {
			seen[en.Method] = true
		}
	}
	if !seen["PUT"] || !seen["DELETE"] {
		t.Errorf("audit of sieve routes: %v, want PUT and DELETE", seen)
	}
}
