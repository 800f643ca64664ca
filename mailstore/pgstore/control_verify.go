package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mailhost/mailhost/mailstore"
)

// Domain verification: the columns verified, verified_at, verify_token
// and rev_name of domains, and the partial index domains_verified_rev
// (migration 003).

// checkRelated answers ErrDomainRelated when another partner has a
// verified domain that is a parent of name (exact rev_name values) or a
// subdomain of it (the rev_name range of its prefix), both read from
// domains_verified_rev.
//
// It reads the committed state, without a lock: a domain verified while
// a relative of it is being created can leave that relative in place.
// That costs nothing the check protects: the relative is unverified, and
// an unverified domain gets no mail from other partners' mailboxes
// (policy.DeliverLocally).
func checkRelated(ctx context.Context, tx pgx.Tx, partnerID int64, name string) error {
	parents := mailstore.ParentNames(name)
	for i, p := range parents {
		parents[i] = mailstore.ReversedName(p)
	}
	rev := mailstore.ReversedName(name)
	var related bool
	err := tx.QueryRow(ctx, `
		SELECT EXISTS (
			SELECT 1 FROM domains
			WHERE verified AND partner_id <> $1
			AND (rev_name = ANY($2) OR (rev_name >= $3 AND rev_name < $4)))`,
		partnerID, parents, rev+".", rev+"/").Scan(&related)
	if err != nil {
		return fmt.Errorf("look for verified relatives: %w", err)
	}
	if related {
		return mailstore.ErrDomainRelated
	}
	return nil
}

// SetVerified implements mailstore.Store.
func (s *Store) SetVerified(ctx context.Context, partnerID int64, name string, verified bool, now time.Time) (mailstore.Domain, error) {
	if verified {
		return s.verify(ctx, partnerID, name, false, now)
	}
	var d mailstore.Domain
	err := s.write(ctx, func(tx pgx.Tx) (err error) {
		if err := lockName(ctx, tx, name); err != nil {
			return err
		}
		d, err = scanDomain(tx.QueryRow(ctx, `UPDATE domains SET verified = false WHERE name = $1 AND partner_id = $2 RETURNING `+domainColumns,
			name, partnerID))
		if err != nil {
			return domainNotFound(err)
		}
		return relive(ctx, tx, name)
	})
	if err != nil {
		return mailstore.Domain{}, fmt.Errorf("domain %s: %w", name, err)
	}
	return d, nil
}

// SetVerifiedSole implements mailstore.Store.
func (s *Store) SetVerifiedSole(ctx context.Context, partnerID int64, name string, now time.Time) (mailstore.Domain, error) {
	return s.verify(ctx, partnerID, name, true, now)
}

// EnsureVerifyToken implements mailstore.Store; the row lock of the
// UPDATE orders racing calls, and the second finds the first's token.
func (s *Store) EnsureVerifyToken(ctx context.Context, partnerID int64, name, token string) (mailstore.Domain, error) {
	if token == "" {
		return mailstore.Domain{}, fmt.Errorf("domain %s: empty verify token: %w", name, mailstore.ErrInvalidArgument)
	}
	return s.changeDomain(ctx, partnerID, name,
		`verify_token = CASE WHEN verify_token = '' THEN $3 ELSE verify_token END`, []any{token}, nil)
}

// VerifiedDomains implements mailstore.Store.
func (s *Store) VerifiedDomains(ctx context.Context, after string, limit int) ([]mailstore.Domain, error) {
	var out []mailstore.Domain
	lim, _ := pageArgs(mailstore.Page{Limit: limit})
	err := s.read(ctx, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `
			SELECT `+domainColumns+` FROM domains
			WHERE verified AND rev_name > $1 ORDER BY rev_name LIMIT $2`, after, lim)
		var err error
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (mailstore.Domain, error) { return scanDomain(r) })
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("verified domains after %q: %w", after, err)
	}
	if out == nil {
		out = []mailstore.Domain{}
	}
	return out, nil
}
