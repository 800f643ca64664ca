package boltstore

import (
	"context"
	"fmt"

	"github.com/mailhost/mailhost/mailstore"
	bolt "go.etcd.io/bbolt"
)

// bSummaries holds each body's summary (HeaderSummary), blobID -> header
// block. It is created by the first write that needs it, not by a schema
// migration: a body without a summary (stored before it existed, or
// loaded from a dump) gets one from Summaries, lazily. A summary is
// written in the transaction that writes its body (Deliver, Append) and
// deleted in the one that deletes it (mailTx.flushRefs).
var bSummaries = []byte("blob_summaries")

// Bounds on one read transaction of Summaries, as for Bodies
// (mail_bodies.go); summaries are small, so more fit in one.
const (
	summariesChunkMessages = 1024
	summariesChunkBytes    = 1 << 20
)

// putSummary stores the summary of the body blobID.
func (t *mailTx) putSummary(blobID int64, summary []byte) error {
	b, err := t.tx.CreateBucketIfNotExists(bSummaries)
	if err != nil {
		return err
	}
	return b.Put(id8(blobID), summary)
}

// deleteSummary deletes the summary of a body being deleted.
func (t *mailTx) deleteSummary(blobID int64) error {
	if b := t.tx.Bucket(bSummaries); b != nil {
		return b.Delete(id8(blobID))
	}
	return nil
}

// Summaries implements Mail. It reads the summaries in chunks, each in one
// read transaction, as Bodies reads bodies; a summary missing is made from
// the body in that transaction and, once it is over, stored in one write
// transaction for the chunk.
func (s *Store) Summaries(ctx context.Context, mailboxID, folderID int64, uids []uint32, fn func(uid uint32, header []byte) error) error {
	var missing map[int64][]byte // blobID -> summary made from the body
	return s.readChunks(ctx, "summaries", mailboxID, folderID, uids, summariesChunkMessages, summariesChunkBytes, false,
		func(tx *bolt.Tx) func(uid uint32, blobID int64) ([]byte, error) {
			summaries, blobs := newSeqReader(tx.Bucket(bSummaries)), tx.Bucket(bBlobs)
			return func(uid uint32, blobID int64) ([]byte, error) {
				if h := summaries.get(id8(blobID)); h != nil {
					return h, nil
				}
				if h := missing[blobID]; h != nil {
					return h, nil
				}
				raw := blobs.Get(id8(blobID))
				if raw == nil {
					return nil, fmt.Errorf("message %d: blob %d missing", uid, blobID)
				}
				if missing == nil {
					missing = map[int64][]byte{}
				}
				missing[blobID] = mailstore.HeaderSummary(raw)
				return missing[blobID], nil
			}
		},
		func() {
			if len(missing) > 0 {
				s.storeSummaries(ctx, missing)
				missing = nil
			}
		}, fn)
}

// storeSummaries stores summaries made from bodies stored without one,
// for the bodies still there. It is a cache fill: Summaries answers
// the same without it, so a failure (a store opened read-only, a done
// ctx) is not an error.
func (s *Store) storeSummaries(ctx context.Context, made map[int64][]byte) {
	_ = s.batch(ctx, func(tx *bolt.Tx) error {
		blobs := tx.Bucket(bBlobs)
		b, err := tx.CreateBucketIfNotExists(bSummaries)
		if err != nil {
			return err
		}
		for id, h := range made {
			if blobs.Get(id8(id)) == nil || b.Get(id8(id)) != nil {
				continue // deleted meanwhile, or filled by another session
			}
			if err := b.Put(id8(id), h); err != nil {
				return err
			}
		}
		return nil
	})
}
