package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// TableSize is one table of the store: its size on disk with its indexes
// and TOAST data (pg_total_relation_size), and PostgreSQL's estimate of
// its rows (pg_class.reltuples, as of the last VACUUM or ANALYZE; -1 when
// never estimated).
type TableSize struct {
	Name  string
	Bytes int64
	Rows  int64
}

// Sizes answers the size of the database and of each table of the
// store's schema, largest first. PostgreSQL reuses the space of deleted
// rows (autovacuum); VACUUM FULL gives it back to the file system.
func (s *Store) Sizes(ctx context.Context) (database int64, tables []TableSize, err error) {
	err = s.read(ctx, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT pg_database_size(current_database())`).Scan(&database); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `
			SELECT c.relname, pg_total_relation_size(c.oid), c.reltuples::bigint
			FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE c.relkind IN ('r', 'p') AND n.nspname = current_schema()
			ORDER BY 2 DESC, 1`)
		if err != nil {
			return err
		}
		tables, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (TableSize, error) {
			var t TableSize
			err := r.Scan(&t.Name, &t.Bytes, &t.Rows)
			return t, err
		})
		return err
	})
	if err != nil {
		return 0, nil, fmt.Errorf("table sizes: %w", err)
	}
	return database, tables, nil
}
