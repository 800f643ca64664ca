package pgstore

// mailstore.SieveScripts in the sieve_scripts table (012_sieve.sql, its
// version stamps 016_sieve_version.sql); a
// partial unique index keeps one active script per mailbox, and the
// scripts go with the mailbox (ON DELETE CASCADE).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mailhost/mailhost/mailstore"
)

var _ mailstore.SieveScripts = (*Store)(nil)

// SieveScripts implements mailstore.SieveScripts.
func (s *Store) SieveScripts(ctx context.Context, mailboxID int64) ([]mailstore.SieveScript, error) {
	out := []mailstore.SieveScript{}
	err := s.look(ctx, func(q querier) error {
		out = out[:0]
		rows, err := q.Query(ctx, `SELECT name, script, active, updated_at FROM sieve_scripts
			WHERE mailbox_id = $1 ORDER BY name COLLATE "C"`, mailboxID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			sc := mailstore.SieveScript{MailboxID: mailboxID}
			if err := rows.Scan(&sc.Name, &sc.Script, &sc.Active, &sc.UpdatedAt); err != nil {
				return err
			}
			sc.UpdatedAt = sc.UpdatedAt.UTC()
			out = append(out, sc)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sieve scripts of mailbox %d: %w", mailboxID, err)
	}
	return out, nil
}

func (s *Store) sieveScript(ctx context.Context, what string, mailboxID int64, where string, args ...any) (mailstore.SieveScript, error) {
	sc := mailstore.SieveScript{MailboxID: mailboxID}
	err := s.look(ctx, func(q querier) error {
		return q.QueryRow(ctx, `SELECT name, script, active, updated_at, version FROM sieve_scripts WHERE `+where, args...).
			Scan(&sc.Name, &sc.Script, &sc.Active, &sc.UpdatedAt, &sc.Version)
	})
	if !sc.Active {
		sc.Version = 0
	}
	if noRows(err) {
		err = mailstore.ErrNotFound
	}
	if err != nil {
		return mailstore.SieveScript{}, fmt.Errorf("%s of mailbox %d: %w", what, mailboxID, err)
	}
	sc.UpdatedAt = sc.UpdatedAt.UTC()
	return sc, nil
}

// SieveScript implements mailstore.SieveScripts.
func (s *Store) SieveScript(ctx context.Context, mailboxID int64, name string) (mailstore.SieveScript, error) {
	return s.sieveScript(ctx, fmt.Sprintf("sieve script %q", name), mailboxID, `mailbox_id = $1 AND name = $2`, mailboxID, name)
}

// ActiveSieveScript implements mailstore.SieveScripts.
func (s *Store) ActiveSieveScript(ctx context.Context, mailboxID int64) (mailstore.SieveScript, error) {
	return s.sieveScript(ctx, "active sieve script", mailboxID, `mailbox_id = $1 AND active`, mailboxID)
}

// lockSieve locks the mailbox's row, so that the writers of one mailbox's
// scripts (the count limit, the one active script) go one at a time, and
// answers ErrMailboxNotFound when there is none. FOR NO KEY UPDATE, not
// FOR UPDATE: inserts that refer to the mailbox (their foreign key
// check takes KEY SHARE of its row) are not held up by it.
func lockSieve(ctx context.Context, tx pgx.Tx, mailboxID int64) error {
	var id int64
	err := tx.QueryRow(ctx, `SELECT id FROM mailboxes WHERE id = $1 FOR NO KEY UPDATE`, mailboxID).Scan(&id)
	if noRows(err) {
		return mailstore.ErrMailboxNotFound
	}
	return err
}

// PutSieveScript implements mailstore.SieveScripts.
func (s *Store) PutSieveScript(ctx context.Context, sc mailstore.SieveScript) error {
	if err := mailstore.CheckSieveScript(sc); err != nil {
		return fmt.Errorf("put sieve script of mailbox %d: %w", sc.MailboxID, err)
	}
	at := sc.UpdatedAt.UTC().Truncate(time.Second)
	err := s.write(ctx, func(tx pgx.Tx) error {
		if err := lockSieve(ctx, tx, sc.MailboxID); err != nil {
			return err
		}
		var exists bool
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*), coalesce(bool_or(name = $2), false) FROM sieve_scripts WHERE mailbox_id = $1`,
			sc.MailboxID, sc.Name).Scan(&n, &exists); err != nil {
			return err
		}
		if !exists && n >= mailstore.MaxSieveScripts {
			return fmt.Errorf("%d scripts already: %w", mailstore.MaxSieveScripts, mailstore.ErrSieveLimit)
		}
		if sc.Active {
			if _, err := tx.Exec(ctx, `UPDATE sieve_scripts SET active = false WHERE mailbox_id = $1 AND active AND name <> $2`,
				sc.MailboxID, sc.Name); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `
			INSERT INTO sieve_scripts (mailbox_id, name, script, active, updated_at) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (mailbox_id, name) DO UPDATE SET script = EXCLUDED.script,
				active = sieve_scripts.active OR EXCLUDED.active, updated_at = EXCLUDED.updated_at`,
			sc.MailboxID, sc.Name, sc.Script, sc.Active, at)
		return err
	})
	if err != nil {
		return fmt.Errorf("put sieve script %q of mailbox %d: %w", sc.Name, sc.MailboxID, err)
	}
	return nil
}

// DeleteSieveScript implements mailstore.SieveScripts.
func (s *Store) DeleteSieveScript(ctx context.Context, mailboxID int64, name string) error {
	err := s.write(ctx, func(tx pgx.Tx) error {
		if err := lockSieve(ctx, tx, mailboxID); errors.Is(err, mailstore.ErrMailboxNotFound) {
			return mailstore.ErrNotFound
		} else if err != nil {
			return err
		}
		var active bool
		err := tx.QueryRow(ctx, `SELECT active FROM sieve_scripts WHERE mailbox_id = $1 AND name = $2 FOR UPDATE`,
			mailboxID, name).Scan(&active)
		if noRows(err) {
			return mailstore.ErrNotFound
		}
		if err != nil {
			return err
		}
		if active {
			return mailstore.ErrSieveActive
		}
		_, err = tx.Exec(ctx, `DELETE FROM sieve_scripts WHERE mailbox_id = $1 AND name = $2`, mailboxID, name)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete sieve script %q of mailbox %d: %w", name, mailboxID, err)
	}
	return nil
}

// RenameSieveScript implements mailstore.SieveScripts.
func (s *Store) RenameSieveScript(ctx context.Context, mailboxID int64, oldName, newName string) error {
	if !mailstore.ValidSieveName(newName) {
		return fmt.Errorf("rename sieve script %q of mailbox %d to %q: %w", oldName, mailboxID, newName, mailstore.ErrInvalidArgument)
	}
	err := s.write(ctx, func(tx pgx.Tx) error {
		if err := lockSieve(ctx, tx, mailboxID); errors.Is(err, mailstore.ErrMailboxNotFound) {
			return mailstore.ErrNotFound
		} else if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE sieve_scripts SET name = $3 WHERE mailbox_id = $1 AND name = $2`, mailboxID, oldName, newName)
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == codeUnique {
			return mailstore.ErrSieveExists
		}
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return mailstore.ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("rename sieve script %q of mailbox %d to %q: %w", oldName, mailboxID, newName, err)
	}
	return nil
}

// SetActiveSieveScript implements mailstore.SieveScripts.
func (s *Store) SetActiveSieveScript(ctx context.Context, mailboxID int64, name string) error {
	err := s.write(ctx, func(tx pgx.Tx) error {
		if err := lockSieve(ctx, tx, mailboxID); errors.Is(err, mailstore.ErrMailboxNotFound) {
			return mailstore.ErrNotFound
		} else if err != nil {
			return err
		}
		if name != "" {
			var found bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sieve_scripts WHERE mailbox_id = $1 AND name = $2 FOR UPDATE)`,
				mailboxID, name).Scan(&found); err != nil {
				return err
			}
			if !found {
				return mailstore.ErrNotFound
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE sieve_scripts SET active = false WHERE mailbox_id = $1 AND active AND name <> $2`,
			mailboxID, name); err != nil {
			return err
		}
		if name == "" {
			return nil
		}
		_, err := tx.Exec(ctx, `UPDATE sieve_scripts SET active = true WHERE mailbox_id = $1 AND name = $2`, mailboxID, name)
		return err
	})
	if err != nil {
		return fmt.Errorf("activate sieve script %q of mailbox %d: %w", name, mailboxID, err)
	}
	return nil
}
