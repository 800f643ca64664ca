package service

import (
	"context"

	"github.com/mailhost/mailhost/imapd"
)

// newLearner teaches rspamd what users move into Junk and out of it. It
// starts before IMAP, which tells it the moves, and so stops after it:
// the last moves are still learnt.
func newLearner(p *parts) component {
	return step{
		name: "spam learner",
		start: func(context.Context) error {
			p.learner = spamLearner(p.cfg, p.spam, p.st, p.log)
			return nil
		},
		// The learner finishes what is queued until ctx ends.
		stop: func(ctx context.Context) error {
			if p.learner == nil {
				return nil
			}
			return p.learner.Shutdown(ctx)
		},
	}
}

// newIMAP serves IMAP, on imap (STARTTLS) and imaps (implicit TLS).
func newIMAP(p *parts) component {
	return &listening{name: "imap", p: p, make: func() ([]endpoint, func(context.Context) error) {
		cfg := p.cfg
		var onJunkMove func(mailboxID, folderID int64, uids []uint32, spam bool)
		if p.learner != nil {
			onJunkMove = p.learner.Moved
		}
		s := imapd.New(imapd.Config{
			OnJunkMove: onJunkMove,
			Store:      p.st, Logins: p.logins, TLS: p.tls, AllowInsecureAuth: cfg.AllowInsecureAuth,
			Logger: p.log, Now: p.o.Now, Reserve: p.memory.Reserve, MaxMessageBytes: cfg.MaxMessageBytes,
			MaxConns: int(cfg.MaxIMAPConns), MaxConnsPerIP: int(cfg.MaxConnsPerIP),
			MaxConnRatePerIP: noLimit(cfg.MaxConnRatePerIP), MaxConnsPerUserIP: noLimit(cfg.MaxConnsPerUserIP),
			Metrics: p.mset.IMAP(),
		})
		return []endpoint{
			{name: "imap", addr: cfg.IMAP, bound: &p.addrs.IMAP, serve: s.Serve},
			{name: "imaps", addr: cfg.IMAPS, bound: &p.addrs.IMAPS, serve: s.ServeTLS},
		}, s.Shutdown
	}}
}
