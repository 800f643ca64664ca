package boltstore

// Certs of the bbolt store.
//
// Bucket, made lazily as cluster.go's is (no schema number, so no
// clash with other changes; a file without it reads as empty, and older
// binaries ignore it):
//
//	certs             name -> blob

import (
	"bytes"
	"context"
	"fmt"

	"github.com/mailhost/mailhost/mailstore"
	bolt "go.etcd.io/bbolt"
)

var bCerts = []byte("certs")

var _ mailstore.Certs = (*Store)(nil)

// Cert implements Certs.
func (s *Store) Cert(ctx context.Context, name string) ([]byte, error) {
	if name == "" {
		return nil, fmt.Errorf("certificate: empty name: %w", mailstore.ErrInvalidArgument)
	}
	var v []byte
	err := s.view(ctx, func(tx *bolt.Tx) error {
		if b := tx.Bucket(bCerts); b != nil {
			v = bytes.Clone(b.Get([]byte(name)))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("certificate %s: %w", name, err)
	}
	if v == nil {
		return nil, fmt.Errorf("certificate %s: %w", name, mailstore.ErrNotFound)
	}
	return v, nil
}

// PutCert implements Certs.
func (s *Store) PutCert(ctx context.Context, name string, data []byte) error {
	if name == "" {
		return fmt.Errorf("put certificate: empty name: %w", mailstore.ErrInvalidArgument)
	}
	err := s.update(ctx, func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bCerts)
		if err != nil {
			return err
		}
		// bbolt keeps the slice until the commit: the caller's may change.
		return b.Put([]byte(name), bytes.Clone(data))
	})
	if err != nil {
		return fmt.Errorf("put certificate %s: %w", name, err)
	}
	return nil
}

// DeleteCert implements Certs.
func (s *Store) DeleteCert(ctx context.Context, name string) error {
	if name == "" {
		return fmt.Errorf("delete certificate: empty name: %w", mailstore.ErrInvalidArgument)
	}
	err := s.update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bCerts)
		if b == nil {
			return nil
		}
		return b.Delete([]byte(name))
	})
	if err != nil {
		return fmt.Errorf("delete certificate %s: %w", name, err)
	}
	return nil
}
