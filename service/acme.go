package service

// Certificates from an ACME CA (acme = true), with
// golang.org/x/crypto/acme/autocert: the Go team's client, already a
// dependency through x/crypto, small, and enough for one host name and a
// few names per hosted domain (certmagic adds on-demand issuance for
// thousands of names, OCSP stapling and its own storage layer, none of
// which mailhost needs, for many more dependencies).
//
// What autocert is given:
//   - Cache: the store (mailstore.Certs), so the account key, the
//     certificates and the HTTP-01 tokens are shared by the nodes of a
//     PostgreSQL store: a certificate one node obtained serves the others
//     without a new order, and a challenge one node started is answered
//     by whichever node the CA reaches.
//   - HostPolicy: hostname, and mta-sts., autoconfig. and autodiscover. of
//     each verified hosted domain (the names README's DNS records point
//     here); nothing else, so that a client's SNI cannot make us order
//     certificates for names we do not serve.
//
// What is around it (certSource):
//   - hostname's certificate is obtained in the background at start, and
//     again with a backoff while that fails; until it succeeds handshakes
//     get the self-signed certificate, so mail starts at once (senders to
//     an MX accept any certificate) and a failing CA does not make every
//     handshake wait for an order.
//   - A handshake without SNI (many SMTP clients send none) or with a name
//     the policy refuses gets hostname's certificate, as before ACME.
//   - Another allowed name that fails is not ordered again for
//     nameRetryAfter: each handshake would otherwise start a new order,
//     and CAs limit failed orders.
//   - Renewal is autocert's (30 days before expiry, in the background);
//     every handshake asks GetCertificate, so a renewed certificate is
//     used at once by SMTP, submission, IMAP and https, without a restart.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/acme"
	"golang.org/x/crypto/acme/autocert"

	"github.com/mailhost/mailhost/config"
	"github.com/mailhost/mailhost/mailstore"
)

// nameRetryAfter is how long a name other than hostname whose order failed
// is served hostname's certificate instead of being ordered again.
const nameRetryAfter = 10 * time.Minute

// clientNames are the labels, under each verified hosted domain, that
// get a certificate: MTA-STS (RFC 8461 section 3.3) and the mail client
// set-up CNAMEs mailauth publishes.
var clientNames = []string{"mta-sts.", "autoconfig.", "autodiscover."}

// acmeConfig is what newCertSource needs.
type acmeConfig struct {
	Hostname  string
	Directory string
	Email     string
	// HTTPClient talks to the CA; nil: http.DefaultClient (tests pass one
	// that trusts their CA's certificate).
	HTTPClient *http.Client
	Store      certStore
	// Fallback is served until hostname's certificate arrives.
	Fallback *tls.Certificate
	Logger   *slog.Logger
	Now      func() time.Time
}

// certStore is what the ACME client needs of the store.
type certStore interface {
	mailstore.Certs
	DomainByName(ctx context.Context, name string) (mailstore.Domain, error)
}

// certSource hands out ACME certificates to the TLS listeners.
type certSource struct {
	m        *autocert.Manager
	hostname string
	fallback *tls.Certificate
	log      *slog.Logger
	now      func() time.Time
	// ready is set once hostname's certificate is in the manager.
	ready atomic.Bool

	// mu guards failed.
	mu sync.Mutex
	// failed holds, per name other than hostname, when its last order
	// failed.
	failed map[string]time.Time
}

func newCertSource(c acmeConfig) *certSource {
	s := &certSource{
		hostname: strings.ToLower(strings.TrimSuffix(c.Hostname, ".")),
		fallback: c.Fallback,
		log:      c.Logger,
		now:      c.Now,
		failed:   map[string]time.Time{},
	}
	s.m = &autocert.Manager{
		Prompt:     autocert.AcceptTOS,
		Cache:      certCache{c.Store},
		HostPolicy: s.policy(c.Store),
		Email:      c.Email,
		Client:     &acme.Client{DirectoryURL: c.Directory, HTTPClient: c.HTTPClient, UserAgent: "mailhost"},
	}
	return s
}

// policy allows hostname and the client names of verified hosted domains.
func (s *certSource) policy(st certStore) autocert.HostPolicy {
	return func(ctx context.Context, host string) error {
		// The HTTP-01 handler passes the request's Host, with the port
		// when it is not 80 (Pebble's tests, a proxy).
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.ToLower(strings.TrimSuffix(host, "."))
		if host == s.hostname {
			return nil
		}
		for _, p := range clientNames {
			d, ok := strings.CutPrefix(host, p)
			if !ok {
				continue
			}
			dom, err := st.DomainByName(ctx, d)
			if err != nil {
				return fmt.Errorf("certificate for %s: %w", host, err)
			}
			if !dom.Verified {
				return fmt.Errorf("certificate for %s: domain %s is not verified", host, d)
			}
			return nil
		}
		return fmt.Errorf("certificate for %s: not a name this server has certificates for", host)
	}
}

// HTTPHandler answers HTTP-01 challenges and passes other requests to
// fallback (nil: a redirect to https). It must be called before the
// first order for HTTP-01 to be offered.
func (s *certSource) HTTPHandler(fallback http.Handler) http.Handler {
	return s.m.HTTPHandler(fallback)
}

// TLSConfig is the configuration of a TLS listener served from s; alpn
// adds ACME's TLS-ALPN-01 protocol (the https listener only: the CA
// validates on port 443).
func (s *certSource) TLSConfig(alpn bool) *tls.Config {
	c := &tls.Config{GetCertificate: s.GetCertificate, MinVersion: tls.VersionTLS12}
	if alpn {
		c.NextProtos = []string{"h2", "http/1.1", acme.ALPNProto}
	}
	return c
}

// GetCertificate is tls.Config.GetCertificate for every listener.
func (s *certSource) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if len(hello.SupportedProtos) == 1 && hello.SupportedProtos[0] == acme.ALPNProto {
		// The CA validating a TLS-ALPN-01 challenge.
		return s.m.GetCertificate(hello)
	}
	name := strings.ToLower(strings.TrimSuffix(hello.ServerName, "."))
	if name != "" && name != s.hostname {
		if err := s.m.HostPolicy(context.Background(), name); err == nil && s.mayOrder(name) {
			h := *hello
			h.ServerName = name
			cert, err := s.m.GetCertificate(&h)
			if err == nil {
				return cert, nil
			}
			s.orderFailed(name, err)
		}
	}
	if !s.ready.Load() {
		return s.fallback, nil
	}
	h := *hello
	h.ServerName = s.hostname
	cert, err := s.m.GetCertificate(&h)
	if err != nil {
		// The certificate was there; the manager lost it (it failed to
		// renew and expired): keep TLS working with the self-signed one.
		s.log.Warn("ACME certificate unavailable; serving the self-signed one", "name", s.hostname, "err", err)
		return s.fallback, nil
	}
	return cert, nil
}

func (s *certSource) mayOrder(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.failed[name]
	return !ok || s.now().Sub(at) >= nameRetryAfter
}

func (s *certSource) orderFailed(name string, err error) {
	s.mu.Lock()
	s.failed[name] = s.now()
	s.mu.Unlock()
	s.log.Warn("ACME certificate not obtained; serving the host name's", "name", name, "retry_after", nameRetryAfter, "err", err)
}

// run obtains hostname's certificate (from the store when a node got it
// before, else from the CA), retrying with a backoff from a minute to an
// hour, until it has it or ctx ends. Renewals are then autocert's.
func (s *certSource) run(ctx context.Context) {
	wait := time.Minute
	for {
		start := s.now()
		// A hello as a TLS 1.3 client sends it: autocert picks an ECDSA
		// certificate for it.
		_, err := s.m.GetCertificate(&tls.ClientHelloInfo{
			ServerName:        s.hostname,
			SignatureSchemes:  []tls.SignatureScheme{tls.ECDSAWithP256AndSHA256},
			SupportedCurves:   []tls.CurveID{tls.CurveP256},
			CipherSuites:      []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256},
			SupportedVersions: []uint16{tls.VersionTLS13, tls.VersionTLS12},
		})
		if err == nil {
			s.ready.Store(true)
			s.log.Info("ACME certificate ready", "name", s.hostname, "duration_ms", s.now().Sub(start).Milliseconds())
			return
		}
		s.log.Error("ACME certificate not obtained; serving the self-signed one", "name", s.hostname, "retry_in", wait, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Hour)
	}
}

// newACMERenewal obtains the ACME certificate in the background. It
// starts after the listeners: the HTTP-01 handler is set up, and the CA
// can reach https.
func newACMERenewal(p *parts) component {
	return &worker{name: "acme", run: func(ctx context.Context) { p.certs.run(ctx) }}
}

// certCache is autocert.Cache on the store.
type certCache struct{ st mailstore.Certs }

func (c certCache) Get(ctx context.Context, name string) ([]byte, error) {
	b, err := c.st.Cert(ctx, name)
	if errors.Is(err, mailstore.ErrNotFound) {
		return nil, autocert.ErrCacheMiss
	}
	return b, err
}

func (c certCache) Put(ctx context.Context, name string, data []byte) error {
	return c.st.PutCert(ctx, name, data)
}

func (c certCache) Delete(ctx context.Context, name string) error {
	return c.st.DeleteCert(ctx, name)
}

// acmeSource makes the certificate source of acme = true, with the
// self-signed certificate of fallback as the one served until the first
// ACME certificate arrives.
func acmeSource(cfg *config.Config, cs certStore, hostname string, fallback *tls.Config, o Options, log *slog.Logger) (*certSource, error) {
	if !strings.Contains(strings.Trim(hostname, "."), ".") {
		return nil, fmt.Errorf("acme: hostname %q is not a fully qualified name a CA can issue for: set hostname", hostname)
	}
	log.Info("ACME certificates", "directory", cfg.ACMEDirectory, "name", hostname, "http_01", cfg.ACMEHTTP != "", "tls_alpn_01", cfg.HTTPS != "")
	return newCertSource(acmeConfig{
		Hostname: hostname, Directory: cfg.ACMEDirectory, Email: cfg.ACMEEmail,
		HTTPClient: o.ACMEHTTPClient, Store: cs, Fallback: &fallback.Certificates[0],
		Logger: log, Now: o.Now,
	}), nil
}
