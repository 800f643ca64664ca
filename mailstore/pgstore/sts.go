package pgstore

// The MTA-STS policies of the queue's destinations (the sts_policies
// table). Each node fetches and stores policies on its own; a put
// replaces the row whoever wrote it, so the table holds the policy last
// fetched by any node, as bbolt holds the last fetched by its one process.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mailhost/mailhost/mailstore"
)

// stsDomain folds a domain name as the policies are keyed (as bbolt's
// stsDomain does: both stores must find the same key for a name).
func stsDomain(domain string) string {
	return strings.ToLower(strings.TrimSuffix(domain, "."))
}

// STSPolicy implements mailstore.Store.
func (s *Store) STSPolicy(ctx context.Context, domain string, now time.Time) (mailstore.STSPolicy, error) {
	domain = stsDomain(domain)
	if err := ctx.Err(); err != nil {
		return mailstore.STSPolicy{}, fmt.Errorf("MTA-STS policy of %s: %w", domain, err)
	}
	p := mailstore.STSPolicy{Domain: domain}
	var maxAge int64
	// One statement: its own snapshot suffices, no transaction needed.
	// Expiry is checked in SQL so that an expired row reads as none.
	err := s.pool.QueryRow(ctx, `
		SELECT policy_id, mode, mx, max_age_s, expires FROM sts_policies
		WHERE domain = $1 AND expires > $2`, domain, now).
		Scan(&p.ID, &p.Mode, &p.MX, &maxAge, &p.Expires)
	if noRows(err) {
		err = mailstore.ErrSTSPolicyNotFound
	}
	if err != nil {
		return mailstore.STSPolicy{}, fmt.Errorf("MTA-STS policy of %s: %w", domain, err)
	}
	p.MaxAge = time.Duration(maxAge) * time.Second
	p.Expires = p.Expires.UTC()
	return p, nil
}

// PutSTSPolicy implements mailstore.Store. The prune skips rows another
// transaction has locked: those are being replaced (their expiry moves),
// and waiting for them would make two nodes' puts queue behind each other
// for rows neither needs.
func (s *Store) PutSTSPolicy(ctx context.Context, p mailstore.STSPolicy, now time.Time) error {
	domain := stsDomain(p.Domain)
	if domain == "" || p.MaxAge < 0 {
		return fmt.Errorf("put MTA-STS policy of %q, max_age %v: %w", p.Domain, p.MaxAge, mailstore.ErrInvalidArgument)
	}
	mx := p.MX
	if mx == nil {
		mx = []string{} // the column is NOT NULL
	}
	err := s.writeKeep(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			INSERT INTO sts_policies (domain, policy_id, mode, mx, max_age_s, expires)
			VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (domain) DO UPDATE SET policy_id = EXCLUDED.policy_id, mode = EXCLUDED.mode,
				mx = EXCLUDED.mx, max_age_s = EXCLUDED.max_age_s, expires = EXCLUDED.expires`,
			domain, p.ID, p.Mode, mx, int64(p.MaxAge/time.Second), mailstore.UTC(p.Expires)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `
			DELETE FROM sts_policies WHERE domain IN (
				SELECT domain FROM sts_policies
				WHERE expires <= $1 AND domain <> $2
				ORDER BY expires, domain
				LIMIT $3
				FOR UPDATE SKIP LOCKED)`, now, domain, mailstore.STSPruneLimit)
		return err
	})
	if err != nil {
		return fmt.Errorf("put MTA-STS policy of %s: %w", domain, err)
	}
	return nil
}
