package service

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/mailhost/mailhost/autoreply"
	"github.com/mailhost/mailhost/config"
	"github.com/mailhost/mailhost/credential"
	"github.com/mailhost/mailhost/delivery"
	"github.com/mailhost/mailhost/mailauth"
	"github.com/mailhost/mailhost/metrics"
	"github.com/mailhost/mailhost/outbound"
	"github.com/mailhost/mailhost/policy"
	"github.com/mailhost/mailhost/smtpd"
	"github.com/mailhost/mailhost/spam"
)

// parts are what the components share. The configuration's parts are
// set by newParts; each component's Start sets those it makes for the
// components after it (the store first), which is why the order of
// components matters.
type parts struct {
	cfg      *config.Config
	o        Options
	log      *slog.Logger
	hostname string
	node     string
	// share is this node's part of the limits meant for the whole
	// cluster; with bbolt, always the whole.
	share *policy.Share
	// mset is the process's series, served at /metrics on the HTTP
	// listeners.
	mset *metrics.Set
	// addrs are the listeners' bound addresses, for Options.Ready.
	addrs Addrs
	// errs receives the first failure of a listener while serving.
	errs chan error

	// Made by the component named in each comment, for those after it:
	// store.
	st store
	// accounts.
	ops           *storeOps
	postmaster    string
	onKeyFirstUse func(int64)
	// tls.
	tls, httpsTLS *tls.Config
	certs         *certSource
	// policy.
	dns       *net.Resolver
	resolver  *mailauth.CachingResolver
	srs       *mailauth.SRS
	passwords *credential.Verifier
	logins    *credential.Logins
	memory    *smtpd.MemoryBudget
	spam      *spam.Client
	// webhooks.
	events *hooks
	// delivery.
	responder *autoreply.Responder
	sieve     *delivery.Sieve
	// queue.
	sender *outbound.Sender
	// spam learner.
	learner *spam.Learner
}

// newParts makes the parts of the configuration alone; nothing can fail.
func newParts(cfg *config.Config, o Options) *parts {
	hostname := cfg.Hostname
	if hostname == "" {
		hostname, _ = os.Hostname()
	}
	return &parts{
		cfg: cfg, o: o, log: o.Logger, hostname: hostname, node: NodeName(cfg),
		share: &policy.Share{}, mset: metrics.New(), errs: make(chan error, 1),
	}
}

// failed reports a listener that stopped serving; Run shuts down on the
// first, and the others are logged.
func (p *parts) failed(err error) {
	select {
	case p.errs <- err:
	default:
		p.log.Error("listener failed", "err", err)
	}
}

// signer DKIM-signs with the domains' keys in the store.
func (p *parts) signer() mailauth.StoreSigner {
	return mailauth.StoreSigner{Store: p.st, Signer: mailauth.Signer{Keys: mailauth.NewKeyCache(0)}}
}

// newStore opens the store first and closes it last, once nothing uses
// it.
func newStore(p *parts) component {
	return step{
		name: "store",
		start: func(ctx context.Context) error {
			st, err := openStore(ctx, p.cfg, time.Second)
			if err != nil {
				return lockedHint(err, p.cfg.DataDir)
			}
			p.st = st
			p.log.Info("store open", "store", storeKind(p.cfg), "node", p.node)
			p.mset.WatchStore(st, p.o.Now, p.log)
			return nil
		},
		stop: func(context.Context) error { return p.st.Close() },
	}
}

// newCluster records this node among the store's live nodes before the
// limits are shared out, then keeps doing so.
func newCluster(p *parts) component {
	return &worker{
		name: "cluster",
		start: func(ctx context.Context) error {
			n, err := beat(ctx, p.st, p.node, p.share, p.o.Now())
			if err != nil {
				return fmt.Errorf("heartbeat: %w", err)
			}
			if n > 1 {
				p.log.Info("joined a cluster", "nodes", n)
			}
			return nil
		},
		run: func(ctx context.Context) { runHeartbeat(ctx, p.st, p.node, p.share, p.o.Now, p.log) },
	}
}

// newAccounts makes what a first start makes (the partner "default" and
// its key, the operator's mailbox) and finds the first key's file.
func newAccounts(p *parts) component {
	return step{name: "accounts", start: func(ctx context.Context) error {
		cfg, o := p.cfg, p.o
		p.ops = newStoreOps(p.st, o.Now)
		if err := firstStart(ctx, p.st, p.ops, o.Stdout, o.ShowKey, cfg.DataDir, p.log); err != nil {
			return err
		}
		// Where role mail that no domain takes goes: the postmaster
		// setting, else the operator's own mailbox.
		operator, err := operatorMailbox(ctx, p.st, p.hostname, policy.NewPlans(cfg.Plans), o.Stdout, o.ShowKey, cfg.DataDir, o.Now(), p.log)
		if err != nil {
			return err
		}
		p.postmaster = cfg.Postmaster
		if p.postmaster == "" {
			p.postmaster = operator
		}
		keyFile, err := watchKeyFile(ctx, p.st, cfg.DataDir, p.log)
		if err != nil {
			return err
		}
		if keyFile != nil {
			p.onKeyFirstUse = keyFile.Used
		}
		return nil
	}}
}

// newTLS loads the certificate every TLS listener serves: the configured
// one, the self-signed one, or ACME's once it has one.
func newTLS(p *parts) component {
	return step{name: "tls", start: func(context.Context) error {
		cfg := p.cfg
		t, err := loadTLS(cfg.TLSCert, cfg.TLSKey, cfg.DataDir, p.hostname)
		if err != nil {
			return err
		}
		// The https listener's is the same with HTTP/2 offered.
		p.tls, p.httpsTLS = t, t.Clone()
		p.httpsTLS.NextProtos = []string{"h2", "http/1.1"}
		if cfg.ACME {
			if p.certs, err = acmeSource(cfg, p.st, p.hostname, t, p.o, p.log); err != nil {
				return err
			}
			p.tls, p.httpsTLS = p.certs.TLSConfig(false), p.certs.TLSConfig(true)
		}
		return nil
	}}
}

// newPolicy makes what the mail checks share: DNS, the SRS secret, the
// login throttle, the memory bound on message data, the spam filter.
func newPolicy(p *parts) component {
	return step{name: "policy", start: func(ctx context.Context) error {
		cfg := p.cfg
		var err error
		if p.spam, err = newSpamClient(cfg); err != nil {
			return err
		}
		if p.dns, err = newResolver(cfg.DNS); err != nil {
			return err
		}
		// One DNS cache for the inbound checks and the outbound queue.
		p.resolver = mailauth.NewCachingResolver(p.dns, mailauth.CacheOptions{Now: p.o.Now})
		// bbolt keeps the secret in the data directory, as it always
		// has; a shared store keeps it among the settings every node
		// reads.
		var secret []byte
		if cfg.Store == "" {
			secret, err = srsSecret(cfg.SRSSecret, cfg.DataDir)
		} else {
			secret, err = clusterSRSSecret(ctx, cfg.SRSSecret, p.st)
		}
		if err != nil {
			return err
		}
		p.srs = &mailauth.SRS{Secret: secret, Now: p.o.Now}
		// One login throttle and cache for IMAP, submission and
		// ManageSieve: a password guessed at over one protocol is
		// throttled on the others too. One bound on memory-hard password
		// work (19 MiB each) for the logins and the API's hashes
		// together: a login burst during a provisioning burst stays
		// within it.
		p.passwords = credential.NewVerifier(0)
		p.logins = credential.NewLogins(credential.LoginConfig{Accounts: p.st, Verifier: p.passwords, Now: p.o.Now, Share: p.share})
		// One bound on message data in memory for the MX and submission.
		p.memory = smtpd.NewMemoryBudget(cfg.MessageMemoryMB << 20)
		return nil
	}}
}

// newDelivery makes what a delivery runs beside storing: the responder
// of auto-replies (the partner API's and Sieve's vacation), which wakes
// the queue, and the Sieve agent.
func newDelivery(p *parts) component {
	return step{name: "delivery", start: func(context.Context) error {
		cfg := p.cfg
		p.responder = autoreply.New(autoreply.Config{
			Store: p.st, Signer: p.signer(), Interval: cfg.AutoReplyInterval, Hostname: p.hostname,
			// The queue starts after: by the first delivery it is there.
			OnQueued: func() { p.sender.Wake() },
			Logger:   p.log, Now: p.o.Now, Delimiter: cfg.RecipientDelimiter,
		})
		p.sieve = delivery.NewSieve(delivery.SieveConfig{
			Store: p.st, Vacation: p.responder, Delimiter: cfg.RecipientDelimiter, Logger: p.log,
			// A rejection DSN goes through the queue, started after.
			Hostname: p.hostname, OnQueued: func() { p.sender.Wake() },
		})
		return nil
	}}
}
