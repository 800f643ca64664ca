package pgstore

import (
	"context"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// CreatePartner implements mailstore.Store.
func (s *Store) CreatePartner(ctx context.Context, name string, now time.Time) (mailstore.Partner, error) {
	return mailstore.Partner{}, errNotImplemented
}

// Partners implements mailstore.Store.
func (s *Store) Partners(ctx context.Context) ([]mailstore.Partner, error) {
	return nil, errNotImplemented
}

// PartnerByName implements mailstore.Store.
func (s *Store) PartnerByName(ctx context.Context, name string) (mailstore.Partner, error) {
	return mailstore.Partner{}, errNotImplemented
}

// SetPartnerLimits implements mailstore.Store.
func (s *Store) SetPartnerLimits(ctx context.Context, partnerID int64, l mailstore.PartnerLimits) (mailstore.Partner, error) {
	return mailstore.Partner{}, errNotImplemented
}

// AddAPIKey implements mailstore.Store.
func (s *Store) AddAPIKey(ctx context.Context, partnerID int64, k mailstore.APIKey) (mailstore.APIKey, error) {
	return mailstore.APIKey{}, errNotImplemented
}

// APIKeys implements mailstore.Store.
func (s *Store) APIKeys(ctx context.Context, partnerID int64) ([]mailstore.APIKey, error) {
	return nil, errNotImplemented
}

// APIKeyByLookup implements mailstore.Store.
func (s *Store) APIKeyByLookup(ctx context.Context, lookup string) (mailstore.APIKey, error) {
	return mailstore.APIKey{}, errNotImplemented
}

// RevokeAPIKey implements mailstore.Store.
func (s *Store) RevokeAPIKey(ctx context.Context, keyID int64, now time.Time) (mailstore.APIKey, error) {
	return mailstore.APIKey{}, errNotImplemented
}

// CreateDomain implements mailstore.Store.
func (s *Store) CreateDomain(ctx context.Context, partnerID int64, nd mailstore.NewDomain, now time.Time) (mailstore.Domain, error) {
	return mailstore.Domain{}, errNotImplemented
}

// Domains implements mailstore.Store.
func (s *Store) Domains(ctx context.Context, partnerID int64, p mailstore.Page) ([]mailstore.Domain, int, error) {
	return nil, 0, errNotImplemented
}

// Domain implements mailstore.Store.
func (s *Store) Domain(ctx context.Context, partnerID int64, name string) (mailstore.Domain, error) {
	return mailstore.Domain{}, errNotImplemented
}

// DomainByID implements mailstore.Store.
func (s *Store) DomainByID(ctx context.Context, partnerID int64, id int64) (mailstore.Domain, error) {
	return mailstore.Domain{}, errNotImplemented
}

// ApplyPlan implements mailstore.Store.
func (s *Store) ApplyPlan(ctx context.Context, partnerID int64, name string, plan mailstore.Plan) (mailstore.Domain, error) {
	return mailstore.Domain{}, errNotImplemented
}

// SetDomainLimits implements mailstore.Store.
func (s *Store) SetDomainLimits(ctx context.Context, partnerID int64, name string, l mailstore.DomainLimits) (mailstore.Domain, error) {
	return mailstore.Domain{}, errNotImplemented
}

// SetRetention implements mailstore.Store.
func (s *Store) SetRetention(ctx context.Context, partnerID int64, name string, days int64) (mailstore.Domain, error) {
	return mailstore.Domain{}, errNotImplemented
}

// SetTransferCap implements mailstore.Store.
func (s *Store) SetTransferCap(ctx context.Context, partnerID int64, name string, mb int64) (mailstore.Domain, error) {
	return mailstore.Domain{}, errNotImplemented
}

// SetSuspended implements mailstore.Store.
func (s *Store) SetSuspended(ctx context.Context, partnerID int64, name string, suspended bool) (mailstore.Domain, error) {
	return mailstore.Domain{}, errNotImplemented
}

// DeleteDomain implements mailstore.Store.
func (s *Store) DeleteDomain(ctx context.Context, partnerID int64, name string, force bool) error {
	return errNotImplemented
}

// DomainUsage implements mailstore.Store.
func (s *Store) DomainUsage(ctx context.Context, partnerID int64, name string, month string) (mailstore.DomainUsage, error) {
	return mailstore.DomainUsage{}, errNotImplemented
}

// CreateMailbox implements mailstore.Store.
func (s *Store) CreateMailbox(ctx context.Context, partnerID int64, domainName, email, passwordHash string, now time.Time) (mailstore.Mailbox, error) {
	return mailstore.Mailbox{}, errNotImplemented
}

// Mailboxes implements mailstore.Store.
func (s *Store) Mailboxes(ctx context.Context, partnerID int64, domainID int64, p mailstore.Page) ([]mailstore.MailboxEntry, int, error) {
	return nil, 0, errNotImplemented
}

// Mailbox implements mailstore.Store.
func (s *Store) Mailbox(ctx context.Context, partnerID int64, email string) (mailstore.Mailbox, error) {
	return mailstore.Mailbox{}, errNotImplemented
}

// SetPassword implements mailstore.Store.
func (s *Store) SetPassword(ctx context.Context, partnerID int64, email, passwordHash string, now time.Time) (mailstore.Mailbox, error) {
	return mailstore.Mailbox{}, errNotImplemented
}

// SetQuota implements mailstore.Store.
func (s *Store) SetQuota(ctx context.Context, partnerID int64, email string, mb int64) (mailstore.Mailbox, error) {
	return mailstore.Mailbox{}, errNotImplemented
}

// DeleteMailbox implements mailstore.Store.
func (s *Store) DeleteMailbox(ctx context.Context, partnerID int64, email string) error {
	return errNotImplemented
}

// CreateAlias implements mailstore.Store.
func (s *Store) CreateAlias(ctx context.Context, partnerID int64, domainName, source, destination string, now time.Time) (mailstore.Alias, error) {
	return mailstore.Alias{}, errNotImplemented
}

// Aliases implements mailstore.Store.
func (s *Store) Aliases(ctx context.Context, partnerID int64, domainID int64, p mailstore.Page) ([]mailstore.Alias, int, error) {
	return nil, 0, errNotImplemented
}

// DeleteAlias implements mailstore.Store.
func (s *Store) DeleteAlias(ctx context.Context, partnerID int64, source string) error {
	return errNotImplemented
}

// MailboxByEmail implements mailstore.Store.
func (s *Store) MailboxByEmail(ctx context.Context, email string) (mailstore.Mailbox, mailstore.Domain, error) {
	return mailstore.Mailbox{}, mailstore.Domain{}, errNotImplemented
}

// AliasBySource implements mailstore.Store.
func (s *Store) AliasBySource(ctx context.Context, source string) (mailstore.Alias, error) {
	return mailstore.Alias{}, errNotImplemented
}

// DomainWithID implements mailstore.Store.
func (s *Store) DomainWithID(ctx context.Context, id int64) (mailstore.Domain, error) {
	return mailstore.Domain{}, errNotImplemented
}

// DomainByName implements mailstore.Store.
func (s *Store) DomainByName(ctx context.Context, name string) (mailstore.Domain, error) {
	return mailstore.Domain{}, errNotImplemented
}

// RecordLogin implements mailstore.Store.
func (s *Store) RecordLogin(ctx context.Context, mailboxID int64, now time.Time) error {
	return errNotImplemented
}

// Transfer implements mailstore.Store.
func (s *Store) Transfer(ctx context.Context, domainID int64, month string) (mailstore.Transfer, error) {
	return mailstore.Transfer{}, errNotImplemented
}

// DKIMKeys implements mailstore.Store.
func (s *Store) DKIMKeys(ctx context.Context, domainID int64) ([]mailstore.DKIMKey, error) {
	return nil, errNotImplemented
}

// EnsureDKIMKeys implements mailstore.Store.
func (s *Store) EnsureDKIMKeys(ctx context.Context, domainID int64, keys []mailstore.DKIMKey) ([]mailstore.DKIMKey, error) {
	return nil, errNotImplemented
}
