package boltstore

// Cluster of the bbolt store: one process works the file, so it is the
// only node, and the methods only need to be durable.
//
// Bucket:
//
//	cluster   "job/"+name -> the last slot taken (unix seconds, int64, 8, big-endian)
//	          "setting/"+name -> value
//
// The bucket is made lazily (CreateBucketIfNotExists in the writing
// transactions, and readers take its absence as empty) rather than by a
// schema migration: another change adds bbolt schema 6 at the same time,
// and two migrations numbered 6 would clash. A file that never used
// Cluster has no bucket, which reads the same as an empty one, so older
// binaries are unaffected.

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	bolt "go.etcd.io/bbolt"
)

var bCluster = []byte("cluster")

var _ mailstore.Cluster = (*Store)(nil)

func clusterJobKey(name string) []byte     { return []byte("job/" + name) }
func clusterSettingKey(name string) []byte { return []byte("setting/" + name) }

// RunOnce implements Cluster. The slot is kept in unix seconds, signed,
// and compared decoded: no key is ordered by it, and nanoKey would file
// every slot before 1970 as one.
func (s *Store) RunOnce(ctx context.Context, name string, slot time.Time) (bool, error) {
	if name == "" {
		return false, fmt.Errorf("run once: empty job name: %w", mailstore.ErrInvalidArgument)
	}
	at := mailstore.UTC(slot).Unix()
	var run bool
	err := s.update(ctx, func(tx *bolt.Tx) error {
		run = false
		b, err := tx.CreateBucketIfNotExists(bCluster)
		if err != nil {
			return err
		}
		k := clusterJobKey(name)
		if v := b.Get(k); len(v) == 8 && int64(binary.BigEndian.Uint64(v)) >= at {
			return nil
		}
		v := make([]byte, 8)
		binary.BigEndian.PutUint64(v, uint64(at))
		if err := b.Put(k, v); err != nil {
			return err
		}
		run = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("run once %s for %v: %w", name, slot, err)
	}
	return run, nil
}

// Setting implements Cluster. make runs outside the write transaction
// (it may be slow: a secret from crypto/rand), so the value is looked up
// again before it is stored.
func (s *Store) Setting(ctx context.Context, name string, make func() (string, error)) (string, error) {
	if name == "" {
		return "", fmt.Errorf("setting: empty name: %w", mailstore.ErrInvalidArgument)
	}
	k := clusterSettingKey(name)
	var value []byte
	err := s.view(ctx, func(tx *bolt.Tx) error {
		if b := tx.Bucket(bCluster); b != nil {
			value = bytes.Clone(b.Get(k))
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("setting %s: %w", name, err)
	}
	if value != nil {
		return string(value), nil
	}
	made, err := make()
	if err != nil {
		return "", fmt.Errorf("setting %s: make: %w", name, err)
	}
	err = s.update(ctx, func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bCluster)
		if err != nil {
			return err
		}
		if v := b.Get(k); v != nil {
			value = bytes.Clone(v)
			return nil
		}
		value = []byte(made)
		return b.Put(k, value)
	})
	if err != nil {
		return "", fmt.Errorf("setting %s: %w", name, err)
	}
	return string(value), nil
}

// Heartbeat implements Members: a bbolt file has one process, so one node.
func (s *Store) Heartbeat(ctx context.Context, node string, now time.Time, ttl time.Duration) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return 1, nil
}
