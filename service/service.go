// Package service wires mailhost's parts together: it opens the store,
// starts the management API, the SMTP servers (MX and submission), IMAP,
// ManageSieve, the outbound queue's workers, the control socket, the
// retention scheduler and the daily re-check of verified domains, and
// stops them in order: listeners first, then the workers, then the store.
package service

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime/debug"
	"time"

	"github.com/mailhost/mailhost/config"
	"github.com/mailhost/mailhost/policy"
)

// Options are what Run needs besides the configuration.
type Options struct {
	// Stdout receives the one-time notice of the default partner; the key
	// itself goes to DATA/initial-api-key (KeyFileName), and to Stdout
	// too with ShowKey.
	Stdout io.Writer
	// ShowKey prints the first-start key on Stdout; cmd/mailhost sets it
	// unless stdout is systemd's journal (IsJournal).
	ShowKey bool
	Logger  *slog.Logger
	Now     func() time.Time
	// Ready, if set, is called with the bound listener addresses once every
	// listener is up (tests use it with ":0" addresses).
	Ready func(Addrs)
	// ACMEHTTPClient talks to the ACME CA; nil: http.DefaultClient (tests
	// pass one that trusts their CA).
	ACMEHTTPClient *http.Client
	// QueueLease and QueuePoll, when set, replace the outbound queue's
	// lease (15 minutes) and poll interval (5 seconds): see
	// outbound.Config.Lease and PollInterval. They are not settings: a
	// node that dies holds its leases until they run out, and 15
	// minutes is right for an operator, but a test that kills a node
	// shortens them to see another take over its queue within seconds.
	QueueLease, QueuePoll time.Duration
	// WebhookRetry is the webhook worker's first retry wait (webhook.
	// Config.Retry); 0: its default. Tests shorten it.
	WebhookRetry time.Duration
}

// Addrs are the addresses the listeners are bound to; empty when off.
type Addrs struct {
	HTTP, SMTP, Submission, Submissions, IMAP, IMAPS string
	// ManageSieve edits the mailboxes' Sieve scripts.
	ManageSieve string
	// AutoconfigHTTP and AutoconfigHTTPS serve the mail clients' set-up
	// alone.
	AutoconfigHTTP, AutoconfigHTTPS string
	// HTTPS is the API over TLS; ACMEHTTP answers ACME HTTP-01.
	HTTPS, ACMEHTTP string
}

// NewLogger makes the process logger the configuration asks for.
func NewLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// defaultMemoryLimit is the Go runtime's soft memory limit when the
// environment sets none: well under the 256 MB the server is meant to stay
// within, leaving room for bbolt's memory map, which the runtime does not
// count.
const defaultMemoryLimit = 160 << 20

// stopTimeout bounds the graceful stop of the listeners' connections.
const stopTimeout = 10 * time.Second

// Run serves until ctx ends, then shuts everything down gracefully. It
// starts the components (see components) in order and stops them in
// reverse; a component that fails to start stops those started before
// it, and Run answers its error.
func Run(ctx context.Context, cfg *config.Config, o Options) error {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	log := o.Logger
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		// A soft limit makes the runtime give memory back soon after a
		// burst of password hashes (19 MiB each) instead of keeping it
		// for minutes; GOMEMLIMIT, when set, is the operator's choice.
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
	p := newParts(cfg, o)
	if problem := policy.HostnameProblem(p.hostname); problem != "" {
		// Customers would be told to publish "MX 10 vm": say it at once,
		// naming the setting, rather than let GET /dns be the first sign.
		log.Warn("set the hostname setting (MAILHOST_HOSTNAME, -hostname) to the server's public name: "+problem, "hostname", p.hostname)
	}
	cs := components(p)
	if err := startAll(ctx, cs, log); err != nil {
		return err
	}
	if o.Ready != nil {
		o.Ready(p.addrs)
	}
	var runErr error
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case runErr = <-p.errs:
		log.Error("listener failed; shutting down", "err", runErr)
	}
	sctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	stopAll(sctx, cs, log)
	return runErr
}

// components are the parts of the running service, in the order they
// start; they stop in reverse. The store and what is made from it come
// first; then the background workers, which so outlive the listeners
// that feed them; then the listeners, the control socket first so that
// the command line works as soon as the store is this process's; last
// the ACME certificate, which needs the listeners up. A listener turned
// off in the configuration is left out.
func components(p *parts) []component {
	cfg := p.cfg
	cs := []component{
		newStore(p),
		newCluster(p),
		newAccounts(p),
		newTLS(p),
		newPolicy(p),
		newWebhooks(p),
		newDelivery(p),
		newQueue(p),
		newRetention(p),
		newRecheck(p),
		newControl(p),
	}
	on := func(c component, addrs ...string) {
		for _, a := range addrs {
			if a != "" {
				cs = append(cs, c)
				return
			}
		}
	}
	on(newAutoconfig(p), cfg.AutoconfigHTTP, cfg.AutoconfigHTTPS)
	on(newAPI(p), cfg.HTTP, cfg.HTTPS)
	on(newACMEHTTP(p), cfg.ACMEHTTP)
	on(newMX(p), cfg.SMTP)
	on(newSubmission(p), cfg.Submission, cfg.Submissions)
	if cfg.RspamdControllerURL != "" {
		on(newLearner(p), cfg.IMAP, cfg.IMAPS)
	}
	on(newIMAP(p), cfg.IMAP, cfg.IMAPS)
	on(newManageSieve(p), cfg.ManageSieve)
	if cfg.ACME {
		cs = append(cs, newACMERenewal(p))
	}
	return cs
}
