package pgstore

import (
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mailhost/mailhost/mailstore"
)

// Column lists and scanners of the control plane's rows, shared by every
// file that reads a domain or a mailbox (the mail plane's too), so that a
// column added later is added in one place.

// domainColumns are the columns scanDomain reads, in its order.
const domainColumns = `id, partner_id, name, plan, max_mailboxes, max_aliases, quota_mb,
	retention_days, transfer_monthly_mb, suspended, created_at,
	mailbox_count, alias_count, message_count, used_bytes,
	verified, verified_at, verify_token`

// mailboxColumns are the columns scanMailbox reads, in its order.
const mailboxColumns = `id, domain_id, partner_id, email, password_hash, quota_mb,
	used_bytes, message_count, last_login, created_at, password_changed_at`

// qualified prefixes each column of a list such as domainColumns with a
// table alias, for queries that join ("d" gives "d.id, d.partner_id, ...").
func qualified(alias, columns string) string {
	cols := strings.Split(columns, ",")
	for i, c := range cols {
		cols[i] = alias + "." + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}

// domainScan holds the scan targets of one domain row; fields that need
// converting after the scan (times read in the session's zone) are fixed
// by done.
type domainScan struct {
	d          mailstore.Domain
	verifiedAt *time.Time
}

func (s *domainScan) dest() []any {
	d := &s.d
	return []any{&d.ID, &d.PartnerID, &d.Name, &d.Plan, &d.MaxMailboxes, &d.MaxAliases, &d.QuotaMB,
		&d.RetentionDays, &d.TransferMonthlyMB, &d.Suspended, &d.CreatedAt,
		&d.MailboxCount, &d.AliasCount, &d.MessageCount, &d.UsedBytes,
		&d.Verified, &s.verifiedAt, &d.VerifyToken}
}

func (s *domainScan) done() mailstore.Domain {
	s.d.CreatedAt = s.d.CreatedAt.UTC()
	s.d.VerifiedAt = fromNull(s.verifiedAt)
	return s.d
}

// scanDomain reads one row of domainColumns. pgx.ErrNoRows is returned as
// it is: the caller knows which error "not found" is for it.
func scanDomain(row pgx.Row) (mailstore.Domain, error) {
	var s domainScan
	if err := row.Scan(s.dest()...); err != nil {
		return mailstore.Domain{}, err
	}
	return s.done(), nil
}

// mailboxScan is domainScan for a mailbox row.
type mailboxScan struct {
	m                    mailstore.Mailbox
	lastLogin, pwChanged *time.Time
}

func (s *mailboxScan) dest() []any {
	m := &s.m
	return []any{&m.ID, &m.DomainID, &m.PartnerID, &m.Email, &m.PasswordHash, &m.QuotaMB,
		&m.UsedBytes, &m.MessageCount, &s.lastLogin, &m.CreatedAt, &s.pwChanged}
}

func (s *mailboxScan) done() mailstore.Mailbox {
	s.m.CreatedAt = s.m.CreatedAt.UTC()
	s.m.LastLogin = fromNull(s.lastLogin)
	s.m.PasswordChangedAt = fromNull(s.pwChanged)
	return s.m
}

// scanMailbox reads one row of mailboxColumns; pgx.ErrNoRows as it is.
func scanMailbox(row pgx.Row) (mailstore.Mailbox, error) {
	var s mailboxScan
	if err := row.Scan(s.dest()...); err != nil {
		return mailstore.Mailbox{}, err
	}
	return s.done(), nil
}
