package boltstore_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mailhost/mailhost/mailstore"
)

// TestBoltUpgradeClaims: a file of schema 7, with one store-wide
// addresses namespace and no claims index, is upgraded on Open to
// schema 8: each domain its partner's claim, each address in its
// domain's namespace, found by the mail plane and by its partner.
func TestBoltUpgradeClaims(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openBolt(t, dir)
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	p, err := s.CreatePartner(ctx, "p", now)
	if err != nil {
		t.Fatal(err)
	}
	plan := mailstore.Plan{Name: "small", QuotaMB: 1, RetentionDays: 30, TransferMonthlyMB: 100}
	d, err := s.CreateDomain(ctx, p.ID, mailstore.NewDomain{Name: "a.example", Plan: plan}, now)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := s.CreateMailbox(ctx, p.ID, "a.example", "u@a.example", "$argon2id$x", now)
	if err != nil {
		t.Fatal(err)
	}
	al, err := s.CreateAlias(ctx, p.ID, "a.example", "@a.example", "u@a.example", now)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	// Back to schema 7: the addresses keyed by address alone.
	rawUpdate(t, dir, "make the addresses store-wide", func(tx *bolt.Tx) error {
		old, err := tx.CreateBucket([]byte("addresses"))
		if err != nil {
			return err
		}
		if err := tx.Bucket([]byte("domain_addresses")).ForEach(func(k, v []byte) error {
			return old.Put(bytes.Clone(k[8:]), bytes.Clone(v))
		}); err != nil {
			return err
		}
		return nil
	})
	asSchema(t, dir, 7, "domain_addresses", "domain_claims")
	upgrade(t, dir)

	s = openBolt(t, dir)
	defer s.Close()
	if got, gd, err := s.MailboxByEmail(ctx, "u@a.example"); err != nil || got.ID != mb.ID || gd.ID != d.ID {
		t.Errorf("MailboxByEmail() after upgrade = %d in %d, %v; want %d in %d", got.ID, gd.ID, err, mb.ID, d.ID)
	}
	if got, err := s.Mailbox(ctx, p.ID, "u@a.example"); err != nil || got.ID != mb.ID {
		t.Errorf("Mailbox(p) after upgrade = %d, %v; want %d", got.ID, err, mb.ID)
	}
	if got, err := s.AliasBySource(ctx, "@a.example"); err != nil || got.ID != al.ID {
		t.Errorf("AliasBySource() after upgrade = %d, %v; want %d", got.ID, err, al.ID)
	}
	if got, err := s.Domain(ctx, p.ID, "a.example"); err != nil || got.ID != d.ID {
		t.Errorf("Domain(p) after upgrade = %d, %v; want %d", got.ID, err, d.ID)
	}
	if _, err := s.CreateDomain(ctx, p.ID, mailstore.NewDomain{Name: "a.example", Plan: plan}, now); !errors.Is(err, mailstore.ErrDomainExists) {
		t.Errorf("CreateDomain(own name) after upgrade = %v, want ErrDomainExists", err)
	}
	if _, err := s.CreateMailbox(ctx, p.ID, "a.example", "u@a.example", "$argon2id$x", now); !errors.Is(err, mailstore.ErrEmailExists) {
		t.Errorf("CreateMailbox(taken) after upgrade = %v, want ErrEmailExists", err)
	}
	if err := s.DeleteMailbox(ctx, p.ID, "u@a.example"); err != nil {
		t.Errorf("DeleteMailbox() after upgrade = %v", err)
	}
}
