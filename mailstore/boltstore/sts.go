package boltstore

// The MTA-STS policies of the outbound queue's destinations (schema 4).
//
// Buckets:
//
//	sts         domain -> stsRecord (JSON)
//	sts_expiry  expires (unix nanos, 8, big-endian)|domain -> "": every
//	            policy, in the order it expires
//
// Invariant, kept by PutSTSPolicy within one transaction: a policy has
// exactly one key in sts_expiry, under its Expires. The pruning checks it
// anyway, and deletes a record only when the key it found is that
// record's: a key left by a record that could not be read costs a delete,
// never a valid policy.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	bolt "go.etcd.io/bbolt"
)

var (
	bSTS       = []byte("sts")
	bSTSExpiry = []byte("sts_expiry")
)

// stsBuckets are the buckets schema 4 adds.
var stsBuckets = [][]byte{bSTS, bSTSExpiry}

// stsRecord is the stored form of an STSPolicy; the domain is its key.
type stsRecord struct {
	ID      string    `json:"id"`
	Mode    string    `json:"mode"`
	MX      []string  `json:"mx"`
	MaxAge  int64     `json:"max_age"` // seconds, as in the policy
	Expires time.Time `json:"expires"`
}

// stsDomain folds a domain name as the policies are keyed.
func stsDomain(domain string) string {
	return strings.ToLower(strings.TrimSuffix(domain, "."))
}

// stsExpiryKey orders the policies by when they expire.
func stsExpiryKey(expires time.Time, domain string) []byte {
	k := make([]byte, 8, 8+len(domain))
	binary.BigEndian.PutUint64(k, nanoKey(expires))
	return append(k, domain...)
}

// STSPolicy implements Queue.
func (s *Store) STSPolicy(ctx context.Context, domain string, now time.Time) (mailstore.STSPolicy, error) {
	domain = stsDomain(domain)
	var p mailstore.STSPolicy
	err := s.view(ctx, func(tx *bolt.Tx) error {
		raw := tx.Bucket(bSTS).Get([]byte(domain))
		if raw == nil {
			return mailstore.ErrSTSPolicyNotFound
		}
		var r stsRecord
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("record: %w", err)
		}
		if !now.Before(r.Expires) {
			return mailstore.ErrSTSPolicyNotFound
		}
		p = mailstore.STSPolicy{
			Domain: domain, ID: r.ID, Mode: r.Mode, MX: r.MX,
			MaxAge:  time.Duration(r.MaxAge) * time.Second,
			Expires: r.Expires,
		}
		return nil
	})
	if err != nil {
		return mailstore.STSPolicy{}, fmt.Errorf("MTA-STS policy of %s: %w", domain, err)
	}
	return p, nil
}

// PutSTSPolicy implements Queue.
func (s *Store) PutSTSPolicy(ctx context.Context, p mailstore.STSPolicy, now time.Time) error {
	domain := stsDomain(p.Domain)
	if domain == "" || p.MaxAge < 0 {
		return fmt.Errorf("put MTA-STS policy of %q, max_age %v: %w", p.Domain, p.MaxAge, mailstore.ErrInvalidArgument)
	}
	r := stsRecord{
		ID: p.ID, Mode: p.Mode, MX: p.MX,
		MaxAge:  int64(p.MaxAge / time.Second),
		Expires: mailstore.UTC(p.Expires),
	}
	err := s.update(ctx, func(tx *bolt.Tx) error {
		records, expiry := tx.Bucket(bSTS), tx.Bucket(bSTSExpiry)
		var old stsRecord
		if getJSON(records, []byte(domain), &old) {
			if err := expiry.Delete(stsExpiryKey(old.Expires, domain)); err != nil {
				return err
			}
		}
		if err := putJSON(records, []byte(domain), r); err != nil {
			return err
		}
		if err := expiry.Put(stsExpiryKey(r.Expires, domain), nil); err != nil {
			return err
		}
		return pruneSTS(records, expiry, now)
	})
	if err != nil {
		return fmt.Errorf("put MTA-STS policy of %s: %w", domain, err)
	}
	return nil
}

// pruneSTS deletes up to STSPruneLimit policies expired at now, from the
// front of sts_expiry. The keys are gathered before any is deleted: a
// bbolt cursor that deletes as it goes skips keys.
func pruneSTS(records, expiry *bolt.Bucket, now time.Time) error {
	var keys [][]byte
	c := expiry.Cursor()
	for k, _ := c.First(); k != nil && len(keys) < mailstore.STSPruneLimit; k, _ = c.Next() {
		if len(k) < 8 || binary.BigEndian.Uint64(k) > nanoKey(now) {
			break
		}
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		domain := k[8:]
		var r stsRecord
		if getJSON(records, domain, &r) && bytes.Equal(stsExpiryKey(r.Expires, string(domain)), k) {
			if err := records.Delete(domain); err != nil {
				return err
			}
		}
		if err := expiry.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
