package boltstore

// The keyword counts of each folder (keywords.go), in a bucket made
// lazily (without a schema number):
//
//	folder_keywords   folderID -> distinct keywords of the folder (uint64)
//	                  folderID|KeywordKey -> messages holding it (uint64)
//
// The first key says the folder's counts are kept. A folder made before
// them has none until a write first changes one of its keywords: that
// write counts the folder's messages' keywords once (one pass over the
// folder, as its first SELECT is), and the counts are kept from then on.
// A write that changes no keyword (a delivery, \Seen) does not look.

import (
	"encoding/binary"
	"fmt"

	"github.com/mailhost/mailhost/mailstore"
	bolt "go.etcd.io/bbolt"
)

var bFolderKeywords = []byte("folder_keywords")

// folderKeywords is a folder's keyword counts as a transaction sees them.
type folderKeywords struct {
	// before and now are the folder's distinct keywords when the
	// transaction first looked and now.
	before, now int64
	// counts are the counts the transaction changed (or, for a folder it
	// counted, all of them), by key.
	counts map[string]int64
}

// keywordsOf is the folder's keyword counts, counted from its messages
// if the store keeps none for it yet. It must be called before the
// transaction changes any message of the folder that holds a keyword.
func (t *mailTx) keywordsOf(folderID int64) (*folderKeywords, error) {
	if k, ok := t.kcache[folderID]; ok {
		return k, nil
	}
	b, err := t.keywordBucket()
	if err != nil {
		return nil, err
	}
	k := &folderKeywords{counts: map[string]int64{}}
	if v := b.Get(id8(folderID)); len(v) == 8 {
		k.before = int64(binary.BigEndian.Uint64(v))
	} else {
		err := t.eachMessage(folderID, func(m mailstore.Message) error {
			mailstore.KeywordDelta(k.counts, nil, m.Flags)
			return nil
		})
		if err != nil {
			return nil, err
		}
		k.before = int64(len(k.counts))
	}
	k.now = k.before
	t.kcache[folderID] = k
	return k, nil
}

func (t *mailTx) keywordBucket() (*bolt.Bucket, error) {
	if t.keywords == nil {
		b, err := t.tx.CreateBucketIfNotExists(bFolderKeywords)
		if err != nil {
			return nil, fmt.Errorf("keyword counts: %w", err)
		}
		t.keywords = b
	}
	return t.keywords, nil
}

// reflag counts a message of the folder going from flags old to new (nil
// old: it arrives; nil new: it leaves). Messages without keywords cost
// nothing.
func (t *mailTx) reflag(folderID int64, old, new []string) error {
	if t.kdropped[folderID] || !mailstore.HasKeywords(old) && !mailstore.HasKeywords(new) {
		return nil
	}
	k, err := t.keywordsOf(folderID)
	if err != nil {
		return err
	}
	// The net change only: a message that keeps most of its keywords
	// looks up the counts of those it gains or loses.
	d := make(map[string]int64, max(len(old), len(new)))
	mailstore.KeywordDelta(d, old, new)
	for key, n := range d {
		if n != 0 {
			k.add(t.keywords, folderID, key, n)
		}
	}
	return nil
}

func (k *folderKeywords) add(b *bolt.Bucket, folderID int64, key string, delta int64) {
	n, ok := k.counts[key]
	if !ok {
		if v := b.Get(keywordKey(folderID, key)); len(v) == 8 {
			n = int64(binary.BigEndian.Uint64(v))
		}
	}
	next := max(n+delta, 0)
	switch {
	case n == 0 && next > 0:
		k.now++
	case n > 0 && next == 0:
		k.now--
	}
	k.counts[key] = next
}

func keywordKey(folderID int64, key string) []byte {
	return append(id8(folderID), key...)
}

// dropKeywords deletes a folder's keyword counts, for a folder deleted
// in the transaction: its messages' removals count nothing more.
func (t *mailTx) dropKeywords(folderID int64) error {
	t.kdropped[folderID] = true
	delete(t.kcache, folderID)
	b := t.tx.Bucket(bFolderKeywords)
	if b == nil {
		return nil
	}
	prefix := id8(folderID)
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && hasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// flushKeywords refuses the transaction if it gives a folder too many
// keywords (CheckKeywords), and writes the counts it changed.
func (t *mailTx) flushKeywords() error {
	for id, k := range t.kcache {
		if err := mailstore.CheckKeywords(k.before, k.now, t.maxKeywords); err != nil {
			return fmt.Errorf("folder %d: %d keywords, at most %d: %w", id, k.now, t.maxKeywords, err)
		}
	}
	for id, k := range t.kcache {
		for key, n := range k.counts {
			var err error
			if n > 0 {
				err = t.keywords.Put(keywordKey(id, key), u64(uint64(n)))
			} else {
				err = t.keywords.Delete(keywordKey(id, key))
			}
			if err != nil {
				return err
			}
		}
		if err := t.keywords.Put(id8(id), u64(uint64(k.now))); err != nil {
			return err
		}
	}
	return nil
}
