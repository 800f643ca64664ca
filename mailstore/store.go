// Package mailstore is the store's contract: mailhost's domain types, the
// role interfaces and the Store interface with their contract, the
// sentinel errors, and the rules both stores apply, as plain functions.
// It imports no storage: the implementations are mailstore/boltstore
// (bbolt) and mailstore/pgstore (PostgreSQL), as database/sql is apart
// from its drivers.
//
// Contract, for every implementation (mailstore/storetest checks it):
//
//   - Each method is one atomic use case: it happens whole or not at all, and
//     when it returns nil its effect is durable (committed and synced).
//   - Every method that takes a partnerID sees only that partner's objects;
//     another partner's domain, mailbox or alias is reported exactly as a
//     missing one (ErrDomainNotFound, ErrMailboxNotFound, ErrAliasNotFound).
//   - Addresses and domain names are passed already normalised (lower case,
//     IDNA ASCII form); see package policy.
//   - Not found is an error, never a zero value with a nil error.
//   - Counters (a domain's mailbox, alias and message counts and used bytes,
//     a mailbox's used bytes and message count, transfer per month) change in
//     the same transaction as what they count.
//   - Times are stored in UTC with second precision.
//   - A method called with a done context answers the context's error and
//     changes nothing.
package mailstore

import (
	"context"
	"errors"
	"time"
)

// Sentinel errors. Callers match them with errors.Is.
var (
	ErrNotFound        = errors.New("not found")
	ErrPartnerNotFound = notFound("partner not found")
	ErrKeyNotFound     = notFound("API key not found")
	ErrDomainNotFound  = notFound("domain not found")
	ErrMailboxNotFound = notFound("mailbox not found")
	ErrAliasNotFound   = notFound("alias not found")
	ErrPartnerExists   = errors.New("partner already exists")
	ErrDomainExists    = errors.New("domain already exists")
	ErrEmailExists     = errors.New("email already exists")
	ErrAliasExists     = errors.New("alias source already exists")
	ErrMailboxLimit    = errors.New("mailbox quota exceeded for this domain")
	ErrAliasLimit      = errors.New("alias quota exceeded")
	ErrDomainLimit     = errors.New("domain limit reached for this partner")
	ErrDomainNotEmpty  = errors.New("domain is not empty")
	ErrDomainRelated   = errors.New("domain is a subdomain or parent domain of another partner's verified domain")
	ErrDomainOwned     = errors.New("domain is verified by another partner")
	ErrDomainShared    = errors.New("another partner holds a claim of the domain")
	ErrWrongDomain     = errors.New("address is not in the domain")
	ErrLocked          = errors.New("store is locked by another process")
	ErrSchemaTooNew    = errors.New("store schema is newer than this binary")
	ErrInvalidArgument = errors.New("invalid argument")
)

// ErrNoSpace is a write the store could not make for lack of space: the
// file system of a bbolt data directory is full (ENOSPC, or EDQUOT for
// a disk quota), or PostgreSQL answered disk_full (SQLSTATE 53100). It is
// temporary: nothing of the write was stored, what was stored before is
// intact, and the same write succeeds once space is freed. The protocols
// answer it as such: 452 4.3.1 in SMTP, NO [UNAVAILABLE] in IMAP, 503 in
// the API.
var ErrNoSpace = errors.New("no space left for the store")

// UTC is a time as every store keeps it: in UTC, to the second.
func UTC(t time.Time) time.Time { return t.UTC().Truncate(time.Second) }

type notFoundError struct{ msg string }

func (e *notFoundError) Error() string        { return e.msg }
func (e *notFoundError) Is(target error) bool { return target == ErrNotFound }

func notFound(msg string) error { return &notFoundError{msg} }

// Store is the whole persistent state of mailhost.
type Store interface {
	Control
	Mail
	Queue
	// StoreSize answers how big the store is, for monitoring, without
	// reading its data (see StoreSize's fields for what each backend
	// answers).
	StoreSize(ctx context.Context) (StoreSize, error)
	// Close releases the store; it waits for methods under way.
	Close() error
}

// Control is the control plane: partners, keys, domains, mailboxes, aliases
// and their limits.
type Control interface {
	// CreatePartner adds a partner; ErrPartnerExists if the name is taken,
	// ErrInvalidArgument if it is empty or all digits (PartnerByName would
	// read it as an id).
	CreatePartner(ctx context.Context, name string, now time.Time) (Partner, error)
	// Partners lists all partners by id.
	Partners(ctx context.Context) ([]Partner, error)
	// PartnerByName finds a partner by exact name, or by decimal id.
	PartnerByName(ctx context.Context, name string) (Partner, error)
	// SetPartnerLimits changes the limits given (a negative one is
	// ErrInvalidArgument) and answers the partner. Repeating it is
	// harmless. ErrPartnerNotFound.
	SetPartnerLimits(ctx context.Context, partnerID int64, l PartnerLimits) (Partner, error)

	// AddAPIKey stores a key made by package credential. ID and PartnerID
	// are set by the store; ErrPartnerNotFound if the partner is unknown.
	AddAPIKey(ctx context.Context, partnerID int64, k APIKey) (APIKey, error)
	// APIKeys lists a partner's keys by id, revoked ones included.
	// ErrPartnerNotFound if the partner is unknown.
	APIKeys(ctx context.Context, partnerID int64) ([]APIKey, error)
	// APIKeyByLookup finds a key by its public lookup part (revoked or not).
	// ErrKeyNotFound. A lookup already taken makes AddAPIKey fail.
	APIKeyByLookup(ctx context.Context, lookup string) (APIKey, error)
	// RevokeAPIKey revokes a key by id; repeating it is harmless and keeps
	// the first RevokedAt. ErrKeyNotFound.
	RevokeAPIKey(ctx context.Context, keyID int64, now time.Time) (APIKey, error)

	// CreateDomain adds a claim of a domain name to a partner with the
	// plan's limits, unverified. ErrDomainExists if the partner has a
	// claim of the name already, or another partner has verified it; an
	// unverified claim of another partner does not block (the new claim
	// is live only if no other claim is: LiveClaim). ErrPartnerNotFound;
	// ErrDomainLimit when the partner has MaxDomains domains already;
	// ErrDomainRelated when another partner has a verified domain that is
	// a parent or a subdomain of the name (checked after the others, by
	// index: the name's parents by key, its subdomains by a prefix of
	// ReversedName).
	CreateDomain(ctx context.Context, partnerID int64, d NewDomain, now time.Time) (Domain, error)
	// Domains lists a partner's domains by id, and the total count.
	Domains(ctx context.Context, partnerID int64, p Page) ([]Domain, int, error)
	// Domain finds a partner's domain by name.
	Domain(ctx context.Context, partnerID int64, name string) (Domain, error)
	// DomainByID finds a partner's domain by id.
	DomainByID(ctx context.Context, partnerID int64, id int64) (Domain, error)
	// ApplyPlan sets the domain's plan, retention and transfer cap, and the
	// quota of the domain and of each of its mailboxes, in one transaction.
	ApplyPlan(ctx context.Context, partnerID int64, name string, plan Plan) (Domain, error)
	// SetDomainLimits changes the count limits given.
	SetDomainLimits(ctx context.Context, partnerID int64, name string, l DomainLimits) (Domain, error)
	// SetSpamFilter sets the domain's SpamFilter ("" for the server's
	// default); any other value than the SpamFilter constants is
	// ErrInvalidArgument.
	SetSpamFilter(ctx context.Context, partnerID int64, name, filter string) (Domain, error)
	// SetRetention sets retention_days.
	SetRetention(ctx context.Context, partnerID int64, name string, days int64) (Domain, error)
	// SetTransferCap sets transfer_monthly_mb.
	SetTransferCap(ctx context.Context, partnerID int64, name string, mb int64) (Domain, error)
	// SetSuspended suspends or resumes a domain.
	SetSuspended(ctx context.Context, partnerID int64, name string, suspended bool) (Domain, error)
	// SetVerified records the outcome of an ownership check: verified
	// true also sets VerifiedAt to now; false keeps the VerifiedAt of the
	// last good check. Repeating it is harmless.
	//
	// Verified true is a proof that names the partner (its own TXT
	// token): in the same transaction the claim becomes the name's live
	// claim, and every other partner's claim of the name that has not
	// ended ends (ClaimEndedAt = now), each with a domain.claim_ended
	// event and an audit entry for its partner (NewClaimEndedAudit). A
	// claim that had ended stands again. ErrDomainOwned, changing
	// nothing, when another partner has the name verified. Verified false
	// leaves the claim live if it was (LiveClaim).
	SetVerified(ctx context.Context, partnerID int64, name string, verified bool, now time.Time) (Domain, error)
	// SetVerifiedSole is SetVerified(true) for a proof that does not name
	// a partner (an MX record pointing to this server): it answers
	// ErrDomainShared, changing nothing, when another partner holds a
	// claim of the name, ended or not, unless the claim is verified
	// already (then it only moves VerifiedAt).
	SetVerifiedSole(ctx context.Context, partnerID int64, name string, now time.Time) (Domain, error)
	// EnsureVerifyToken gives the domain the ownership token if it has
	// none, and answers the domain with the token it then has: the first
	// one stored wins when two calls race. ErrInvalidArgument for an empty
	// token.
	EnsureVerifyToken(ctx context.Context, partnerID int64, name, token string) (Domain, error)
	// VerifiedDomains lists every partner's verified domains, at most
	// limit (0: all) in the order of their ReversedName, from the first
	// whose ReversedName is after after ("" : from the start). It is for
	// the operator's periodic re-check, which pages through them with the
	// ReversedName of the last domain of the batch before; its cost is
	// that of the batch, not of every domain.
	VerifiedDomains(ctx context.Context, after string, limit int) ([]Domain, error)
	// DeleteDomain deletes an empty domain; with force it first deletes its
	// mailboxes (and their messages) and aliases. ErrDomainNotEmpty
	// otherwise. When the claim deleted was live, the name's next live
	// claim (LiveClaim of the others) is live in the same transaction.
	DeleteDomain(ctx context.Context, partnerID int64, name string, force bool) error
	// DomainUsage returns the domain with its counters and the transfer
	// figures of the given month (YYYY-MM).
	DomainUsage(ctx context.Context, partnerID int64, name string, month string) (DomainUsage, error)

	// CreateMailbox adds a mailbox to the partner's domain with the domain's
	// quota. ErrDomainNotFound, ErrWrongDomain, ErrEmailExists (also when
	// the address is an alias source of the claim), ErrMailboxLimit.
	// Addresses are unique within one claim: two partners' claims of a
	// name may each have the same address, and the mail plane sees the
	// live claim's.
	CreateMailbox(ctx context.Context, partnerID int64, domainName, email, passwordHash string, now time.Time) (Mailbox, error)
	// Mailboxes lists a partner's mailboxes by id, all or of one domain
	// (domainID 0 means all), and the total. ErrDomainNotFound for an
	// unknown domain id. It answers what a list shows, which never changes
	// once a mailbox exists, so that a domain of 10,000 mailboxes lists
	// without reading 10,000 records.
	Mailboxes(ctx context.Context, partnerID int64, domainID int64, p Page) ([]MailboxEntry, int, error)
	// Mailbox finds a partner's mailbox by address, in the partner's own
	// claim of the address's domain, live or not.
	Mailbox(ctx context.Context, partnerID int64, email string) (Mailbox, error)
	// SetPassword replaces a mailbox's password hash.
	SetPassword(ctx context.Context, partnerID int64, email, passwordHash string, now time.Time) (Mailbox, error)
	// SetQuota sets a mailbox's quota_mb.
	SetQuota(ctx context.Context, partnerID int64, email string, mb int64) (Mailbox, error)
	// DeleteMailbox deletes a mailbox, its folders, messages and
	// subscriptions, and frees their storage, in one transaction.
	DeleteMailbox(ctx context.Context, partnerID int64, email string) error

	// CreateAlias adds an alias (or a catch-all, source "@domain").
	// ErrDomainNotFound, ErrWrongDomain, ErrAliasExists (also when the
	// source is a mailbox address), ErrAliasLimit, ErrInvalidArgument when
	// the destination is the source.
	CreateAlias(ctx context.Context, partnerID int64, domainName, source, destination string, now time.Time) (Alias, error)
	// Aliases lists a partner's aliases, all or of one domain.
	Aliases(ctx context.Context, partnerID int64, domainID int64, p Page) ([]Alias, int, error)
	// DeleteAlias deletes an alias by source.
	DeleteAlias(ctx context.Context, partnerID int64, source string) error
}
