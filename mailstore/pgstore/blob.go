package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Bodies (the blobs table) are shared by the messages and queue entries
// that name them, and counted in refs. These are the only writers of
// refs; every method that adds or drops a message or a queue entry calls
// them in its own transaction.

// addBlob stores a body, with its summary (mailstore.HeaderSummary), with
// refs references and answers its id.
func addBlob(ctx context.Context, tx pgx.Tx, body, summary []byte, refs int64) (int64, error) {
	var id int64
	if err := tx.QueryRow(ctx, `INSERT INTO blobs (refs, body, header) VALUES ($1, $2, $3) RETURNING id`, refs, body, summary).Scan(&id); err != nil {
		return 0, fmt.Errorf("store body: %w", err)
	}
	return id, nil
}

// unrefBlobs drops references (blob id -> how many) and deletes the
// bodies left with none, in one statement each.
func unrefBlobs(ctx context.Context, tx pgx.Tx, drops map[int64]int64) error {
	if len(drops) == 0 {
		return nil
	}
	ids := make([]int64, 0, len(drops))
	ns := make([]int64, 0, len(drops))
	for id, n := range drops {
		ids = append(ids, id)
		ns = append(ns, n)
	}
	// Locks are taken in id order (ORDER BY in the sub-select's UPDATE is
	// not possible, so the rows are locked first, ordered), so that two
	// transactions dropping the same bodies do not deadlock.
	if _, err := tx.Exec(ctx, `SELECT 1 FROM blobs WHERE id = ANY($1) ORDER BY id FOR UPDATE`, ids); err != nil {
		return fmt.Errorf("lock bodies: %w", err)
	}
	if _, err := tx.Exec(ctx, `
		UPDATE blobs b SET refs = b.refs - d.n
		FROM (SELECT unnest($1::bigint[]) AS id, unnest($2::bigint[]) AS n) d
		WHERE b.id = d.id`, ids, ns); err != nil {
		return fmt.Errorf("drop body references: %w", err)
	}
	// A second statement: one that updated and deleted the same rows
	// would not see its own update.
	if _, err := tx.Exec(ctx, `DELETE FROM blobs WHERE id = ANY($1) AND refs <= 0`, ids); err != nil {
		return fmt.Errorf("free bodies: %w", err)
	}
	return nil
}
