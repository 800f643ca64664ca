// Package service wires mailhost's parts together: it opens the store,
// starts the management API, the SMTP servers (MX and submission), IMAP,
// ManageSieve, the outbound queue's workers, the control socket, the
// retention scheduler and the daily re-check of verified domains, and
// stops them in order: listeners first, then the workers, then the store.
package service

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/emersion/go-msgauth/authres"

	"github.com/mailhost/mailhost/adminapi"
	"github.com/mailhost/mailhost/autoconfig"
	"github.com/mailhost/mailhost/autoreply"
	"github.com/mailhost/mailhost/config"
	"github.com/mailhost/mailhost/console"
	"github.com/mailhost/mailhost/credential"
	"github.com/mailhost/mailhost/delivery"
	"github.com/mailhost/mailhost/imapd"
	"github.com/mailhost/mailhost/mailauth"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/managesieve"
	"github.com/mailhost/mailhost/metrics"
	"github.com/mailhost/mailhost/outbound"
	"github.com/mailhost/mailhost/policy"
	"github.com/mailhost/mailhost/smtpd"
	"github.com/mailhost/mailhost/webhook"
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

// pairServer serves a protocol on a plain listener (with STARTTLS) and on
// an implicit-TLS one: smtpd (submission) and imapd.
type pairServer interface {
	Serve(ln net.Listener) error
	ServeTLS(ln net.Listener) error
}

// server is what Run starts: each serves listeners until Shutdown.
type server interface {
	Shutdown(ctx context.Context) error
}

// Run serves until ctx ends, then shuts everything down gracefully.
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
	hostname := cfg.Hostname
	if hostname == "" {
		hostname, _ = os.Hostname()
	}
	if p := policy.HostnameProblem(hostname); p != "" {
		// Customers would be told to publish "MX 10 vm": say it at once,
		// naming the setting, rather than let GET /dns be the first sign.
		log.Warn("set the hostname setting (MAILHOST_HOSTNAME, -hostname) to the server's public name: "+p, "hostname", hostname)
	}
	spamClient, err := newSpamClient(cfg)
	if err != nil {
		return err
	}

	st, err := openStore(ctx, cfg, time.Second)
	if err != nil {
		return lockedHint(err, cfg.DataDir)
	}
	defer st.Close()
	log.Info("store open", "store", storeKind(cfg), "node", NodeName(cfg))
	// This node's part of the limits meant for the whole cluster; with
	// bbolt, always the whole.
	share := &policy.Share{}
	node := NodeName(cfg)
	if n, err := beat(ctx, st, node, share, o.Now()); err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	} else if n > 1 {
		log.Info("joined a cluster", "nodes", n)
	}
	ops := NewStoreOperator(st, o.Now)
	// The process's series, served at /metrics on the HTTP listeners.
	mset := metrics.New()
	mset.WatchStore(st, o.Now, log)
	if err := firstStart(ctx, st, ops, o.Stdout, o.ShowKey, cfg.DataDir, log); err != nil {
		return err
	}
	// Where role mail that no domain takes goes: the postmaster setting,
	// else the operator's own mailbox.
	operator, err := operatorMailbox(ctx, st, hostname, policy.NewPlans(cfg.Plans), o.Stdout, o.ShowKey, cfg.DataDir, o.Now(), log)
	if err != nil {
		return err
	}
	postmaster := cfg.Postmaster
	if postmaster == "" {
		postmaster = operator
	}
	keyFile, err := watchKeyFile(ctx, st, cfg.DataDir, log)
	if err != nil {
		return err
	}
	var onKeyFirstUse func(int64)
	if keyFile != nil {
		onKeyFirstUse = keyFile.Used
	}

	tlsConfig, err := loadTLS(cfg.TLSCert, cfg.TLSKey, cfg.DataDir, hostname)
	if err != nil {
		return err
	}
	// httpsTLS is tlsConfig with what the https listener adds.
	httpsTLS := tlsConfig.Clone()
	httpsTLS.NextProtos = []string{"h2", "http/1.1"}
	var certs *certSource
	if cfg.ACME {
		if certs, err = acmeSource(cfg, st, hostname, tlsConfig, o, log); err != nil {
			return err
		}
		tlsConfig, httpsTLS = certs.TLSConfig(false), certs.TLSConfig(true)
	}
	dns, err := newResolver(cfg.DNS)
	if err != nil {
		return err
	}
	// One DNS cache for the inbound checks and the outbound queue.
	resolver := mailauth.NewCachingResolver(dns, mailauth.CacheOptions{Now: o.Now})
	// bbolt keeps the secret in the data directory, as it always has; a
	// shared store keeps it among the settings every node reads.
	var secret []byte
	if cfg.Store == "" {
		secret, err = srsSecret(cfg.SRSSecret, cfg.DataDir)
	} else {
		secret, err = clusterSRSSecret(ctx, cfg.SRSSecret, st)
	}
	if err != nil {
		return err
	}
	srs := &mailauth.SRS{Secret: secret, Now: o.Now}
	// One login throttle and cache for IMAP and submission: a password
	// guessed at over one protocol is throttled on the other too.
	// One bound on memory-hard password work (19 MiB each) for the logins
	// and the API's hashes together: a login burst during a provisioning
	// burst stays within it.
	passwords := credential.NewVerifier(0)
	logins := credential.NewLogins(credential.LoginConfig{Accounts: st, Verifier: passwords, Now: o.Now, Share: share})
	// The webhook worker, and the events recorded outside a store
	// transaction (quota_full at RCPT, bounces), right after their cause.
	hookWorker := webhook.New(webhook.Config{
		Store: st, Logger: log, Now: o.Now, AllowPrivate: cfg.WebhookAllowPrivate, Retry: o.WebhookRetry,
	})
	events := &hooks{store: st, worker: hookWorker, now: o.Now, log: log}
	// The responder of auto-replies, the partner API's and Sieve's
	// vacation, wakes the queue once it exists. Both stores have
	// AutoReplies; a store without them sends no auto-replies.
	var wake func()
	var responder *autoreply.Responder
	if ars, ok := st.(autoreply.Store); ok {
		responder = autoreply.New(autoreply.Config{
			Store: ars, Signer: mailauth.StoreSigner{Store: st, Signer: mailauth.Signer{Keys: mailauth.NewKeyCache(0)}},
			Interval: cfg.AutoReplyInterval, Hostname: hostname, OnQueued: func() { wake() }, Logger: log, Now: o.Now,
			Delimiter: cfg.RecipientDelimiter,
		})
	}
	var sieveAgent *delivery.Sieve
	if ss, ok := st.(delivery.SieveStore); ok {
		sc := delivery.SieveConfig{Store: ss, Delimiter: cfg.RecipientDelimiter, Logger: log, Hostname: hostname, OnQueued: func() { wake() }}
		if responder != nil {
			sc.Vacation = responder
		}
		sieveAgent = delivery.NewSieve(sc)
	}
	sender := outbound.New(outbound.Config{
		OnBounce: events.bounced,
		Store:    st, Hostname: hostname, Resolver: resolver, Relay: cfg.Relay,
		RelayUsername: cfg.RelayUsername, RelayPassword: cfg.RelayPassword, RelayVerifyTLS: cfg.RelayVerifyTLS,
		MTASTS: cfg.MTASTS, AllowPrivate: cfg.OutboundAllowPrivate, Workers: int(cfg.QueueWorkers), Lifetime: cfg.QueueLifetime,
		DelayWarning: delayWarning(cfg.QueueDelayWarning),
		Now:          o.Now, Logger: log, SRS: srs, RefuseInboundOverCap: cfg.RefuseInboundOverCap,
		Lease: o.QueueLease, PollInterval: o.QueuePoll, Metrics: mset.Outbound(),
		RecipientDelimiter: cfg.RecipientDelimiter, Sieve: sieveAgent,
	})
	ops.(*storeOps).wake = sender.Wake
	wake = sender.Wake
	ops.(*storeOps).purged = mset.RetentionDeleted
	// Where remote mail goes is worth a line at start: an operator who set
	// a relay (or forgot one) sees it without reading the configuration.
	if cfg.Relay != "" {
		log.Info("outbound queue", "via", "relay", "relay", cfg.Relay, "workers", cfg.QueueWorkers)
	} else {
		log.Info("outbound queue", "via", "mx", "workers", cfg.QueueWorkers)
	}
	// One bound on message data in memory for the MX and submission.
	memory := smtpd.NewMemoryBudget(cfg.MessageMemoryMB << 20)
	// A resumed domain's mail was deferred while it was suspended, with a
	// backoff of up to an hour: it goes now.
	onResume := func(ctx context.Context, d mailstore.Domain) {
		n, err := st.FlushOutboundDomain(ctx, d.ID, o.Now())
		if err != nil {
			log.Error("release the queued mail of a resumed domain", "domain", d.Name, "err", err)
			return
		}
		if n > 0 {
			log.Info("released the queued mail of a resumed domain", "domain", d.Name, "entries", n)
			sender.Wake()
		}
	}

	var (
		servers []server
		addrs   Addrs
		wg      sync.WaitGroup
		errs    = make(chan error, 8)
	)
	serve := func(name string, fn func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
				errs <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}
	listen := func(addr string) (net.Listener, error) {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("listen %s: %w", addr, err)
		}
		return ln, nil
	}
	closeAll := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for i := len(servers) - 1; i >= 0; i-- {
			servers[i].Shutdown(sctx)
		}
	}

	// listenPair serves s on a plain (STARTTLS) address and on an
	// implicit-TLS one; an empty address is a listener turned off.
	listenPair := func(s pairServer, name, addr string, bound *string, tlsName, tlsAddr string, tlsBound *string) error {
		for _, l := range []struct {
			name, addr string
			tls        bool
			bound      *string
		}{{name, addr, false, bound}, {tlsName, tlsAddr, true, tlsBound}} {
			if l.addr == "" {
				continue
			}
			ln, err := listen(l.addr)
			if err != nil {
				return err
			}
			*l.bound = ln.Addr().String()
			if l.tls {
				serve(l.name, func() error { return s.ServeTLS(ln) })
			} else {
				serve(l.name, func() error { return s.Serve(ln) })
			}
			log.Info("listening", "service", l.name, "addr", *l.bound)
		}
		return nil
	}

	// Control socket first, so the CLI works as soon as the store is ours.
	cln, err := listenControl(cfg.DataDir)
	if err != nil {
		return err
	}
	ctl := &http.Server{Handler: withBackup(controlHandler(ops), st), ReadHeaderTimeout: 10 * time.Second}
	servers = append(servers, ctl)
	serve("control socket", func() error { return ctl.Serve(cln) })

	clients := autoconfig.Servers{
		Host: hostname, IMAPS: int(cfg.ClientIMAPSPort), IMAP: int(cfg.ClientIMAPPort),
		Submissions: int(cfg.ClientSubmissionsPort), Submission: int(cfg.ClientSubmissionPort),
	}
	// The mail clients' set-up on listeners of its own (ports 80 and 443
	// of autoconfig.<domain> and autodiscover.<domain>), without the API.
	for _, l := range []struct {
		name, addr string
		tls        bool
		bound      *string
	}{{"autoconfig http", cfg.AutoconfigHTTP, false, &addrs.AutoconfigHTTP}, {"autoconfig https", cfg.AutoconfigHTTPS, true, &addrs.AutoconfigHTTPS}} {
		if l.addr == "" {
			continue
		}
		ln, err := listen(l.addr)
		if err != nil {
			closeAll()
			return err
		}
		if l.tls {
			ln = tls.NewListener(ln, tlsConfig)
		}
		hs := &http.Server{
			Handler:           autoconfig.New(autoconfig.Config{Servers: clients, Domains: st, Logger: log}),
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       30 * time.Second,
			WriteTimeout:      30 * time.Second,
			IdleTimeout:       time.Minute,
			MaxHeaderBytes:    16 << 10,
		}
		servers = append(servers, hs)
		*l.bound = ln.Addr().String()
		serve(l.name, func() error { return hs.Serve(ln) })
		log.Info("listening", "service", l.name, "addr", *l.bound)
	}

	if cfg.HTTP != "" || cfg.HTTPS != "" {
		api := adminapi.New(adminapi.Config{
			Store: st, Plans: policy.NewPlans(cfg.Plans), Logger: log, Now: o.Now, Hostname: hostname,
			Passwords: passwords, OnResume: onResume, DNS: dns,
			DefaultMaxMailboxes: cfg.DefaultMaxMailboxes, DefaultMaxAliases: cfg.DefaultMaxAliases,
			RateLimit: cfg.APIRateLimit, RateBurst: cfg.APIRateBurst, Share: share,
			Clients: clients, AllowPrivateWebhooks: cfg.WebhookAllowPrivate, Metrics: mset.API(), SpamDefault: cfg.SpamFilter,
			OnKeyFirstUse: onKeyFirstUse,
		})
		for _, l := range []struct {
			name, addr string
			tls        *tls.Config
			bound      *string
		}{{"http", cfg.HTTP, nil, &addrs.HTTP}, {"https", cfg.HTTPS, httpsTLS, &addrs.HTTPS}} {
			if l.addr == "" {
				continue
			}
			ln, err := listen(l.addr)
			if err != nil {
				closeAll()
				return err
			}
			hs := &http.Server{
				// The partners' web console shares the API's listeners and
				// origin: it is a page that calls the API, so it needs no CORS.
				Handler:           metrics.Mount(console.Mount(api), mset, cfg.MetricsToken),
				TLSConfig:         l.tls,
				ReadHeaderTimeout: 10 * time.Second,
				ReadTimeout:       time.Minute,
				WriteTimeout:      time.Minute,
				IdleTimeout:       2 * time.Minute,
				MaxHeaderBytes:    64 << 10,
			}
			servers = append(servers, hs)
			*l.bound = ln.Addr().String()
			if l.tls != nil {
				serve(l.name, func() error { return hs.ServeTLS(ln, "", "") })
			} else {
				serve(l.name, func() error { return hs.Serve(ln) })
			}
			log.Info("listening", "service", l.name, "addr", *l.bound)
		}
	}

	if cfg.ACMEHTTP != "" {
		ln, err := listen(cfg.ACMEHTTP)
		if err != nil {
			closeAll()
			return err
		}
		// Anything but a challenge is sent to https, or not found when
		// there is no https listener.
		var other http.Handler
		if cfg.HTTPS == "" {
			other = http.NotFoundHandler()
		}
		hs := &http.Server{Handler: certs.HTTPHandler(other), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, MaxHeaderBytes: 16 << 10}
		servers = append(servers, hs)
		addrs.ACMEHTTP = ln.Addr().String()
		serve("acme_http", func() error { return hs.Serve(ln) })
		log.Info("listening", "service", "acme_http", "addr", addrs.ACMEHTTP)
	}

	if cfg.SMTP != "" {
		ln, err := listen(cfg.SMTP)
		if err != nil {
			closeAll()
			return err
		}
		mx := smtpd.Config{
			Store: st, Hostname: hostname, TLS: tlsConfig, Logger: log, Now: o.Now,
			MaxMessageBytes: cfg.MaxMessageBytes, OnQueued: sender.Wake, Memory: memory,
			MaxConnsPerIP: int(cfg.MXMaxConnsPerIP), MaxConnRatePerIP: noLimit(cfg.MaxConnRatePerIP),
			SRS: srs, RefuseInboundOverCap: cfg.RefuseInboundOverCap,
			Postmaster: postmaster, OnQuotaFull: events.quotaFull, Metrics: mset.SMTP(),
			DNSBL: cfg.DNSBL, DNSBLResolver: resolver, DMARCEnforce: cfg.DMARCEnforce,
			RecipientDelimiter: cfg.RecipientDelimiter, Sieve: sieveAgent,
		}
		if responder != nil {
			mx.AutoReply = responder
		}
		if cfg.InboundChecks {
			mx.Authenticator = checker{&mailauth.Checker{Resolver: resolver, Hostname: hostname}}
		}
		s := smtpd.New(withSpam(mx, cfg, spamClient))
		servers = append(servers, s)
		addrs.SMTP = ln.Addr().String()
		serve("smtp", func() error { return s.Serve(ln) })
		log.Info("listening", "service", "smtp", "addr", addrs.SMTP)
	}

	if cfg.Submission != "" || cfg.Submissions != "" {
		sub := smtpd.Config{
			Store: st, Hostname: hostname, TLS: tlsConfig, Logger: log, Now: o.Now,
			MaxMessageBytes: cfg.MaxMessageBytes, OnQueued: sender.Wake, Memory: memory,
			MaxConnsPerIP: int(cfg.MaxConnsPerIP), MaxConnRatePerIP: noLimit(cfg.MaxConnRatePerIP),
			MaxConnsPerUserIP: noLimit(cfg.MaxConnsPerUserIP), Logins: logins, AllowInsecureAuth: cfg.AllowInsecureAuth,
			MaxRecipientsPerHour: int(cfg.SendLimitPerHour), Share: share, Postmaster: postmaster, OnQuotaFull: events.quotaFull,
			Signer:  mailauth.StoreSigner{Store: st, Signer: mailauth.Signer{Keys: mailauth.NewKeyCache(0)}},
			Metrics: mset.SMTP(), DMARCEnforce: cfg.DMARCEnforce,
			RecipientDelimiter: cfg.RecipientDelimiter, Sieve: sieveAgent,
		}
		if cfg.InboundChecks {
			// For the messages that reach another partner's mailbox,
			// which get the MX's checks.
			sub.Authenticator = checker{&mailauth.Checker{Resolver: resolver, Hostname: hostname}}
		}
		s := smtpd.NewSubmission(withSpam(sub, cfg, spamClient))
		servers = append(servers, s)
		if err := listenPair(s, "submission", cfg.Submission, &addrs.Submission, "submissions", cfg.Submissions, &addrs.Submissions); err != nil {
			closeAll()
			return err
		}
	}

	if cfg.IMAP != "" || cfg.IMAPS != "" {
		var onJunkMove func(mailboxID, folderID int64, uids []uint32, spam bool)
		learner := newLearner(cfg, spamClient, st, log)
		if learner != nil {
			onJunkMove = learner.Moved
		}
		s := imapd.New(imapd.Config{
			OnJunkMove: onJunkMove,
			Store:      st, Logins: logins, TLS: tlsConfig, AllowInsecureAuth: cfg.AllowInsecureAuth,
			Logger: log, Now: o.Now, Reserve: memory.Reserve, MaxMessageBytes: cfg.MaxMessageBytes,
			MaxConns: int(cfg.MaxIMAPConns), MaxConnsPerIP: int(cfg.MaxConnsPerIP),
			MaxConnRatePerIP: noLimit(cfg.MaxConnRatePerIP), MaxConnsPerUserIP: noLimit(cfg.MaxConnsPerUserIP),
			Metrics: mset.IMAP(),
		})
		servers = append(servers, s)
		if learner != nil {
			// After the IMAP server (servers stop in order), so that the
			// last moves are still learnt.
			servers = append(servers, learner)
		}
		if err := listenPair(s, "imap", cfg.IMAP, &addrs.IMAP, "imaps", cfg.IMAPS, &addrs.IMAPS); err != nil {
			closeAll()
			return err
		}
	}

	if cfg.ManageSieve != "" {
		ln, err := listen(cfg.ManageSieve)
		if err != nil {
			closeAll()
			return err
		}
		s := managesieve.New(managesieve.Config{
			Store: sieveStore{st}, Auth: sieveLogins{logins}, TLS: tlsConfig, AllowInsecureAuth: cfg.AllowInsecureAuth,
			Parse: policy.SieveOptions, Logger: log, Metrics: mset.ManageSieve(),
			// A webmail's ManageSieve connections all come from its one
			// address: the IMAP limit, which allows for an office's.
			MaxConnsPerIP: int(cfg.MaxConnsPerIP),
		})
		servers = append(servers, s)
		addrs.ManageSieve = ln.Addr().String()
		serve("managesieve", func() error {
			if err := s.Serve(ln); !errors.Is(err, managesieve.ErrServerClosed) {
				return err
			}
			return nil
		})
		log.Info("listening", "service", "managesieve", "addr", addrs.ManageSieve)
	}

	rctx, stopRetention := context.WithCancel(ctx)
	// The ownership re-check asks DNS without the mail checks' cache, as
	// the API's verify does: a record removed a minute ago is gone.
	recheck := &rechecker{store: st, dns: dns, hostname: hostname, now: o.Now, log: log}
	recheck.cluster = st
	wg.Add(4)
	if certs != nil {
		// After the listeners: the HTTP-01 handler is set up, and the
		// CA can reach https.
		wg.Add(1)
		go func() {
			defer wg.Done()
			certs.run(rctx)
		}()
	}
	go func() {
		defer wg.Done()
		runHeartbeat(rctx, st, node, share, o.Now, log)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		hookWorker.Run(rctx)
	}()
	go func() {
		defer wg.Done()
		runRetention(rctx, countedPurge{st, mset.RetentionDeleted}, cfg.RetentionTime, cfg.AuditRetentionDays, o.Now, log)
	}()
	go func() {
		defer wg.Done()
		recheck.run(rctx, cfg.RetentionTime)
	}()
	// The queue stops with the retention scheduler, after the listeners
	// that feed it are closed: what they queued stays in the store.
	go func() {
		defer wg.Done()
		if err := sender.Run(rctx); err != nil && !errors.Is(err, context.Canceled) {
			log.Error("outbound queue stopped", "err", err)
		}
	}()

	if o.Ready != nil {
		o.Ready(addrs)
	}
	var runErr error
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case runErr = <-errs:
		log.Error("listener failed; shutting down", "err", runErr)
	}
	closeAll()
	stopRetention()
	wg.Wait()
	return runErr
}

// firstStart creates the partner "default" on an empty store and hands
// its key out once (the partner contract): into DATA/initial-api-key, and on
// stdout when show is set.
func firstStart(ctx context.Context, st mailstore.Store, ops Operator, stdout io.Writer, show bool, dataDir string, log *slog.Logger) error {
	ps, err := st.Partners(ctx)
	if err != nil {
		return err
	}
	if len(ps) > 0 {
		return nil
	}
	k, err := ops.CreatePartner(ctx, "default")
	if errors.Is(err, mailstore.ErrPartnerExists) {
		// Another node sharing the database made it first and printed
		// its key: the key is shown once, by one node.
		log.Info("default partner made by another node")
		return nil
	}
	if err != nil {
		return fmt.Errorf("create default partner: %w", err)
	}
	path, err := writeKeyFile(dataDir, k.APIKey)
	if err != nil {
		return err
	}
	printFirstKey(stdout, show, k.Name, k.ID, k.APIKey, path)
	log.Info("created default partner", "partner_id", k.ID, "key_prefix", k.KeyPrefix)
	return nil
}

// checker adapts mailauth.Checker to smtpd.Authenticator.
type checker struct{ c *mailauth.Checker }

func (c checker) Check(ctx context.Context, ip net.IP, helo, mailFrom string, msg []byte) string {
	h, _ := c.c.Check(ctx, mailauth.Input{IP: ip, HELO: helo, MailFrom: mailFrom, Message: msg})
	return h
}

// CheckDMARC makes checker an smtpd.DMARCAuthenticator.
func (c checker) CheckDMARC(ctx context.Context, ip net.IP, helo, mailFrom string, msg []byte) (string, smtpd.DMARCVerdict) {
	h, r := c.c.Check(ctx, mailauth.Input{IP: ip, HELO: helo, MailFrom: mailFrom, Message: msg})
	return h, smtpd.DMARCVerdict{Fail: r.DMARC == authres.ResultFail, Domain: r.FromDomain, Policy: smtpd.DMARCPolicy(r.Policy)}
}

// delayWarning is outbound's DelayWarning for queue_delay_warning, whose
// 0 means none where outbound's means its default.
func delayWarning(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// noLimit maps a setting's 0 (no limit) to the servers' -1 (their 0 is
// their default).
func noLimit(n int64) int {
	if n == 0 {
		return -1
	}
	return int(n)
}
