package mailstore_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mailhost/mailhost/mailstore"
)

// TestBoltUpgradeSubscriptions: a file of schema 6, where a folder's
// record carried its subscription, is upgraded on Open to subscriptions
// of their own: the folders marked subscribed are, and only they.
func TestBoltUpgradeSubscriptions(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, mailstore.FileName)
	s := openBolt(t, dir)
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	p, err := s.CreatePartner(ctx, "p", now)
	if err != nil {
		t.Fatal(err)
	}
	plan := mailstore.Plan{Name: "small", QuotaMB: 1, RetentionDays: 30, TransferMonthlyMB: 100}
	if _, err := s.CreateDomain(ctx, p.ID, mailstore.NewDomain{Name: "a.example", Plan: plan}, now); err != nil {
		t.Fatal(err)
	}
	mb, err := s.CreateMailbox(ctx, p.ID, "a.example", "u@a.example", "$argon2id$x", now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateFolder(ctx, mb.ID, "Work"); err != nil {
		t.Fatal(err)
	}
	s.Close()

	// Back to schema 6: no subscriptions bucket, a mark in each record.
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket([]byte("subscriptions")); err != nil {
			return err
		}
		folders := tx.Bucket([]byte("folders"))
		c := folders.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			var f map[string]any
			if err := json.Unmarshal(v, &f); err != nil {
				return err
			}
			f["subscribed"] = f["name"] == "INBOX" || f["name"] == "Work"
			raw, err := json.Marshal(f)
			if err != nil {
				return err
			}
			if err := folders.Put(k, raw); err != nil {
				return err
			}
		}
		return nil
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	writeSchema(t, path, 6)

	s = openBolt(t, dir)
	got, err := s.Subscriptions(ctx, mb.ID)
	s.Close()
	if err != nil {
		t.Fatalf("Subscriptions() after upgrade = %v", err)
	}
	if want := []string{"INBOX", "Work"}; !slices.Equal(got, want) {
		t.Errorf("Subscriptions() after upgrade = %q, want %q", got, want)
	}
	if v := readSchema(t, path); v != 7 {
		t.Errorf("schema after upgrade = %d, want 7", v)
	}
}
