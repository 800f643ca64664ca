package pgstore

// The outbound queue (the queue table). Deliver (mail.go) inserts the
// entries; the methods here are the delivery workers' and the operator's.
//
// Invariants, kept by every writer within one transaction:
//
//   - an entry holds one reference to its blob_id (blobs.refs), dropped
//     with unrefBlobs when the entry is removed;
//   - a held entry's bytes are counted in no domain's transfer; the
//     others' were counted when they were queued or released (bounces
//     never);
//   - leased_by is set only by a claim, to the claiming node, and cleared
//     when the attempt is recorded or the lease released: several nodes
//     work one queue, and each may end only its own leases.
//
// Times are stored with second precision; a claim's lease is rounded up
// to the next second, so that it is never shorter than asked.

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mailhost/mailhost/mailstore"
)

// outboundColumns are the columns scanOutbound reads, in its order.
var outboundColumns = outboundColumnsOf("")

// outboundColumnsOf is outboundColumns of the table aliased a ("q.").
func outboundColumnsOf(a string) string {
	return fmt.Sprintf(`%[1]sid, %[1]skind, %[1]sdomain_id, %[1]sfrom_addr, %[1]sdestination,
		%[1]srecipients, %[1]sblob_id, %[1]ssize, %[1]squeued_at, %[1]snext_attempt, %[1]sattempts,
		%[1]slast_error, %[1]sheld, %[1]sleased_by IS NOT NULL, %[1]swarned`, a)
}

// scanOutbound reads one row of outboundColumns (qualified or not), with
// extra destinations appended after them.
func scanOutbound(row pgx.Row, extra ...any) (mailstore.Outbound, error) {
	var o mailstore.Outbound
	var kind string
	dest := append([]any{&o.ID, &kind, &o.DomainID, &o.From, &o.Destination, &o.Recipients, &o.BlobID, &o.Size,
		&o.QueuedAt, &o.NextAttempt, &o.Attempts, &o.LastError, &o.Held, &o.Leased, &o.Warned}, extra...)
	if err := row.Scan(dest...); err != nil {
		return mailstore.Outbound{}, err
	}
	o.Kind = mailstore.OutboundKind(kind)
	o.QueuedAt, o.NextAttempt = o.QueuedAt.UTC(), o.NextAttempt.UTC()
	if o.Recipients == nil {
		o.Recipients = []mailstore.OutboundRecipient{}
	}
	return o, nil
}

// ceilSecond rounds t up to a whole second.
func ceilSecond(t time.Time) time.Time {
	u := t.UTC().Truncate(time.Second)
	if u.Before(t) {
		u = u.Add(time.Second)
	}
	return u
}

// ClaimOutbound implements mailstore.Store. Entries are taken with FOR
// UPDATE SKIP LOCKED, so that claims running at once on several nodes
// each get different entries without waiting for one another, and leased
// in this node's name in the same statement.
//
// Without ClaimOptions one statement does it all. With them the entries
// passed over must not be locked (a lock writes the row, and a claim
// would then write up to ClaimScanLimit rows it does not take), so the
// due entries are read in pages without locks, chosen in Go, and the
// chosen ones locked and leased; those another node took meanwhile are
// simply missing from what the lock answers.
func (s *Store) ClaimOutbound(ctx context.Context, now time.Time, lease time.Duration, limit int, opt mailstore.ClaimOptions) ([]mailstore.Outbound, error) {
	if limit <= 0 || lease <= 0 {
		return nil, fmt.Errorf("claim outbound: limit %d, lease %v: %w", limit, lease, mailstore.ErrInvalidArgument)
	}
	until := ceilSecond(now.Add(lease))
	var out []mailstore.Outbound
	err := s.writeKeep(ctx, func(tx pgx.Tx) error {
		var err error
		if len(opt.Skip) == 0 && opt.PerDestination <= 0 {
			out, err = s.claimDue(ctx, tx, now, until, limit)
		} else {
			out, err = s.claimSpread(ctx, tx, now, until, limit, opt)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claim outbound: %w", err)
	}
	return out, nil
}

// claimed is an entry a claim leased, with when it was due, which orders
// the answer.
type claimed struct {
	o   mailstore.Outbound
	due time.Time
}

// lease leases the rows the sub-select picked (its columns: id,
// next_attempt) and answers them earliest due first. RETURNING has no
// order of its own; the sub-select's next_attempt is the one before the
// update.
func (s *Store) lease(ctx context.Context, tx pgx.Tx, pick string, until time.Time, args ...any) ([]mailstore.Outbound, error) {
	args = append(args, until, s.node)
	n := len(args)
	rows, err := tx.Query(ctx, fmt.Sprintf(`
		UPDATE queue q SET next_attempt = $%d, leased_by = $%d
		FROM (%s) c
		WHERE q.id = c.id
		RETURNING %s, c.next_attempt`, n-1, n, pick, outboundColumnsOf("q.")), args...)
	if err != nil {
		return nil, err
	}
	var got []claimed
	for rows.Next() {
		var c claimed
		if c.o, err = scanOutbound(rows, &c.due); err != nil {
			rows.Close()
			return nil, err
		}
		got = append(got, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(got, func(a, b claimed) int {
		if c := a.due.Compare(b.due); c != 0 {
			return c
		}
		return int(a.o.ID - b.o.ID)
	})
	out := make([]mailstore.Outbound, len(got))
	for i, c := range got {
		out[i] = c.o
	}
	return out, nil
}

// claimDue leases up to limit due entries, earliest first.
func (s *Store) claimDue(ctx context.Context, tx pgx.Tx, now, until time.Time, limit int) ([]mailstore.Outbound, error) {
	return s.lease(ctx, tx, `
		SELECT id, next_attempt FROM queue
		WHERE NOT held AND next_attempt <= $1
		ORDER BY next_attempt, id
		LIMIT $2
		FOR UPDATE SKIP LOCKED`, until, now, limit)
}

// claimPage is how many due entries claimSpread reads at a time.
const claimPage = 256

// dueEntry is what claimSpread reads of a due entry.
type dueEntry struct {
	id   int64
	dest string
	at   time.Time
}

// claimSpread leases up to limit due entries, earliest first, passing
// over those opt rules out; the entries passed over, and those another
// claim locked or took since they were read, count towards
// ClaimScanLimit. Each round reads a page after the last entry it
// considered, so that an entry it did not get to (the round stopped at
// limit, and some of those it chose were then taken elsewhere) is
// considered in the next.
func (s *Store) claimSpread(ctx context.Context, tx pgx.Tx, now, until time.Time, limit int, opt mailstore.ClaimOptions) ([]mailstore.Outbound, error) {
	skip := make(map[string]bool, len(opt.Skip))
	for _, d := range opt.Skip {
		skip[d] = true
	}
	taken := map[string]int{}
	passed := 0
	out := []mailstore.Outbound{}
	// The cursor: the last (next_attempt, id) considered.
	after := dueEntry{id: -1}
	for len(out) < limit && passed < mailstore.ClaimScanLimit {
		rows, err := tx.Query(ctx, `
			SELECT id, destination, next_attempt FROM queue
			WHERE NOT held AND next_attempt <= $1 AND (next_attempt, id) > ($2, $3)
			ORDER BY next_attempt, id
			LIMIT $4`, now, after.at, after.id, claimPage)
		if err != nil {
			return nil, fmt.Errorf("read due entries: %w", err)
		}
		page, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (dueEntry, error) {
			var e dueEntry
			err := r.Scan(&e.id, &e.dest, &e.at)
			return e, err
		})
		if err != nil {
			return nil, fmt.Errorf("read due entries: %w", err)
		}
		var ids []int64
		chosen := map[int64]string{} // id -> destination
		for _, e := range page {
			if len(out)+len(ids) >= limit || passed >= mailstore.ClaimScanLimit {
				break
			}
			after = e
			if skip[e.dest] || (opt.PerDestination > 0 && taken[e.dest] >= opt.PerDestination) {
				passed++
				continue
			}
			taken[e.dest]++
			ids = append(ids, e.id)
			chosen[e.id] = e.dest
		}
		if len(ids) > 0 {
			got, err := s.lease(ctx, tx, `
				SELECT id, next_attempt FROM queue
				WHERE id = ANY($1) AND NOT held AND next_attempt <= $2
				FOR UPDATE SKIP LOCKED`, until, ids, now)
			if err != nil {
				return nil, err
			}
			// Those another claim has are lost: their destinations' slots
			// are free again, and they count as passed over.
			for _, o := range got {
				delete(chosen, o.ID)
			}
			for _, dest := range chosen {
				taken[dest]--
				passed++
			}
			out = append(out, got...)
		}
		if len(page) == 0 || (len(page) < claimPage && after.id == page[len(page)-1].id) {
			break // every due entry was considered
		}
	}
	return out, nil
}

// ReleaseLeases implements mailstore.Store: it ends the leases this
// node took (leased_by = s.node), found by the partial index on
// leased_by. A lease whose end has passed is left as it is: the entry
// is due already.
func (s *Store) ReleaseLeases(ctx context.Context, now time.Time) (int, error) {
	var n int
	err := s.writeKeep(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
			UPDATE queue SET next_attempt = $3, leased_by = NULL
			WHERE leased_by = $1 AND NOT held AND next_attempt > $2`, s.node, now, mailstore.UTC(now))
		n = int(tag.RowsAffected())
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("release leases of node %s: %w", s.node, err)
	}
	return n, nil
}

// OutboundBody implements mailstore.Store. One statement, so no
// transaction: the entry and its body are read in one snapshot.
func (s *Store) OutboundBody(ctx context.Context, id int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("outbound entry %d body: %w", id, err)
	}
	var body []byte
	var blobID int64
	err := s.look(ctx, func(q querier) error {
		return q.QueryRow(ctx, `
			SELECT q.blob_id, b.body FROM queue q LEFT JOIN blobs b ON b.id = q.blob_id
			WHERE q.id = $1`, id).Scan(&blobID, &body)
	})
	switch {
	case noRows(err):
		err = mailstore.ErrOutboundNotFound
	case err == nil && body == nil:
		err = fmt.Errorf("blob %d missing", blobID)
	}
	if err != nil {
		return nil, fmt.Errorf("outbound entry %d body: %w", id, err)
	}
	return body, nil
}

// RecordAttempt implements mailstore.Store. The entry's row is locked
// while the outcome is applied to it in Go, so that two outcomes of one
// entry (an attempt under an expired lease and the one of the node that
// claimed it next) apply one after the other.
func (s *Store) RecordAttempt(ctx context.Context, id int64, a mailstore.Attempt) (mailstore.Outbound, error) {
	var out mailstore.Outbound
	err := s.writeKeep(ctx, func(tx pgx.Tx) error {
		o, err := scanOutbound(tx.QueryRow(ctx, `SELECT `+outboundColumns+` FROM queue WHERE id = $1 FOR UPDATE`, id))
		if noRows(err) {
			return mailstore.ErrOutboundNotFound
		}
		if err != nil {
			return err
		}
		o = mailstore.ApplyAttempt(o, a)
		out = o
		if len(o.Pending()) == 0 {
			if _, err := tx.Exec(ctx, `DELETE FROM queue WHERE id = $1`, id); err != nil {
				return err
			}
			return unrefBlobs(ctx, tx, map[int64]int64{o.BlobID: 1})
		}
		_, err = tx.Exec(ctx, `
			UPDATE queue SET recipients = $2, attempts = attempts + 1, last_error = $3,
				next_attempt = $4, warned = $5, leased_by = NULL
			WHERE id = $1`, id, o.Recipients, o.LastError, o.NextAttempt, o.Warned)
		return err
	})
	if err != nil {
		return mailstore.Outbound{}, fmt.Errorf("record attempt of outbound entry %d: %w", id, err)
	}
	return out, nil
}

// OutboundEntries implements mailstore.Store, in one snapshot so that
// the total and the page agree.
func (s *Store) OutboundEntries(ctx context.Context, p mailstore.Page) ([]mailstore.Outbound, int, error) {
	out := []mailstore.Outbound{}
	total := 0
	err := s.read(ctx, func(tx pgx.Tx) error {
		out = out[:0]
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM queue`).Scan(&total); err != nil {
			return err
		}
		var limit *int // NULL: LIMIT ALL
		if p.Limit > 0 {
			limit = &p.Limit
		}
		rows, err := tx.Query(ctx, `SELECT `+outboundColumns+` FROM queue ORDER BY id LIMIT $1 OFFSET $2`, limit, max(p.Offset, 0))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			o, err := scanOutbound(rows)
			if err != nil {
				return err
			}
			out = append(out, o)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, 0, fmt.Errorf("outbound entries: %w", err)
	}
	return out, total, nil
}

// FlushOutbound implements mailstore.Store. Entries due already keep
// their time, so the order of the queue does not change among them; a
// lease is left named (the entry is only made due), as in bbolt.
func (s *Store) FlushOutbound(ctx context.Context, now time.Time) (int, error) {
	var n int
	err := s.writeKeep(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE queue SET next_attempt = $2 WHERE NOT held AND next_attempt > $1`, now, mailstore.UTC(now)); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT count(*) FROM queue WHERE NOT held`).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("flush outbound: %w", err)
	}
	return n, nil
}

// FlushOutboundDomain implements mailstore.Store, through the index
// queue_domain (domain_id, next_attempt) of the entries not held. It
// ends the leases of the entries it makes due, as bbolt does.
func (s *Store) FlushOutboundDomain(ctx context.Context, domainID int64, now time.Time) (int, error) {
	var n int
	err := s.writeKeep(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
			UPDATE queue SET next_attempt = $3, leased_by = NULL
			WHERE domain_id = $1 AND NOT held AND next_attempt > $2`, domainID, now, mailstore.UTC(now))
		n = int(tag.RowsAffected())
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("flush outbound of domain %d: %w", domainID, err)
	}
	return n, nil
}

// DeleteOutbound implements mailstore.Store.
func (s *Store) DeleteOutbound(ctx context.Context, id int64) (mailstore.Outbound, error) {
	var o mailstore.Outbound
	err := s.writeKeep(ctx, func(tx pgx.Tx) error {
		var err error
		o, err = scanOutbound(tx.QueryRow(ctx, `DELETE FROM queue WHERE id = $1 RETURNING `+outboundColumns, id))
		if noRows(err) {
			return mailstore.ErrOutboundNotFound
		}
		if err != nil {
			return err
		}
		return unrefBlobs(ctx, tx, map[int64]int64{o.BlobID: 1})
	})
	if err != nil {
		return mailstore.Outbound{}, fmt.Errorf("delete outbound entry %d: %w", id, err)
	}
	return o, nil
}
