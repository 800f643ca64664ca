package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mailhost/mailhost/mailstore"
)

// releaseBatch bounds the entries one ReleaseHeld transaction releases
// (a message's entries for several destinations go together, so it may
// pass it by a few), as in bbolt.
const releaseBatch = 2000

// releasePage is how many held entries a release reads at a time.
const releasePage = 500

// ReleaseHeld implements mailstore.Store. The domains with held entries
// are found with a skip scan of the index queue_held (one seek per
// domain), and each domain is released in transactions of its own:
//
//   - the domain row is locked FOR NO KEY UPDATE, as Deliver locks it:
//     every writer of a domain's transfer holds that lock (mail_deliver.go
//     decides caps on figures read under it), so releases of one domain
//     on several nodes and Deliver's cap checks take their turns, the
//     figures read are those the release adds to, and the domain stays
//     under its cap whoever releases; the lock also keeps the domain from
//     being deleted meanwhile;
//   - the entries are read oldest first (by id) and locked, and released
//     while the figures are under the cap, adding to them by delta (an
//     upsert, as Deliver's).
//
// Entries of a domain deleted meanwhile (no domain row) are released
// uncounted; their row locks alone keep two releasers from both taking
// them.
func (s *Store) ReleaseHeld(ctx context.Context, now time.Time) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("release held outbound entries: %w", err)
	}
	// An index skip scan: each step seeks the next domain_id past the last
	// one, so the cost is a seek per domain, whatever its held entries.
	rows, err := s.pool.Query(ctx, `
		WITH RECURSIVE d AS (
			(SELECT domain_id FROM queue WHERE held ORDER BY domain_id LIMIT 1)
			UNION ALL
			SELECT (SELECT q.domain_id FROM queue q WHERE q.held AND q.domain_id > d.domain_id ORDER BY q.domain_id LIMIT 1)
			FROM d WHERE d.domain_id IS NOT NULL
		)
		SELECT domain_id FROM d WHERE domain_id IS NOT NULL`)
	if err != nil {
		return 0, fmt.Errorf("release held outbound entries: %w", err)
	}
	domains, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return 0, fmt.Errorf("release held outbound entries: %w", err)
	}
	total := 0
	for _, domainID := range domains {
		for {
			n, more, err := s.releaseDomain(ctx, domainID, now)
			total += n
			if err != nil {
				return total, fmt.Errorf("release held outbound entries of domain %d: %w", domainID, err)
			}
			if !more {
				break
			}
		}
	}
	return total, nil
}

// heldEntry is what a release reads of a held entry.
type heldEntry struct {
	id, blobID, size int64
}

// releaseDomain releases up to about releaseBatch of a domain's held
// entries in one transaction, and reports whether it stopped at that
// bound with more to release.
func (s *Store) releaseDomain(ctx context.Context, domainID int64, now time.Time) (int, bool, error) {
	month := mailstore.Month(now)
	var released int
	var more bool
	err := s.writeKeep(ctx, func(tx pgx.Tx) error {
		released, more = 0, false
		var capMB int64
		err := tx.QueryRow(ctx, `SELECT transfer_monthly_mb FROM domains WHERE id = $1 FOR NO KEY UPDATE`, domainID).Scan(&capMB)
		gone := noRows(err)
		if err != nil && !gone {
			return fmt.Errorf("lock domain: %w", err)
		}
		d := mailstore.Domain{TransferMonthlyMB: capMB}
		var x mailstore.Transfer
		if !gone {
			// The month's rows of every shard (001_init.sql): the figures
			// every decision before this one left, under the domain lock.
			err := tx.QueryRow(ctx, `SELECT coalesce(sum(in_bytes), 0)::bigint, coalesce(sum(out_bytes), 0)::bigint
				FROM transfer WHERE domain_id = $1 AND month = $2`,
				domainID, month).Scan(&x.InBytes, &x.OutBytes)
			if err != nil {
				return fmt.Errorf("read transfer: %w", err)
			}
			if d.TransferCapReached(x) {
				return nil
			}
		}
		var ids []int64
		var counted int64
		// bodies are the bodies of the entries released so far: the
		// entries of one message (one body) go together and count once.
		// Deliver queues them one after the other, but ids from racing
		// Delivers may interleave, so a set rather than the last body.
		bodies := map[int64]bool{}
		lastID := int64(0)
		// full: the cap was reached; the rest of the page is read only for
		// the siblings of entries released.
		full := false
	pages:
		for !full {
			page, err := heldPage(ctx, tx, domainID, lastID)
			if err != nil {
				return err
			}
			for _, e := range page {
				lastID = e.id
				sibling := bodies[e.blobID]
				if !sibling && (full || len(ids) >= releaseBatch) {
					if !full {
						more = true
						break pages
					}
					continue
				}
				if !gone && !sibling {
					if d.TransferCapReached(x) {
						full = true
						continue
					}
					x.OutBytes += e.size
					counted += e.size
				}
				bodies[e.blobID] = true
				ids = append(ids, e.id)
			}
			if len(page) < releasePage {
				break
			}
		}
		if len(ids) == 0 {
			return nil
		}
		tag, err := tx.Exec(ctx, `UPDATE queue SET held = false, next_attempt = $2 WHERE id = ANY($1) AND held`, ids, mailstore.UTC(now))
		if err != nil {
			return fmt.Errorf("release entries: %w", err)
		}
		released = int(tag.RowsAffected())
		if counted > 0 {
			if _, err := tx.Exec(ctx, `
				INSERT INTO transfer (domain_id, month, shard, out_bytes) VALUES ($1, $2, $4, $3)
				ON CONFLICT (domain_id, month, shard) DO UPDATE SET out_bytes = transfer.out_bytes + EXCLUDED.out_bytes`,
				domainID, month, counted, s.shard); err != nil {
				return fmt.Errorf("count transfer: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return 0, false, err
	}
	return released, more, nil
}

// heldPage reads and locks the next releasePage held entries of a domain
// after id after, by id. The lock waits for a release of the same
// entries under way elsewhere; once it commits, the entries it released
// are no longer held and are not answered.
func heldPage(ctx context.Context, tx pgx.Tx, domainID, after int64) ([]heldEntry, error) {
	rows, err := tx.Query(ctx, `
		SELECT id, blob_id, size FROM queue
		WHERE held AND domain_id = $1 AND id > $2
		ORDER BY id
		LIMIT $3
		FOR UPDATE`, domainID, after, releasePage)
	if err != nil {
		return nil, fmt.Errorf("read held entries: %w", err)
	}
	page, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (heldEntry, error) {
		var e heldEntry
		err := r.Scan(&e.id, &e.blobID, &e.size)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("read held entries: %w", err)
	}
	return page, nil
}
