package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	bolt "go.etcd.io/bbolt"
)

// purgeBatch bounds one retention transaction: big enough that the fsync
// is amortised, small enough that deliveries waiting for the write lock
// wait tens of milliseconds, not seconds.
const purgeBatch = 5000

// PurgeBefore implements Mail. It walks the domains (not the messages);
// in each it seeks the retention index to the domain's first entry and
// deletes entries older than the cutoff, purgeBatch at a time, so its cost
// is that of what it deletes. A domain with retention_days 0 or less keeps
// its mail.
func (s *Store) PurgeBefore(ctx context.Context, now time.Time) ([]mailstore.PurgeResult, error) {
	var doms []mailstore.RetentionDomain
	err := s.view(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bDomains).ForEach(func(k, v []byte) error {
			var d mailstore.Domain
			if getJSON(tx.Bucket(bDomains), k, &d) && d.RetentionDays > 0 {
				doms = append(doms, mailstore.RetentionDomain{ID: d.ID, Name: d.Name, Days: d.RetentionDays})
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("purge: %w", err)
	}
	return mailstore.PurgeDomains(doms, now, purgeBatch, func(domainID int64, cutoff time.Time) (int, int64, int64, error) {
		return s.purgeDomainBatch(ctx, domainID, cutoff)
	})
}

// purgeDomainBatch deletes up to purgeBatch of the domain's messages
// received before cutoff, in one transaction. entries is how many index
// entries it took, messages or not.
func (s *Store) purgeDomainBatch(ctx context.Context, domainID int64, cutoff time.Time) (entries int, msgs, size int64, err error) {
	var touched []int64
	err = s.deleting(ctx, func(tx *bolt.Tx) error {
		msgs, size = 0, 0
		t := s.mailTx(tx)
		prefix := id8(domainID)
		limit := make([]byte, 16)
		copy(limit, prefix)
		binary.BigEndian.PutUint64(limit[8:], unixKey(cutoff))
		type entry struct {
			mailboxID, folderID int64
			uid                 uint32
			key                 []byte
		}
		var batch []entry
		c := t.retention.Cursor()
		for k, v := c.Seek(prefix); k != nil && len(batch) < purgeBatch; k, v = c.Next() {
			if len(k) != 28 || bytes.Compare(k[:16], limit) >= 0 {
				break
			}
			batch = append(batch, entry{
				mailboxID: int64(binary.BigEndian.Uint64(v)),
				folderID:  int64(binary.BigEndian.Uint64(k[16:])),
				uid:       binary.BigEndian.Uint32(k[24:]),
				key:       append([]byte(nil), k...),
			})
		}
		for _, e := range batch {
			f, err := t.folder(e.mailboxID, e.folderID)
			m, ok, merr := t.message(e.folderID, e.uid)
			if err != nil || merr != nil || !ok {
				// An entry without its message breaks an invariant; drop
				// it rather than stop retention for the whole domain.
				if err := t.retention.Delete(e.key); err != nil {
					return err
				}
				continue
			}
			if err := t.remove(f, m, true); err != nil {
				return err
			}
			msgs++
			size += m.Size
		}
		entries = len(batch)
		touched = t.touchedIDs()
		return t.flush()
	})
	if err != nil {
		return 0, 0, 0, err
	}
	s.notify(touched...)
	return entries, msgs, size, nil
}
