package service

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// srsKeyFile keeps the SRS secret made on first start, so that bounces to
// addresses rewritten before a restart still verify.
const srsKeyFile = "srs.key"

// srsSettingName is the SRS secret's name among a shared store's
// settings (mailstore.Cluster); store copy moves srs.key there and back.
const srsSettingName = "srs_secret"

// clusterSRSSecret answers the configured secret, or the one every node
// of a shared store uses, made by the first node that needs it: a bounce
// to an address one node rewrote must verify on any other.
func clusterSRSSecret(ctx context.Context, configured string, st mailstore.Cluster) ([]byte, error) {
	if configured != "" {
		return []byte(configured), nil
	}
	s, err := st.Setting(ctx, srsSettingName, func() (string, error) {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return "", err
		}
		return hex.EncodeToString(b), nil
	})
	if err != nil {
		return nil, fmt.Errorf("SRS secret: %w", err)
	}
	if len(s) < 32 {
		return nil, fmt.Errorf("SRS secret in the store: too short (%d characters, want at least 32)", len(s))
	}
	return []byte(s), nil
}

// srsSecret answers the configured secret, or the one kept in the data
// directory, making it on first use. The file is written and synced before
// any address is rewritten with it.
func srsSecret(configured, dataDir string) ([]byte, error) {
	if configured != "" {
		return []byte(configured), nil
	}
	path := filepath.Join(dataDir, srsKeyFile)
	raw, err := os.ReadFile(path)
	if err == nil {
		s := strings.TrimSpace(string(raw))
		if len(s) < 32 {
			return nil, fmt.Errorf("SRS secret %s: too short (%d characters, want at least 32)", path, len(s))
		}
		return []byte(s), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("SRS secret: %w", err)
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("SRS secret: %w", err)
	}
	s := hex.EncodeToString(b)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("SRS secret: %w", err)
	}
	_, werr := f.WriteString(s + "\n")
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return nil, fmt.Errorf("SRS secret %s: %w", path, err)
	}
	return []byte(s), nil
}

// newResolver answers the resolver for MX lookups and the SPF, DKIM and
// DMARC checks: the system's, or one that asks only the DNS server at addr
// (a local resolver, or a fake one in a test set-up).
func newResolver(addr string) (*net.Resolver, error) {
	if addr == "" {
		return net.DefaultResolver, nil
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("dns %q: want host:port: %w", addr, err)
	}
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			d := net.Dialer{Timeout: 5 * time.Second}
			return d.DialContext(ctx, network, addr)
		},
	}, nil
}
