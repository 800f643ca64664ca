package boltstore_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mailhost/mailhost/mailstore"
)

// TestBoltPartnerCounts: a partner's lists answer their totals from
// partner_counts through creates and deletes (a domain deleted with its
// mailboxes and aliases included), verify finds no drift, and a file of
// schema 8, without the counts, gets them on Open.
func TestBoltPartnerCounts(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openBolt(t, dir)
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	plan := mailstore.Plan{Name: "small", QuotaMB: 1, RetentionDays: 30, TransferMonthlyMB: 100}
	var partners []mailstore.Partner
	for i := range 2 {
		p, err := s.CreatePartner(ctx, fmt.Sprintf("p%d", i), now)
		if err != nil {
			t.Fatal(err)
		}
		partners = append(partners, p)
		for j := range 3 {
			dom := fmt.Sprintf("d%d.p%d.example", j, i)
			if _, err := s.CreateDomain(ctx, p.ID, mailstore.NewDomain{Name: dom, Plan: plan}, now); err != nil {
				t.Fatal(err)
			}
			for k := range 4 + i {
				if _, err := s.CreateMailbox(ctx, p.ID, dom, fmt.Sprintf("u%d@%s", k, dom), "$argon2id$x", now); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.CreateAlias(ctx, p.ID, dom, "a@"+dom, "u0@"+dom, now); err != nil {
				t.Fatal(err)
			}
		}
	}
	p0 := partners[0].ID
	if err := s.DeleteMailbox(ctx, p0, "u1@d0.p0.example"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteAlias(ctx, p0, "a@d1.p0.example"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteDomain(ctx, p0, "d2.p0.example", true); err != nil {
		t.Fatal(err)
	}
	// p0: 2 domains, 4+4-1 = 7 mailboxes, 1 alias; p1: 3, 15, 3.
	want := map[int64][3]int{p0: {2, 7, 1}, partners[1].ID: {3, 15, 3}}
	check := func(when string) {
		t.Helper()
		for pid, w := range want {
			for _, limit := range []int{0, 1} {
				pg := mailstore.Page{Limit: limit}
				_, nd, err := s.Domains(ctx, pid, pg)
				if err != nil {
					t.Fatal(err)
				}
				mbs, nm, err := s.Mailboxes(ctx, pid, 0, pg)
				if err != nil {
					t.Fatal(err)
				}
				_, na, err := s.Aliases(ctx, pid, 0, pg)
				if err != nil {
					t.Fatal(err)
				}
				if got := [3]int{nd, nm, na}; got != w {
					t.Errorf("%s: partner %d totals (domains, mailboxes, aliases) with limit %d = %v, want %v", when, pid, limit, got, w)
				}
				if limit == 0 && len(mbs) != w[1] {
					t.Errorf("%s: partner %d lists %d mailboxes, want %d", when, pid, len(mbs), w[1])
				}
			}
		}
		drifts, err := s.Verify(ctx)
		if err != nil || len(drifts) > 0 {
			t.Errorf("%s: Verify() = %v, %v; want no drift", when, drifts, err)
		}
	}
	check("after the writes")
	s.Close()

	asSchema(t, dir, 8, "partner_counts")
	upgrade(t, dir)
	s = openBolt(t, dir)
	check("after the upgrade from schema 8")
	s.Close()

	// A count gone wrong is drift.
	rawUpdate(t, dir, "lose a count", func(tx *bolt.Tx) error {
		k := binary.BigEndian.AppendUint64(nil, uint64(p0))
		return tx.Bucket([]byte("partner_counts")).Put(append(k, "partner_mailboxes"...), binary.BigEndian.AppendUint64(nil, 3))
	})
	s = openBolt(t, dir)
	defer s.Close()
	drifts, err := s.Verify(ctx)
	if err != nil || len(drifts) != 1 || drifts[0].Field != "mailbox_count" || drifts[0].Stored != 3 || drifts[0].Recomputed != 7 {
		t.Errorf("Verify() with partner %d's mailbox count at 3 = %+v, %v; want one drift, mailbox_count 3 against 7", p0, drifts, err)
	}
}
