package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mailhost/mailhost/internal/pgtest"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/pgstore"
)

// The control plane's limits and address namespace under racing requests
// from two nodes: two store handles on one schema, each with its own
// connection pool, as two mailhost processes have.

var (
	raceNow  = time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)
	racePlan = mailstore.Plan{Name: "starter", QuotaMB: 1024, RetentionDays: 30, TransferMonthlyMB: 5120}
)

// twoNodes opens two stores on one fresh schema.
func twoNodes(t *testing.T) [2]*pgstore.Store {
	t.Helper()
	url := pgtest.URL(t)
	var nodes [2]*pgstore.Store
	for i := range nodes {
		st, err := pgstore.Open(context.Background(), url, pgstore.Options{Node: fmt.Sprintf("node%d", i)})
		if err != nil {
			t.Fatalf("Open node %d: %v", i, err)
		}
		t.Cleanup(func() { st.Close() })
		nodes[i] = st
	}
	return nodes
}

// race runs f(i, node) for i in [0, n) at once, alternating the nodes, and
// answers the errors by index.
func race(nodes [2]*pgstore.Store, n int, f func(i int, st *pgstore.Store) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = f(i, nodes[i%2])
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// tally counts nil errors and the errors matching want; any other error
// fails the test.
func tally(t *testing.T, what string, errs []error, want ...error) (ok int, refused int) {
	t.Helper()
	for i, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, want[0]) || (len(want) > 1 && errors.Is(err, want[1])):
			refused++
		default:
			t.Errorf("%s %d: %v, want nil or %v", what, i, err, want)
		}
	}
	return ok, refused
}

func count(t *testing.T, st *pgstore.Store, query string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := st.Pool().QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func TestControlRaceMailboxLimit(t *testing.T) {
	nodes := twoNodes(t)
	ctx := context.Background()
	p, err := nodes[0].CreatePartner(ctx, "a", raceNow)
	if err != nil {
		t.Fatal(err)
	}
	d, err := nodes[0].CreateDomain(ctx, p.ID, mailstore.NewDomain{Name: "example.com", Plan: racePlan, MaxMailboxes: 5}, raceNow)
	if err != nil {
		t.Fatal(err)
	}
	const n = 40
	errs := race(nodes, n, func(i int, st *pgstore.Store) error {
		_, err := st.CreateMailbox(ctx, p.ID, "example.com", fmt.Sprintf("u%d@example.com", i), "hash", raceNow)
		return err
	})
	ok, refused := tally(t, "CreateMailbox", errs, mailstore.ErrMailboxLimit)
	if ok != 5 || refused != n-5 {
		t.Errorf("%d racing CreateMailbox on two nodes: %d ok, %d ErrMailboxLimit; want 5, %d", n, ok, refused, n-5)
	}
	for i, st := range nodes {
		got, err := st.Domain(ctx, p.ID, "example.com")
		if err != nil || got.MailboxCount != 5 {
			t.Errorf("node %d: Domain().MailboxCount = %d, %v; want 5", i, got.MailboxCount, err)
		}
		if _, total, err := st.Mailboxes(ctx, p.ID, d.ID, mailstore.Page{}); err != nil || total != 5 {
			t.Errorf("node %d: Mailboxes() total = %d, %v; want 5", i, total, err)
		}
	}
	if rows := count(t, nodes[1], `SELECT count(*) FROM mailboxes WHERE domain_id = $1`, d.ID); rows != 5 {
		t.Errorf("mailbox rows = %d, want 5", rows)
	}
	if rows := count(t, nodes[1], `SELECT count(*) FROM addresses WHERE domain_id = $1 AND kind = 'm'`, d.ID); rows != 5 {
		t.Errorf("address rows = %d, want 5", rows)
	}
	if rows := count(t, nodes[1], `SELECT count(*) FROM folders f JOIN mailboxes m ON m.id = f.mailbox_id WHERE m.domain_id = $1`, d.ID); rows != int64(5*len(mailstore.DefaultFolders)) {
		t.Errorf("folder rows = %d, want %d", rows, 5*len(mailstore.DefaultFolders))
	}
}

// One address created on both nodes at once, as a mailbox or an alias
// source: exactly one create wins, and the namespace holds one entry.
func TestControlRaceSameAddress(t *testing.T) {
	nodes := twoNodes(t)
	ctx := context.Background()
	p, err := nodes[0].CreatePartner(ctx, "a", raceNow)
	if err != nil {
		t.Fatal(err)
	}
	d, err := nodes[0].CreateDomain(ctx, p.ID, mailstore.NewDomain{Name: "example.com", Plan: racePlan}, raceNow)
	if err != nil {
		t.Fatal(err)
	}
	const rounds = 20
	for r := range rounds {
		addr := fmt.Sprintf("same%d@example.com", r)
		// Rounds alternate: two mailboxes, then a mailbox and an alias.
		errs := race(nodes, 2, func(i int, st *pgstore.Store) error {
			if r%2 == 1 && i == 1 {
				_, err := st.CreateAlias(ctx, p.ID, "example.com", addr, "x@elsewhere.example", raceNow)
				return err
			}
			_, err := st.CreateMailbox(ctx, p.ID, "example.com", addr, "hash", raceNow)
			return err
		})
		if ok, refused := tally(t, "create "+addr, errs, mailstore.ErrEmailExists, mailstore.ErrAliasExists); ok != 1 || refused != 1 {
			t.Errorf("round %d: creates of %s on two nodes = %v, want one nil and one exists", r, addr, errs)
		}
		if rows := count(t, nodes[0], `SELECT count(*) FROM addresses WHERE address = $1`, addr); rows != 1 {
			t.Errorf("round %d: addresses rows for %s = %d, want 1", r, addr, rows)
		}
	}
	got, err := nodes[1].Domain(ctx, p.ID, "example.com")
	if err != nil {
		t.Fatal(err)
	}
	boxes := count(t, nodes[1], `SELECT count(*) FROM mailboxes WHERE domain_id = $1`, d.ID)
	aliases := count(t, nodes[1], `SELECT count(*) FROM aliases WHERE domain_id = $1`, d.ID)
	if boxes+aliases != rounds || got.MailboxCount != boxes || got.AliasCount != aliases {
		t.Errorf("after %d rounds: %d mailboxes, %d aliases, counters %d, %d; want %d in all, counters equal", rounds, boxes, aliases, got.MailboxCount, got.AliasCount, rounds)
	}
}

func TestControlRaceMaxDomains(t *testing.T) {
	nodes := twoNodes(t)
	ctx := context.Background()
	a, err := nodes[0].CreatePartner(ctx, "a", raceNow)
	if err != nil {
		t.Fatal(err)
	}
	b, err := nodes[0].CreatePartner(ctx, "b", raceNow)
	if err != nil {
		t.Fatal(err)
	}
	three := int64(3)
	if _, err := nodes[1].SetPartnerLimits(ctx, a.ID, mailstore.PartnerLimits{MaxDomains: &three}); err != nil {
		t.Fatal(err)
	}
	const n = 24
	errs := race(nodes, n, func(i int, st *pgstore.Store) error {
		_, err := st.CreateDomain(ctx, a.ID, mailstore.NewDomain{Name: fmt.Sprintf("d%d.example", i), Plan: racePlan}, raceNow)
		return err
	})
	ok, refused := tally(t, "CreateDomain", errs, mailstore.ErrDomainLimit)
	if ok != 3 || refused != n-3 {
		t.Errorf("%d racing CreateDomain under MaxDomains 3: %d ok, %d ErrDomainLimit; want 3, %d", n, ok, refused, n-3)
	}
	for i, st := range nodes {
		if _, total, err := st.Domains(ctx, a.ID, mailstore.Page{}); err != nil || total != 3 {
			t.Errorf("node %d: Domains(a) total = %d, %v; want 3", i, total, err)
		}
	}
	if rows := count(t, nodes[0], `SELECT count(*) FROM domains WHERE partner_id = $1`, a.ID); rows != 3 {
		t.Errorf("domain rows of a = %d, want 3", rows)
	}
	if c := count(t, nodes[0], `SELECT domain_count FROM partners WHERE id = $1`, a.ID); c != 3 {
		t.Errorf("partners.domain_count of a = %d, want 3", c)
	}

	// One name raced by two partners (b has no limit): one owner.
	errs = race(nodes, 2, func(i int, st *pgstore.Store) error {
		_, err := st.CreateDomain(ctx, []int64{a.ID, b.ID}[i], mailstore.NewDomain{Name: "contested.example", Plan: racePlan}, raceNow)
		return err
	})
	// a is at its limit, so b's create wins whatever the order; a is told
	// ErrDomainLimit, or ErrDomainExists if b's committed first.
	if ok, _ := tally(t, "CreateDomain(contested)", errs, mailstore.ErrDomainExists, mailstore.ErrDomainLimit); ok != 1 || errs[1] != nil {
		t.Errorf("CreateDomain(contested.example) by a (at its limit) and b = %v, want b's to succeed", errs)
	}
	if c := count(t, nodes[0], `SELECT domain_count FROM partners WHERE id = $1`, b.ID); c != 1 {
		t.Errorf("partners.domain_count of b = %d, want 1", c)
	}

	// Racing deletes and creates keep domain_count equal to the rows.
	errs = race(nodes, 8, func(i int, st *pgstore.Store) error {
		if i%2 == 0 {
			err := st.DeleteDomain(ctx, b.ID, "contested.example", false)
			if errors.Is(err, mailstore.ErrDomainNotFound) {
				return nil // the other node's delete came first
			}
			return err
		}
		_, err := st.CreateDomain(ctx, b.ID, mailstore.NewDomain{Name: fmt.Sprintf("b%d.example", i), Plan: racePlan}, raceNow)
		return err
	})
	tally(t, "delete or create", errs, mailstore.ErrDomainLimit)
	rows := count(t, nodes[0], `SELECT count(*) FROM domains WHERE partner_id = $1`, b.ID)
	if c := count(t, nodes[0], `SELECT domain_count FROM partners WHERE id = $1`, b.ID); c != rows || rows != 4 {
		t.Errorf("b after racing deletes and creates: domain_count %d, rows %d; want 4, 4", c, rows)
	}
}

// A forced DeleteDomain racing creates in the domain on the other node
// leaves nothing of it behind: every create either committed before the
// delete (and was deleted with it) or found the domain gone.
func TestControlRaceDeleteDomain(t *testing.T) {
	nodes := twoNodes(t)
	ctx := context.Background()
	p, err := nodes[0].CreatePartner(ctx, "a", raceNow)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 5 {
		name := fmt.Sprintf("r%d.example", round)
		d, err := nodes[0].CreateDomain(ctx, p.ID, mailstore.NewDomain{Name: name, Plan: racePlan}, raceNow)
		if err != nil {
			t.Fatal(err)
		}
		errs := race(nodes, 16, func(i int, st *pgstore.Store) error {
			switch {
			case i == 8:
				return st.DeleteDomain(ctx, p.ID, name, true)
			case i%3 == 0:
				_, err := st.CreateAlias(ctx, p.ID, name, fmt.Sprintf("a%d@%s", i, name), "x@elsewhere.example", raceNow)
				return err
			default:
				_, err := st.CreateMailbox(ctx, p.ID, name, fmt.Sprintf("u%d@%s", i, name), "hash", raceNow)
				return err
			}
		})
		if errs[8] != nil {
			t.Fatalf("round %d: DeleteDomain = %v", round, errs[8])
		}
		tally(t, "create", errs, mailstore.ErrDomainNotFound)
		for _, q := range []string{
			`SELECT count(*) FROM mailboxes WHERE domain_id = $1`,
			`SELECT count(*) FROM aliases WHERE domain_id = $1`,
			`SELECT count(*) FROM addresses WHERE domain_id = $1`,
			`SELECT count(*) FROM domains WHERE id = $1`,
		} {
			if n := count(t, nodes[1], q, d.ID); n != 0 {
				t.Errorf("round %d: %s = %d, want 0", round, q, n)
			}
		}
	}
	if n := count(t, nodes[1], `SELECT count(*) FROM folders`); n != 0 {
		t.Errorf("folders left = %d, want 0", n)
	}
	if c := count(t, nodes[1], `SELECT domain_count FROM partners WHERE id = $1`, p.ID); c != 0 {
		t.Errorf("domain_count = %d, want 0", c)
	}
}
