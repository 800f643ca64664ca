package boltstore

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/mailhost/mailhost/mailstore"
	bolt "go.etcd.io/bbolt"
)

// QueueStats implements Queue. The counts come from the page headers of
// the queue's and the held entries' buckets (bbolt's Bucket.Stats walks
// their pages and reads no key), and only the first entry by id, the
// oldest, is decoded: a queue of 100,000 entries costs a walk over a few
// thousand pages, all in the memory map.
func (s *Store) QueueStats(ctx context.Context) (mailstore.QueueStats, error) {
	var st mailstore.QueueStats
	err := s.view(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bQueue)
		st.Entries = b.Stats().KeyN
		st.Held = tx.Bucket(bQueueHeld).Stats().KeyN
		// Ids grow with time, and an entry keeps its QueuedAt.
		if k, v := b.Cursor().First(); k != nil {
			var o mailstore.Outbound
			if err := json.Unmarshal(v, &o); err != nil {
				return fmt.Errorf("entry %x: %w", k, err)
			}
			st.Oldest = o.QueuedAt
		}
		return nil
	})
	if err != nil {
		return mailstore.QueueStats{}, fmt.Errorf("queue stats: %w", err)
	}
	return st, nil
}

// StoreSize answers the file's size and bbolt's free pages, from the
// statistics of the last transaction (db.Stats, no I/O but a stat).
func (s *Store) StoreSize(ctx context.Context) (mailstore.StoreSize, error) {
	if err := ctx.Err(); err != nil {
		return mailstore.StoreSize{}, err
	}
	fi, err := os.Stat(s.db.Path())
	if err != nil {
		return mailstore.StoreSize{}, fmt.Errorf("store size: %w", err)
	}
	st := s.db.Stats()
	return mailstore.StoreSize{Bytes: fi.Size(), FreePages: st.FreePageN, FreeBytes: int64(st.FreeAlloc)}, nil
}
