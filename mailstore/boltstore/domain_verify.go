package boltstore

// Domain verification on bbolt: the Verified, VerifiedAt and VerifyToken
// fields are JSON fields of the Domain record (old records read as
// unverified, without a token), and one index of the verified domains:
//
//	domain_verified   ReversedName(name) -> domainID (8): the verified
//	                  domains only
//
// The bucket is made lazily (CreateBucketIfNotExists in the writing
// transactions; readers take its absence as empty) rather than by a schema
// migration, as cluster.go's is: another change takes schema 6 at the
// same time. No domain was verified before the bucket existed, so a file
// without it has nothing to index.
//
// Invariant, kept by SetVerified, SetVerifiedSole and DeleteDomain in
// their transactions: a domain has a key in domain_verified exactly while
// it is verified, and at most one claim of a name is verified.

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	bolt "go.etcd.io/bbolt"
)

var bDomainVerified = []byte("domain_verified")

// SetVerified implements Control.
func (s *Store) SetVerified(ctx context.Context, partnerID int64, name string, verified bool, now time.Time) (mailstore.Domain, error) {
	if verified {
		return s.changeDomain(ctx, partnerID, name, func(tx *bolt.Tx, d *mailstore.Domain) error {
			return s.winClaim(tx, d, false, now)
		})
	}
	return s.changeDomain(ctx, partnerID, name, func(tx *bolt.Tx, d *mailstore.Domain) error {
		d.Verified = false
		if err := unindexVerified(tx, *d); err != nil {
			return err
		}
		// Stored before relive reads it (changeDomain stores it again).
		if err := putDomain(tx, *d); err != nil {
			return err
		}
		return relive(tx, d.Name)
	})
}

// SetVerifiedSole implements Control.
func (s *Store) SetVerifiedSole(ctx context.Context, partnerID int64, name string, now time.Time) (mailstore.Domain, error) {
	return s.changeDomain(ctx, partnerID, name, func(tx *bolt.Tx, d *mailstore.Domain) error {
		return s.winClaim(tx, d, true, now)
	})
}

// EnsureVerifyToken implements Control.
func (s *Store) EnsureVerifyToken(ctx context.Context, partnerID int64, name, token string) (mailstore.Domain, error) {
	if token == "" {
		return mailstore.Domain{}, fmt.Errorf("domain %s: empty verify token: %w", name, mailstore.ErrInvalidArgument)
	}
	return s.changeDomain(ctx, partnerID, name, func(_ *bolt.Tx, d *mailstore.Domain) error {
		if d.VerifyToken == "" {
			d.VerifyToken = token
		}
		return nil
	})
}

// VerifiedDomains implements Control.
func (s *Store) VerifiedDomains(ctx context.Context, after string, limit int) ([]mailstore.Domain, error) {
	out := []mailstore.Domain{}
	err := s.view(ctx, func(tx *bolt.Tx) error {
		idx := tx.Bucket(bDomainVerified)
		if idx == nil {
			return nil
		}
		domains := tx.Bucket(bDomains)
		c := idx.Cursor()
		k, v := c.First()
		if after != "" {
			k, v = c.Seek([]byte(after))
			if k != nil && string(k) == after {
				k, v = c.Next()
			}
		}
		for ; k != nil && (limit <= 0 || len(out) < limit); k, v = c.Next() {
			var d mailstore.Domain
			if getJSON(domains, v, &d) {
				out = append(out, d)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("verified domains after %q: %w", after, err)
	}
	return out, nil
}

// relatedVerified reports whether another partner than partnerID has a
// verified domain that is a parent or a subdomain of name: the parents
// are one key each, the subdomains one prefix of the index.
func relatedVerified(tx *bolt.Tx, partnerID int64, name string) bool {
	idx := tx.Bucket(bDomainVerified)
	if idx == nil {
		return false
	}
	domains := tx.Bucket(bDomains)
	others := func(id []byte) bool {
		var d mailstore.Domain
		return getJSON(domains, id, &d) && d.PartnerID != partnerID
	}
	for _, p := range mailstore.ParentNames(name) {
		if id := idx.Get([]byte(mailstore.ReversedName(p))); id != nil && others(id) {
			return true
		}
	}
	// The partner's own verified subdomains are passed over one by one;
	// a partner has few of them under one name.
	prefix := []byte(mailstore.ReversedName(name) + ".")
	c := idx.Cursor()
	for k, id := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, id = c.Next() {
		if others(id) {
			return true
		}
	}
	return false
}

// unindexVerified drops a domain being deleted or unverified from the
// index; the key is its own only if it holds its id.
func unindexVerified(tx *bolt.Tx, d mailstore.Domain) error {
	idx := tx.Bucket(bDomainVerified)
	if idx == nil {
		return nil
	}
	key := []byte(mailstore.ReversedName(d.Name))
	if !bytes.Equal(idx.Get(key), id8(d.ID)) {
		return nil
	}
	return idx.Delete(key)
}
