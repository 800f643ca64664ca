package boltstore

import (
	"bytes"
	"context"
	"fmt"

	"github.com/mailhost/mailhost/mailstore"
	bolt "go.etcd.io/bbolt"
)

// Bounds on one read transaction of Bodies. A read transaction that stays
// open holds bbolt's mmap lock shared, so a writer that must grow the file
// waits for it, and it keeps the pages it sees from reuse; the bodies of
// one chunk are copied out and the transaction closed before fn sees them,
// so a slow client never holds one open. 256 messages make the cost of the
// transaction and the folder check negligible per message; 1 MiB bounds
// what a session holds (one buffer, reused from chunk to chunk, plus at
// most one message beyond the bound).
const (
	bodiesChunkMessages = 256
	bodiesChunkBytes    = 1 << 20
)

// bodyRef is one body of a Bodies chunk: its uid and where it is in the
// chunk's buffer.
type bodyRef struct {
	uid        uint32
	start, end int
}

// Bodies implements Mail. It reads the bodies in chunks, each in one read
// transaction with the folder checked once, copies them into a buffer it
// reuses, and calls fn once the transaction is over.
func (s *Store) Bodies(ctx context.Context, mailboxID, folderID int64, uids []uint32, fn func(uid uint32, body []byte) error) error {
	return s.readChunks(ctx, "bodies", mailboxID, folderID, uids, bodiesChunkMessages, bodiesChunkBytes, true,
		func(tx *bolt.Tx) func(uid uint32, blobID int64) ([]byte, error) {
			blobs := newSeqReader(tx.Bucket(bBlobs))
			return func(uid uint32, blobID int64) ([]byte, error) {
				raw := blobs.get(id8(blobID))
				if raw == nil {
					return nil, fmt.Errorf("message %d: blob %d missing", uid, blobID)
				}
				return raw, nil
			}
		}, nil, fn)
}

// readChunks is the walk of Bodies and Summaries: uids in chunks bounded
// by count and bytes, each in one read transaction with the folder
// checked once and the messages read by cursor (seqReader). For each
// message there, the function open makes for the transaction answers
// the bytes to copy out (the body, the summary), read from its body's
// id; done, when not nil, runs after each chunk's transaction and before
// fn sees the chunk, which it does outside any transaction. An error of
// fn is answered as it is, the others as what's ("bodies", "summaries").
// A bulk read has the kernel read the file around each page it faults in
// (readAround).
func (s *Store) readChunks(ctx context.Context, what string, mailboxID, folderID int64, uids []uint32, maxMessages, maxBytes int, bulk bool,
	open func(tx *bolt.Tx) func(uid uint32, blobID int64) ([]byte, error), done func(), fn func(uid uint32, b []byte) error) error {
	var (
		buf  []byte
		refs []bodyRef
	)
	for next := 0; next < len(uids); {
		buf, refs = buf[:0], refs[:0]
		err := s.view(ctx, func(tx *bolt.Tx) error {
			var f mailstore.Folder
			if !getJSON(tx.Bucket(bFolders), id8(folderID), &f) || f.MailboxID != mailboxID {
				return mailstore.ErrFolderNotFound
			}
			if bulk && len(uids)-next > 1 {
				s.readAround.begin(tx)
				defer s.readAround.end(tx)
			}
			messages, value := newSeqReader(tx.Bucket(bMessages)), open(tx)
			for ; next < len(uids) && len(refs) < maxMessages && len(buf) < maxBytes; next++ {
				uid := uids[next]
				k := msgKey(folderID, uid)
				v := messages.get(k)
				if v == nil {
					continue // not in the folder (expunged): skipped
				}
				m, err := decodeMessage(k, v)
				if err != nil {
					return fmt.Errorf("message %d: %w", uid, err)
				}
				b, err := value(uid, m.BlobID)
				if err != nil {
					return err
				}
				start := len(buf)
				buf = append(buf, b...)
				refs = append(refs, bodyRef{uid: uid, start: start, end: len(buf)})
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("%s of folder %d: %w", what, folderID, err)
		}
		if done != nil {
			done()
		}
		for _, r := range refs {
			// The full slice expression keeps fn from appending into the
			// next value.
			if err := fn(r.uid, buf[r.start:r.end:r.end]); err != nil {
				return err
			}
		}
	}
	return nil
}

// seqReader reads the values of ascending keys of one bucket in one
// transaction: from the cursor's place by Next while the key is a few
// records ahead (a FETCH 1:* asks for every record in order, and Next
// does not search the tree again as Get does), by Seek otherwise.
type seqReader struct {
	c    *bolt.Cursor
	k, v []byte
}

// seqReaderSteps is how many records get walks by Next before it seeks.
const seqReaderSteps = 4

func newSeqReader(b *bolt.Bucket) *seqReader {
	if b == nil {
		return &seqReader{}
	}
	return &seqReader{c: b.Cursor()}
}

// get is Bucket.Get(key): the value, nil if there is none.
func (r *seqReader) get(key []byte) []byte {
	if r.c == nil {
		return nil
	}
	for i := 0; r.k != nil && bytes.Compare(r.k, key) < 0; i++ {
		if i == seqReaderSteps {
			r.k = nil
			break
		}
		r.k, r.v = r.c.Next()
	}
	if r.k == nil || bytes.Compare(r.k, key) > 0 {
		r.k, r.v = r.c.Seek(key)
	}
	if r.k == nil || !bytes.Equal(r.k, key) {
		return nil
	}
	return r.v
}
