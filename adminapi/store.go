package adminapi

import (
	"context"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// Store is what the API reads and changes: the control plane it manages,
// the lookups across partners that answer a taken address or domain name
// before a password is hashed or a key made, and the DKIM keys its DNS
// listing shows. *boltstore.Store satisfies it; the methods keep the
// contract of mailstore.Store.
type Store interface {
	APIKeyByLookup(ctx context.Context, lookup string) (mailstore.APIKey, error)

	CreateDomain(ctx context.Context, partnerID int64, d mailstore.NewDomain, now time.Time) (mailstore.Domain, error)
	Domains(ctx context.Context, partnerID int64, p mailstore.Page) ([]mailstore.Domain, int, error)
	Domain(ctx context.Context, partnerID int64, name string) (mailstore.Domain, error)
	ApplyPlan(ctx context.Context, partnerID int64, name string, plan mailstore.Plan) (mailstore.Domain, error)
	SetDomainLimits(ctx context.Context, partnerID int64, name string, l mailstore.DomainLimits) (mailstore.Domain, error)
	SetRetention(ctx context.Context, partnerID int64, name string, days int64) (mailstore.Domain, error)
	SetSpamFilter(ctx context.Context, partnerID int64, name, filter string) (mailstore.Domain, error)
	SetTransferCap(ctx context.Context, partnerID int64, name string, mb int64) (mailstore.Domain, error)
	SetSuspended(ctx context.Context, partnerID int64, name string, suspended bool) (mailstore.Domain, error)
	SetVerified(ctx context.Context, partnerID int64, name string, verified bool, now time.Time) (mailstore.Domain, error)
	SetVerifiedSole(ctx context.Context, partnerID int64, name string, now time.Time) (mailstore.Domain, error)
	EnsureVerifyToken(ctx context.Context, partnerID int64, name, token string) (mailstore.Domain, error)
	DeleteDomain(ctx context.Context, partnerID int64, name string, force bool) error
	DomainUsage(ctx context.Context, partnerID int64, name string, month string) (mailstore.DomainUsage, error)

	CreateMailbox(ctx context.Context, partnerID int64, domainName, email, passwordHash string, now time.Time) (mailstore.Mailbox, error)
	Mailboxes(ctx context.Context, partnerID int64, domainID int64, p mailstore.Page) ([]mailstore.MailboxEntry, int, error)
	Mailbox(ctx context.Context, partnerID int64, email string) (mailstore.Mailbox, error)
	SetPassword(ctx context.Context, partnerID int64, email, passwordHash string, now time.Time) (mailstore.Mailbox, error)
	SetQuota(ctx context.Context, partnerID int64, email string, mb int64) (mailstore.Mailbox, error)
	DeleteMailbox(ctx context.Context, partnerID int64, email string) error

	CreateAlias(ctx context.Context, partnerID int64, domainName, source, destination string, now time.Time) (mailstore.Alias, error)
	Aliases(ctx context.Context, partnerID int64, domainID int64, p mailstore.Page) ([]mailstore.Alias, int, error)
	DeleteAlias(ctx context.Context, partnerID int64, source string) error

	// The live claims (mailstore.LiveClaim), whoever holds them: a name
	// another partner has verified is taken, and the pre-checks that
	// spare a password hash or a key look there first.
	AliasBySource(ctx context.Context, source string) (mailstore.Alias, error)
	DomainByName(ctx context.Context, name string) (mailstore.Domain, error)

	// Webhooks and the audit log (the rest of their interfaces is the
	// webhook worker's and the retention pass's).
	CreateWebhook(ctx context.Context, partnerID int64, w mailstore.Webhook, now time.Time) (mailstore.Webhook, error)
	Webhooks(ctx context.Context, partnerID int64, p mailstore.Page) ([]mailstore.Webhook, int, error)
	DeleteWebhook(ctx context.Context, partnerID, id int64) error
	AddAudit(ctx context.Context, e mailstore.AuditEntry) (mailstore.AuditEntry, error)
	AuditEntries(ctx context.Context, partnerID int64, p mailstore.Page) ([]mailstore.AuditEntry, int, error)

	DKIMKeys(ctx context.Context, domainID int64) ([]mailstore.DKIMKey, error)
	EnsureDKIMKeys(ctx context.Context, domainID int64, keys []mailstore.DKIMKey) ([]mailstore.DKIMKey, error)

	// A mailbox's Sieve scripts (those ManageSieve edits too) and its
	// auto-reply.
	mailstore.SieveScripts
	autoReplyStore
}
