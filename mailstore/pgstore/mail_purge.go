package pgstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mailhost/mailhost/mailstore"
)

// purgeBatch bounds one retention transaction: big enough that the commit
// is amortised, small enough that the folders, accounts and domain it
// locks are held for milliseconds, not seconds.
const purgeBatch = 2000

// PurgeBefore implements mailstore.Store. It walks the domains that have
// a retention (an index of them), and in each deletes the messages
// received before the cutoff through messages_retention, purgeBatch at a
// time, each batch one transaction: its cost is that of what it deletes.
func (s *Store) PurgeBefore(ctx context.Context, now time.Time) ([]mailstore.PurgeResult, error) {
	var doms []mailstore.RetentionDomain
	err := s.read(ctx, func(tx pgx.Tx) error {
		doms = doms[:0]
		rows, err := tx.Query(ctx, `SELECT id, name, retention_days FROM domains WHERE retention_days > 0 ORDER BY id`)
		if err != nil {
			return err
		}
		var d mailstore.RetentionDomain
		_, err = pgx.ForEachRow(rows, []any{&d.ID, &d.Name, &d.Days}, func() error {
			doms = append(doms, d)
			return nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("purge: %w", err)
	}
	return mailstore.PurgeDomains(doms, now, purgeBatch, func(domainID int64, cutoff time.Time) (int, int64, int64, error) {
		return s.purgeDomainBatch(ctx, domainID, cutoff)
	})
}

// purgeDomainBatch deletes up to purgeBatch of the domain's messages
// received before cutoff, in one transaction: it finds them through the
// index (no lock), locks their folders in id order, deletes those still
// there, and moves the counters, the change log and the body references
// set-based. entries is how many messages it found.
func (s *Store) purgeDomainBatch(ctx context.Context, domainID int64, cutoff time.Time) (entries int, msgs, bytes int64, err error) {
	var touched []int64
	err = s.writeKeep(ctx, func(tx pgx.Tx) error {
		entries, msgs, bytes, touched = 0, 0, 0, nil
		rows, err := tx.Query(ctx, `SELECT folder_id, uid FROM messages
			WHERE domain_id = $1 AND received_at < $2 ORDER BY received_at LIMIT $3`, domainID, cutoff, purgeBatch)
		if err != nil {
			return err
		}
		var fids, uids []int64
		var fid, uid int64
		if _, err := pgx.ForEachRow(rows, []any{&fid, &uid}, func() error {
			fids, uids = append(fids, fid), append(uids, uid)
			return nil
		}); err != nil {
			return err
		}
		entries = len(fids)
		if entries == 0 {
			return nil
		}
		folders := slices.Clone(fids)
		slices.Sort(folders)
		folders = slices.Compact(folders)
		if _, err := tx.Exec(ctx, `SELECT 1 FROM folders WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE`, folders); err != nil {
			return fmt.Errorf("lock folders: %w", err)
		}
		rows, err = tx.Query(ctx, `DELETE FROM messages m
			USING unnest($1::bigint[], $2::bigint[]) AS d(folder_id, uid)
			WHERE m.folder_id = d.folder_id AND m.uid = d.uid AND m.domain_id = $3 AND m.received_at < $4
			RETURNING m.folder_id, m.uid, m.mailbox_id, m.blob_id, m.size, m.flags`, fids, uids, domainID, cutoff)
		if err != nil {
			return err
		}
		type gone struct {
			folder, uid, mailbox, blob, size int64
			flags                            []string
		}
		var all []gone
		var g gone
		if _, err := pgx.ForEachRow(rows, []any{&g.folder, &g.uid, &g.mailbox, &g.blob, &g.size, &g.flags}, func() error {
			all = append(all, g)
			g.flags = nil
			return nil
		}); err != nil {
			return err
		}
		if len(all) == 0 {
			return nil
		}
		// The log of each folder in UID order.
		slices.SortFunc(all, func(a, b gone) int {
			if a.folder != b.folder {
				return int(a.folder - b.folder)
			}
			return int(a.uid - b.uid)
		})
		var lb logBatch
		kw := keywordDelta{}
		mbUse := usage{}
		drops := map[int64]int64{}
		for _, g := range all {
			lb.removed(g.folder, uint32(g.uid), g.size, g.flags)
			kw.reflag(g.folder, g.flags, nil)
			mbUse.add(g.mailbox, -1, -g.size)
			drops[g.blob]++
			msgs++
			bytes += g.size
		}
		b := &pgx.Batch{}
		b.Queue(sqlLogChanges, lb.args()...)
		queueUsage(b, "mailboxes", mbUse, true)
		queueUsage(b, "domains", usage{domainID: {-msgs, -bytes}}, false)
		if err := sendBatch(ctx, tx, b); err != nil {
			return err
		}
		for id := range mbUse {
			touched = append(touched, id)
		}
		if err := applyKeywords(ctx, tx, kw, s.maxKeywords); err != nil {
			return err
		}
		return unrefBlobs(ctx, tx, drops)
	})
	if err != nil {
		return 0, 0, 0, err
	}
	s.notify(touched...)
	return entries, msgs, bytes, nil
}
