package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

var _ interface {
	Heartbeat(context.Context, string, time.Time, time.Duration) (int, error)
} = (*Store)(nil)

// Heartbeat implements mailstore.Members.
func (s *Store) Heartbeat(ctx context.Context, node string, now time.Time, ttl time.Duration) (int, error) {
	var n int
	err := s.writeKeep(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO nodes (name, seen_at) VALUES ($1, $2)
			ON CONFLICT (name) DO UPDATE SET seen_at = greatest(nodes.seen_at, EXCLUDED.seen_at)`, node, now.UTC()); err != nil {
			return err
		}
		// The table holds a row per node that ever ran: a handful.
		return tx.QueryRow(ctx, `SELECT count(*) FROM nodes WHERE seen_at > $1 OR name = $2`, now.Add(-ttl).UTC(), node).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("heartbeat of %s: %w", node, err)
	}
	return max(n, 1), nil
}
