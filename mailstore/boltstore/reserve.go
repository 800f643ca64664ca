package boltstore

// Deleting on a full disk. bbolt writes every change to new pages (copy
// on write) and frees the old ones only when the transaction commits, so
// a deletion needs free pages too: a handful for a message, more for a
// folder. When its file has none to reuse (just compacted, or every page
// in use) it must grow the file into blocks the file system no longer
// has, and the commit fails with ENOSPC like any other write: the user
// could not free space by deleting mail.
//
// So the store keeps a reserve: a file beside mailhost.db, of
// Options.SpaceReserve bytes whose blocks it takes at Open (fallocate on
// Linux, zeros written elsewhere). A
// deletion (Expunge, a SetFlags that sets \Deleted, Move, DeleteFolder,
// DeleteMailbox, DeleteDomain, the retention pass) whose commit fails
// for lack of space removes the reserve and runs again: the blocks it
// gave back hold the new pages. The pages the deletion frees inside the
// file then serve the next writes, deletions first among them, as the
// file does not shrink. Other writes never touch the reserve: they fail
// with ErrNoSpace as before. The reserve is made again, at most once a
// minute, after a deletion, when the file system has room for it.
//
// Where the file system takes no blocks for it (zeros compressed away on
// ZFS or btrfs, where fallocate is refused), the reserve holds none, and
// a deletion on a full disk fails as before.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	bolt "go.etcd.io/bbolt"
)

// DefaultSpaceReserve is Options.SpaceReserve's default: enough for the
// new pages of deleting thousands of messages at once.
const DefaultSpaceReserve = 8 << 20

// reserveRetry is how long after a failed attempt the reserve is made
// again at the earliest: each attempt on a full disk writes until it
// fails.
const reserveRetry = time.Minute

// spaceReserve is the reserve file.
type spaceReserve struct {
	path string
	size int64 // 0: no reserve

	// mu guards the fields below.
	mu      sync.Mutex
	present bool
	tried   time.Time // the last failed attempt to make it
}

// fill makes the reserve file, size bytes written and synced, unless it
// is there. A file system without the room leaves none.
func (r *spaceReserve) fill(now time.Time) error {
	if r.size <= 0 {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.present || now.Sub(r.tried) < reserveRetry {
		return nil
	}
	if fi, err := os.Stat(r.path); err == nil && fi.Size() == r.size {
		r.present = true
		return nil
	}
	if err := writeZeros(r.path, r.size); err != nil {
		os.Remove(r.path)
		r.tried = now
		return fmt.Errorf("space reserve %s: %w", r.path, err)
	}
	r.present = true
	return nil
}

func writeZeros(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if err := allocate(f, size); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// zeros writes size zero bytes to f: allocate where the system has no
// cheaper way to take blocks.
func zeros(f *os.File, size int64) error {
	buf := make([]byte, 64<<10)
	for left := size; left > 0; left -= int64(len(buf)) {
		if _, err := f.Write(buf[:min(left, int64(len(buf)))]); err != nil {
			return err
		}
	}
	return nil
}

// release removes the reserve file and reports whether there was one.
func (r *spaceReserve) release() bool {
	if r.size <= 0 {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	err := os.Remove(r.path)
	r.present = false
	return err == nil
}

// deleting is update for a transaction that deletes (see above): on a
// commit that fails for lack of space it releases the reserve and runs
// fn once more. fn must be safe to run twice (update's fn is rolled
// back). After a deletion the reserve is made again if it is missing.
func (s *Store) deleting(ctx context.Context, fn func(*bolt.Tx) error) error {
	err := s.update(ctx, fn)
	if errors.Is(err, mailstore.ErrNoSpace) && s.reserve.release() {
		err = s.update(ctx, fn)
	}
	if err == nil {
		// Best effort: a full disk leaves the reserve missing until a
		// later deletion finds room for it.
		_ = s.reserve.fill(s.now())
	}
	return err
}
