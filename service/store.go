package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mailhost/mailhost/config"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
	"github.com/mailhost/mailhost/mailstore/pgstore"
)

// store is what the wiring needs of a backend: the Store every part
// uses, and what the nodes of a shared store agree on.
type store interface {
	mailstore.Store
	mailstore.Members
	mailstore.Cluster
	mailstore.Webhooks
	mailstore.Audit
	mailstore.SieveScripts
}

// openStore opens the store the configuration names: the bbolt file in
// the data directory, or the PostgreSQL database of the store URL. A
// bbolt file held by another process is ErrLocked after lockTimeout.
func openStore(ctx context.Context, cfg *config.Config, lockTimeout time.Duration) (store, error) {
	if cfg.Store == "" {
		st, err := boltstore.Open(ctx, cfg.DataDir, boltstore.Options{LockTimeout: lockTimeout, MaxKeywords: int(cfg.IMAPMaxKeywords)})
		if err != nil {
			return nil, err
		}
		return st, nil
	}
	// The data directory still holds the node's own files (the
	// self-signed certificate, the control socket).
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	st, err := pgstore.Open(ctx, cfg.Store, pgstore.Options{Node: NodeName(cfg), MaxKeywords: int(cfg.IMAPMaxKeywords)})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// NodeName is the node's name in a shared store: the configured one, or
// the host name with the data directory, which two nodes on one machine
// do not share and a restart keeps (so that a node starting again
// releases the queue leases it held before).
func NodeName(cfg *config.Config) string {
	if cfg.Node != "" {
		return cfg.Node
	}
	host, _ := os.Hostname()
	dir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		dir = cfg.DataDir
	}
	return host + ":" + dir
}

// storeKind names the backend in logs, without the URL (it may hold a
// password).
func storeKind(cfg *config.Config) string {
	if cfg.Store == "" {
		return "bbolt"
	}
	return "postgres"
}

// lockedHint makes ErrLocked say what to do.
func lockedHint(err error, dataDir string) error {
	if errors.Is(err, mailstore.ErrLocked) {
		return fmt.Errorf("%w: is another mailhost serving %s?", err, dataDir)
	}
	return err
}
