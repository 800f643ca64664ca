package pgstore

// mailstore.AutoReplies in the autoreplies and autoreply_sent tables
// (005_autoreply.sql); both go with the mailbox (ON DELETE CASCADE).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mailhost/mailhost/mailstore"
)

var _ mailstore.AutoReplies = (*Store)(nil)

// AutoReply implements mailstore.AutoReplies.
func (s *Store) AutoReply(ctx context.Context, mailboxID int64) (mailstore.AutoReply, error) {
	a := mailstore.AutoReply{MailboxID: mailboxID}
	var start, end *time.Time
	err := s.look(ctx, func(q querier) error {
		return q.QueryRow(ctx, `SELECT enabled, subject, body, starts_at, ends_at FROM autoreplies WHERE mailbox_id = $1`,
			mailboxID).Scan(&a.Enabled, &a.Subject, &a.Body, &start, &end)
	})
	if noRows(err) {
		return mailstore.AutoReply{}, fmt.Errorf("auto-reply of mailbox %d: %w", mailboxID, mailstore.ErrNotFound)
	}
	if err != nil {
		return mailstore.AutoReply{}, fmt.Errorf("auto-reply of mailbox %d: %w", mailboxID, err)
	}
	if start != nil {
		a.Start = start.UTC()
	}
	if end != nil {
		a.End = end.UTC()
	}
	return a, nil
}

// SetAutoReply implements mailstore.AutoReplies.
func (s *Store) SetAutoReply(ctx context.Context, a mailstore.AutoReply) error {
	if !a.Start.IsZero() && !a.End.IsZero() && !a.End.After(a.Start) {
		return fmt.Errorf("set auto-reply of mailbox %d: end not after start: %w", a.MailboxID, mailstore.ErrInvalidArgument)
	}
	defer s.forgetRecipients() // the answers say whether it has one
	_, err := s.pool.Exec(ctx, `
		INSERT INTO autoreplies (mailbox_id, enabled, subject, body, starts_at, ends_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (mailbox_id) DO UPDATE SET enabled = EXCLUDED.enabled, subject = EXCLUDED.subject,
			body = EXCLUDED.body, starts_at = EXCLUDED.starts_at, ends_at = EXCLUDED.ends_at`,
		a.MailboxID, a.Enabled, a.Subject, a.Body, optTime(a.Start), optTime(a.End))
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == codeForeignKey {
		return fmt.Errorf("set auto-reply of mailbox %d: %w", a.MailboxID, mailstore.ErrMailboxNotFound)
	}
	if err != nil {
		return fmt.Errorf("set auto-reply of mailbox %d: %w", a.MailboxID, err)
	}
	return nil
}

// optTime is t to the second in UTC, or NULL when zero.
func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC().Truncate(time.Second)
	return &u
}

// DeleteAutoReply implements mailstore.AutoReplies.
func (s *Store) DeleteAutoReply(ctx context.Context, mailboxID int64) error {
	defer s.forgetRecipients() // the answers say whether it has one
	_, err := s.pool.Exec(ctx, `
		WITH a AS (DELETE FROM autoreplies WHERE mailbox_id = $1)
		DELETE FROM autoreply_sent WHERE mailbox_id = $1`, mailboxID)
	if err != nil {
		return fmt.Errorf("delete auto-reply of mailbox %d: %w", mailboxID, err)
	}
	return nil
}

// TakeAutoReply implements mailstore.AutoReplies. One statement: the
// upsert takes the row's lock, so of two nodes at once the second sees
// the first's time and updates nothing.
func (s *Store) TakeAutoReply(ctx context.Context, mailboxID int64, sender string, now time.Time, interval time.Duration) (bool, error) {
	if sender == "" {
		return false, fmt.Errorf("take auto-reply of mailbox %d: empty sender: %w", mailboxID, mailstore.ErrInvalidArgument)
	}
	now = now.UTC().Truncate(time.Second)
	tag, err := s.pool.Exec(ctx, `
		INSERT INTO autoreply_sent (mailbox_id, sender, sent_at) VALUES ($1, $2, $3)
		ON CONFLICT (mailbox_id, sender) DO UPDATE SET sent_at = EXCLUDED.sent_at
		WHERE autoreply_sent.sent_at + $4::bigint * interval '1 second' <= EXCLUDED.sent_at`,
		mailboxID, sender, now, int64(interval/time.Second))
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == codeForeignKey {
		return false, fmt.Errorf("take auto-reply of mailbox %d: %w", mailboxID, mailstore.ErrMailboxNotFound)
	}
	if err != nil {
		return false, fmt.Errorf("take auto-reply of mailbox %d to %s: %w", mailboxID, sender, err)
	}
	return tag.RowsAffected() == 1, nil
}
