package boltstore

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// A partner's lists (its domains, mailboxes and aliases, across its
// domains) answer their total with each page. Walking the partner's index
// keys for it costs about 0.2 µs a key: 22 ms a page for a partner of
// 100,000 mailboxes, whatever the page. partner_counts keeps each
// partner's count per index, written in the transaction that writes the
// index key (partnerIndexPut, partnerIndexDelete), so that a page stops
// at its last row. A domain's lists have their counters in the domain's
// record already (MailboxCount, AliasCount).
var bPartnerCounts = []byte("partner_counts")

// countKey is partnerID | the index's bucket name.
func countKey(partnerID int64, idx []byte) []byte {
	return append(id8(partnerID), idx...)
}

// partnerCount is the partner's count of keys in idx (bPartnerDomains,
// bPartnerMailboxes or bPartnerAliases).
func partnerCount(tx *bolt.Tx, partnerID int64, idx []byte) int {
	if v := tx.Bucket(bPartnerCounts).Get(countKey(partnerID, idx)); len(v) == 8 {
		return int(binary.BigEndian.Uint64(v))
	}
	return 0
}

func addPartnerCount(tx *bolt.Tx, partnerID int64, idx []byte, delta int64) error {
	b := tx.Bucket(bPartnerCounts)
	k := countKey(partnerID, idx)
	n := int64(0)
	if v := b.Get(k); len(v) == 8 {
		n = int64(binary.BigEndian.Uint64(v))
	}
	n += delta
	if n <= 0 {
		return b.Delete(k)
	}
	return b.Put(k, u64(uint64(n)))
}

// partnerIndexPut writes the partner's index key for child, counting it
// if it is new.
func partnerIndexPut(tx *bolt.Tx, idx []byte, partnerID, child int64, value []byte) error {
	b := tx.Bucket(idx)
	k := pair(partnerID, child)
	if b.Get(k) == nil {
		if err := addPartnerCount(tx, partnerID, idx, 1); err != nil {
			return err
		}
	}
	return b.Put(k, value)
}

// partnerIndexDelete deletes the partner's index key for child, and its
// count if it was there.
func partnerIndexDelete(tx *bolt.Tx, idx []byte, partnerID, child int64) error {
	b := tx.Bucket(idx)
	k := pair(partnerID, child)
	if b.Get(k) == nil {
		return nil
	}
	if err := addPartnerCount(tx, partnerID, idx, -1); err != nil {
		return err
	}
	return b.Delete(k)
}

// partnerIndexes are the indexes partner_counts counts.
var partnerIndexes = [][]byte{bPartnerDomains, bPartnerMailboxes, bPartnerAliases}

// countPartnerIndexes walks the partner indexes and answers each
// partner's counts, by countKey: what migratePartnerCounts writes and
// verify compares.
func countPartnerIndexes(tx *bolt.Tx) map[string]uint64 {
	n := map[string]uint64{}
	for _, idx := range partnerIndexes {
		tx.Bucket(idx).ForEach(func(k, _ []byte) error {
			if len(k) == 16 {
				n[string(countKey(int64(binary.BigEndian.Uint64(k)), idx))]++
			}
			return nil
		})
	}
	return n
}

// migratePartnerCounts (schema 8 -> 9) counts the partner indexes a file
// holds: one walk of their keys, at about 0.2 µs a key.
func migratePartnerCounts(tx *bolt.Tx) error {
	if tx.Bucket(bPartnerCounts) != nil {
		if err := tx.DeleteBucket(bPartnerCounts); err != nil {
			return err
		}
	}
	b, err := tx.CreateBucket(bPartnerCounts)
	if err != nil {
		return err
	}
	for k, c := range countPartnerIndexes(tx) {
		if err := b.Put([]byte(k), u64(c)); err != nil {
			return fmt.Errorf("partner counts: %w", err)
		}
	}
	return nil
}
