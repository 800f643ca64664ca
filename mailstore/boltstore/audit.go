package boltstore

// Audit of the bbolt store.
//
// Buckets, made lazily (as cluster.go explains: no schema number,
// and a file without them reads as an empty log):
//
//	audit        partnerID|id -> AuditEntry (JSON); ids from the bucket's sequence,
//	             so a partner's entries are one prefix, oldest first
//	audit_time   unix seconds (8)|partnerID|id -> "" (every entry, for PruneAudit)

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	bolt "go.etcd.io/bbolt"
)

var (
	bAudit     = []byte("audit")
	bAuditTime = []byte("audit_time")
)

var _ mailstore.Audit = (*Store)(nil)

func auditTimeKey(at time.Time, partnerID, id int64) []byte {
	k := make([]byte, 24)
	binary.BigEndian.PutUint64(k, uint64(max(at.Unix(), 0)))
	binary.BigEndian.PutUint64(k[8:], uint64(partnerID))
	binary.BigEndian.PutUint64(k[16:], uint64(id))
	return k
}

// AddAudit implements Audit.
func (s *Store) AddAudit(ctx context.Context, e mailstore.AuditEntry) (mailstore.AuditEntry, error) {
	if e.PartnerID == 0 {
		return mailstore.AuditEntry{}, fmt.Errorf("add audit entry: no partner: %w", mailstore.ErrInvalidArgument)
	}
	err := s.update(ctx, func(tx *bolt.Tx) (err error) {
		e, err = addAuditTx(tx, e)
		return err
	})
	if err != nil {
		return mailstore.AuditEntry{}, fmt.Errorf("add audit entry: %w", err)
	}
	return e, nil
}

// addAuditTx appends an entry within tx: AddAudit's, and those the store
// writes with what they record (NewClaimEndedAudit).
func addAuditTx(tx *bolt.Tx, e mailstore.AuditEntry) (mailstore.AuditEntry, error) {
	e.Time = mailstore.UTC(e.Time)
	b, err := tx.CreateBucketIfNotExists(bAudit)
	if err != nil {
		return mailstore.AuditEntry{}, err
	}
	idx, err := tx.CreateBucketIfNotExists(bAuditTime)
	if err != nil {
		return mailstore.AuditEntry{}, err
	}
	if e.ID, err = nextID(b); err != nil {
		return mailstore.AuditEntry{}, err
	}
	if err := putJSON(b, pair(e.PartnerID, e.ID), e); err != nil {
		return mailstore.AuditEntry{}, err
	}
	return e, idx.Put(auditTimeKey(e.Time, e.PartnerID, e.ID), nil)
}

// AuditEntries implements Audit: the partner's prefix walked backwards.
func (s *Store) AuditEntries(ctx context.Context, partnerID int64, p mailstore.Page) ([]mailstore.AuditEntry, int, error) {
	out := []mailstore.AuditEntry{}
	total := 0
	err := s.view(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bAudit)
		if b == nil {
			return nil
		}
		prefix := id8(partnerID)
		c := b.Cursor()
		k, v := c.Seek(id8(partnerID + 1))
		if k == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev()
		}
		for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Prev() {
			total++
			if total <= p.Offset || (p.Limit > 0 && len(out) >= p.Limit) {
				continue
			}
			var e mailstore.AuditEntry
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("audit entry %x: %w", k, err)
			}
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("audit entries of partner %d: %w", partnerID, err)
	}
	return out, total, nil
}

// PruneAudit implements Audit, through the time index, in batches of
// pruneBatch entries a transaction.
func (s *Store) PruneAudit(ctx context.Context, before time.Time) (int, error) {
	limit := uint64(max(before.Unix(), 0))
	n := 0
	for {
		done := false
		batch := 0
		err := s.update(ctx, func(tx *bolt.Tx) error {
			batch = 0
			idx, b := tx.Bucket(bAuditTime), tx.Bucket(bAudit)
			if idx == nil || b == nil {
				done = true
				return nil
			}
			c := idx.Cursor()
			for k, _ := c.First(); ; k, _ = c.First() {
				if k == nil || len(k) != 24 || binary.BigEndian.Uint64(k) >= limit {
					done = true
					return nil
				}
				if batch == pruneBatch {
					return nil
				}
				if err := b.Delete(k[8:]); err != nil {
					return err
				}
				if err := c.Delete(); err != nil {
					return err
				}
				batch++
			}
		})
		if err != nil {
			return n, fmt.Errorf("prune audit log: %w", err)
		}
		n += batch
		if done {
			return n, nil
		}
	}
}

// pruneBatch bounds the entries one transaction of a prune deletes.
const pruneBatch = 1000
