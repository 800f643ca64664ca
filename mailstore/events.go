package mailstore

import (
	"context"
	"encoding/json"
	"strconv"
	"time"
)

// Event types: what a partner's webhooks can subscribe to.
const (
	EventQuotaWarning       = "mailbox.quota_warning"
	EventQuotaFull          = "mailbox.quota_full"
	EventTransferCapWarning = "domain.transfer_cap_warning"
	EventTransferCapReached = "domain.transfer_cap_reached"
	EventDomainSuspended    = "domain.suspended"
	EventDomainResumed      = "domain.resumed"
	EventDomainVerified     = "domain.verified"
	EventDomainClaimEnded   = "domain.claim_ended"
	EventMessageBounced     = "message.bounced"
)

// EventTypes are the event types, in the order the docs list them.
var EventTypes = []string{
	EventQuotaWarning, EventQuotaFull, EventTransferCapWarning, EventTransferCapReached,
	EventDomainSuspended, EventDomainResumed, EventDomainVerified, EventDomainClaimEnded,
	EventMessageBounced,
}

// WarnPercent is the share of a quota or a transfer cap whose crossing is
// a warning event.
const WarnPercent = 80

// ErrWebhookNotFound answers a webhook call naming one the partner does
// not have.
var ErrWebhookNotFound = notFound("webhook not found")

// Event is something that happened to one partner's objects, kept in the
// store until its webhooks have it (the outbox of package webhook).
type Event struct {
	ID        int64     `json:"id"`
	Type      string    `json:"type"`
	PartnerID int64     `json:"partner_id"`
	CreatedAt time.Time `json:"created_at"`
	// Data is the event's JSON object (see the New*Event functions).
	Data json.RawMessage `json:"data"`
}

// Webhook is a partner's endpoint for events. Secret keys the HMAC of
// each delivery, so it is stored as it is (it cannot be only hashed).
type Webhook struct {
	ID        int64     `json:"id"`
	PartnerID int64     `json:"partner_id"`
	URL       string    `json:"url"`
	Events    []string  `json:"events"`
	Secret    string    `json:"secret"`
	CreatedAt time.Time `json:"created_at"`
}

// Wants reports whether the webhook subscribes to the event type.
func (w Webhook) Wants(typ string) bool {
	for _, e := range w.Events {
		if e == typ {
			return true
		}
	}
	return false
}

// WebhookDelivery is one event due to one webhook.
type WebhookDelivery struct {
	ID          int64
	Webhook     Webhook
	Event       Event
	Attempts    int
	NextAttempt time.Time
	LastError   string
}

// Webhooks keeps partners' webhooks and the outbox of events due to them.
//
// Events are recorded by the store itself, in the transaction of what
// causes them: Deliver (a mailbox's usage crossing WarnPercent of its
// quota; a domain's month reaching WarnPercent and all of its transfer
// cap), SetSuspended (a change of state), SetVerified (unverified to
// verified, and the other partners' claims it ends). Those detected elsewhere come through AddEvent and
// QuotaFull. Recording an event makes one WebhookDelivery for each of the
// partner's webhooks that subscribes to its type (at the time), due at
// once; a partner with none stores the event alone.
type Webhooks interface {
	// CreateWebhook adds a webhook (URL, Events, Secret) to a partner.
	// ErrPartnerNotFound; ErrInvalidArgument for an empty URL, secret or
	// event list.
	CreateWebhook(ctx context.Context, partnerID int64, w Webhook, now time.Time) (Webhook, error)
	// Webhooks lists a partner's webhooks by id, and the total.
	Webhooks(ctx context.Context, partnerID int64, p Page) ([]Webhook, int, error)
	// DeleteWebhook deletes a partner's webhook and its pending
	// deliveries. ErrWebhookNotFound.
	DeleteWebhook(ctx context.Context, partnerID, id int64) error

	// AddEvent records an event detected outside the store (a bounce),
	// with its deliveries, and answers it with its ID.
	// ErrInvalidArgument without a type or a partner.
	AddEvent(ctx context.Context, e Event) (Event, error)
	// QuotaFull records a mailbox.quota_full event for a mailbox whose
	// mail was refused for its quota, once per filling: a later refusal
	// records nothing until a delivery to the mailbox was accepted again
	// (Deliver re-arms it). It reports whether it recorded one.
	// ErrMailboxNotFound.
	QuotaFull(ctx context.Context, mailboxID int64, now time.Time) (bool, error)

	// ClaimWebhookDeliveries returns up to limit deliveries due at now,
	// earliest first, and moves each one's NextAttempt to now+lease in
	// the same transaction, so that no other node takes it meanwhile
	// (a crash retries it once the lease runs out: at least once).
	// limit and lease must be positive, else ErrInvalidArgument.
	ClaimWebhookDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]WebhookDelivery, error)
	// RecordWebhookAttempt ends a delivery (done: delivered, or given
	// up) or makes it due again at next with lastErr, one attempt more.
	// A delivery gone meanwhile (its webhook deleted) is no error.
	RecordWebhookAttempt(ctx context.Context, id int64, done bool, next time.Time, lastErr string) error
	// PruneEvents deletes the events created before before that no
	// delivery waits for, and answers how many.
	PruneEvents(ctx context.Context, before time.Time) (int, error)
}

// AuditEntry is one write through the API or the command line.
type AuditEntry struct {
	ID        int64     `json:"id"`
	Time      time.Time `json:"time"`
	PartnerID int64     `json:"partner_id"`
	// KeyPrefix is the listing prefix of the API key used; "" for the
	// command line.
	KeyPrefix string `json:"key_prefix"`
	// Method is the HTTP method, "CLI", or AuditServer for what the
	// server did to the partner's objects on its own (NewClaimEndedAudit).
	Method string `json:"method"`
	// Route is the route's pattern ("/domains/{domain_name}/suspend"),
	// or the command ("key revoke").
	Route string `json:"route"`
	// Object names what was written: the domain, address, alias source
	// or id; "" when the request named none.
	Object string `json:"object"`
	Status int    `json:"status"`
}

// Audit is the audit log of writes.
type Audit interface {
	// AddAudit appends an entry (ID set by the store; Time stored to the
	// second). ErrInvalidArgument without a partner.
	AddAudit(ctx context.Context, e AuditEntry) (AuditEntry, error)
	// AuditEntries lists a partner's entries newest first (by ID,
	// descending), and the total.
	AuditEntries(ctx context.Context, partnerID int64, p Page) ([]AuditEntry, int, error)
	// PruneAudit deletes the entries whose Time is before before, and
	// answers how many.
	PruneAudit(ctx context.Context, before time.Time) (int, error)
}

// Event data. Each New*Event function makes one event type's Data, so
// that every store records the same fields.

func newEvent(typ string, partnerID int64, now time.Time, data any) Event {
	raw, _ := json.Marshal(data) // maps and strings only: cannot fail
	return Event{Type: typ, PartnerID: partnerID, CreatedAt: UTC(now), Data: raw}
}

// NewQuotaEvent is mailbox.quota_warning or mailbox.quota_full for a
// mailbox as it stands.
func NewQuotaEvent(typ string, m Mailbox, domain string, now time.Time) Event {
	return newEvent(typ, m.PartnerID, now, map[string]any{
		"mailbox_id": m.ID, "email": m.Email, "domain": domain,
		"used_bytes": m.UsedBytes, "quota_mb": m.QuotaMB,
	})
}

// NewTransferEvent is domain.transfer_cap_warning or
// domain.transfer_cap_reached for a domain's month.
func NewTransferEvent(typ string, d Domain, t Transfer, now time.Time) Event {
	return newEvent(typ, d.PartnerID, now, map[string]any{
		"domain_id": d.ID, "domain": d.Name, "month": t.Month,
		"in_bytes": t.InBytes, "out_bytes": t.OutBytes, "transfer_monthly_mb": d.TransferMonthlyMB,
	})
}

// NewDomainEvent is domain.suspended, domain.resumed or domain.verified.
func NewDomainEvent(typ string, d Domain, now time.Time) Event {
	return newEvent(typ, d.PartnerID, now, map[string]any{"domain_id": d.ID, "domain": d.Name})
}

// NewClaimEndedEvent is domain.claim_ended: another partner verified
// the name d claimed (d as it is then, ClaimEndedAt set), so that d's
// mailboxes and aliases no longer get mail.
func NewClaimEndedEvent(d Domain, now time.Time) Event {
	return newEvent(EventDomainClaimEnded, d.PartnerID, now, map[string]any{
		"domain_id": d.ID, "domain": d.Name, "claim_ended_at": UTC(d.ClaimEndedAt).Format("2006-01-02T15:04:05"),
	})
}

// AuditServer is the Method of the audit entries of what the server did
// on its own: no key and no command asked for it.
const AuditServer = "SERVER"

// AuditClaimEnded is the Route of the audit entry of a claim ended by
// another partner's verification of the name.
const AuditClaimEnded = "domain claim ended"

// NewClaimEndedAudit is the audit entry, in d's partner's log, of d's
// claim ended by another partner's verification: method AuditServer,
// route AuditClaimEnded, the name as object, status 200 (done, as the
// command line's entries say). Which partner verified is not told.
func NewClaimEndedAudit(d Domain, now time.Time) AuditEntry {
	return AuditEntry{Time: UTC(now), PartnerID: d.PartnerID, Method: AuditServer, Route: AuditClaimEnded, Object: d.Name, Status: 200}
}

// NewBounceEvent is message.bounced: a mailbox's outgoing message failed
// for the recipients given, each with its reply.
func NewBounceEvent(m Mailbox, domain string, queueID int64, failed map[string]string, now time.Time) Event {
	type rcpt struct {
		Address string `json:"address"`
		Reply   string `json:"reply"`
	}
	rs := []rcpt{}
	for a, r := range failed {
		rs = append(rs, rcpt{a, r})
	}
	sortRcpts := func(i, j int) bool { return rs[i].Address < rs[j].Address }
	for i := 1; i < len(rs); i++ { // insertion sort: a handful of recipients
		for j := i; j > 0 && sortRcpts(j, j-1); j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
	return newEvent(EventMessageBounced, m.PartnerID, now, map[string]any{
		"mailbox_id": m.ID, "email": m.Email, "domain": domain,
		"queue_id": queueID, "recipients": rs,
	})
}

// crossed reports whether used moved from below pct percent of limit to
// at or above it.
func crossed(before, after, limit int64, pct int64) bool {
	if limit <= 0 {
		return false
	}
	at := func(v int64) bool { return v*100 >= limit*pct }
	return !at(before) && at(after)
}

// QuotaCrossed reports whether a mailbox's usage went from below
// WarnPercent of its quota to at or above it.
func QuotaCrossed(before, after, quotaBytes int64) bool {
	return crossed(before, after, quotaBytes, WarnPercent)
}

// TransferCrossings are the transfer events a domain's month crossing
// from before to after (in+out bytes) under a cap of capBytes calls for.
func TransferCrossings(before, after, capBytes int64) []string {
	var out []string
	if crossed(before, after, capBytes, WarnPercent) {
		out = append(out, EventTransferCapWarning)
	}
	if crossed(before, after, capBytes, 100) {
		out = append(out, EventTransferCapReached)
	}
	return out
}

// QuotaFullMark is the key under which a store remembers that a
// mailbox's quota_full event was recorded (see Webhooks.QuotaFull).
func QuotaFullMark(mailboxID int64) string {
	return "quota_full/" + strconv.FormatInt(mailboxID, 10)
}
