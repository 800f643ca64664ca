package boltstore

// The outbound queue of the bbolt store (schema 2). Deliver creates the
// entries (its Relay part, mail_deliver.go); the methods here are the
// delivery workers' and the operator's.
//
// Buckets:
//
//	queue       id -> Outbound (JSON)
//	queue_due   nextAttempt (unix nanos, 8, big-endian)|id -> "": every
//	            entry that is not held, in the order it is due
//	queue_held  domainID|id -> "": every held entry, by domain
//
// Invariants, kept by every writer within one transaction:
//
//   - an entry has exactly one index key: in queue_held when Held, else in
//     queue_due under its NextAttempt;
//   - an entry holds one reference to its BlobID (blob_refs counts message
//     records and queue entries alike), dropped when the entry goes;
//   - a held entry's bytes are counted in no domain's transfer; the others'
//     were counted when they were queued or released (bounces never).
//
// Times are stored with second precision, as everywhere in the store; a
// claim's lease is rounded up to the next second, so that it is never
// shorter than asked.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	bolt "go.etcd.io/bbolt"
)

var (
	bQueue     = []byte("queue")
	bQueueDue  = []byte("queue_due")
	bQueueHeld = []byte("queue_held")
	bDKIM      = []byte("dkim")
	// bQueueDomain indexes every entry by the domain it is sent for
	// (DomainID; 0 for bounces), so that a domain's entries are found
	// without reading the others' (FlushOutboundDomain). Schema 3.
	bQueueDomain = []byte("queue_domain")
)

// queueBuckets are the buckets schema 2 adds.
var queueBuckets = [][]byte{bQueue, bQueueDue, bQueueHeld, bDKIM}

// releaseBatch bounds one ReleaseHeld transaction, as purgeBatch does a
// retention one.
const releaseBatch = 2000

// dueKey orders the entries that are not held by when they are due. Times
// before 1970 are filed at 1970, those past 2262 at the end.
func dueKey(at time.Time, id int64) []byte {
	k := make([]byte, 16)
	binary.BigEndian.PutUint64(k, nanoKey(at))
	binary.BigEndian.PutUint64(k[8:], uint64(id))
	return k
}

func nanoKey(t time.Time) uint64 {
	switch {
	case t.Unix() <= 0:
		return 0
	case t.Unix() >= math.MaxInt64/int64(time.Second):
		return math.MaxInt64
	}
	return uint64(t.UnixNano())
}

// ceilSecond rounds t up to a whole second.
func ceilSecond(t time.Time) time.Time {
	u := t.UTC().Truncate(time.Second)
	if u.Before(t) {
		u = u.Add(time.Second)
	}
	return u
}

// queueTx works the queue's buckets within one transaction.
type queueTx struct {
	entries, due, held, byDomain *bolt.Bucket
}

func newQueueTx(tx *bolt.Tx) *queueTx {
	return &queueTx{
		entries:  tx.Bucket(bQueue),
		due:      tx.Bucket(bQueueDue),
		held:     tx.Bucket(bQueueHeld),
		byDomain: tx.Bucket(bQueueDomain),
	}
}

func (q *queueTx) get(id int64) (mailstore.Outbound, bool) {
	var o mailstore.Outbound
	ok := getJSON(q.entries, id8(id), &o)
	return o, ok
}

func (q *queueTx) indexKey(o mailstore.Outbound) (*bolt.Bucket, []byte) {
	if o.Held {
		return q.held, pair(o.DomainID, o.ID)
	}
	return q.due, dueKey(o.NextAttempt, o.ID)
}

// put stores an entry and its index key. An entry stored before must have
// been unindexed first.
func (q *queueTx) put(o mailstore.Outbound) error {
	b, k := q.indexKey(o)
	var v []byte
	if !o.Held {
		// See ClaimOutbound.
		v = []byte(o.Destination)
	}
	if err := b.Put(k, v); err != nil {
		return err
	}
	if err := q.byDomain.Put(pair(o.DomainID, o.ID), nil); err != nil {
		return err
	}
	return putJSON(q.entries, id8(o.ID), o)
}

// unindex deletes an entry's index key, before it changes.
func (q *queueTx) unindex(o mailstore.Outbound) error {
	b, k := q.indexKey(o)
	return b.Delete(k)
}

// remove deletes an entry and its index keys; the caller drops its blob
// reference.
func (q *queueTx) remove(o mailstore.Outbound) error {
	if err := q.unindex(o); err != nil {
		return err
	}
	return q.drop(o)
}

// drop deletes an entry already unindexed from queue_due or queue_held,
// with its queue_domain key.
func (q *queueTx) drop(o mailstore.Outbound) error {
	if err := q.byDomain.Delete(pair(o.DomainID, o.ID)); err != nil {
		return err
	}
	return q.entries.Delete(id8(o.ID))
}

// ClaimOutbound implements Queue. It seeks queue_due from its start and
// stops at the first entry due after now, or after ClaimScanLimit entries
// passed over: its cost is that of what it claims and passes over. Each
// queue_due value is the entry's destination, so that passing over an
// entry reads no record (entries indexed by earlier versions have none and
// are read).
func (s *Store) ClaimOutbound(ctx context.Context, now time.Time, lease time.Duration, limit int, opt mailstore.ClaimOptions) ([]mailstore.Outbound, error) {
	if limit <= 0 || lease <= 0 {
		return nil, fmt.Errorf("claim outbound: limit %d, lease %v: %w", limit, lease, mailstore.ErrInvalidArgument)
	}
	until := ceilSecond(now.Add(lease))
	skip := make(map[string]bool, len(opt.Skip))
	for _, d := range opt.Skip {
		skip[d] = true
	}
	// An idle queue is polled every few seconds, and a queue whose due
	// entries all go to skipped destinations is asked again at every new
	// message: look first in a read transaction, so that finding nothing
	// to claim costs no commit, no fsync and no wait for the writer.
	var ids []int64
	if err := s.db.View(func(tx *bolt.Tx) (err error) {
		ids, err = newQueueTx(tx).claimable(now, limit, skip, opt.PerDestination)
		return err
	}); err != nil {
		return nil, fmt.Errorf("claim outbound: %w", err)
	}
	if len(ids) == 0 {
		return []mailstore.Outbound{}, ctx.Err()
	}
	var out []mailstore.Outbound
	err := s.update(ctx, func(tx *bolt.Tx) error {
		out = []mailstore.Outbound{}
		q := newQueueTx(tx)
		// Again: another claim may have taken some since.
		ids, err := q.claimable(now, limit, skip, opt.PerDestination)
		if err != nil {
			return err
		}
		for _, id := range ids {
			o, ok := q.get(id)
			if !ok {
				return fmt.Errorf("queue_due names entry %d, which is missing", id)
			}
			if err := q.unindex(o); err != nil {
				return err
			}
			o.NextAttempt, o.Leased = until, true
			if err := q.put(o); err != nil {
				return err
			}
			out = append(out, o)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim outbound: %w", err)
	}
	return out, nil
}

// claimable are the ids of up to limit entries due at now, earliest
// first, passing over (at most ClaimScanLimit of) those to a skipped
// destination or beyond perDestination of theirs.
func (q *queueTx) claimable(now time.Time, limit int, skip map[string]bool, perDestination int) ([]int64, error) {
	var ids []int64
	taken := map[string]int{}
	passed := 0
	c := q.due.Cursor()
	for k, v := c.First(); k != nil && len(ids) < limit && passed < mailstore.ClaimScanLimit; k, v = c.Next() {
		if len(k) != 16 || binary.BigEndian.Uint64(k) > nanoKey(now) {
			break
		}
		id := int64(binary.BigEndian.Uint64(k[8:]))
		if len(skip) > 0 || perDestination > 0 {
			dest := string(v)
			if len(v) == 0 {
				o, ok := q.get(id)
				if !ok {
					return nil, fmt.Errorf("queue_due names entry %d, which is missing", id)
				}
				dest = o.Destination
			}
			if skip[dest] || (perDestination > 0 && taken[dest] >= perDestination) {
				passed++
				continue
			}
			taken[dest]++
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// OutboundBody implements Queue.
func (s *Store) OutboundBody(ctx context.Context, id int64) ([]byte, error) {
	var body []byte
	err := s.view(ctx, func(tx *bolt.Tx) error {
		o, ok := newQueueTx(tx).get(id)
		if !ok {
			return mailstore.ErrOutboundNotFound
		}
		v := tx.Bucket(bBlobs).Get(id8(o.BlobID))
		if v == nil {
			return fmt.Errorf("blob %d missing", o.BlobID)
		}
		body = bytes.Clone(v)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("outbound entry %d body: %w", id, err)
	}
	return body, nil
}

// RecordAttempt implements Queue. Workers record attempts concurrently, so
// it runs in a bbolt batch like Deliver, and an unknown entry is noted
// rather than failing the batch.
func (s *Store) RecordAttempt(ctx context.Context, id int64, a mailstore.Attempt) (mailstore.Outbound, error) {
	var out mailstore.Outbound
	var missing bool
	err := s.batch(ctx, func(tx *bolt.Tx) error {
		q := newQueueTx(tx)
		o, ok := q.get(id)
		if missing = !ok; missing {
			return nil
		}
		if err := q.unindex(o); err != nil {
			return err
		}
		o = mailstore.ApplyAttempt(o, a)
		out = o
		if len(o.Pending()) > 0 {
			return q.put(o)
		}
		if err := q.drop(o); err != nil {
			return err
		}
		t := newMailTx(tx)
		t.ref(o.BlobID, -1)
		return t.flushRefs()
	})
	if err == nil && missing {
		err = mailstore.ErrOutboundNotFound
	}
	if err != nil {
		return mailstore.Outbound{}, fmt.Errorf("record attempt of outbound entry %d: %w", id, err)
	}
	return out, nil
}

// ReleaseHeld implements Queue. It walks queue_held domain by domain: a
// domain without room is skipped with one seek past its entries, and the
// entries of a domain with room are released oldest first, each counted as
// it would have been by Deliver, until the domain's cap is used again; the
// rest wait. A message with entries for several destinations counts once,
// as in Deliver. Entries of a domain deleted meanwhile are released
// uncounted (mail in flight is not dropped). Each transaction releases at
// most releaseBatch entries.
func (s *Store) ReleaseHeld(ctx context.Context, now time.Time) (int, error) {
	// Nearly always nothing is held: answer that without a commit.
	var anyHeld bool
	if err := s.db.View(func(tx *bolt.Tx) error {
		k, _ := tx.Bucket(bQueueHeld).Cursor().First()
		anyHeld = k != nil
		return nil
	}); err != nil {
		return 0, fmt.Errorf("release held outbound entries: %w", err)
	}
	if !anyHeld {
		return 0, ctx.Err()
	}
	total := 0
	from := []byte{}
	for from != nil {
		n, next, err := s.releaseBatch(ctx, now, from)
		total += n
		if err != nil {
			return total, fmt.Errorf("release held outbound entries: %w", err)
		}
		from = next
	}
	return total, nil
}

// releaseBatch releases held entries from the queue_held key from on, in
// one transaction, and answers where the next one starts (nil when the
// walk is done).
func (s *Store) releaseBatch(ctx context.Context, now time.Time, from []byte) (int, []byte, error) {
	month := mailstore.Month(now)
	due := mailstore.UTC(now)
	var released int
	var next []byte
	err := s.update(ctx, func(tx *bolt.Tx) error {
		released, next = 0, nil
		t := newMailTx(tx)
		q := newQueueTx(tx)
		var batch []mailstore.Outbound
		c := q.held.Cursor()
		k, _ := c.Seek(from)
		for k != nil {
			if len(k) != 16 {
				return fmt.Errorf("queue_held key %x", k)
			}
			domainID := int64(binary.BigEndian.Uint64(k))
			var d mailstore.Domain
			gone := !getJSON(t.domains, id8(domainID), &d)
			x := t.transferFigures(domainID, month)
			if !gone && d.TransferCapReached(x.Transfer) {
				k, _ = c.Seek(id8(domainID + 1))
				continue
			}
			prefix := id8(domainID)
			var lastBlob int64
			for ; k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
				o, ok := q.get(int64(binary.BigEndian.Uint64(k[8:])))
				if !ok {
					return fmt.Errorf("queue_held names entry %x, which is missing", k[8:])
				}
				sibling := o.BlobID == lastBlob
				if len(batch) >= releaseBatch && !sibling {
					next = bytes.Clone(k)
					break
				}
				if !gone && !sibling {
					if d.TransferCapReached(x.Transfer) {
						break
					}
					t.count(domainID, month, 0, o.Size)
				}
				lastBlob = o.BlobID
				batch = append(batch, o)
			}
			if next != nil {
				break
			}
			k, _ = c.Seek(id8(domainID + 1))
		}
		for _, o := range batch {
			if err := q.unindex(o); err != nil {
				return err
			}
			o.Held, o.NextAttempt = false, due
			if err := q.put(o); err != nil {
				return err
			}
		}
		released = len(batch)
		return t.flush()
	})
	if err != nil {
		return 0, nil, err
	}
	return released, next, nil
}

// OutboundEntries implements Queue.
func (s *Store) OutboundEntries(ctx context.Context, p mailstore.Page) ([]mailstore.Outbound, int, error) {
	out := []mailstore.Outbound{}
	total := 0
	err := s.view(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bQueue)
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			total++
			if total <= p.Offset || (p.Limit > 0 && len(out) >= p.Limit) {
				continue
			}
			var o mailstore.Outbound
			if err := json.Unmarshal(v, &o); err != nil {
				return fmt.Errorf("entry %x: %w", k, err)
			}
			out = append(out, o)
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("outbound entries: %w", err)
	}
	return out, total, nil
}

// FlushOutbound implements Queue. Entries due already keep their time, so
// the order of the queue does not change among them.
func (s *Store) FlushOutbound(ctx context.Context, now time.Time) (int, error) {
	var n int
	err := s.update(ctx, func(tx *bolt.Tx) error {
		n = 0
		q := newQueueTx(tx)
		var later []int64
		c := q.due.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			n++
			if len(k) == 16 && binary.BigEndian.Uint64(k) > nanoKey(now) {
				later = append(later, int64(binary.BigEndian.Uint64(k[8:])))
			}
		}
		for _, id := range later {
			o, ok := q.get(id)
			if !ok {
				return fmt.Errorf("queue_due names entry %d, which is missing", id)
			}
			if err := q.unindex(o); err != nil {
				return err
			}
			o.NextAttempt = mailstore.UTC(now)
			if err := q.put(o); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("flush outbound: %w", err)
	}
	return n, nil
}

// ReleaseLeases implements Queue. Leased entries are found in a read
// transaction (queue_due does not mark leases, so the entries due later
// are read: once per start, not per request).
func (s *Store) ReleaseLeases(ctx context.Context, now time.Time) (int, error) {
	return s.refile(ctx, now, "release leases", (*queueTx).dueLater, func(o mailstore.Outbound) bool { return o.Leased })
}

// dueLater are the ids of the entries due after now, from queue_due.
func (q *queueTx) dueLater(now time.Time) []int64 {
	var ids []int64
	c := q.due.Cursor()
	for k, _ := c.Seek(dueKey(now.Add(time.Nanosecond), 0)); k != nil; k, _ = c.Next() {
		ids = append(ids, int64(binary.BigEndian.Uint64(k[8:])))
	}
	return ids
}

// refile makes the entries among candidates that are due after now, not
// held, and match, due at now, and answers how many: found in a read
// transaction, re-filed in a write one
// (checked again, as attempts may have been recorded since), so that
// writers wait only for the re-filing.
func (s *Store) refile(ctx context.Context, now time.Time, what string, candidates func(*queueTx, time.Time) []int64, match func(mailstore.Outbound) bool) (int, error) {
	var ids []int64
	if err := s.view(ctx, func(tx *bolt.Tx) error {
		q := newQueueTx(tx)
		for _, id := range candidates(q, now) {
			if o, ok := q.get(id); ok && !o.Held && o.NextAttempt.After(now) && match(o) {
				ids = append(ids, id)
			}
		}
		return nil
	}); err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	if len(ids) == 0 {
		return 0, nil
	}
	var n int
	err := s.update(ctx, func(tx *bolt.Tx) error {
		n = 0
		q := newQueueTx(tx)
		for _, id := range ids {
			o, ok := q.get(id)
			if !ok || o.Held || !match(o) || !o.NextAttempt.After(now) {
				continue
			}
			if err := q.unindex(o); err != nil {
				return err
			}
			o.NextAttempt, o.Leased = mailstore.UTC(now), false
			if err := q.put(o); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	return n, nil
}

// FlushOutboundDomain implements Queue. It walks the domain's keys in
// queue_domain: other domains' entries are not read.
func (s *Store) FlushOutboundDomain(ctx context.Context, domainID int64, now time.Time) (int, error) {
	ofDomain := func(q *queueTx, _ time.Time) []int64 {
		var ids []int64
		eachChild(q.byDomain, domainID, 0, func(id []byte) { ids = append(ids, int64(binary.BigEndian.Uint64(id))) })
		return ids
	}
	return s.refile(ctx, now, fmt.Sprintf("flush outbound of domain %d", domainID), ofDomain,
		func(o mailstore.Outbound) bool { return o.DomainID == domainID })
}

// DeleteOutbound implements Queue.
func (s *Store) DeleteOutbound(ctx context.Context, id int64) (mailstore.Outbound, error) {
	var o mailstore.Outbound
	err := s.update(ctx, func(tx *bolt.Tx) error {
		q := newQueueTx(tx)
		var ok bool
		if o, ok = q.get(id); !ok {
			return mailstore.ErrOutboundNotFound
		}
		if err := q.remove(o); err != nil {
			return err
		}
		t := newMailTx(tx)
		t.ref(o.BlobID, -1)
		return t.flushRefs()
	})
	if err != nil {
		return mailstore.Outbound{}, fmt.Errorf("delete outbound entry %d: %w", id, err)
	}
	return o, nil
}

// Transfer implements Mail.
func (s *Store) Transfer(ctx context.Context, domainID int64, month string) (mailstore.Transfer, error) {
	var x mailstore.Transfer
	err := s.view(ctx, func(tx *bolt.Tx) error {
		if tx.Bucket(bDomains).Get(id8(domainID)) == nil {
			return mailstore.ErrDomainNotFound
		}
		x = transferOf(tx, domainID, month)
		return nil
	})
	if err != nil {
		return mailstore.Transfer{}, fmt.Errorf("transfer of domain %d: %w", domainID, err)
	}
	return x, nil
}

// DKIMKeys implements Mail.
func (s *Store) DKIMKeys(ctx context.Context, domainID int64) ([]mailstore.DKIMKey, error) {
	var keys []mailstore.DKIMKey
	err := s.view(ctx, func(tx *bolt.Tx) (err error) {
		keys, err = dkimKeys(tx, domainID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("DKIM keys of domain %d: %w", domainID, err)
	}
	return keys, nil
}

// EnsureDKIMKeys implements Mail.
func (s *Store) EnsureDKIMKeys(ctx context.Context, domainID int64, keys []mailstore.DKIMKey) ([]mailstore.DKIMKey, error) {
	var out []mailstore.DKIMKey
	err := s.update(ctx, func(tx *bolt.Tx) (err error) {
		if out, err = dkimKeys(tx, domainID); err != nil || len(out) > 0 {
			return err
		}
		out, err = putDKIMKeys(tx, domainID, keys)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("ensure DKIM keys of domain %d: %w", domainID, err)
	}
	return out, nil
}

func dkimKeys(tx *bolt.Tx, domainID int64) ([]mailstore.DKIMKey, error) {
	if tx.Bucket(bDomains).Get(id8(domainID)) == nil {
		return nil, mailstore.ErrDomainNotFound
	}
	keys := []mailstore.DKIMKey{}
	if v := tx.Bucket(bDKIM).Get(id8(domainID)); v != nil {
		if err := json.Unmarshal(v, &keys); err != nil {
			return nil, fmt.Errorf("DKIM keys record: %w", err)
		}
	}
	return keys, nil
}

// putDKIMKeys stores a domain's keys (none: nothing) and answers them as
// stored.
func putDKIMKeys(tx *bolt.Tx, domainID int64, keys []mailstore.DKIMKey) ([]mailstore.DKIMKey, error) {
	out := make([]mailstore.DKIMKey, len(keys))
	for i, k := range keys {
		if k.Selector == "" || len(k.Private) == 0 {
			return nil, fmt.Errorf("DKIM key %d: no selector or private key: %w", i, mailstore.ErrInvalidArgument)
		}
		k.Private = bytes.Clone(k.Private)
		k.CreatedAt = mailstore.UTC(k.CreatedAt)
		out[i] = k
	}
	if len(out) == 0 {
		return out, nil
	}
	return out, putJSON(tx.Bucket(bDKIM), id8(domainID), out)
}
