// Package console is the partners' web console: static HTML, CSS and
// JavaScript modules, embedded in the binary and served at /console/ on
// the HTTP listener. The console holds no state and has no routes of its
// own: the page signs in with the partner's API key and calls the public
// management API from the browser, same origin, so it can do exactly what
// the API does and nothing more. The key is kept in the tab's
// sessionStorage; it never travels in a URL or a cookie, so it never
// reaches a server log.
package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

// Prefix is the path the console is served under.
const Prefix = "/console/"

//go:embed static
var static embed.FS

// securityHeaders are set on every console answer, files and errors alike.
//
// The policy allows only this origin's scripts, styles and API calls: no
// inline script or style, no eval, no third-party asset, no framing.
// require-trusted-types-for makes the browser refuse any string assigned
// to an HTML sink (innerHTML, outerHTML, insertAdjacentHTML,
// document.write): the console builds its DOM with createElement and
// textContent only, and this turns a slip into a visible error instead of
// an injection. form-action 'none' keeps a form from ever being submitted
// by the browser itself (the key input has no name either), so the key
// cannot end up in a URL even when a script fails.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; " +
		"img-src 'self'; connect-src 'self'; font-src 'none'; object-src 'none'; " +
		"base-uri 'none'; form-action 'none'; frame-ancestors 'none'; " +
		"require-trusted-types-for 'script'; trusted-types 'none'",
	"X-Frame-Options":              "DENY",
	"X-Content-Type-Options":       "nosniff",
	"Referrer-Policy":              "no-referrer",
	"Cross-Origin-Opener-Policy":   "same-origin",
	"Cross-Origin-Resource-Policy": "same-origin",
	"Permissions-Policy":           "camera=(), microphone=(), geolocation=(), payment=()",
}

// file is one embedded file, ready to serve.
type file struct {
	body        []byte
	contentType string
	etag        string
}

// Handler serves the console.
type Handler struct {
	files map[string]file
	// modTime is the process start: embedded files have no time of their
	// own, and the ETag is what revalidation relies on.
	modTime time.Time
}

// New returns the console's handler. It reads the embedded files once.
func New() *Handler {
	h := &Handler{files: map[string]file{}, modTime: time.Now()}
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embed pattern names the directory: cannot happen
	}
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(sub, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		ct := mime.TypeByExtension(path.Ext(p))
		if path.Ext(p) == ".js" {
			// Module scripts must have a JavaScript MIME type, and the
			// system's MIME table may lack one or say text/plain.
			ct = "text/javascript; charset=utf-8"
		}
		h.files[p] = file{body: b, contentType: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		panic(err) // embedded files are always readable
	}
	return h
}

// Files returns the names of the embedded files, relative to Prefix, and
// their sizes in bytes.
func (h *Handler) Files() map[string]int {
	m := make(map[string]int, len(h.files))
	for p, f := range h.files {
		m[p] = len(f.body)
	}
	return m
}

// ServeHTTP serves GET and HEAD of the embedded files under Prefix;
// Prefix itself is index.html, and /console (no slash) redirects there.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for k, v := range securityHeaders {
		w.Header().Set(k, v)
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "Method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if r.URL.Path == strings.TrimSuffix(Prefix, "/") {
		http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
		return
	}
	name := strings.TrimPrefix(r.URL.Path, Prefix)
	if name == "" {
		name = "index.html"
	}
	f, ok := h.files[name]
	if !ok {
		http.Error(w, "Not found", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", f.contentType)
	w.Header().Set("ETag", f.etag)
	// Revalidate every time: a new binary may bring new files under the
	// same names, and a 304 costs one small round trip on loopback or LAN.
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, name, h.modTime, bytes.NewReader(f.body))
}

// Mount returns a handler that serves the console under Prefix (and the
// bare /console) and passes every other request to next. It is a prefix
// test rather than an http.ServeMux so that next keeps seeing requests
// exactly as they came: a mux would redirect unclean paths that the API
// answers itself.
func Mount(next http.Handler) http.Handler {
	c := New()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, Prefix) || r.URL.Path == strings.TrimSuffix(Prefix, "/") {
			c.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}
