package service

import (
	"context"
	"log/slog"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/webhook"
)

// eventKeep is how long an event stays in the store once no delivery
// waits for it (they are given up after webhook.Lifetime).
const eventKeep = 2 * webhook.Lifetime

// hooks records the events detected outside a store transaction, right
// after what caused them, and wakes the webhook worker.
type hooks struct {
	store interface {
		mailstore.Webhooks
		MailboxByEmail(ctx context.Context, email string) (mailstore.Mailbox, mailstore.Domain, error)
	}
	worker *webhook.Worker
	now    func() time.Time
	log    *slog.Logger
}

// quotaFull is smtpd's OnQuotaFull: a mailbox.quota_full event, once per
// filling (the store decides).
func (h *hooks) quotaFull(ctx context.Context, m mailstore.Mailbox) {
	recorded, err := h.store.QuotaFull(ctx, m.ID, h.now())
	if err != nil {
		h.log.Error("record quota_full event", "mailbox_id", m.ID, "err", err)
		return
	}
	if recorded {
		h.worker.Wake()
	}
}

// bounced is outbound's OnBounce: a message.bounced event for the
// mailbox that sent the message, if it still exists.
func (h *hooks) bounced(ctx context.Context, e mailstore.Outbound, failed map[string]string) {
	m, d, err := h.store.MailboxByEmail(ctx, e.From)
	if err != nil {
		h.log.Info("bounce of a sender that is no mailbox: no event", "id", e.ID, "err", err)
		return
	}
	if _, err := h.store.AddEvent(ctx, mailstore.NewBounceEvent(m, d.Name, e.ID, failed, h.now())); err != nil {
		h.log.Error("record message.bounced event", "id", e.ID, "err", err)
		return
	}
	h.worker.Wake()
}

// pruneRecords is the daily retention pass's part for the audit log
// (entries older than auditDays) and the delivered events.
func pruneRecords(ctx context.Context, st interface {
	mailstore.Audit
	mailstore.Webhooks
}, now time.Time, auditDays int64, log *slog.Logger) {
	if auditDays > 0 {
		n, err := st.PruneAudit(ctx, now.AddDate(0, 0, -int(auditDays)))
		if err != nil {
			log.Error("prune audit log", "err", err)
		} else {
			log.Info("audit log pruned", "entries", n)
		}
	}
	n, err := st.PruneEvents(ctx, now.Add(-eventKeep))
	if err != nil {
		log.Error("prune events", "err", err)
	} else if n > 0 {
		log.Info("events pruned", "events", n)
	}
}

// newWebhooks starts the webhook worker, and the recording of the events
// detected outside a store transaction (quota_full at RCPT, bounces),
// which wakes it right after their cause.
func newWebhooks(p *parts) component {
	var w *webhook.Worker
	return &worker{
		name: "webhooks",
		start: func(context.Context) error {
			w = webhook.New(webhook.Config{
				Store: p.st, Logger: p.log, Now: p.o.Now, AllowPrivate: p.cfg.WebhookAllowPrivate, Retry: p.o.WebhookRetry,
			})
			p.events = &hooks{store: p.st, worker: w, now: p.o.Now, log: p.log}
			return nil
		},
		run: func(ctx context.Context) { w.Run(ctx) },
	}
}
