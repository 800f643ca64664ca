package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mailhost/mailhost/mailstore"
)

// BenchmarkControl is mailstore's BenchmarkStore against PostgreSQL: the
// measured partner has one domain of 10,000 mailboxes, and 100,000
// mailboxes of 10 other partners sit around it, their ids interleaved
// with the target's. The load is written with set-based SQL (it is not
// what is measured). BENCHMARKS.md has the command and figures.
func BenchmarkControl(b *testing.B) {
	const target, others, otherPartners, otherDomains = 10_000, 100_000, 10, 10
	s, _ := mailFixture(b, 0)
	ctx := context.Background()
	now := time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)
	var pid, did int64
	err := s.write(ctx, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `INSERT INTO partners (name, created_at, domain_count) VALUES ('target', $1, 1) RETURNING id`, now).Scan(&pid); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `INSERT INTO domains (partner_id, name, plan, max_mailboxes, max_aliases, quota_mb, retention_days, transfer_monthly_mb, created_at, mailbox_count)
			VALUES ($1, 'target.example', 'business', 0, 0, 2048, 60, 10240, $2, $3) RETURNING id`, pid, now, target).Scan(&did); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO partners (name, created_at, domain_count)
			SELECT 'other' || p, $1, $2 FROM generate_series(0, $3 - 1) p`, now, otherDomains, otherPartners); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO domains (partner_id, name, plan, max_mailboxes, max_aliases, quota_mb, retention_days, transfer_monthly_mb, created_at, mailbox_count)
			SELECT p.id, 'd' || d || '.' || p.name || '.example', 'business', 0, 0, 2048, 60, 10240, $1, $2
			FROM partners p, generate_series(0, $3 - 1) d WHERE p.name LIKE 'other%'`, now, others/(otherPartners*otherDomains), otherDomains); err != nil {
			return err
		}
		// Ten other mailboxes between two of the target's, as if all were
		// made over the same months.
		if _, err := tx.Exec(ctx, `
			WITH od AS (SELECT id, partner_id, name, row_number() OVER (ORDER BY id) - 1 AS k FROM domains WHERE name <> 'target.example'),
			n AS (SELECT i FROM generate_series(0, $1::bigint * 11 - 1) i)
			INSERT INTO mailboxes (domain_id, partner_id, email, password_hash, quota_mb, folder_count, created_at)
			SELECT CASE WHEN i % 11 = 0 THEN $2 ELSE od.id END,
				CASE WHEN i % 11 = 0 THEN $3 ELSE od.partner_id END,
				CASE WHEN i % 11 = 0 THEN 'user' || (i / 11) || '@target.example' ELSE 'user' || i || '@' || od.name END,
				'x', 2048, 6, $4
			FROM n JOIN od ON od.k = i % ($5::bigint * $6::bigint)
			ORDER BY i`, target, did, pid, now, otherPartners, otherDomains); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO addresses (address, domain_id, kind, target_id) SELECT email, domain_id, 'm', id FROM mailboxes`)
		return err
	})
	if err != nil {
		b.Fatalf("load: %v", err)
	}
	if _, err := s.pool.Exec(ctx, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	b.Run("Mailboxes/all_10000", func(b *testing.B) {
		for b.Loop() {
			ms, n, err := s.Mailboxes(ctx, pid, did, mailstore.Page{})
			if err != nil || len(ms) != target || n != target {
				b.Fatalf("Mailboxes() = %d, %d, %v, want %d", len(ms), n, err, target)
			}
		}
	})
	b.Run("Mailboxes/limit_100_offset_5000", func(b *testing.B) {
		for b.Loop() {
			ms, n, err := s.Mailboxes(ctx, pid, did, mailstore.Page{Limit: 100, Offset: 5000})
			if err != nil || len(ms) != 100 || n != target {
				b.Fatalf("Mailboxes() = %d, %d, %v, want 100 of %d", len(ms), n, err, target)
			}
		}
	})
	b.Run("Mailbox", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Mailbox(ctx, pid, "user5000@target.example"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("MailboxByEmail", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := s.MailboxByEmail(ctx, "user5000@target.example"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
