package boltstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// The bbolt file never shrinks by itself: deleting mail frees pages inside
// it, which later writes reuse, but the file keeps its size. Compact
// writes the live pages into a new file and renames it over the old one;
// FileStats says how much of the file is free, and so what Compact would
// give back. Both work on the file with the server stopped.

// compactTxMaxSize bounds the bytes Compact copies in one transaction of
// the new file.
const compactTxMaxSize = 64 << 20

// CompactResult is what Compact did: the file's size before and after,
// in bytes.
type CompactResult struct {
	Path          string
	Before, After int64
	Took          time.Duration
}

// Compact rewrites the bbolt store in dataDir without its free pages:
// into mailhost.db.compact beside it, which it checks (bbolt's
// consistency check, and every bucket's keys and sequence against the
// old file) and then renames over mailhost.db. It holds the old file's
// lock throughout, so it answers ErrLocked while a server (or another
// command) has the store open, and no server can open it meanwhile. It
// needs free space for the new file, about the size of the live data
// (ErrNoSpace otherwise). Interrupted before the rename, it leaves the
// store as it was; a stale mailhost.db.compact is removed by the next
// Compact. ctx is checked before the rename: bbolt's copy itself cannot
// be interrupted.
func Compact(ctx context.Context, dataDir string, opt Options) (CompactResult, error) {
	start := time.Now()
	path := filepath.Join(dataDir, FileName)
	res := CompactResult{Path: path}
	before, err := os.Stat(path)
	if err != nil {
		return res, fmt.Errorf("compact %s: no store there: %w", dataDir, err)
	}
	res.Before = before.Size()
	src, err := openFile(path, opt, false)
	if err != nil {
		return res, fmt.Errorf("compact: %w", err)
	}
	defer src.Close()

	tmp := path + ".compact"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return res, fmt.Errorf("compact: remove stale %s: %w", tmp, err)
	}
	if err := copyCompact(tmp, src); err != nil {
		os.Remove(tmp)
		return res, fmt.Errorf("compact %s into %s: %w", path, tmp, err)
	}
	if err := ctx.Err(); err != nil {
		os.Remove(tmp)
		return res, fmt.Errorf("compact: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return res, fmt.Errorf("compact: rename %s to %s: %w", tmp, path, err)
	}
	if err := syncDir(dataDir); err != nil {
		return res, fmt.Errorf("compact: %w", err)
	}
	after, err := os.Stat(path)
	if err != nil {
		return res, fmt.Errorf("compact: %w", err)
	}
	res.After, res.Took = after.Size(), time.Since(start)
	return res, nil
}

// copyCompact copies src into a new file at tmp, syncs it and checks it.
func copyCompact(tmp string, src *bolt.DB) error {
	dst, err := bolt.Open(tmp, 0o600, &bolt.Options{FreelistType: bolt.FreelistMapType, NoSync: true})
	if err != nil {
		return ioError(err)
	}
	err = bolt.Compact(dst, src, compactTxMaxSize)
	if err == nil {
		// NoSync: one fsync at the end instead of one per transaction.
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return ioError(err)
	}
	check, err := bolt.Open(tmp, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer check.Close()
	return src.View(func(stx *bolt.Tx) error {
		return check.View(func(ctx *bolt.Tx) error {
			for err := range ctx.Check() {
				return fmt.Errorf("check of the new file: %w", err)
			}
			return stx.ForEach(func(name []byte, b *bolt.Bucket) error {
				c := ctx.Bucket(name)
				if c == nil {
					return fmt.Errorf("check of the new file: bucket %s missing", name)
				}
				if bn, cn := b.Stats().KeyN, c.Stats().KeyN; bn != cn || b.Sequence() != c.Sequence() {
					return fmt.Errorf("check of the new file: bucket %s has %d keys and sequence %d, the old one %d and %d",
						name, cn, c.Sequence(), bn, b.Sequence())
				}
				return nil
			})
		})
	})
}

// ioError is err, also ErrNoSpace when it is for lack of space.
func ioError(err error) error {
	if e := commitError(err); errors.Is(e, mailstore.ErrNoSpace) {
		return fmt.Errorf("%w: %w", mailstore.ErrNoSpace, err)
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// openFile opens the store's file with Open's options, read-only or not,
// without migrating it; ErrLocked when another process holds it.
func openFile(path string, opt Options, readOnly bool) (*bolt.DB, error) {
	timeout := opt.LockTimeout
	if timeout == 0 {
		timeout = 100 * time.Millisecond
	}
	bo := boltOptions(timeout, readOnly)
	bo.PreLoadFreelist = true
	db, err := bolt.Open(path, 0o600, bo)
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("open %s: %w", path, mailstore.ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return db, nil
}

// FileStats describes a bbolt store's file.
type FileStats struct {
	Path string
	// Size is the file's size; Used the part of it up to the last page
	// in use (bbolt grows the file ahead of its use).
	Size, Used int64
	PageSize   int
	// FreePages are pages inside Used that hold nothing (PendingPages:
	// freed by a transaction still being read): later writes reuse them,
	// and Compact gives them back to the file system. FreeBytes is their
	// size, pending included.
	FreePages, PendingPages int
	FreeBytes               int64
	// Buckets are the top-level buckets, by name.
	Buckets []BucketStats
}

// BucketStats describes one top-level bucket and the buckets nested in
// it.
type BucketStats struct {
	Name string
	// Keys counts the key/value pairs; InUse the bytes of keys, values
	// and page headers; Alloc the bytes of the pages the bucket holds (0
	// for a small bucket stored inline in the page of its parent).
	Keys         int
	InUse, Alloc int64
}

// StatFile reads the statistics of the bbolt store in dataDir, opening it
// read-only; ErrLocked while a server has it open.
func StatFile(ctx context.Context, dataDir string, opt Options) (FileStats, error) {
	path := filepath.Join(dataDir, FileName)
	if _, err := os.Stat(path); err != nil {
		return FileStats{}, fmt.Errorf("stats of %s: no store there: %w", dataDir, err)
	}
	if err := ctx.Err(); err != nil {
		return FileStats{}, err
	}
	db, err := openFile(path, opt, true)
	if err != nil {
		return FileStats{}, fmt.Errorf("stats: %w", err)
	}
	defer db.Close()
	return fileStats(db)
}

// FileStats is StatFile for the open store. The free pages are those
// bbolt counted when its last write transaction closed.
func (s *Store) FileStats(ctx context.Context) (FileStats, error) {
	if err := ctx.Err(); err != nil {
		return FileStats{}, err
	}
	return fileStats(s.db)
}

func fileStats(db *bolt.DB) (FileStats, error) {
	st := FileStats{Path: db.Path(), PageSize: db.Info().PageSize}
	fi, err := os.Stat(db.Path())
	if err != nil {
		return st, fmt.Errorf("stats: %w", err)
	}
	st.Size = fi.Size()
	dbs := db.Stats()
	st.FreePages, st.PendingPages, st.FreeBytes = dbs.FreePageN, dbs.PendingPageN, int64(dbs.FreePageN+dbs.PendingPageN)*int64(st.PageSize)
	err = db.View(func(tx *bolt.Tx) error {
		st.Used = tx.Size()
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			bs := b.Stats()
			bst := BucketStats{
				Name: string(name), Keys: bs.KeyN,
				InUse: int64(bs.BranchInuse + bs.LeafInuse),
				Alloc: int64(bs.BranchAlloc + bs.LeafAlloc),
			}
			if bst.Alloc == 0 {
				// A small bucket lives inline in its parent's page.
				bst.InUse = int64(bs.InlineBucketInuse)
			}
			st.Buckets = append(st.Buckets, bst)
			return nil
		})
	})
	sort.Slice(st.Buckets, func(i, j int) bool { return st.Buckets[i].Name < st.Buckets[j].Name })
	if err != nil {
		return st, fmt.Errorf("stats of %s: %w", db.Path(), err)
	}
	return st, nil
}
