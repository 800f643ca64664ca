package boltstore

// Webhooks of the bbolt store: the partners' webhooks, the events and the
// outbox of deliveries (see Webhooks for what records events).
//
// Buckets, made lazily (as cluster.go explains; readers take a
// missing bucket as empty):
//
//	webhooks            id -> Webhook (JSON)
//	partner_webhooks    partnerID|id -> ""
//	events              id -> Event (JSON), ids in creation order
//	webhook_deliveries  id -> boltDelivery (JSON)
//	webhook_due         nextAttempt (unix nanos, 8)|id -> "" (every delivery)
//	event_marks         mark -> "" (QuotaFullMark: a quota_full recorded)
//
// A webhook's deletion leaves its deliveries in place; a claim drops the
// ones whose webhook is gone, so that a deletion costs no scan.

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	bolt "go.etcd.io/bbolt"
)

var (
	bWebhooks          = []byte("webhooks")
	bPartnerWebhooks   = []byte("partner_webhooks")
	bEvents            = []byte("events")
	bWebhookDeliveries = []byte("webhook_deliveries")
	bWebhookDue        = []byte("webhook_due")
	bEventMarks        = []byte("event_marks")
)

var _ mailstore.Webhooks = (*Store)(nil)

// boltDelivery is a webhook_deliveries record.
type boltDelivery struct {
	WebhookID   int64     `json:"webhook_id"`
	EventID     int64     `json:"event_id"`
	Attempts    int       `json:"attempts"`
	NextAttempt time.Time `json:"next_attempt"`
	LastError   string    `json:"last_error,omitempty"`
}

func buckets(tx *bolt.Tx, names ...[]byte) ([]*bolt.Bucket, error) {
	out := make([]*bolt.Bucket, len(names))
	for i, n := range names {
		b, err := tx.CreateBucketIfNotExists(n)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

// CreateWebhook implements Webhooks.
func (s *Store) CreateWebhook(ctx context.Context, partnerID int64, w mailstore.Webhook, now time.Time) (mailstore.Webhook, error) {
	if w.URL == "" || w.Secret == "" || len(w.Events) == 0 {
		return mailstore.Webhook{}, fmt.Errorf("create webhook: url, secret and events are required: %w", mailstore.ErrInvalidArgument)
	}
	w.PartnerID, w.CreatedAt = partnerID, mailstore.UTC(now)
	err := s.update(ctx, func(tx *bolt.Tx) error {
		if tx.Bucket(bPartners).Get(id8(partnerID)) == nil {
			return mailstore.ErrPartnerNotFound
		}
		bs, err := buckets(tx, bWebhooks, bPartnerWebhooks)
		if err != nil {
			return err
		}
		if w.ID, err = nextID(bs[0]); err != nil {
			return err
		}
		if err := putJSON(bs[0], id8(w.ID), w); err != nil {
			return err
		}
		return bs[1].Put(pair(partnerID, w.ID), nil)
	})
	if err != nil {
		return mailstore.Webhook{}, fmt.Errorf("create webhook: %w", err)
	}
	return w, nil
}

// Webhooks implements Webhooks.
func (s *Store) Webhooks(ctx context.Context, partnerID int64, p mailstore.Page) ([]mailstore.Webhook, int, error) {
	out, total := []mailstore.Webhook{}, 0
	err := s.view(ctx, func(tx *bolt.Tx) error {
		idx, recs := tx.Bucket(bPartnerWebhooks), tx.Bucket(bWebhooks)
		if idx != nil && recs != nil {
			out, total = page[mailstore.Webhook](idx, recs, partnerID, p)
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("webhooks of partner %d: %w", partnerID, err)
	}
	return out, total, nil
}

// DeleteWebhook implements Webhooks.
func (s *Store) DeleteWebhook(ctx context.Context, partnerID, id int64) error {
	err := s.update(ctx, func(tx *bolt.Tx) error {
		idx, recs := tx.Bucket(bPartnerWebhooks), tx.Bucket(bWebhooks)
		if idx == nil || recs == nil || idx.Get(pair(partnerID, id)) == nil {
			return mailstore.ErrWebhookNotFound
		}
		if err := idx.Delete(pair(partnerID, id)); err != nil {
			return err
		}
		return recs.Delete(id8(id))
	})
	if err != nil {
		return fmt.Errorf("delete webhook %d: %w", id, err)
	}
	return nil
}

// addEventTx records e in tx with a delivery, due at once, for each of
// its partner's webhooks that subscribes to its type.
func addEventTx(tx *bolt.Tx, e *mailstore.Event) error {
	bs, err := buckets(tx, bEvents)
	if err != nil {
		return err
	}
	if e.ID, err = nextID(bs[0]); err != nil {
		return err
	}
	if err := putJSON(bs[0], id8(e.ID), e); err != nil {
		return err
	}
	idx, recs := tx.Bucket(bPartnerWebhooks), tx.Bucket(bWebhooks)
	if idx == nil || recs == nil {
		return nil
	}
	var hooks []int64
	prefix := id8(e.PartnerID)
	c := idx.Cursor()
	for k, _ := c.Seek(prefix); k != nil && hasPrefix(k, prefix); k, _ = c.Next() {
		var w mailstore.Webhook
		if getJSON(recs, k[8:], &w) && w.Wants(e.Type) {
			hooks = append(hooks, w.ID)
		}
	}
	if len(hooks) == 0 {
		return nil
	}
	ds, err := buckets(tx, bWebhookDeliveries, bWebhookDue)
	if err != nil {
		return err
	}
	for _, h := range hooks {
		id, err := nextID(ds[0])
		if err != nil {
			return err
		}
		d := boltDelivery{WebhookID: h, EventID: e.ID, NextAttempt: e.CreatedAt}
		if err := putJSON(ds[0], id8(id), d); err != nil {
			return err
		}
		if err := ds[1].Put(dueKey(d.NextAttempt, id), nil); err != nil {
			return err
		}
	}
	return nil
}

// AddEvent implements Webhooks.
func (s *Store) AddEvent(ctx context.Context, e mailstore.Event) (mailstore.Event, error) {
	if e.Type == "" || e.PartnerID == 0 {
		return mailstore.Event{}, fmt.Errorf("add event: type and partner are required: %w", mailstore.ErrInvalidArgument)
	}
	e.CreatedAt = mailstore.UTC(e.CreatedAt)
	if err := s.update(ctx, func(tx *bolt.Tx) error { return addEventTx(tx, &e) }); err != nil {
		return mailstore.Event{}, fmt.Errorf("add event %s: %w", e.Type, err)
	}
	return e, nil
}

// QuotaFull implements Webhooks.
func (s *Store) QuotaFull(ctx context.Context, mailboxID int64, now time.Time) (bool, error) {
	// A full mailbox is refused at every RCPT: those after the first find
	// the mark in a read transaction, with no commit to sync.
	marked := false
	err := s.view(ctx, func(tx *bolt.Tx) error {
		if tx.Bucket(bMailboxes).Get(id8(mailboxID)) == nil {
			return mailstore.ErrMailboxNotFound
		}
		if marks := tx.Bucket(bEventMarks); marks != nil {
			marked = marks.Get([]byte(mailstore.QuotaFullMark(mailboxID))) != nil
		}
		return nil
	})
	if err != nil || marked {
		if err != nil {
			err = fmt.Errorf("quota full of mailbox %d: %w", mailboxID, err)
		}
		return false, err
	}
	recorded := false
	err = s.update(ctx, func(tx *bolt.Tx) error {
		var m mailstore.Mailbox
		if !getJSON(tx.Bucket(bMailboxes), id8(mailboxID), &m) {
			return mailstore.ErrMailboxNotFound
		}
		marks, err := tx.CreateBucketIfNotExists(bEventMarks)
		if err != nil {
			return err
		}
		mark := []byte(mailstore.QuotaFullMark(mailboxID))
		if marks.Get(mark) != nil {
			return nil
		}
		if err := marks.Put(mark, nil); err != nil {
			return err
		}
		var d mailstore.Domain
		getJSON(tx.Bucket(bDomains), id8(m.DomainID), &d)
		e := mailstore.NewQuotaEvent(mailstore.EventQuotaFull, m, d.Name, now)
		recorded = true
		return addEventTx(tx, &e)
	})
	if err != nil {
		return false, fmt.Errorf("quota full of mailbox %d: %w", mailboxID, err)
	}
	return recorded, nil
}

// ClaimWebhookDeliveries implements Webhooks.
func (s *Store) ClaimWebhookDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]mailstore.WebhookDelivery, error) {
	if limit <= 0 || lease <= 0 {
		return nil, fmt.Errorf("claim webhook deliveries: limit and lease must be positive: %w", mailstore.ErrInvalidArgument)
	}
	until := now.Add(lease).Truncate(time.Second).Add(time.Second)
	var out []mailstore.WebhookDelivery
	err := s.update(ctx, func(tx *bolt.Tx) error {
		out = nil
		due, recs := tx.Bucket(bWebhookDue), tx.Bucket(bWebhookDeliveries)
		if due == nil || recs == nil {
			return nil
		}
		hooks, events := tx.Bucket(bWebhooks), tx.Bucket(bEvents)
		limitKey := nanoKey(now)
		type move struct {
			old []byte
			id  int64
		}
		var moves []move
		c := due.Cursor()
		for k, _ := c.First(); k != nil && len(out) < limit; k, _ = c.Next() {
			if binary.BigEndian.Uint64(k) > limitKey {
				break
			}
			id := int64(binary.BigEndian.Uint64(k[8:]))
			var d boltDelivery
			var w mailstore.Webhook
			var e mailstore.Event
			if !getJSON(recs, id8(id), &d) || hooks == nil || !getJSON(hooks, id8(d.WebhookID), &w) ||
				events == nil || !getJSON(events, id8(d.EventID), &e) {
				// Its webhook was deleted (or the record is gone): drop it.
				moves = append(moves, move{old: append([]byte(nil), k...), id: -id})
				continue
			}
			moves = append(moves, move{old: append([]byte(nil), k...), id: id})
			out = append(out, mailstore.WebhookDelivery{ID: id, Webhook: w, Event: e, Attempts: d.Attempts, NextAttempt: until, LastError: d.LastError})
		}
		for _, m := range moves {
			if err := due.Delete(m.old); err != nil {
				return err
			}
			if m.id < 0 {
				if err := recs.Delete(id8(-m.id)); err != nil {
					return err
				}
				continue
			}
			var d boltDelivery
			getJSON(recs, id8(m.id), &d)
			d.NextAttempt = until
			if err := putJSON(recs, id8(m.id), d); err != nil {
				return err
			}
			if err := due.Put(dueKey(until, m.id), nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim webhook deliveries: %w", err)
	}
	return out, nil
}

// RecordWebhookAttempt implements Webhooks.
func (s *Store) RecordWebhookAttempt(ctx context.Context, id int64, done bool, next time.Time, lastErr string) error {
	err := s.update(ctx, func(tx *bolt.Tx) error {
		due, recs := tx.Bucket(bWebhookDue), tx.Bucket(bWebhookDeliveries)
		if due == nil || recs == nil {
			return nil
		}
		var d boltDelivery
		if !getJSON(recs, id8(id), &d) {
			return nil
		}
		if err := due.Delete(dueKey(d.NextAttempt, id)); err != nil {
			return err
		}
		if done {
			return recs.Delete(id8(id))
		}
		d.Attempts++
		d.NextAttempt, d.LastError = mailstore.UTC(next), lastErr
		if err := putJSON(recs, id8(id), d); err != nil {
			return err
		}
		return due.Put(dueKey(d.NextAttempt, id), nil)
	})
	if err != nil {
		return fmt.Errorf("record webhook attempt %d: %w", id, err)
	}
	return nil
}

// PruneEvents implements Webhooks. The deliveries are few (each lasts a
// day at most), so it reads them all to know which events they wait for.
func (s *Store) PruneEvents(ctx context.Context, before time.Time) (int, error) {
	n := 0
	err := s.update(ctx, func(tx *bolt.Tx) error {
		events := tx.Bucket(bEvents)
		if events == nil {
			return nil
		}
		waiting := map[int64]bool{}
		if recs := tx.Bucket(bWebhookDeliveries); recs != nil {
			if err := recs.ForEach(func(_, v []byte) error {
				var d boltDelivery
				if err := json.Unmarshal(v, &d); err != nil {
					return err
				}
				waiting[d.EventID] = true
				return nil
			}); err != nil {
				return err
			}
		}
		var drop [][]byte
		c := events.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			var e mailstore.Event
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("event %x: %w", k, err)
			}
			if !e.CreatedAt.Before(before) {
				break // ids are in creation order
			}
			if !waiting[e.ID] {
				drop = append(drop, append([]byte(nil), k...))
			}
		}
		for _, k := range drop {
			if err := events.Delete(k); err != nil {
				return err
			}
		}
		n = len(drop)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("prune events: %w", err)
	}
	return n, nil
}
