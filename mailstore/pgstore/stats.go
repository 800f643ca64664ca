package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mailhost/mailhost/mailstore"
)

// QueueStats implements mailstore.Store: one statement, which counts the
// queue's rows (an index-only scan of the primary key when the table is
// vacuumed; the queue holds mail in flight, not mail kept) and reads the
// first by id.
func (s *Store) QueueStats(ctx context.Context) (mailstore.QueueStats, error) {
	var st mailstore.QueueStats
	var oldest *time.Time
	err := s.look(ctx, func(q querier) error {
		return q.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE held),
			(SELECT queued_at FROM queue ORDER BY id LIMIT 1) FROM queue`).Scan(&st.Entries, &st.Held, &oldest)
	})
	if err != nil {
		return mailstore.QueueStats{}, fmt.Errorf("queue stats: %w", err)
	}
	if oldest != nil {
		st.Oldest = oldest.UTC()
	}
	return st, nil
}

// StoreSize answers the size of the tables of the store's schema
// (current_schema(): the search_path of the connection string), with
// their indexes and TOAST, from PostgreSQL's catalog. The database's own
// free space is VACUUM's business: FreePages and FreeBytes are -1.
func (s *Store) StoreSize(ctx context.Context) (mailstore.StoreSize, error) {
	var n *int64
	err := s.look(ctx, func(q querier) error {
		return q.QueryRow(ctx, `SELECT sum(pg_total_relation_size(c.oid))::bigint
			FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
			WHERE ns.nspname = current_schema() AND c.relkind = 'r'`).Scan(&n)
	})
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return mailstore.StoreSize{}, fmt.Errorf("store size: %w", err)
	}
	st := mailstore.StoreSize{FreePages: -1, FreeBytes: -1}
	if n != nil {
		st.Bytes = *n
	}
	return st, nil
}
