// Package boltstore is the bbolt implementation of mailstore's contract:
// the whole store in one file, worked by one process. mailstore/storetest
// checks it against the contract, as it checks mailstore/pgstore.
package boltstore

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// schemaVersion is the layout version this binary writes. Open upgrades an
// older file, one migration per version, each in its own transaction.
const schemaVersion = 9

// Bucket layout. Every lookup the API and the mail plane make is a key or a
// prefix seek in one of these; nothing scans another partner's data.
//
//	meta              "schema" -> uint64
//	partners          id -> Partner (JSON)
//	partner_names     name -> id
//	keys              id -> APIKey
//	key_lookup        lookup -> id
//	partner_keys      partnerID|keyID -> ""
//	domains           id -> Domain
//	domain_names      name -> id (since schema 8, of the live claim)
//	partner_domains   partnerID|domainID -> ""
//	mailboxes         id -> Mailbox
//	addresses         email or "@domain" -> 'm'|'a' + id (one namespace for
//	                  mailboxes and alias sources, so an address is never
//	                  both; until schema 8, which scopes it by domain)
//	partner_mailboxes partnerID|mailboxID -> ""
//	domain_mailboxes  domainID|mailboxID -> ""
//	aliases           id -> Alias
//	partner_aliases   partnerID|aliasID -> ""
//	domain_aliases    domainID|aliasID -> ""
//	transfer          domainID|"YYYY-MM" -> Transfer
//
// Schema 2 adds the outbound queue and DKIM keys (queue.go):
//
//	queue             id -> Outbound
//	queue_due         nextAttempt (unix nanos, 8)|id -> destination (entries not held)
//	queue_held        domainID|id -> "" (entries held by their domain's cap)
//	dkim              domainID -> []DKIMKey
//
// Schema 3 indexes the queue by domain (the queue_due values, since the
// same release, name each entry's destination domain):
//
//	queue_domain      domainID|id -> "" (every entry; 0 for bounces)
//
// Schema 4 keeps the MTA-STS policies of the queue's destinations
// (sts.go), so that a restart does not forget them:
//
//	sts               domain -> MTA-STS policy (JSON)
//	sts_expiry        expires (unix nanos, 8)|domain -> "" (every policy)
//
// Schema 5 counts each account's folders, so that MaxFolders is checked
// with one lookup (mail.go):
//
//	folder_counts     mailboxID -> number of folders (uint64)
//
// Schema 6 logs each folder's changes (mail_changes.go); folders
// made before it have HighestModSeq 0 and an empty log:
//
//	changes           folderID|modseq(8) -> change record
//
// Schema 8 lets several partners claim one name (claims.go): the
// addresses bucket becomes domain_addresses, scoped by domain, and
//
//	domain_claims     name 0x00 partnerID -> domainID (every claim)
//	domain_addresses  domainID|address -> 'm'|'a' + id
//
// Buckets made lazily, without a schema number (two changes took schema 6
// at once), each described in its file:
//
//	cluster           periodic jobs and settings (cluster.go)
//	domain_verified   the verified domains by reversed name (domain_verify.go)
//
// The mail plane's buckets are described in mail.go.
var (
	bMeta             = []byte("meta")
	bPartners         = []byte("partners")
	bPartnerNames     = []byte("partner_names")
	bKeys             = []byte("keys")
	bKeyLookup        = []byte("key_lookup")
	bPartnerKeys      = []byte("partner_keys")
	bDomains          = []byte("domains")
	bDomainNames      = []byte("domain_names")
	bPartnerDomains   = []byte("partner_domains")
	bMailboxes        = []byte("mailboxes")
	bAddresses        = []byte("addresses")
	bPartnerMailboxes = []byte("partner_mailboxes")
	bDomainMailboxes  = []byte("domain_mailboxes")
	bAliases          = []byte("aliases")
	bPartnerAliases   = []byte("partner_aliases")
	bDomainAliases    = []byte("domain_aliases")
	bTransfer         = []byte("transfer")
)

// schema1Buckets are the control plane's buckets of schema 1.
var schema1Buckets = [][]byte{
	bMeta, bPartners, bPartnerNames, bKeys, bKeyLookup, bPartnerKeys,
	bDomains, bDomainNames, bPartnerDomains, bMailboxes, bAddresses,
	bPartnerMailboxes, bDomainMailboxes, bAliases, bPartnerAliases,
	bDomainAliases, bTransfer,
}

// FileName is the store's file inside the data directory.
const FileName = "mailhost.db"

// Options tune Open. The zero value is ready to use.
type Options struct {
	// LockTimeout is how long Open waits for another process to release the
	// file before answering ErrLocked. Zero means 100ms.
	LockTimeout time.Duration
	// ChangeLogKeep is how many changes each folder's log keeps. Zero
	// means mailstore.ChangeLogKeep; a smaller one is for tests of what a
	// session does when the log no longer reaches back to it.
	ChangeLogKeep int
	// Now is the clock of the events the control plane records (a
	// domain suspended, resumed); nil means time.Now.
	Now func() time.Time
	// MaxKeywords is the most distinct keywords a folder may hold
	// (keywords.go): zero means DefaultMaxKeywords, less than zero no
	// limit.
	MaxKeywords int
	// SpaceReserve is the size of the file Open keeps beside the store
	// so that deletions still commit on a full disk (reserve.go):
	// zero means DefaultSpaceReserve, less than zero none.
	SpaceReserve int64
}

// Store is the bbolt implementation of mailstore.Store.
type Store struct {
	db *bolt.DB
	// watch wakes IMAP sessions after mail-plane commits.
	watch mailstore.Watchers
	// changeLogKeep is Options.ChangeLogKeep with its default.
	changeLogKeep uint64
	// maxKeywords is Options.MaxKeywords with its default.
	maxKeywords int
	// now is Options.Now with its default.
	now func() time.Time
	// readAround is how bulk reads of bodies have the file read ahead.
	readAround readAround
	// reserve is the space kept for deletions (reserve.go).
	reserve spaceReserve
}

var _ mailstore.Store = (*Store)(nil)

// Open opens (creating if needed) the store in dataDir and upgrades its
// schema. It answers ErrLocked when another process holds the file.
func Open(ctx context.Context, dataDir string, opt Options) (*Store, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	timeout := opt.LockTimeout
	if timeout == 0 {
		timeout = 100 * time.Millisecond
	}
	path := filepath.Join(dataDir, FileName)
	db, err := bolt.Open(path, 0o600, boltOptions(timeout, false))
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("open %s: %w", path, mailstore.ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	// Deliveries arrive concurrently; a short batch window lets many share
	// one commit and one fsync.
	db.MaxBatchDelay = 2 * time.Millisecond
	db.MaxBatchSize = 256
	s := &Store{db: db, changeLogKeep: mailstore.ChangeLogKeep, now: opt.Now, maxKeywords: cmp.Or(opt.MaxKeywords, mailstore.DefaultMaxKeywords)}
	if s.now == nil {
		s.now = time.Now
	}
	if opt.ChangeLogKeep > 0 {
		s.changeLogKeep = uint64(opt.ChangeLogKeep)
	}
	if err := s.migrate(); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	s.reserve = spaceReserve{path: path + ".reserve", size: cmp.Or(opt.SpaceReserve, DefaultSpaceReserve)}
	// On a full disk the store opens without it, for reads and
	// deletions that find free pages; a deletion makes it later.
	_ = s.reserve.fill(s.now())
	return s, nil
}

// boltOptions are the options every writer opens the file with.
//
// The freelist is written at each commit (NoFreelistSync false): without
// it bbolt rebuilds the list at every open by walking every page of the
// file, which on a store of millions of messages is minutes of start-up
// and the whole file read into memory before the first request. Written,
// it costs one more page (or a few) per commit. A file last written
// without it gets one at its first writable open, which is then the one
// slow open. The hashmap freelist keeps allocation cheap when a retention
// pass has left many free pages.
func boltOptions(timeout time.Duration, readOnly bool) *bolt.Options {
	return &bolt.Options{
		Timeout:      timeout,
		ReadOnly:     readOnly,
		FreelistType: bolt.FreelistMapType,
	}
}

// Close closes the file.
func (s *Store) Close() error { return s.db.Close() }

// Path is the file's path.
func (s *Store) Path() string { return s.db.Path() }

func (s *Store) migrate() error {
	var have uint64
	err := s.db.View(func(tx *bolt.Tx) error {
		if m := tx.Bucket(bMeta); m != nil {
			if v := m.Get([]byte("schema")); len(v) == 8 {
				have = binary.BigEndian.Uint64(v)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if have > schemaVersion {
		return fmt.Errorf("schema %d: %w", have, mailstore.ErrSchemaTooNew)
	}
	for v := have + 1; v <= schemaVersion; v++ {
		if err := s.db.Update(func(tx *bolt.Tx) error {
			if err := migrations[v-1](tx); err != nil {
				return err
			}
			return tx.Bucket(bMeta).Put([]byte("schema"), u64(v))
		}); err != nil {
			return fmt.Errorf("migrate to schema %d: %w", v, err)
		}
	}
	return nil
}

// migrations[i] upgrades schema i to i+1.
var migrations = []func(*bolt.Tx) error{
	func(tx *bolt.Tx) error { // 0 -> 1: the first layout
		for _, b := range schema1Buckets {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return createMailBuckets(tx)
	},
	func(tx *bolt.Tx) error { // 1 -> 2: outbound queue and DKIM keys
		for _, b := range queueBuckets {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	},
	func(tx *bolt.Tx) error { // 2 -> 3: the queue indexed by domain
		idx, err := tx.CreateBucketIfNotExists(bQueueDomain)
		if err != nil {
			return err
		}
		return tx.Bucket(bQueue).ForEach(func(k, v []byte) error {
			var o mailstore.Outbound
			if err := json.Unmarshal(v, &o); err != nil {
				return fmt.Errorf("queue entry %x: %w", k, err)
			}
			return idx.Put(pair(o.DomainID, o.ID), nil)
		})
	},
	func(tx *bolt.Tx) error { // 3 -> 4: MTA-STS policies
		for _, b := range stsBuckets {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	},
	func(tx *bolt.Tx) error { // 4 -> 5: folders counted per account
		counts, err := tx.CreateBucketIfNotExists(bFolderCounts)
		if err != nil {
			return err
		}
		n := map[uint64]uint64{}
		if err := tx.Bucket(bMailboxFolders).ForEach(func(k, _ []byte) error {
			if len(k) >= 8 {
				n[binary.BigEndian.Uint64(k[:8])]++
			}
			return nil
		}); err != nil {
			return err
		}
		for id, c := range n {
			if err := counts.Put(u64(id), u64(c)); err != nil {
				return err
			}
		}
		return nil
	},
	func(tx *bolt.Tx) error { // 5 -> 6: the change log, empty
		_, err := tx.CreateBucketIfNotExists(bChanges)
		return err
	},
	migrateSubscriptions, // 6 -> 7: subscriptions apart from the folders
	migrateClaims,        // 7 -> 8: claims of a name by several partners
	migratePartnerCounts, // 8 -> 9: each partner's lists counted
}

func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

func id8(v int64) []byte { return u64(uint64(v)) }

func pair(a, b int64) []byte {
	k := make([]byte, 16)
	binary.BigEndian.PutUint64(k, uint64(a))
	binary.BigEndian.PutUint64(k[8:], uint64(b))
	return k
}

func getJSON(b *bolt.Bucket, key []byte, v any) bool {
	raw := b.Get(key)
	if raw == nil {
		return false
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return false
	}
	return true
}

func putJSON(b *bolt.Bucket, key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.Put(key, raw)
}

// nextID hands out ids from the bucket's own sequence.
func nextID(b *bolt.Bucket) (int64, error) {
	n, err := b.NextSequence()
	return int64(n), err
}

// view and update run fn in a transaction after checking ctx.
func (s *Store) view(ctx context.Context, fn func(*bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.db.View(fn)
}

func (s *Store) update(ctx context.Context, fn func(*bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var fnErr error
	err := s.db.Update(func(tx *bolt.Tx) error {
		fnErr = fn(tx)
		return fnErr
	})
	if err != nil && fnErr == nil {
		return commitError(err)
	}
	return err
}

// batch is update for writes that arrive concurrently in volume (mail
// delivery): bbolt groups them into one commit. fn may run more than once,
// so it must only depend on the transaction.
func (s *Store) batch(ctx context.Context, fn func(*bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// fnErr is the error of fn's last run; Batch answers it, or the
	// commit's when every fn of the batch succeeded.
	var fnErr error
	err := s.db.Batch(func(tx *bolt.Tx) error {
		fnErr = fn(tx)
		return fnErr
	})
	if err != nil && fnErr == nil {
		return commitError(err)
	}
	return err
}

// commitError is the error of a commit that failed after its
// transaction's function succeeded: writing the pages, growing the file
// or syncing it. One for lack of space is also ErrNoSpace.
//
// Nothing of the transaction is stored then, and the store stays usable:
// the meta page, written last, still names the previous transaction's
// tree, and bbolt (v1.5) rolls its free-page list back, reloading it from
// the freelist page the last commit wrote, so the pages the failed commit
// took are free again. TestBoltFullDisk checks this on a
// full file system. grow reports its truncate and fsync errors with %s,
// losing the errno, hence the look at the text as well.
func commitError(err error) error {
	msg := err.Error()
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, bolterrors.ErrMaxSizeReached) ||
		strings.Contains(msg, syscall.ENOSPC.Error()) || strings.Contains(msg, syscall.EDQUOT.Error()) {
		return fmt.Errorf("commit: %w: %w", mailstore.ErrNoSpace, err)
	}
	return fmt.Errorf("commit: %w", err)
}
