package service

import (
	"context"
	"errors"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/outbound"
)

// newQueue starts the outbound queue's workers. They start before the
// listeners that feed them and so stop after them: what those queued
// stays in the store.
func newQueue(p *parts) component {
	return &worker{
		name: "queue",
		start: func(context.Context) error {
			cfg, o := p.cfg, p.o
			p.sender = outbound.New(outbound.Config{
				OnBounce: p.events.bounced,
				Store:    p.st, Hostname: p.hostname, Resolver: p.resolver, Relay: cfg.Relay,
				RelayUsername: cfg.RelayUsername, RelayPassword: cfg.RelayPassword, RelayVerifyTLS: cfg.RelayVerifyTLS,
				MTASTS: cfg.MTASTS, AllowPrivate: cfg.OutboundAllowPrivate, Workers: int(cfg.QueueWorkers), Lifetime: cfg.QueueLifetime,
				DelayWarning: delayWarning(cfg.QueueDelayWarning),
				Now:          o.Now, Logger: p.log, SRS: p.srs, RefuseInboundOverCap: cfg.RefuseInboundOverCap,
				Lease: o.QueueLease, PollInterval: o.QueuePoll, Metrics: p.mset.Outbound(),
				RecipientDelimiter: cfg.RecipientDelimiter, Sieve: p.sieve,
			})
			p.ops.wake = p.sender.Wake
			p.ops.purged = p.mset.RetentionDeleted
			// Where remote mail goes is worth a line at start: an
			// operator who set a relay (or forgot one) sees it without
			// reading the configuration.
			if cfg.Relay != "" {
				p.log.Info("outbound queue", "via", "relay", "relay", cfg.Relay, "workers", cfg.QueueWorkers)
			} else {
				p.log.Info("outbound queue", "via", "mx", "workers", cfg.QueueWorkers)
			}
			return nil
		},
		run: func(ctx context.Context) {
			if err := p.sender.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				p.log.Error("outbound queue stopped", "err", err)
			}
		},
	}
}

// onResume is the API's OnResume: a resumed domain's mail was deferred
// while it was suspended, with a backoff of up to an hour, so it goes
// now.
func (p *parts) onResume(ctx context.Context, d mailstore.Domain) {
	n, err := p.st.FlushOutboundDomain(ctx, d.ID, p.o.Now())
	if err != nil {
		p.log.Error("release the queued mail of a resumed domain", "domain", d.Name, "err", err)
		return
	}
	if n > 0 {
		p.log.Info("released the queued mail of a resumed domain", "domain", d.Name, "entries", n)
		p.sender.Wake()
	}
}

// delayWarning is outbound's DelayWarning for queue_delay_warning, whose
// 0 means none where outbound's means its default.
func delayWarning(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
