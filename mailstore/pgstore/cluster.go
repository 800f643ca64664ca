package pgstore

// mailstore.Cluster: what the nodes sharing the database agree on, in
// the jobs and settings tables. Each decision is one statement whose
// conflict handling PostgreSQL serialises: an INSERT ... ON CONFLICT that
// meets a row another transaction is inserting or updating waits for it
// and then judges the row as committed, so two nodes racing cannot both
// win.

import (
	"context"
	"fmt"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

var _ mailstore.Cluster = (*Store)(nil)

// RunOnce implements mailstore.Cluster. A job's row keeps next_run, the
// earliest slot not yet taken (the last one taken plus a second, slots
// being whole seconds): a node takes a slot by moving next_run past it
// with a conditional upsert, and the row comes back only if it did.
func (s *Store) RunOnce(ctx context.Context, name string, slot time.Time) (bool, error) {
	if name == "" {
		return false, fmt.Errorf("run once: empty job name: %w", mailstore.ErrInvalidArgument)
	}
	at := mailstore.UTC(slot)
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("run once %s for %v: %w", name, at, err)
	}
	tag, err := s.pool.Exec(ctx, `
		INSERT INTO jobs (name, next_run, last_run, last_node) VALUES ($1, $3, $2, $4)
		ON CONFLICT (name) DO UPDATE
			SET next_run = EXCLUDED.next_run, last_run = EXCLUDED.last_run, last_node = EXCLUDED.last_node
			WHERE jobs.next_run <= EXCLUDED.last_run`,
		name, at, at.Add(time.Second), s.node)
	if err != nil {
		return false, fmt.Errorf("run once %s for %v: %w", name, at, err)
	}
	return tag.RowsAffected() == 1, nil
}

// Setting implements mailstore.Cluster. make runs outside any
// transaction (it may be slow), after a read found no value; the insert
// that follows keeps the first value made, and a node that lost the race
// reads the winner's.
func (s *Store) Setting(ctx context.Context, name string, make func() (string, error)) (string, error) {
	if name == "" {
		return "", fmt.Errorf("setting: empty name: %w", mailstore.ErrInvalidArgument)
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("setting %s: %w", name, err)
	}
	var value string
	err := s.pool.QueryRow(ctx, `SELECT value FROM settings WHERE name = $1`, name).Scan(&value)
	if err == nil {
		return value, nil
	}
	if !noRows(err) {
		return "", fmt.Errorf("setting %s: %w", name, err)
	}
	made, err := make()
	if err != nil {
		return "", fmt.Errorf("setting %s: make: %w", name, err)
	}
	// DO NOTHING answers no row when another node's value is there (it
	// waited for that node's commit); that value is then read in a new
	// statement, which sees the commit.
	err = s.pool.QueryRow(ctx, `
		INSERT INTO settings (name, value) VALUES ($1, $2)
		ON CONFLICT (name) DO NOTHING
		RETURNING value`, name, made).Scan(&value)
	if noRows(err) {
		err = s.pool.QueryRow(ctx, `SELECT value FROM settings WHERE name = $1`, name).Scan(&value)
	}
	if err != nil {
		return "", fmt.Errorf("setting %s: %w", name, err)
	}
	return value, nil
}
