// Package adminapi is mailhost's management REST API: partners manage their
// domains, mailboxes, aliases and limits with an API key. The contract is
// the partner contract (docs/api.md); the whole route table is in
// routes.go and the OpenAPI 3.1 document in openapi.json.
package adminapi

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/mailhost/mailhost/autoconfig"
	"github.com/mailhost/mailhost/credential"
	"github.com/mailhost/mailhost/mailauth"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/policy"
)

// Config is what New needs. Store and Plans are required; the other
// fields have the documented defaults for their zero values.
type Config struct {
	Store Store
	Plans *policy.Plans
	// Logger receives one line per request; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// DefaultMaxMailboxes and DefaultMaxAliases are the count limits of a
	// new domain whose create call names none; 0 means unlimited.
	DefaultMaxMailboxes int64
	DefaultMaxAliases   int64
	// RateLimit is the sustained requests per second allowed per API key;
	// 0 means 20. RateBurst is how many a key may send at once; 0 means 100.
	RateLimit float64
	RateBurst int
	// Share, when set, is this node's part of the cluster's limits (the
	// rate per key and the failed authentications per address): each of
	// n live nodes allows 1/n of them.
	Share *policy.Share
	// Hostname is this server's host name: the MX target and the mail
	// client server of the records GET /domains/{domain_name}/dns lists.
	// "" means the system's host name.
	Hostname string
	// GenerateDKIMKeys makes the DKIM keys of a new domain (and of one
	// created before keys existed, on its first DNS listing); nil means
	// mailauth.GenerateDKIMKeys. Tests give a fast one: RSA-2048
	// generation takes 50 to 200 ms.
	GenerateDKIMKeys func(now time.Time) ([]mailstore.DKIMKey, error)
	// Passwords bounds the memory-hard password hashes of mailbox
	// creation and password changes; the wiring shares it with the mail
	// logins so that one bound holds for all. nil: a bound of its own
	// (credential.NewVerifier(0)).
	Passwords *credential.Verifier
	// DNS answers the ownership checks of POST /domains/{domain_name}/verify;
	// nil means net.DefaultResolver. The wiring gives the resolver of the
	// `dns` setting without the cache of the mail checks: a partner who
	// has just published the record and asks again must not be answered
	// from a cached "not found".
	DNS mailauth.OwnershipResolver
	// OnResume is called after a domain is resumed (also when it was not
	// suspended: resume is safe to repeat), before the answer: the wiring
	// sends the mail the domain queued while suspended. nil: nothing.
	OnResume func(ctx context.Context, d mailstore.Domain)
	// Clients are the host and ports mail clients are told (autoconfig,
	// Autodiscover, Apple profiles); a zero Host means Hostname. With no
	// IMAP or no submission port, those endpoints answer 404.
	Clients autoconfig.Servers
	// AllowPrivateWebhooks lets webhooks point to loopback and private
	// addresses (the webhook_allow_private setting; for tests and
	// private networks). false: such URLs are refused (SSRF).
	AllowPrivateWebhooks bool
	// SpamDefault is the spam filter of domains without their own
	// setting, as GET /domains/{domain_name}/spam reports it (the
	// spam_filter setting). "" means "junk".
	SpamDefault string
	// Metrics, when set, is told of every request. nil: none.
	Metrics Metrics
	// OnKeyFirstUse, when set, is called with a key's id the first time
	// a request authenticates with that key in this process, before the
	// request is handled; once per key id. The wiring deletes the first
	// start's key file (service.KeyFileName) once its key has been used.
	// It must not block. nil: nothing.
	OnKeyFirstUse func(keyID int64)
}

// Metrics is told of the API's requests, for monitoring; the wiring
// gives a *metrics.API.
type Metrics interface {
	// Request counts a request answered with status after d; route is
	// the pattern of the route table that took it ("" for none), never
	// the path.
	Request(route string, status int, d time.Duration)
}

// API is the management API; it implements http.Handler.
type API struct {
	store   Store
	plans   *policy.Plans
	log     *slog.Logger
	now     func() time.Time
	maxMbx  int64
	maxAls  int64
	mux     *http.ServeMux
	limiter *policy.Limiter
	// failures limits failed authentications per client address.
	failures *policy.Limiter
	// passwords bounds concurrent argon2id hashes (19 MiB each), so a
	// burst of mailbox creations cannot exhaust memory.
	passwords *credential.Verifier
	hostname  string
	genKeys   func(now time.Time) ([]mailstore.DKIMKey, error)
	// keySlots bounds concurrent DKIM key generations, each a core busy
	// for up to 200 ms, so a burst of domain creations leaves CPU to mail.
	keySlots chan struct{}
	onResume func(ctx context.Context, d mailstore.Domain)
	dns      mailauth.OwnershipResolver
	// clients answers the mail clients' set-up requests with
	// clientServers.
	clients       *autoconfig.Handler
	clientServers autoconfig.Servers
	// allowPrivateHooks is Config.AllowPrivateWebhooks.
	allowPrivateHooks bool
	metrics           Metrics
	spamDefault       string
	onKeyFirstUse     func(keyID int64)
	// keysUsed holds the ids of the keys onKeyFirstUse was called for.
	keysUsed sync.Map
}

// New returns the API for cfg.
func New(cfg Config) *API {
	a := &API{
		store:     cfg.Store,
		plans:     cfg.Plans,
		log:       cfg.Logger,
		now:       cfg.Now,
		maxMbx:    cfg.DefaultMaxMailboxes,
		maxAls:    cfg.DefaultMaxAliases,
		passwords: cfg.Passwords,
		hostname:  cfg.Hostname,
		genKeys:   cfg.GenerateDKIMKeys,
		keySlots:  make(chan struct{}, 2),
		onResume:  cfg.OnResume,
		dns:       cfg.DNS,

		allowPrivateHooks: cfg.AllowPrivateWebhooks,
		metrics:           cfg.Metrics,
		onKeyFirstUse:     cfg.OnKeyFirstUse,
	}
	if a.dns == nil {
		a.dns = net.DefaultResolver
	}
	if a.log == nil {
		a.log = slog.Default()
	}
	if a.passwords == nil {
		a.passwords = credential.NewVerifier(0)
	}
	if a.now == nil {
		a.now = time.Now
	}
	if a.plans == nil {
		a.plans = policy.NewPlans(nil)
	}
	if a.hostname == "" {
		a.hostname, _ = os.Hostname()
	}
	a.clientServers = cfg.Clients
	a.spamDefault = cfg.SpamDefault
	if a.spamDefault == "" {
		a.spamDefault = mailstore.SpamFilterJunk
	}
	if a.clientServers.Host == "" {
		a.clientServers.Host = a.hostname
	}
	a.clients = autoconfig.New(autoconfig.Config{Servers: a.clientServers, Domains: a.store, Logger: a.log})
	if a.genKeys == nil {
		a.genKeys = mailauth.GenerateDKIMKeys
	}
	rate, burst := cfg.RateLimit, cfg.RateBurst
	if rate <= 0 {
		rate = 20
	}
	if burst <= 0 {
		burst = 100
	}
	// One request per key, rate a second after a burst.
	a.limiter = policy.NewLimiter(rate, burst).Shared(cfg.Share)
	a.failures = policy.NewLimiter(failureRate, failureBurst).Shared(cfg.Share)
	a.mux = http.NewServeMux()
	a.routes(a.mux.HandleFunc)
	return a
}

// collections are the list resources; each answers with and without the
// trailing slash, without a redirect (docs/api.md, Conventions).
var collections = map[string]string{
	"/users":    "/users/",
	"/aliases":  "/aliases/",
	"/domains":  "/domains/",
	"/webhooks": "/webhooks/",
	"/audit":    "/audit/",
	"/plans/":   "/plans",
	"/healthz/": "/healthz",
}

// reqState is what the logging wrapper learns from the handler.
type reqState struct {
	partnerID int64
	pattern   string
	// keyPrefix and object are for the audit log: the key's listing
	// prefix, and what the request wrote (setObject, noteObject).
	keyPrefix string
	object    string
}

type stateKey struct{}

func state(ctx context.Context) *reqState {
	s, _ := ctx.Value(stateKey{}).(*reqState)
	if s == nil {
		s = &reqState{}
	}
	return s
}

// ServeHTTP routes a request; unknown paths answer 404 and wrong methods
// 405, both as JSON, where the standard mux would write plain text or
// redirect.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	st := &reqState{}
	r = r.WithContext(context.WithValue(r.Context(), stateKey{}, st))
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}

	if to, ok := collections[r.URL.Path]; ok {
		r.URL.Path, r.URL.RawPath = to, ""
	}
	// The mux answers only requests it routes; a path it would redirect
	// (dot segments, "//") or not find, and a method it would refuse, are
	// answered here in JSON.
	switch {
	case !cleanPath(r.URL.Path):
		writeError(rec, r, errNotFound)
	case a.routed(r):
		a.mux.ServeHTTP(rec, r)
	default:
		if allow := a.allowed(r); len(allow) > 0 {
			rec.Header().Set("Allow", strings.Join(allow, ", "))
			writeError(rec, r, errMethod)
		} else {
			writeError(rec, r, errNotFound)
		}
	}

	took := time.Since(start)
	if a.metrics != nil {
		a.metrics.Request(st.pattern, rec.status, took)
	}
	a.audit(r, st, rec.status)

	attrs := []any{
		"method", r.Method,
		"route", st.pattern,
		"status", rec.status,
		"duration_ms", float64(took.Microseconds()) / 1000,
	}
	if st.partnerID != 0 {
		attrs = append(attrs, "partner_id", st.partnerID)
	}
	a.log.Info("api request", attrs...)
}

// cleanPath reports whether p is already in the form the mux would not
// redirect (no "//", ".", ".." segments).
func cleanPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c == p
}

// routed reports whether a route of the table takes r.
func (a *API) routed(r *http.Request) bool {
	_, pattern := a.mux.Handler(r)
	return pattern != ""
}

// methods are those the API uses; allowed probes them for a 405's Allow.
var methods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete}

func (a *API) allowed(r *http.Request) []string {
	var allow []string
	for _, m := range methods {
		probe := r.Clone(r.Context())
		probe.Method = m
		if a.routed(probe) {
			allow = append(allow, m)
		}
	}
	return allow
}

// recorder remembers the status written, for the request log.
type recorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
