package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mailhost/mailhost/adminapi"
	"github.com/mailhost/mailhost/autoconfig"
	"github.com/mailhost/mailhost/autoreply"
	"github.com/mailhost/mailhost/config"
	"github.com/mailhost/mailhost/credential"
	"github.com/mailhost/mailhost/delivery"
	"github.com/mailhost/mailhost/imapd"
	"github.com/mailhost/mailhost/mailauth"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
	"github.com/mailhost/mailhost/mailstore/pgstore"
	"github.com/mailhost/mailhost/metrics"
	"github.com/mailhost/mailhost/outbound"
	"github.com/mailhost/mailhost/smtpd"
	"github.com/mailhost/mailhost/spam"
	"github.com/mailhost/mailhost/webhook"
)

// store is what the wiring needs of a backend: the Store every part
// uses, what the nodes of a shared store agree on, and the roles both
// stores have beside Store (webhooks, the audit log, Sieve scripts,
// auto-replies, the ACME certificates). Each consumer is handed this
// store as its own narrow interface, so a store lacking a role is a
// compile error here rather than a feature turned off at run time.
type store interface {
	mailstore.Store
	mailstore.Members
	mailstore.Cluster
	mailstore.Webhooks
	mailstore.Audit
	mailstore.SieveScripts
	mailstore.AutoReplies
	mailstore.Certs
}

// Both implementations of the contract are whole stores for the wiring.
var (
	_ store = (*boltstore.Store)(nil)
	_ store = (*pgstore.Store)(nil)
)

// Each consumer's interface is one the wiring's store satisfies: with
// the two lines above, the compiler checks that both stores give every
// part what it asks for.
var (
	_ adminapi.Store      = store(nil)
	_ autoconfig.Domains  = store(nil)
	_ autoreply.Store     = store(nil)
	_ credential.Accounts = store(nil)
	_ delivery.SieveStore = store(nil)
	_ imapd.Store         = store(nil)
	_ mailauth.KeyStore   = store(nil)
	_ metrics.Store       = store(nil)
	_ outbound.Store      = store(nil)
	_ smtpd.Store         = store(nil)
	_ spam.Bodies         = store(nil)
	_ webhook.Store       = store(nil)
	_ certStore           = store(nil)
	_ operatorStore       = store(nil)
	_ retentionStore      = store(nil)
	_ verifyStore         = store(nil)
)

// openStore opens the store the configuration names: the bbolt file in
// the data directory, or the PostgreSQL database of the store URL. A
// bbolt file held by another process is ErrLocked after lockTimeout.
func openStore(ctx context.Context, cfg *config.Config, lockTimeout time.Duration) (store, error) {
	if cfg.Store == "" {
		st, err := openBolt(ctx, cfg.DataDir, lockTimeout, int(cfg.IMAPMaxKeywords))
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

// openBolt opens the bbolt store in dataDir: for the server, and for the
// command line when no server holds the file. A file held by another
// process is ErrLocked after lockTimeout; maxKeywords 0 is the store's
// default.
func openBolt(ctx context.Context, dataDir string, lockTimeout time.Duration, maxKeywords int) (*boltstore.Store, error) {
	return boltstore.Open(ctx, dataDir, boltstore.Options{LockTimeout: lockTimeout, MaxKeywords: maxKeywords})
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
