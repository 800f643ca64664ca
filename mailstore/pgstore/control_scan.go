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

// domainCols are the columns scanDomain reads, in its order, of the
// domains row named t (the table, or its alias in a join). A domain's
// message_count and used_bytes are its row's plus what deliveries added
// in domain_usage, one row per shard (001_init.sql says why).
func domainCols(t string) string {
	return strings.NewReplacer("T.", t+".").Replace(`T.id, T.partner_id, T.name, T.plan, T.max_mailboxes,
	T.max_aliases, T.quota_mb, T.retention_days, T.transfer_monthly_mb, T.suspended, T.created_at,
	T.mailbox_count, T.alias_count,
	T.message_count + (SELECT coalesce(sum(u.message_count), 0) FROM domain_usage u WHERE u.domain_id = T.id)::bigint,
	T.used_bytes + (SELECT coalesce(sum(u.used_bytes), 0) FROM domain_usage u WHERE u.domain_id = T.id)::bigint,
	T.verified, T.verified_at, T.verify_token, T.spam_filter, T.claim_ended_at`)
}

// domainColumns are domainCols of the table itself.
var domainColumns = domainCols("domains")

// mailboxColumns are the columns scanMailbox reads, in its order.
const mailboxColumns = `id, domain_id, partner_id, email, password_hash, quota_mb,
	used_bytes, message_count, last_login, created_at, password_changed_at`

// qualified prefixes each column of a list such as mailboxColumns with a
// table alias, for queries that join ("m" gives "m.id, m.domain_id, ...");
// domainCols takes its alias itself.
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
	d                   mailstore.Domain
	verifiedAt, endedAt *time.Time
}

func (s *domainScan) dest() []any {
	d := &s.d
	return []any{&d.ID, &d.PartnerID, &d.Name, &d.Plan, &d.MaxMailboxes, &d.MaxAliases, &d.QuotaMB,
		&d.RetentionDays, &d.TransferMonthlyMB, &d.Suspended, &d.CreatedAt,
		&d.MailboxCount, &d.AliasCount, &d.MessageCount, &d.UsedBytes,
		&d.Verified, &s.verifiedAt, &d.VerifyToken, &d.SpamFilter, &s.endedAt}
}

func (s *domainScan) done() mailstore.Domain {
	s.d.CreatedAt = s.d.CreatedAt.UTC()
	s.d.VerifiedAt = fromNull(s.verifiedAt)
	s.d.ClaimEndedAt = fromNull(s.endedAt)
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
