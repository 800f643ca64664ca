package service

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mailhost/mailhost/credential"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/policy"
)

// Operator is what the command line does to a store: provision partners and
// keys and run a retention pass. It is served by the store directly when no
// server holds the file, or by the running server over the control socket.
type Operator interface {
	CreatePartner(ctx context.Context, name string) (NewKey, error)
	Partners(ctx context.Context) ([]PartnerInfo, error)
	CreateKey(ctx context.Context, partner string) (NewKey, error)
	Keys(ctx context.Context, partner string) ([]KeyInfo, error)
	RevokeKey(ctx context.Context, keyID int64) (KeyInfo, error)
	RunRetention(ctx context.Context) ([]Purged, error)
	// SetPartnerLimits changes a partner's limits (name or id).
	SetPartnerLimits(ctx context.Context, partner string, l mailstore.PartnerLimits) (PartnerInfo, error)
	// Queue lists the outbound queue, at most limit entries from offset.
	Queue(ctx context.Context, p mailstore.Page) (QueueList, error)
	// FlushQueue makes every queued message that is not held for its
	// domain's transfer cap due now, and wakes the delivery workers.
	FlushQueue(ctx context.Context) (Flushed, error)
	// DeleteQueued removes a queue entry (see mailstore's
	// DeleteOutbound) and answers it as it was.
	DeleteQueued(ctx context.Context, id int64) (mailstore.Outbound, error)
	// SetMailboxPassword sets the password of any partner's mailbox
	// (the operator's own, postmaster@ the host name, first of all):
	// policy's password lengths, else ErrInvalidArgument;
	// ErrMailboxNotFound.
	SetMailboxPassword(ctx context.Context, email, password string) (MailboxInfo, error)
}

// MailboxInfo is a mailbox as the command line shows it.
type MailboxInfo struct {
	ID        int64  `json:"id"`
	PartnerID int64  `json:"partner_id"`
	Email     string `json:"email"`
}

// QueueList is a page of the outbound queue.
type QueueList struct {
	Total   int                  `json:"total"`
	Entries []mailstore.Outbound `json:"entries"`
}

// Flushed says how many queue entries a flush made due.
type Flushed struct {
	Flushed int `json:"flushed"`
}

// Purged is what a retention pass deleted in one domain.
type Purged struct {
	Domain   string `json:"domain"`
	Messages int64  `json:"messages"`
	Bytes    int64  `json:"bytes"`
}

// NewKey is a partner with a freshly made API key: the only time the key is
// shown.
type NewKey struct {
	ID        int64  `json:"id"`
	Name      string `json:"name"`
	APIKey    string `json:"api_key"`
	KeyID     int64  `json:"key_id"`
	KeyPrefix string `json:"key_prefix"`
}

// KeyInfo is an API key as listings show it: never the secret.
type KeyInfo struct {
	ID        int64   `json:"id"`
	PartnerID int64   `json:"partner_id"`
	Prefix    string  `json:"prefix"`
	CreatedAt string  `json:"created_at"`
	Revoked   bool    `json:"revoked"`
	RevokedAt *string `json:"revoked_at"`
}

// PartnerInfo is a partner as the command line shows it.
type PartnerInfo struct {
	ID         int64  `json:"id"`
	Name       string `json:"name"`
	CreatedAt  string `json:"created_at"`
	MaxDomains int64  `json:"max_domains"`
}

// timeFormat is the partner contract's one form of a time: UTC, no offset, no
// fraction, as the API writes every created_at.
const timeFormat = "2006-01-02T15:04:05"

func partnerInfo(p mailstore.Partner) PartnerInfo {
	return PartnerInfo{ID: p.ID, Name: p.Name, CreatedAt: p.CreatedAt.UTC().Format(timeFormat), MaxDomains: p.MaxDomains}
}

func keyInfo(k mailstore.APIKey) KeyInfo {
	ki := KeyInfo{ID: k.ID, PartnerID: k.PartnerID, Prefix: k.Prefix, CreatedAt: k.CreatedAt.UTC().Format(timeFormat), Revoked: k.Revoked}
	if k.Revoked {
		s := k.RevokedAt.UTC().Format(timeFormat)
		ki.RevokedAt = &s
	}
	return ki
}

// operatorStore is what the Operator acts on: the store, and its audit
// log, where each command's write to a partner is recorded.
type operatorStore interface {
	mailstore.Store
	mailstore.Audit
}

// storeOps is the Operator on an open store.
type storeOps struct {
	store operatorStore
	now   func() time.Time
	// wake, if set, tells the outbound workers that mail is due.
	wake func()
	// purged, if set, counts what a retention pass deleted.
	purged func(messages, bytes int64)
}

// NewStoreOperator returns the Operator that acts on st directly.
func NewStoreOperator(st operatorStore, now func() time.Time) Operator {
	return newStoreOps(st, now)
}

func newStoreOps(st operatorStore, now func() time.Time) *storeOps {
	if now == nil {
		now = time.Now
	}
	return &storeOps{store: st, now: now}
}

func (o *storeOps) CreatePartner(ctx context.Context, name string) (NewKey, error) {
	if name == "" || len(name) > 200 {
		return NewKey{}, fmt.Errorf("partner name must be 1 to 200 characters: %w", mailstore.ErrInvalidArgument)
	}
	// A name is printed in listings, logs and the console: a line break
	// or an escape sequence in it would forge lines or move a terminal's
	// cursor.
	if strings.IndexFunc(name, func(r rune) bool { return unicode.IsControl(r) || r == utf8.RuneError }) >= 0 || !utf8.ValidString(name) {
		return NewKey{}, fmt.Errorf("partner name must not contain control characters: %w", mailstore.ErrInvalidArgument)
	}
	p, err := o.store.CreatePartner(ctx, name, o.now())
	if err != nil {
		return NewKey{}, err
	}
	k, err := o.addKey(ctx, p)
	if err == nil {
		o.audit(ctx, p.ID, "partner create", p.Name)
	}
	return k, err
}

func (o *storeOps) addKey(ctx context.Context, p mailstore.Partner) (NewKey, error) {
	key, lookup, prefix, hash, err := credential.NewAPIKey()
	if err != nil {
		return NewKey{}, err
	}
	k, err := o.store.AddAPIKey(ctx, p.ID, mailstore.APIKey{Lookup: lookup, Prefix: prefix, SecretHash: hash, CreatedAt: o.now()})
	if err != nil {
		return NewKey{}, err
	}
	return NewKey{ID: p.ID, Name: p.Name, APIKey: key, KeyID: k.ID, KeyPrefix: k.Prefix}, nil
}

func (o *storeOps) Partners(ctx context.Context) ([]PartnerInfo, error) {
	ps, err := o.store.Partners(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]PartnerInfo, 0, len(ps))
	for _, p := range ps {
		out = append(out, partnerInfo(p))
	}
	return out, nil
}

func (o *storeOps) CreateKey(ctx context.Context, partner string) (NewKey, error) {
	p, err := o.store.PartnerByName(ctx, partner)
	if err != nil {
		return NewKey{}, fmt.Errorf("partner %q: %w", partner, err)
	}
	k, err := o.addKey(ctx, p)
	if err == nil {
		o.audit(ctx, p.ID, "key create", k.KeyPrefix)
	}
	return k, err
}

func (o *storeOps) Keys(ctx context.Context, partner string) ([]KeyInfo, error) {
	p, err := o.store.PartnerByName(ctx, partner)
	if err != nil {
		return nil, fmt.Errorf("partner %q: %w", partner, err)
	}
	keys, err := o.store.APIKeys(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	out := make([]KeyInfo, 0, len(keys))
	for _, k := range keys {
		out = append(out, keyInfo(k))
	}
	return out, nil
}

func (o *storeOps) RevokeKey(ctx context.Context, keyID int64) (KeyInfo, error) {
	k, err := o.store.RevokeAPIKey(ctx, keyID, o.now())
	if err != nil {
		return KeyInfo{}, err
	}
	o.audit(ctx, k.PartnerID, "key revoke", k.Prefix)
	return keyInfo(k), nil
}

func (o *storeOps) RunRetention(ctx context.Context) ([]Purged, error) {
	res, err := o.store.PurgeBefore(ctx, o.now())
	out := make([]Purged, 0, len(res))
	for _, r := range res {
		out = append(out, Purged{Domain: r.Domain, Messages: r.Messages, Bytes: r.Bytes})
		if o.purged != nil {
			o.purged(r.Messages, r.Bytes)
		}
	}
	return out, err
}

func (o *storeOps) Queue(ctx context.Context, p mailstore.Page) (QueueList, error) {
	entries, total, err := o.store.OutboundEntries(ctx, p)
	if err != nil {
		return QueueList{}, err
	}
	if entries == nil {
		entries = []mailstore.Outbound{}
	}
	return QueueList{Total: total, Entries: entries}, nil
}

func (o *storeOps) FlushQueue(ctx context.Context) (Flushed, error) {
	n, err := o.store.FlushOutbound(ctx, o.now())
	if err != nil {
		return Flushed{}, err
	}
	if o.wake != nil {
		o.wake()
	}
	return Flushed{Flushed: n}, nil
}

func (o *storeOps) DeleteQueued(ctx context.Context, id int64) (mailstore.Outbound, error) {
	return o.store.DeleteOutbound(ctx, id)
}

func (o *storeOps) SetPartnerLimits(ctx context.Context, partner string, l mailstore.PartnerLimits) (PartnerInfo, error) {
	p, err := o.store.PartnerByName(ctx, partner)
	if err != nil {
		return PartnerInfo{}, fmt.Errorf("partner %q: %w", partner, err)
	}
	p, err = o.store.SetPartnerLimits(ctx, p.ID, l)
	if err != nil {
		return PartnerInfo{}, err
	}
	o.audit(ctx, p.ID, "partner limits", p.Name)
	return partnerInfo(p), nil
}

// audit records a command-line write to a partner in its audit log
// (GET /audit/): method "CLI", the command as route, no key. A failure
// is logged: the write is done.
func (o *storeOps) audit(ctx context.Context, partnerID int64, command, object string) {
	e := mailstore.AuditEntry{Time: o.now(), PartnerID: partnerID, Method: "CLI", Route: command, Object: object, Status: 200}
	if _, err := o.store.AddAudit(ctx, e); err != nil {
		slog.Default().Error("audit entry", "command", command, "partner_id", partnerID, "err", err)
	}
}

func (o *storeOps) SetMailboxPassword(ctx context.Context, email, password string) (MailboxInfo, error) {
	if n := utf8.RuneCountInString(password); n < policy.MinPasswordLen || n > policy.MaxPasswordLen {
		return MailboxInfo{}, fmt.Errorf("password must be %d to %d characters: %w", policy.MinPasswordLen, policy.MaxPasswordLen, mailstore.ErrInvalidArgument)
	}
	addr, err := policy.NormalizeAddress(email)
	if err != nil {
		return MailboxInfo{}, fmt.Errorf("%w: %w", mailstore.ErrInvalidArgument, err)
	}
	m, _, err := o.store.MailboxByEmail(ctx, addr)
	if err != nil {
		return MailboxInfo{}, fmt.Errorf("mailbox %s: %w", addr, err)
	}
	hash, err := credential.HashPassword(password)
	if err != nil {
		return MailboxInfo{}, err
	}
	if m, err = o.store.SetPassword(ctx, m.PartnerID, addr, hash, o.now()); err != nil {
		return MailboxInfo{}, fmt.Errorf("mailbox %s: %w", addr, err)
	}
	o.audit(ctx, m.PartnerID, "mailbox password", addr)
	return MailboxInfo{ID: m.ID, PartnerID: m.PartnerID, Email: m.Email}, nil
}
