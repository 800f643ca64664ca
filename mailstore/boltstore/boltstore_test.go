package boltstore_test

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
	"github.com/mailhost/mailhost/mailstore/storetest"
)

func openBolt(t *testing.T, dir string) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(context.Background(), dir, boltstore.Options{})
	if err != nil {
		t.Fatalf("Open(%s) = %v, want nil", dir, err)
	}
	return s
}

func TestBoltConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) mailstore.Store {
		return openBolt(t, t.TempDir())
	})
}

// TestBoltRestart closes the store and opens the same directory again:
// everything committed is there, and ids go on from where they were.
func TestBoltRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	now := time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)
	s := openBolt(t, dir)
	p, err := s.CreatePartner(ctx, "acme", now)
	if err != nil {
		t.Fatalf("CreatePartner() = %v", err)
	}
	k, err := s.AddAPIKey(ctx, p.ID, mailstore.APIKey{Lookup: "0123456789ab", Prefix: "mhk_0123456789ab", SecretHash: []byte("h"), CreatedAt: now})
	if err != nil {
		t.Fatalf("AddAPIKey() = %v", err)
	}
	plan := mailstore.Plan{Name: "business", QuotaMB: 2048, RetentionDays: 60, TransferMonthlyMB: 10240}
	d, err := s.CreateDomain(ctx, p.ID, mailstore.NewDomain{Name: "example.com", Plan: plan, MaxMailboxes: 10, MaxAliases: 10}, now)
	if err != nil {
		t.Fatalf("CreateDomain() = %v", err)
	}
	m, err := s.CreateMailbox(ctx, p.ID, "example.com", "john@example.com", "hash", now)
	if err != nil {
		t.Fatalf("CreateMailbox() = %v", err)
	}
	if _, err := s.SetQuota(ctx, p.ID, m.Email, 77); err != nil {
		t.Fatalf("SetQuota() = %v", err)
	}
	a, err := s.CreateAlias(ctx, p.ID, "example.com", "@example.com", "john@example.com", now)
	if err != nil {
		t.Fatalf("CreateAlias() = %v", err)
	}
	if _, err := s.SetSuspended(ctx, p.ID, "example.com", true); err != nil {
		t.Fatalf("SetSuspended() = %v", err)
	}
	if _, err := s.RevokeAPIKey(ctx, k.ID, now); err != nil {
		t.Fatalf("RevokeAPIKey() = %v", err)
	}
	maxDomains := int64(3)
	if _, err := s.SetPartnerLimits(ctx, p.ID, mailstore.PartnerLimits{MaxDomains: &maxDomains}); err != nil {
		t.Fatalf("SetPartnerLimits() = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}

	s = openBolt(t, dir)
	defer s.Close()
	if got, err := s.PartnerByName(ctx, "acme"); err != nil || got.ID != p.ID || got.MaxDomains != 3 {
		t.Errorf("PartnerByName(acme) after restart = %+v, %v, want id %d, max domains 3", got, err, p.ID)
	}
	if got, err := s.APIKeyByLookup(ctx, k.Lookup); err != nil || got.ID != k.ID || !got.Revoked || string(got.SecretHash) != "h" {
		t.Errorf("APIKeyByLookup() after restart = %+v, %v, want key %d, revoked", got, err, k.ID)
	}
	gd, err := s.Domain(ctx, p.ID, "example.com")
	if err != nil || gd.ID != d.ID || !gd.Suspended || gd.MailboxCount != 1 || gd.AliasCount != 1 || gd.QuotaMB != 2048 || gd.Plan != "business" {
		t.Errorf("Domain() after restart = %+v, %v, want suspended business domain with 1 mailbox, 1 alias", gd, err)
	}
	if got, err := s.Mailbox(ctx, p.ID, m.Email); err != nil || got.ID != m.ID || got.QuotaMB != 77 || got.PasswordHash != "hash" {
		t.Errorf("Mailbox() after restart = %+v, %v, want id %d, quota 77", got, err, m.ID)
	}
	if got, err := s.AliasBySource(ctx, "@example.com"); err != nil || got.ID != a.ID || !got.CreatedAt.Equal(now) {
		t.Errorf("AliasBySource() after restart = %+v, %v, want id %d", got, err, a.ID)
	}
	m2, err := s.CreateMailbox(ctx, p.ID, "example.com", "jane@example.com", "hash", now)
	if err != nil || m2.ID <= m.ID {
		t.Errorf("CreateMailbox() after restart = %+v, %v, want an id after %d", m2, err, m.ID)
	}
	if _, err := s.CreatePartner(ctx, "acme", now); !errors.Is(err, mailstore.ErrPartnerExists) {
		t.Errorf("CreatePartner(acme) after restart = %v, want ErrPartnerExists", err)
	}
}

// TestBoltLocked: a second Open of a file in use answers ErrLocked, and
// quickly.
func TestBoltLocked(t *testing.T) {
	dir := t.TempDir()
	s := openBolt(t, dir)
	defer s.Close()
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		max     time.Duration
	}{
		{"default timeout", 0, 2 * time.Second},
		{"short timeout", 10 * time.Millisecond, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			s2, err := boltstore.Open(context.Background(), dir, boltstore.Options{LockTimeout: tc.timeout})
			took := time.Since(start)
			if err == nil {
				s2.Close()
			}
			if !errors.Is(err, mailstore.ErrLocked) {
				t.Fatalf("Open(held, %v) = %v, want ErrLocked", tc.timeout, err)
			}
			if took > tc.max {
				t.Errorf("Open(held, %v) took %v, want under %v", tc.timeout, took, tc.max)
			}
		})
	}
	// Once released, the file opens.
	if err := s.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	s3 := openBolt(t, dir)
	s3.Close()
}

// TestBoltSchema: the file records its schema version, and a file written
// by a newer binary is refused rather than misread.
func TestBoltSchema(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, boltstore.FileName)
	s := openBolt(t, dir)
	if s.Path() != path {
		t.Errorf("Path() = %q, want %q", s.Path(), path)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	have := readSchema(t, path)
	if have < 1 {
		t.Fatalf("schema version in a new file = %d, want >= 1", have)
	}
	// Reopening a current file leaves its version alone.
	openBolt(t, dir).Close()
	if got := readSchema(t, path); got != have {
		t.Errorf("schema version after reopen = %d, want %d", got, have)
	}

	writeSchema(t, path, have+1)
	if s, err := boltstore.Open(context.Background(), dir, boltstore.Options{}); !errors.Is(err, mailstore.ErrSchemaTooNew) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("Open(schema %d) = %v, want ErrSchemaTooNew", have+1, err)
	}
	// The refusal changed nothing and released the file.
	if got := readSchema(t, path); got != have+1 {
		t.Errorf("schema version after refused open = %d, want %d", got, have+1)
	}
	writeSchema(t, path, have)
	openBolt(t, dir).Close()
}

func readSchema(t *testing.T, path string) uint64 {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatalf("bolt.Open(%s) = %v", path, err)
	}
	defer db.Close()
	var v uint64
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("meta"))
		if b == nil {
			return errors.New("no meta bucket")
		}
		raw := b.Get([]byte("schema"))
		if len(raw) != 8 {
			return errors.New("no schema version")
		}
		v = binary.BigEndian.Uint64(raw)
		return nil
	})
	if err != nil {
		t.Fatalf("read schema of %s: %v", path, err)
	}
	return v
}

func writeSchema(t *testing.T, path string, v uint64) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatalf("bolt.Open(%s) = %v", path, err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("meta"))
		if err != nil {
			return err
		}
		raw := make([]byte, 8)
		binary.BigEndian.PutUint64(raw, v)
		return b.Put([]byte("schema"), raw)
	})
	if err != nil {
		t.Fatalf("write schema %d to %s: %v", v, path, err)
	}
}

// TestBoltUpgrade: a file of an older schema (here 0: a bbolt file with
// nothing in it) is upgraded on Open to the current one.
func TestBoltUpgrade(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, boltstore.FileName)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatalf("bolt.Open(%s) = %v", path, err)
	}
	db.Close()
	s := openBolt(t, dir)
	if _, err := s.CreatePartner(context.Background(), "acme", time.Now()); err != nil {
		t.Errorf("CreatePartner() on an upgraded file = %v, want nil", err)
	}
	s.Close()
	current := func() uint64 {
		d := t.TempDir()
		openBolt(t, d).Close()
		return readSchema(t, filepath.Join(d, boltstore.FileName))
	}()
	if got := readSchema(t, path); got != current {
		t.Errorf("schema version after upgrade = %d, want %d", got, current)
	}
}

// TestBoltOpenErrors: Open reports what it cannot open rather than
// panicking or overwriting it.
func TestBoltOpenErrors(t *testing.T) {
	notDB := t.TempDir()
	if err := os.WriteFile(filepath.Join(notDB, boltstore.FileName), []byte(strings.Repeat("not a database\n", 1000)), 0o600); err != nil {
		t.Fatal(err)
	}
	fileAsDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(fileAsDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, dir string }{
		{"not a database", notDB},
		{"data directory is a file", fileAsDir},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := boltstore.Open(context.Background(), tc.dir, boltstore.Options{})
			if err == nil {
				s.Close()
				t.Fatalf("Open(%s) = nil, want an error", tc.dir)
			}
			if errors.Is(err, mailstore.ErrLocked) || errors.Is(err, mailstore.ErrSchemaTooNew) {
				t.Errorf("Open(%s) = %v, want neither ErrLocked nor ErrSchemaTooNew", tc.dir, err)
			}
		})
	}
	// A new, nested data directory is made.
	nested := filepath.Join(t.TempDir(), "a", "b")
	openBolt(t, nested).Close()
	if _, err := os.Stat(filepath.Join(nested, boltstore.FileName)); err != nil {
		t.Errorf("Stat(store file in new nested directory) = %v, want nil", err)
	}
}
