package boltstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	bolt "go.etcd.io/bbolt"
)

// benchHash stands for an argon2id hash: hashing 110,000 passwords would
// take the load minutes, and the store keeps the hash opaque.
const benchHash = "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g"

// Bench sizes: the measured partner has one domain of benchTarget
// mailboxes; benchOthers mailboxes of other partners sit around them,
// their ids interleaved with the target's as if created over time.
const (
	benchTarget        = 10_000
	benchOthers        = 100_000
	benchOtherPartners = 10
	benchOtherDomains  = 10 // per other partner
)

// BenchmarkStore loads one store (only when benchmarks run) and measures
// the control-plane calls the API and the mail plane make most. See
// BENCHMARKS.md for the command and figures.
func BenchmarkStore(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, b.TempDir(), Options{})
	if err != nil {
		b.Fatalf("Open() = %v", err)
	}
	defer s.Close()
	now := time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)

	start := time.Now()
	target, err := s.CreatePartner(ctx, "target", now)
	if err != nil {
		b.Fatal(err)
	}
	plan := mailstore.Plan{Name: "business", QuotaMB: 2048, RetentionDays: 60, TransferMonthlyMB: 10240}
	if _, err := s.CreateDomain(ctx, target.ID, mailstore.NewDomain{Name: "target.example", Plan: plan}, now); err != nil {
		b.Fatal(err)
	}
	var others []mailstore.Partner
	for p := range benchOtherPartners {
		o, err := s.CreatePartner(ctx, fmt.Sprintf("other%d", p), now)
		if err != nil {
			b.Fatal(err)
		}
		others = append(others, o)
		for d := range benchOtherDomains {
			if _, err := s.CreateDomain(ctx, o.ID, mailstore.NewDomain{Name: fmt.Sprintf("d%d.other%d.example", d, p), Plan: plan}, now); err != nil {
				b.Fatal(err)
			}
		}
	}
	// The load is not what is measured: it makes the mailboxes as
	// CreateMailbox does, a thousand to a transaction. Every measured write
	// below is one committed, synced transaction, as in production.
	perTarget := benchOthers / benchTarget // others created between two target mailboxes
	const perTx = 1000 / (1 + benchOthers/benchTarget)
	for i0 := 0; i0 < benchTarget; i0 += perTx {
		err := s.db.Update(func(tx *bolt.Tx) error {
			for i := i0; i < min(i0+perTx, benchTarget); i++ {
				if _, err := createMailboxTx(tx, target.ID, "target.example", fmt.Sprintf("user%d@target.example", i), benchHash, now); err != nil {
					return err
				}
				for j := range perTarget {
					n := i*perTarget + j
					p := n % benchOtherPartners
					d := (n / benchOtherPartners) % benchOtherDomains
					dom := fmt.Sprintf("d%d.other%d.example", d, p)
					if _, err := createMailboxTx(tx, others[p].ID, dom, fmt.Sprintf("user%d@%s", n, dom), benchHash, now); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			b.Fatalf("load: %v", err)
		}
	}
	d, err := s.Domain(ctx, target.ID, "target.example")
	if err != nil || d.MailboxCount != benchTarget {
		b.Fatalf("Domain(target.example) = %+v, %v, want %d mailboxes", d, err, benchTarget)
	}
	b.Logf("loaded %d + %d mailboxes in %v", benchTarget, benchOthers, time.Since(start).Round(time.Millisecond))

	b.Run("Mailboxes/all_10000", func(b *testing.B) {
		for b.Loop() {
			ms, n, err := s.Mailboxes(ctx, target.ID, d.ID, mailstore.Page{})
			if err != nil || n != benchTarget || len(ms) != benchTarget {
				b.Fatalf("Mailboxes() = %d, %d, %v, want %d", len(ms), n, err, benchTarget)
			}
		}
	})
	b.Run("Mailboxes/limit_100_offset_5000", func(b *testing.B) {
		for b.Loop() {
			ms, n, err := s.Mailboxes(ctx, target.ID, d.ID, mailstore.Page{Limit: 100, Offset: 5000})
			if err != nil || n != benchTarget || len(ms) != 100 {
				b.Fatalf("Mailboxes() = %d, %d, %v, want 100 of %d", len(ms), n, err, benchTarget)
			}
		}
	})
	b.Run("Mailboxes/limit_50_first", func(b *testing.B) {
		for b.Loop() {
			ms, n, err := s.Mailboxes(ctx, target.ID, d.ID, mailstore.Page{Limit: 50})
			if err != nil || n != benchTarget || len(ms) != 50 {
				b.Fatalf("Mailboxes() = %d, %d, %v, want 50 of %d", len(ms), n, err, benchTarget)
			}
		}
	})
	b.Run("Mailbox", func(b *testing.B) {
		i := 0
		for b.Loop() {
			m, err := s.Mailbox(ctx, target.ID, fmt.Sprintf("user%d@target.example", i%benchTarget))
			if err != nil || m.QuotaMB != 2048 {
				b.Fatalf("Mailbox() = %+v, %v", m, err)
			}
			i += 7919 // a prime: spread the lookups over the domain
		}
	})
	b.Run("MailboxByEmail", func(b *testing.B) {
		i := 0
		for b.Loop() {
			if _, _, err := s.MailboxByEmail(ctx, fmt.Sprintf("user%d@target.example", i%benchTarget)); err != nil {
				b.Fatalf("MailboxByEmail() = %v", err)
			}
			i += 7919
		}
	})
	i := 0 // sources stay new across runs (-count)
	b.Run("CreateAlias", func(b *testing.B) {
		for b.Loop() {
			src := fmt.Sprintf("alias%d@target.example", i)
			if _, err := s.CreateAlias(ctx, target.ID, "target.example", src, "user1@target.example", now); err != nil {
				b.Fatalf("CreateAlias(%s) = %v", src, err)
			}
			i++
		}
	})
}
