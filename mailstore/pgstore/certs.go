package pgstore

// mailstore.Certs in the certs table: one row per name, each statement
// on its own (a put is an upsert, so two nodes storing the same name
// leave the last one's blob, as autocert expects of its cache).

import (
	"context"
	"fmt"

	"github.com/mailhost/mailhost/mailstore"
)

var _ mailstore.Certs = (*Store)(nil)

// Cert implements mailstore.Certs.
func (s *Store) Cert(ctx context.Context, name string) ([]byte, error) {
	if name == "" {
		return nil, fmt.Errorf("certificate: empty name: %w", mailstore.ErrInvalidArgument)
	}
	var data []byte
	err := s.look(ctx, func(q querier) error {
		return q.QueryRow(ctx, `SELECT data FROM certs WHERE name = $1`, name).Scan(&data)
	})
	if noRows(err) {
		return nil, fmt.Errorf("certificate %s: %w", name, mailstore.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("certificate %s: %w", name, err)
	}
	return data, nil
}

// PutCert implements mailstore.Certs.
func (s *Store) PutCert(ctx context.Context, name string, data []byte) error {
	if name == "" {
		return fmt.Errorf("put certificate: empty name: %w", mailstore.ErrInvalidArgument)
	}
	if data == nil {
		data = []byte{} // the column is NOT NULL; an empty blob is a blob
	}
	_, err := s.pool.Exec(ctx, `
		INSERT INTO certs (name, data) VALUES ($1, $2)
		ON CONFLICT (name) DO UPDATE SET data = EXCLUDED.data, updated_at = now()`, name, data)
	if err != nil {
		return fmt.Errorf("put certificate %s: %w", name, err)
	}
	return nil
}

// DeleteCert implements mailstore.Certs.
func (s *Store) DeleteCert(ctx context.Context, name string) error {
	if name == "" {
		return fmt.Errorf("delete certificate: empty name: %w", mailstore.ErrInvalidArgument)
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM certs WHERE name = $1`, name); err != nil {
		return fmt.Errorf("delete certificate %s: %w", name, err)
	}
	return nil
}
