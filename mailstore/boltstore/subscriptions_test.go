package boltstore_test

import (
	"context"
	"encoding/json"
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
	rawUpdate(t, dir, "mark the folders", func(tx *bolt.Tx) error {
		// Written after the walk: a Put moves a cursor.
		folders := tx.Bucket([]byte("folders"))
		marked := map[string][]byte{}
		if err := folders.ForEach(func(k, v []byte) error {
			var f map[string]any
			if err := json.Unmarshal(v, &f); err != nil {
				return err
			}
			f["subscribed"] = f["name"] == "INBOX" || f["name"] == "Work"
			raw, err := json.Marshal(f)
			marked[string(k)] = raw
			return err
		}); err != nil {
			return err
		}
		for k, raw := range marked {
			if err := folders.Put([]byte(k), raw); err != nil {
				return err
			}
		}
		return nil
	})
	asSchema(t, dir, 6, "subscriptions")
	upgrade(t, dir)

	s = openBolt(t, dir)
	got, err := s.Subscriptions(ctx, mb.ID)
	s.Close()
	if err != nil {
		t.Fatalf("Subscriptions() after upgrade = %v", err)
	}
	if want := []string{"INBOX", "Work"}; !slices.Equal(got, want) {
		t.Errorf("Subscriptions() after upgrade = %q, want %q", got, want)
	}
}
