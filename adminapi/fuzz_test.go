package adminapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// serve sends one request to the handler and checks the answer is among
// want and fits the document.
func serve(t *testing.T, a *API, key, method, target, body string, want ...int) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, "http://api"+target, strings.NewReader(body))
	if err != nil {
		t.Skip("not a request target net/http accepts")
	}
	req.Header.Set("Authorization", "Bearer "+key)
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, req)
	r := resp{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
	ok := false
	for _, w := range want {
		ok = ok || r.status == w
	}
	if !ok {
		t.Fatalf("%s %s %q = %d %s, want one of %v", method, target, body, r.status, r.body, want)
	}
	checkResponse(t, method, req.URL.EscapedPath(), r)
}

// FuzzBody sends arbitrary JSON bodies to every endpoint that reads one
// (but mailbox creation, whose argon2id hash would slow the fuzzer to a
// crawl; its validation is the same code). Answers are 2xx or the
// documented client errors, never a 5xx, a panic or a plain-text body.
func FuzzBody(f *testing.F) {
	for _, s := range []string{
		`{"retention_days":30}`, `{"transfer_monthly_mb":1.5}`, `{"quota_mb":"100"}`, `{"plan":"Business"}`,
		`{"max_mailboxes":1,"max_aliases":true}`, `{"name":"x.example","plan":null}`, `[]`, `null`, `{`, `""`,
		`{"domain_name":"alpha.example","source":"@alpha.example","destination":"a@b.example"}`,
		`{"source":"` + strings.Repeat("a", 70) + `@alpha.example"}`, `{"retention_days":1e400}`, "\x00\xff",
	} {
		f.Add(s)
	}
	e := newEnv(f)
	ctx := context.Background()
	if _, err := e.store.CreateDomain(ctx, e.idA, newDomain("alpha.example"), testNow); err != nil {
		f.Fatal(err)
	}
	targets := []struct{ method, path string }{
		{"POST", "/domains/"},
		{"PUT", "/domains/alpha.example/plan"},
		{"PUT", "/domains/alpha.example/limits"},
		{"PUT", "/domains/alpha.example/retention"},
		{"PUT", "/domains/alpha.example/transfer"},
		{"PUT", "/users/nobody@alpha.example"},
		{"PUT", "/users/nobody@alpha.example/quota"},
		{"POST", "/aliases/"},
	}
	f.Fuzz(func(t *testing.T, body string) {
		for _, tg := range targets {
			serve(t, e.api, e.keyA, tg.method, tg.path, body, 200, 201, 400, 403, 404, 413, 422)
		}
	})
}

// FuzzPathAddress puts arbitrary text where the paths take an address or
// a domain name, both percent-encoded and raw: answers are 200 or 404
// (or 409 for a non-empty domain), never a redirect, a 5xx or a panic.
func FuzzPathAddress(f *testing.F) {
	for _, s := range []string{
		"alice@alpha.example", "ALICE@Alpha.Example", "@alpha.example", "sales@alpha.example", "alpha.example",
		"a/b@alpha.example", "..", ".", "", "%", "a%40b", "bücher.example", "x@xn--bcher-kva.example", "\x00", " ",
		"a@b@c", strings.Repeat("a", 300) + "@alpha.example", "?force=true", "#",
	} {
		f.Add(s)
	}
	e := newEnv(f)
	ctx := context.Background()
	if _, err := e.store.CreateDomain(ctx, e.idA, newDomain("alpha.example"), testNow); err != nil {
		f.Fatal(err)
	}
	if _, err := e.store.CreateMailbox(ctx, e.idA, "alpha.example", "alice@alpha.example", fakeHash, testNow); err != nil {
		f.Fatal(err)
	}
	templates := []struct{ method, path string }{
		{"GET", "/users/%s/quota"},
		{"GET", "/users/%s/usage"},
		{"GET", "/domains/%s"},
		{"GET", "/domains/%s/usage"},
		{"GET", "/domains/%s/retention"},
		{"GET", "/domains/%s/transfer"},
		{"DELETE", "/aliases/%s"},
		{"DELETE", "/domains/%s"},
	}
	f.Fuzz(func(t *testing.T, addr string) {
		for _, tp := range templates {
			for _, p := range []string{url.PathEscape(addr), addr} {
				target := strings.Replace(tp.path, "%s", p, 1)
				if _, err := url.ParseRequestURI("http://api" + target); err != nil || strings.ContainsAny(p, "?#") {
					continue
				}
				serve(t, e.api, e.keyA, tp.method, target, "", 200, 404, 405, 409)
			}
		}
	})
}
