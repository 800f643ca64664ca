package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/mailhost/mailhost/mailstore"
)

// Subscriptions implements mailstore.Store. Names are sorted bytewise
// (COLLATE "C"), as bbolt's keys are.
func (s *Store) Subscriptions(ctx context.Context, mailboxID int64) ([]string, error) {
	var out []string
	err := s.read(ctx, func(tx pgx.Tx) error {
		if err := mailboxExists(ctx, tx, mailboxID); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT name FROM subscriptions WHERE mailbox_id = $1 ORDER BY name COLLATE "C"`, mailboxID)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("subscriptions of mailbox %d: %w", mailboxID, err)
	}
	return out, nil
}

// Subscribe implements mailstore.Store. The account's row is locked
// while its subscriptions are counted, so that racing subscribes cannot
// pass MaxSubscriptions together.
func (s *Store) Subscribe(ctx context.Context, mailboxID int64, name string) error {
	name = mailstore.CanonFolder(name)
	if err := mailstore.CheckFolderName(name); err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	err := s.writeKeep(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT 1 FROM mailboxes WHERE id = $1 FOR NO KEY UPDATE`, mailboxID).Scan(new(int))
		if noRows(err) {
			return mailstore.ErrMailboxNotFound
		}
		if err != nil {
			return err
		}
		var have bool
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FILTER (WHERE name = $2) > 0, count(*) FROM subscriptions WHERE mailbox_id = $1`,
			mailboxID, name).Scan(&have, &n); err != nil {
			return err
		}
		if have {
			return nil
		}
		if n >= mailstore.MaxSubscriptions {
			return mailstore.ErrTooManySubscriptions
		}
		_, err = tx.Exec(ctx, `INSERT INTO subscriptions (mailbox_id, name) VALUES ($1, $2) ON CONFLICT DO NOTHING`, mailboxID, name)
		return err
	})
	if err != nil {
		return fmt.Errorf("subscribe %q: %w", name, err)
	}
	return nil
}

// Unsubscribe implements mailstore.Store.
func (s *Store) Unsubscribe(ctx context.Context, mailboxID int64, name string) error {
	name = mailstore.CanonFolder(name)
	err := s.writeKeep(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM subscriptions WHERE mailbox_id = $1 AND name = $2`, mailboxID, name)
		if err != nil || tag.RowsAffected() > 0 {
			return err
		}
		return mailboxExists(ctx, tx, mailboxID)
	})
	if err != nil {
		return fmt.Errorf("unsubscribe %q: %w", name, err)
	}
	return nil
}

// mailboxExists answers ErrMailboxNotFound for an account that is not there.
func mailboxExists(ctx context.Context, tx pgx.Tx, mailboxID int64) error {
	var ok bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM mailboxes WHERE id = $1)`, mailboxID).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return mailstore.ErrMailboxNotFound
	}
	return nil
}
