package console

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mailhost/mailhost/mailstore"
)

func get(t *testing.T, h http.Handler, method, path string, hdr ...string) *http.Response {
	t.Helper()
	r := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result()
}

// TestFiles: each file is served with its type and the security headers;
// the prefix is index.html, the bare /console redirects, other names are
// 404 and other methods 405, all with the headers.
func TestFiles(t *testing.T) {
	h := New()
	tests := []struct {
		name, method, path string
		status             int
		contentType        string
	}{
		{"index", "GET", "/console/", 200, "text/html; charset=utf-8"},
		{"index by name", "GET", "/console/index.html", 200, "text/html; charset=utf-8"},
		{"module", "GET", "/console/app.js", 200, "text/javascript; charset=utf-8"},
		{"stylesheet", "GET", "/console/console.css", 200, "text/css; charset=utf-8"},
		{"icon", "GET", "/console/icon.svg", 200, "image/svg+xml"},
		{"head", "HEAD", "/console/api.js", 200, "text/javascript; charset=utf-8"},
		{"bare prefix", "GET", "/console", 301, ""},
		{"unknown", "GET", "/console/nope.js", 404, ""},
		{"traversal", "GET", "/console/../console.go", 404, ""},
		{"post", "POST", "/console/", 405, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := get(t, h, tc.method, tc.path)
			if res.StatusCode != tc.status {
				t.Fatalf("%s %s = %d, want %d", tc.method, tc.path, res.StatusCode, tc.status)
			}
			if tc.contentType != "" && res.Header.Get("Content-Type") != tc.contentType {
				t.Errorf("Content-Type = %q, want %q", res.Header.Get("Content-Type"), tc.contentType)
			}
			for k, v := range securityHeaders {
				if got := res.Header.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

// TestPolicy: the Content-Security-Policy allows nothing but this origin
// and forbids inline code, framing and HTML sinks.
func TestPolicy(t *testing.T) {
	csp := securityHeaders["Content-Security-Policy"]
	for _, want := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'",
		"frame-ancestors 'none'", "object-src 'none'", "require-trusted-types-for 'script'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("policy %q lacks %q", csp, want)
		}
	}
	for _, bad := range []string{"unsafe-inline", "unsafe-eval", "http:", "https:", "*"} {
		if strings.Contains(csp, bad) {
			t.Errorf("policy %q allows %q", csp, bad)
		}
	}
	if securityHeaders["X-Frame-Options"] != "DENY" {
		t.Errorf("X-Frame-Options = %q, want DENY", securityHeaders["X-Frame-Options"])
	}
}

// TestRevalidation: a browser that has a file revalidates it with its
// ETag and gets a 304.
func TestRevalidation(t *testing.T) {
	h := New()
	res := get(t, h, "GET", "/console/app.js")
	etag := res.Header.Get("ETag")
	if etag == "" || res.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("ETag = %q, Cache-Control = %q; want an ETag and no-cache", etag, res.Header.Get("Cache-Control"))
	}
	if res := get(t, h, "GET", "/console/app.js", "If-None-Match", etag); res.StatusCode != http.StatusNotModified {
		t.Errorf("GET with If-None-Match = %d, want 304", res.StatusCode)
	}
}

// TestMount: the console takes /console and what is under it; every other
// request reaches the API unchanged, unclean paths included (a mux would
// redirect those).
func TestMount(t *testing.T) {
	var got []string
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.URL.Path)
		w.WriteHeader(http.StatusTeapot)
	})
	m := Mount(api)
	for _, p := range []string{"/domains/", "/users//x", "/consoles", "/", "/a/../console/"} {
		if res := get(t, m, "GET", p); res.StatusCode != http.StatusTeapot {
			t.Errorf("GET %s = %d, want the API's 418", p, res.StatusCode)
		}
	}
	if len(got) != 5 || got[1] != "/users//x" {
		t.Errorf("API saw %q, want the paths as sent", got)
	}
	for _, p := range []string{"/console", "/console/", "/console/app.js"} {
		if res := get(t, m, "GET", p); res.StatusCode == http.StatusTeapot {
			t.Errorf("GET %s reached the API", p)
		}
	}
}

// firstLoadBudget is the bound on what a first visit fetches.
const firstLoadBudget = 200 << 10

// TestSize: every embedded file together, which is more than a first
// visit fetches, stays within the first-load budget.
func TestSize(t *testing.T) {
	total := 0
	for _, n := range New().Files() {
		total += n
	}
	t.Logf("embedded files: %d bytes", total)
	if total > firstLoadBudget {
		t.Errorf("embedded files = %d bytes, want at most %d", total, firstLoadBudget)
	}
}

// TestNoHTMLSinks: the scripts build the page with createElement and
// textContent only, load nothing from another origin, and index.html
// has no inline script or style. The browser enforces the first two
// through the policy too; this catches them before a browser runs.
func TestNoHTMLSinks(t *testing.T) {
	h := New()
	sinks := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|setAttribute\("on`)
	// The SVG namespace is a name, not a fetch.
	remote := regexp.MustCompile(`(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/`)
	for name := range h.Files() {
		body := h.files[name].body
		if strings.HasSuffix(name, ".js") {
			if m := sinks.Find(body); m != nil {
				t.Errorf("%s uses %s", name, m)
			}
		}
		for _, m := range remote.FindAll(body, -1) {
			if string(m) != "http://www.w3.org/" {
				t.Errorf("%s refers to %s", name, m)
			}
		}
	}
	index := string(h.files["index.html"].body)
	if regexp.MustCompile(`<script(?:[^>]*?)>\s*[^<\s]`).MatchString(index) || strings.Contains(index, "<style") ||
		regexp.MustCompile(`\s(style|on[a-z]+)=`).MatchString(index) {
		t.Error("index.html has inline script or style")
	}
	for _, s := range regexp.MustCompile(`<script[^>]*>`).FindAllString(index, -1) {
		if !strings.Contains(s, "src=") {
			t.Errorf("index.html: %s has no src", s)
		}
	}
	res := get(t, h, "GET", "/console/")
	b, _ := io.ReadAll(res.Body)
	if !strings.Contains(string(b), `<script type="module" src="app.js">`) {
		t.Error("index.html does not load app.js as a module")
	}
}

// TestWebhookEvents: the webhooks page offers exactly the server's event
// types, in its order: the API has no route that lists them.
func TestWebhookEvents(t *testing.T) {
	js := string(New().files["webhooks.js"].body)
	start := strings.Index(js, "export const events = [")
	end := strings.Index(js[start:], "\n];")
	if start < 0 || end < 0 {
		t.Fatal("webhooks.js has no events list")
	}
	var got []string
	for _, m := range regexp.MustCompile(`\["([a-z_.]+)", "`).FindAllStringSubmatch(js[start:start+end], -1) {
		got = append(got, m[1])
	}
	if !slices.Equal(got, mailstore.EventTypes) {
		t.Errorf("webhooks.js offers %q, want the server's %q", got, mailstore.EventTypes)
	}
}
