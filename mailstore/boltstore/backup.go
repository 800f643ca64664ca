package boltstore

import (
	"context"
	"fmt"
	"io"

	bolt "go.etcd.io/bbolt"
)

// Backup writes a consistent copy of the whole file to w: the database as
// of one read transaction, which writers do not wait for (mail keeps
// being delivered while it runs). The copy is a bbolt file that Open
// takes as it is. It answers the bytes written.
//
// The read transaction holds the pages it sees: what writers free while it
// runs is reused only after it ends, so the file may grow by what is
// written during the backup.
func (s *Store) Backup(ctx context.Context, w io.Writer) (int64, error) {
	var n int64
	err := s.view(ctx, func(tx *bolt.Tx) error {
		var err error
		n, err = tx.WriteTo(ctxWriter{ctx, w})
		return err
	})
	if err != nil {
		return n, fmt.Errorf("backup: %w", err)
	}
	return n, nil
}

// ctxWriter stops a long copy once ctx ends.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}
