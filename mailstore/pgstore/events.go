package pgstore

// mailstore.Webhooks and mailstore.Audit in the tables of
// 006_webhooks_audit.sql. An event's deliveries are made by the
// statement that inserts it (sqlAddEvents), from the webhooks its
// partner has then.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mailhost/mailhost/mailstore"
)

var (
	_ mailstore.Webhooks = (*Store)(nil)
	_ mailstore.Audit    = (*Store)(nil)
)

// sqlAddEvents inserts events (partner, type, created_at, data as JSON
// text, one array each) with a delivery, due at once, for each webhook
// of the partner that subscribes to the type; it answers the new ids in
// the order given.
const sqlAddEvents = `
	WITH e AS (
		INSERT INTO events (partner_id, type, created_at, data)
		SELECT p, t, c, d::jsonb FROM unnest($1::bigint[], $2::text[], $3::timestamptz[], $4::text[]) WITH ORDINALITY AS x(p, t, c, d, n)
		ORDER BY n
		RETURNING id, partner_id, type, created_at
	), d AS (
		INSERT INTO webhook_deliveries (webhook_id, event_id, next_attempt)
		SELECT w.id, e.id, e.created_at FROM e JOIN webhooks w ON w.partner_id = e.partner_id AND e.type = ANY (w.events)
	)
	SELECT id FROM e ORDER BY id`

// eventRows are events to insert, column by column.
type eventRows struct {
	partner []int64
	typ     []string
	at      []time.Time
	data    []string
}

func (r *eventRows) add(e mailstore.Event) {
	r.partner = append(r.partner, e.PartnerID)
	r.typ = append(r.typ, e.Type)
	r.at = append(r.at, mailstore.UTC(e.CreatedAt))
	data := string(e.Data)
	if data == "" {
		data = "{}"
	}
	r.data = append(r.data, data)
}

func (r *eventRows) args() []any { return []any{r.partner, r.typ, r.at, r.data} }

// addEvents inserts events in tx and answers their ids.
func addEvents(ctx context.Context, tx querier, es ...mailstore.Event) ([]int64, error) {
	var r eventRows
	for _, e := range es {
		r.add(e)
	}
	rows, _ := tx.Query(ctx, sqlAddEvents, r.args()...)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("record events: %w", err)
	}
	return ids, nil
}

const webhookColumns = `id, partner_id, url, events, secret, created_at`

func scanWebhook(row pgx.Row) (mailstore.Webhook, error) {
	var w mailstore.Webhook
	err := row.Scan(&w.ID, &w.PartnerID, &w.URL, &w.Events, &w.Secret, &w.CreatedAt)
	w.CreatedAt = w.CreatedAt.UTC()
	return w, err
}

// CreateWebhook implements mailstore.Webhooks.
func (s *Store) CreateWebhook(ctx context.Context, partnerID int64, w mailstore.Webhook, now time.Time) (mailstore.Webhook, error) {
	if w.URL == "" || w.Secret == "" || len(w.Events) == 0 {
		return mailstore.Webhook{}, fmt.Errorf("create webhook: url, secret and events are required: %w", mailstore.ErrInvalidArgument)
	}
	var out mailstore.Webhook
	err := s.one(ctx, func(q querier) (err error) {
		out, err = scanWebhook(q.QueryRow(ctx, `
			INSERT INTO webhooks (partner_id, url, events, secret, created_at) VALUES ($1, $2, $3, $4, $5)
			RETURNING `+webhookColumns, partnerID, w.URL, w.Events, w.Secret, mailstore.UTC(now)))
		return err
	})
	if isForeignKey(err) {
		err = mailstore.ErrPartnerNotFound
	}
	if err != nil {
		return mailstore.Webhook{}, fmt.Errorf("create webhook: %w", err)
	}
	return out, nil
}

// Webhooks implements mailstore.Webhooks.
func (s *Store) Webhooks(ctx context.Context, partnerID int64, p mailstore.Page) ([]mailstore.Webhook, int, error) {
	out := []mailstore.Webhook{}
	var total int64
	limit, offset := pageArgs(p)
	err := s.read(ctx, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM webhooks WHERE partner_id = $1`, partnerID).Scan(&total); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE partner_id = $1 ORDER BY id LIMIT $2 OFFSET $3`, partnerID, limit, offset)
		ws, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (mailstore.Webhook, error) { return scanWebhook(r) })
		if err != nil {
			return err
		}
		out = append(out[:0], ws...)
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("webhooks of partner %d: %w", partnerID, err)
	}
	return out, int(total), nil
}

// DeleteWebhook implements mailstore.Webhooks; its deliveries go by the
// foreign key's cascade.
func (s *Store) DeleteWebhook(ctx context.Context, partnerID, id int64) error {
	err := s.one(ctx, func(q querier) error {
		tag, err := q.Exec(ctx, `DELETE FROM webhooks WHERE id = $1 AND partner_id = $2`, id, partnerID)
		if err == nil && tag.RowsAffected() == 0 {
			err = mailstore.ErrWebhookNotFound
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("delete webhook %d: %w", id, err)
	}
	return nil
}

// AddEvent implements mailstore.Webhooks.
func (s *Store) AddEvent(ctx context.Context, e mailstore.Event) (mailstore.Event, error) {
	if e.Type == "" || e.PartnerID == 0 {
		return mailstore.Event{}, fmt.Errorf("add event: type and partner are required: %w", mailstore.ErrInvalidArgument)
	}
	e.CreatedAt = mailstore.UTC(e.CreatedAt)
	err := s.one(ctx, func(q querier) error {
		ids, err := addEvents(ctx, q, e)
		if err == nil && len(ids) == 1 {
			e.ID = ids[0]
		}
		return err
	})
	if err != nil {
		return mailstore.Event{}, fmt.Errorf("add event %s: %w", e.Type, err)
	}
	return e, nil
}

// QuotaFull implements mailstore.Webhooks: the mark's insert decides,
// so that two nodes refusing at once record one event.
func (s *Store) QuotaFull(ctx context.Context, mailboxID int64, now time.Time) (bool, error) {
	recorded := false
	err := s.writeKeep(ctx, func(tx pgx.Tx) error {
		recorded = false
		var m mailstore.Mailbox
		var domain string
		err := tx.QueryRow(ctx, `SELECT m.id, m.partner_id, m.email, m.quota_mb, m.used_bytes, d.name
			FROM mailboxes m JOIN domains d ON d.id = m.domain_id WHERE m.id = $1`, mailboxID).
			Scan(&m.ID, &m.PartnerID, &m.Email, &m.QuotaMB, &m.UsedBytes, &domain)
		if noRows(err) {
			return mailstore.ErrMailboxNotFound
		}
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO event_marks (mark) VALUES ($1) ON CONFLICT DO NOTHING`, mailstore.QuotaFullMark(mailboxID))
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		recorded = true
		_, err = addEvents(ctx, tx, mailstore.NewQuotaEvent(mailstore.EventQuotaFull, m, domain, now))
		return err
	})
	if err != nil {
		return false, fmt.Errorf("quota full of mailbox %d: %w", mailboxID, err)
	}
	return recorded, nil
}

// ClaimWebhookDeliveries implements mailstore.Webhooks. SKIP LOCKED lets
// nodes claim at once without waiting for each other.
func (s *Store) ClaimWebhookDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]mailstore.WebhookDelivery, error) {
	if limit <= 0 || lease <= 0 {
		return nil, fmt.Errorf("claim webhook deliveries: limit and lease must be positive: %w", mailstore.ErrInvalidArgument)
	}
	until := now.Add(lease).Truncate(time.Second).Add(time.Second).UTC()
	var out []mailstore.WebhookDelivery
	err := s.writeKeep(ctx, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `
			WITH c AS (
				SELECT id FROM webhook_deliveries WHERE next_attempt <= $1
				ORDER BY next_attempt, id LIMIT $2 FOR UPDATE SKIP LOCKED
			), u AS (
				UPDATE webhook_deliveries x SET next_attempt = $3 FROM c WHERE x.id = c.id
				RETURNING x.id, x.webhook_id, x.event_id, x.attempts, x.last_error
			)
			SELECT u.id, u.attempts, u.last_error,
				w.id, w.partner_id, w.url, w.events, w.secret, w.created_at,
				e.id, e.partner_id, e.type, e.created_at, e.data::text
			FROM u JOIN webhooks w ON w.id = u.webhook_id JOIN events e ON e.id = u.event_id
			ORDER BY u.id`, mailstore.UTC(now), limit, until)
		var err error
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (mailstore.WebhookDelivery, error) {
			var d mailstore.WebhookDelivery
			var data string
			err := r.Scan(&d.ID, &d.Attempts, &d.LastError,
				&d.Webhook.ID, &d.Webhook.PartnerID, &d.Webhook.URL, &d.Webhook.Events, &d.Webhook.Secret, &d.Webhook.CreatedAt,
				&d.Event.ID, &d.Event.PartnerID, &d.Event.Type, &d.Event.CreatedAt, &data)
			d.Event.Data = json.RawMessage(data)
			d.Webhook.CreatedAt, d.Event.CreatedAt = d.Webhook.CreatedAt.UTC(), d.Event.CreatedAt.UTC()
			d.NextAttempt = until
			return d, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claim webhook deliveries: %w", err)
	}
	return out, nil
}

// RecordWebhookAttempt implements mailstore.Webhooks.
func (s *Store) RecordWebhookAttempt(ctx context.Context, id int64, done bool, next time.Time, lastErr string) error {
	err := s.one(ctx, func(q querier) error {
		if done {
			_, err := q.Exec(ctx, `DELETE FROM webhook_deliveries WHERE id = $1`, id)
			return err
		}
		_, err := q.Exec(ctx, `UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt = $2, last_error = $3 WHERE id = $1`,
			id, mailstore.UTC(next), lastErr)
		return err
	})
	if err != nil {
		return fmt.Errorf("record webhook attempt %d: %w", id, err)
	}
	return nil
}

// PruneEvents implements mailstore.Webhooks.
func (s *Store) PruneEvents(ctx context.Context, before time.Time) (int, error) {
	var n int64
	err := s.one(ctx, func(q querier) error {
		tag, err := q.Exec(ctx, `DELETE FROM events e WHERE e.created_at < $1
			AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id)`, mailstore.UTC(before))
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("prune events: %w", err)
	}
	return int(n), nil
}

// AddAudit implements mailstore.Audit.
func (s *Store) AddAudit(ctx context.Context, e mailstore.AuditEntry) (mailstore.AuditEntry, error) {
	if e.PartnerID == 0 {
		return mailstore.AuditEntry{}, fmt.Errorf("add audit entry: no partner: %w", mailstore.ErrInvalidArgument)
	}
	e.Time = mailstore.UTC(e.Time)
	err := s.one(ctx, func(q querier) error {
		return q.QueryRow(ctx, `INSERT INTO audit_log (at, partner_id, key_prefix, method, route, object, status)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
			e.Time, e.PartnerID, e.KeyPrefix, e.Method, e.Route, e.Object, e.Status).Scan(&e.ID)
	})
	if err != nil {
		return mailstore.AuditEntry{}, fmt.Errorf("add audit entry: %w", err)
	}
	return e, nil
}

// AuditEntries implements mailstore.Audit.
func (s *Store) AuditEntries(ctx context.Context, partnerID int64, p mailstore.Page) ([]mailstore.AuditEntry, int, error) {
	out := []mailstore.AuditEntry{}
	var total int64
	limit, offset := pageArgs(p)
	err := s.read(ctx, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE partner_id = $1`, partnerID).Scan(&total); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `SELECT id, at, partner_id, key_prefix, method, route, object, status
			FROM audit_log WHERE partner_id = $1 ORDER BY id DESC LIMIT $2 OFFSET $3`, partnerID, limit, offset)
		es, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (mailstore.AuditEntry, error) {
			var e mailstore.AuditEntry
			err := r.Scan(&e.ID, &e.Time, &e.PartnerID, &e.KeyPrefix, &e.Method, &e.Route, &e.Object, &e.Status)
			e.Time = e.Time.UTC()
			return e, err
		})
		if err != nil {
			return err
		}
		out = append(out[:0], es...)
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("audit entries of partner %d: %w", partnerID, err)
	}
	return out, int(total), nil
}

// PruneAudit implements mailstore.Audit.
func (s *Store) PruneAudit(ctx context.Context, before time.Time) (int, error) {
	var n int64
	err := s.one(ctx, func(q querier) error {
		tag, err := q.Exec(ctx, `DELETE FROM audit_log WHERE at < $1`, mailstore.UTC(before))
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("prune audit log: %w", err)
	}
	return int(n), nil
}

// isForeignKey reports whether err is a foreign key violation.
func isForeignKey(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == codeForeignKey
}
