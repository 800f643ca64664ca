package service

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/mailhost/mailhost/adminapi"
	"github.com/mailhost/mailhost/autoconfig"
	"github.com/mailhost/mailhost/console"
	"github.com/mailhost/mailhost/metrics"
	"github.com/mailhost/mailhost/policy"
)

// shutdowner is a server that stops gracefully.
type shutdowner interface {
	Shutdown(ctx context.Context) error
}

// shutdownAll shuts ss down, each within ctx.
func shutdownAll(ss ...shutdowner) func(context.Context) error {
	return func(ctx context.Context) error {
		var errs []error
		for _, s := range ss {
			errs = append(errs, s.Shutdown(ctx))
		}
		return errors.Join(errs...)
	}
}

// newControl serves the command line's operator on the control socket
// in the data directory. It is the first listener, so that the CLI works
// as soon as the store is this process's.
func newControl(p *parts) component {
	return &listening{name: "control socket", p: p, make: func() ([]endpoint, func(context.Context) error) {
		hs := &http.Server{Handler: withBackup(controlHandler(p.ops), p.st), ReadHeaderTimeout: 10 * time.Second}
		return []endpoint{{
			name: "control socket", addr: filepath.Join(p.cfg.DataDir, SocketName),
			listen: func() (net.Listener, error) { return listenControl(p.cfg.DataDir) },
			serve:  hs.Serve,
		}}, hs.Shutdown
	}}
}

// clients are the mail clients' settings the set-up documents give.
func (p *parts) clients() autoconfig.Servers {
	cfg := p.cfg
	return autoconfig.Servers{
		Host: p.hostname, IMAPS: int(cfg.ClientIMAPSPort), IMAP: int(cfg.ClientIMAPPort),
		Submissions: int(cfg.ClientSubmissionsPort), Submission: int(cfg.ClientSubmissionPort),
	}
}

// newAutoconfig serves the mail clients' set-up on listeners of its own
// (ports 80 and 443 of autoconfig.<domain> and autodiscover.<domain>),
// without the API.
func newAutoconfig(p *parts) component {
	return &listening{name: "autoconfig", p: p, make: func() ([]endpoint, func(context.Context) error) {
		newServer := func() *http.Server {
			return &http.Server{
				Handler:           autoconfig.New(autoconfig.Config{Servers: p.clients(), Domains: p.st, Logger: p.log}),
				ReadHeaderTimeout: 10 * time.Second,
				ReadTimeout:       30 * time.Second,
				WriteTimeout:      30 * time.Second,
				IdleTimeout:       time.Minute,
				MaxHeaderBytes:    16 << 10,
			}
		}
		plain, secure := newServer(), newServer()
		return []endpoint{
			{name: "autoconfig http", addr: p.cfg.AutoconfigHTTP, bound: &p.addrs.AutoconfigHTTP, serve: plain.Serve},
			{name: "autoconfig https", addr: p.cfg.AutoconfigHTTPS, bound: &p.addrs.AutoconfigHTTPS, serve: func(ln net.Listener) error {
				return secure.Serve(tls.NewListener(ln, p.tls))
			}},
		}, shutdownAll(plain, secure)
	}}
}

// newAPI serves the partner API, with the partners' web console and the
// metrics, on http and https.
func newAPI(p *parts) component {
	return &listening{name: "api", p: p, make: func() ([]endpoint, func(context.Context) error) {
		cfg := p.cfg
		api := adminapi.New(adminapi.Config{
			Store: p.st, Plans: policy.NewPlans(cfg.Plans), Logger: p.log, Now: p.o.Now, Hostname: p.hostname,
			Passwords: p.passwords, OnResume: p.onResume, DNS: p.dns,
			DefaultMaxMailboxes: cfg.DefaultMaxMailboxes, DefaultMaxAliases: cfg.DefaultMaxAliases,
			RateLimit: cfg.APIRateLimit, RateBurst: cfg.APIRateBurst, Share: p.share,
			Clients: p.clients(), AllowPrivateWebhooks: cfg.WebhookAllowPrivate, Metrics: p.mset.API(), SpamDefault: cfg.SpamFilter,
			OnKeyFirstUse: p.onKeyFirstUse,
		})
		newServer := func(t *tls.Config) *http.Server {
			return &http.Server{
				// The partners' web console shares the API's listeners
				// and origin: it is a page that calls the API, so it
				// needs no CORS.
				Handler:           metrics.Mount(console.Mount(api), p.mset, cfg.MetricsToken),
				TLSConfig:         t,
				ReadHeaderTimeout: 10 * time.Second,
				ReadTimeout:       time.Minute,
				WriteTimeout:      time.Minute,
				IdleTimeout:       2 * time.Minute,
				MaxHeaderBytes:    64 << 10,
			}
		}
		plain, secure := newServer(nil), newServer(p.httpsTLS)
		return []endpoint{
			{name: "http", addr: cfg.HTTP, bound: &p.addrs.HTTP, serve: plain.Serve},
			{name: "https", addr: cfg.HTTPS, bound: &p.addrs.HTTPS, serve: func(ln net.Listener) error {
				return secure.ServeTLS(ln, "", "")
			}},
		}, shutdownAll(plain, secure)
	}}
}

// newACMEHTTP answers ACME's HTTP-01 challenges; anything else is sent
// to https, or not found when there is no https listener.
func newACMEHTTP(p *parts) component {
	return &listening{name: "acme_http", p: p, make: func() ([]endpoint, func(context.Context) error) {
		var other http.Handler
		if p.cfg.HTTPS == "" {
			other = http.NotFoundHandler()
		}
		hs := &http.Server{Handler: p.certs.HTTPHandler(other), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, MaxHeaderBytes: 16 << 10}
		return []endpoint{{name: "acme_http", addr: p.cfg.ACMEHTTP, bound: &p.addrs.ACMEHTTP, serve: hs.Serve}}, hs.Shutdown
	}}
}
