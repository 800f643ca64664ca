package mailstore

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"
)

// QueueStats implements Queue. The counts come from the page headers of
// the queue's and the held entries' buckets (bbolt's Bucket.Stats walks
// their pages and reads no key), and only the first entry by id, the
// oldest, is decoded: a queue of 100,000 entries costs a walk over a few
// thousand pages, all in the memory map.
func (s *Bolt) QueueStats(ctx context.Context) (QueueStats, error) {
	var st QueueStats
	err := s.view(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bQueue)
		st.Entries = b.Stats().KeyN
		st.Held = tx.Bucket(bQueueHeld).Stats().KeyN
		// Ids grow with time, and an entry keeps its QueuedAt.
		if k, v := b.Cursor().First(); k != nil {
			var o Outbound
			if err := json.Unmarshal(v, &o); err != nil {
				return fmt.Errorf("entry %x: %w", k, err)
			}
			st.Oldest = o.QueuedAt
		}
		return nil
	})
	if err != nil {
		return QueueStats{}, fmt.Errorf("queue stats: %w", err)
	}
	return st, nil
}

// StoreSize answers the file's size and bbolt's free pages, from the
// statistics of the last transaction (db.Stats, no I/O but a stat).
func (s *Bolt) StoreSize(ctx context.Context) (StoreSize, error) {
	if err := ctx.Err(); err != nil {
		return StoreSize{}, err
	}
	fi, err := os.Stat(s.db.Path())
	if err != nil {
		return StoreSize{}, fmt.Errorf("store size: %w", err)
	}
	st := s.db.Stats()
	return StoreSize{Bytes: fi.Size(), FreePages: st.FreePageN, FreeBytes: int64(st.FreeAlloc)}, nil
}
