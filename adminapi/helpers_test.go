package adminapi

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailhost/mailhost/credential"
	"github.com/mailhost/mailhost/mailauth"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
	"github.com/mailhost/mailhost/policy"
)

// testNow is the clock of every test server.
var testNow = time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)

// env is a running API over a fresh bbolt store, with two partners.
type env struct {
	t     testing.TB
	dir   string
	store *boltstore.Store
	srv   *httptest.Server
	api   *API
	keyA  string // partner "alpha"
	keyB  string // partner "beta"
	idA   int64
	idB   int64
	logs  *logBuffer
}

// logBuffer collects the API's log lines.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type envOpt func(*Config)

// testKeys are the DKIM keys every domain of the tests gets: generated
// once per test binary, since RSA-2048 generation takes up to 200 ms.
var testKeys = sync.OnceValues(func() ([]mailstore.DKIMKey, error) {
	return mailauth.GenerateDKIMKeys(testNow)
})

// fastKeys is the tests' Config.GenerateDKIMKeys.
func fastKeys(time.Time) ([]mailstore.DKIMKey, error) { return testKeys() }

// newEnv starts an API on 127.0.0.1 over a store in t.TempDir(); rate
// limits are out of the way unless an option sets them.
func newEnv(t testing.TB, opts ...envOpt) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), logs: &logBuffer{}}
	ctx := context.Background()
	st, err := boltstore.Open(ctx, e.dir, boltstore.Options{})
	if err != nil {
		t.Fatalf("Open() = %v", err)
	}
	e.store = st
	t.Cleanup(func() { e.store.Close() })
	e.idA, e.keyA = addPartner(t, st, "alpha")
	e.idB, e.keyB = addPartner(t, st, "beta")
	e.start(opts...)
	return e
}

func (e *env) start(opts ...envOpt) {
	cfg := Config{
		Store: e.store, Plans: policy.NewPlans(nil),
		Logger:              slog.New(slog.NewTextHandler(e.logs, nil)),
		Now:                 func() time.Time { return testNow },
		DefaultMaxMailboxes: 1000, DefaultMaxAliases: 1000,
		RateLimit: 1e6, RateBurst: 1e6,
		Hostname:         "mx.mailhost.test",
		GenerateDKIMKeys: fastKeys,
	}
	for _, o := range opts {
		o(&cfg)
	}
	e.api = New(cfg)
	e.srv = httptest.NewServer(e.api)
	e.t.Cleanup(e.srv.Close)
}

// addPartner makes a partner and an API key for it.
func addPartner(t testing.TB, st mailstore.Store, name string) (int64, string) {
	t.Helper()
	ctx := context.Background()
	p, err := st.CreatePartner(ctx, name, testNow)
	if err != nil {
		t.Fatalf("CreatePartner(%s) = %v", name, err)
	}
	key, lookup, prefix, hash, err := credential.NewAPIKey()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.AddAPIKey(ctx, p.ID, mailstore.APIKey{Lookup: lookup, Prefix: prefix, SecretHash: hash, CreatedAt: testNow}); err != nil {
		t.Fatalf("AddAPIKey() = %v", err)
	}
	return p.ID, key
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// fakeHash stands for an argon2id hash where a test makes mailboxes
// through the store: the store keeps it opaque.
const fakeHash = "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g"

// newDomain is a starter domain without count limits.
func newDomain(name string) mailstore.NewDomain {
	p, _ := policy.NewPlans(nil).Get("starter")
	return mailstore.NewDomain{Name: name, Plan: p}
}

// resp is an answer of the API.
type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) detail() string {
	var e struct{ Detail string }
	json.Unmarshal(r.body, &e)
	return e.Detail
}

func (r resp) obj() map[string]any {
	var m map[string]any
	json.Unmarshal(r.body, &m)
	return m
}

func (r resp) list() []map[string]any {
	var l []map[string]any
	json.Unmarshal(r.body, &l)
	return l
}

// raw sends a request with the given key ("" for none) and body (""
// for none) and checks the answer against openapi.json.
func (e *env) raw(method, path, key, body string, hdr ...string) resp {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatalf("NewRequest(%s %s) = %v", method, path, err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	r := resp{status: res.StatusCode, header: res.Header, body: b}
	checkResponse(e.t, method, req.URL.EscapedPath(), r)
	return r
}

// a and b call as partner alpha and beta.
func (e *env) a(method, path, body string) resp {
	e.t.Helper()
	return e.raw(method, path, e.keyA, body)
}

func (e *env) b(method, path, body string) resp {
	e.t.Helper()
	return e.raw(method, path, e.keyB, body)
}

// must fails the test unless r has status want.
func must(t testing.TB, what string, r resp, want int) resp {
	t.Helper()
	if r.status != want {
		t.Fatalf("%s = %d %s, want %d", what, r.status, r.body, want)
	}
	return r
}

// seed gives partner alpha a domain with a mailbox and an alias, and
// partner beta a domain of its own.
func (e *env) seed() {
	e.t.Helper()
	must(e.t, "create domain", e.a("POST", "/domains/", `{"name":"alpha.example"}`), 201)
	must(e.t, "create mailbox", e.a("POST", "/users/", `{"domain_name":"alpha.example","email":"alice@alpha.example","password":"password123"}`), 201)
	must(e.t, "create alias", e.a("POST", "/aliases/", `{"domain_name":"alpha.example","source":"sales@alpha.example","destination":"alice@alpha.example"}`), 201)
	must(e.t, "create domain", e.b("POST", "/domains/", `{"name":"beta.example"}`), 201)
}
