package pgstore_test

// Several nodes on one database: two store handles opened on the same
// schema (pgtest.URL), as two mailhost processes would be. The queue
// entries are inserted with SQL, so that these tests depend on the queue
// methods and the schema only.

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

var clusterNow = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// nodesAB opens nodes "a" and "b" on one fresh schema.
func nodesAB(t *testing.T) (a, b *pgstore.Store) {
	t.Helper()
	return nodesABWith(t, pgstore.Options{})
}

// nodesABWith is nodesAB with opt (but for the node names).
func nodesABWith(t *testing.T, opt pgstore.Options) (a, b *pgstore.Store) {
	t.Helper()
	url := pgtest.URL(t)
	for _, p := range []struct {
		s    **pgstore.Store
		name string
	}{{&a, "a"}, {&b, "b"}} {
		opt.Node = p.name
		s, err := pgstore.Open(context.Background(), url, opt)
		if err != nil {
			t.Fatalf("Open(node %s) = %v", p.name, err)
		}
		t.Cleanup(func() { s.Close() })
		*p.s = s
	}
	return a, b
}

// queueEntry inserts a queue entry (with its body) for one recipient at
// dest, due at `at`, and answers its id.
func queueEntry(t *testing.T, s *pgstore.Store, domainID int64, dest string, size int, at time.Time, held bool) int64 {
	t.Helper()
	ctx := context.Background()
	var blob, id int64
	if err := s.Pool().QueryRow(ctx, `INSERT INTO blobs (refs, body) VALUES (1, $1) RETURNING id`, make([]byte, size)).Scan(&blob); err != nil {
		t.Fatalf("insert body: %v", err)
	}
	rcpts := []mailstore.OutboundRecipient{{Address: "x@" + dest, State: mailstore.RecipientPending}}
	if err := s.Pool().QueryRow(ctx, `
		INSERT INTO queue (kind, domain_id, from_addr, destination, recipients, blob_id, size, queued_at, next_attempt, held)
		VALUES ('forward', $1, 'from@example', $2, $3, $4, $5, $6, $6, $7) RETURNING id`,
		domainID, dest, rcpts, blob, size, at, held).Scan(&id); err != nil {
		t.Fatalf("insert queue entry: %v", err)
	}
	return id
}

// leasedBy answers the node named in an entry's lease ("" for none).
func leasedBy(t *testing.T, s *pgstore.Store, id int64) string {
	t.Helper()
	var node *string
	if err := s.Pool().QueryRow(context.Background(), `SELECT leased_by FROM queue WHERE id = $1`, id).Scan(&node); err != nil {
		t.Fatalf("leased_by of %d: %v", id, err)
	}
	if node == nil {
		return ""
	}
	return *node
}

// TestClusterClaimOnce: workers of two nodes claiming at once, some with
// ClaimOptions, each entry is claimed exactly once, in the name of the
// node that claimed it.
func TestClusterClaimOnce(t *testing.T) {
	a, b := nodesAB(t)
	const n = 400
	want := map[int64]bool{}
	for i := range n {
		id := queueEntry(t, a, 0, fmt.Sprintf("d%d.example", i%7), 10, clusterNow.Add(-time.Duration(i%50)*time.Second), false)
		want[id] = true
	}
	var mu sync.Mutex
	// by is the node that claimed each entry, claims how often; guarded
	// by mu.
	by := map[int64]string{}
	claims := map[int64]int{}
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for w := range 16 {
		s := a
		if w%2 == 1 {
			s = b
		}
		opt := mailstore.ClaimOptions{}
		if w%4 >= 2 {
			opt.PerDestination = 2
		}
		wg.Go(func() {
			for {
				got, err := s.ClaimOutbound(context.Background(), clusterNow, time.Hour, 3, opt)
				if err != nil {
					errs <- err
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, o := range got {
					claims[o.ID]++
					by[o.ID] = s.Node()
					if !o.Leased {
						errs <- fmt.Errorf("claimed entry %d not marked leased", o.ID)
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("worker: %v", err)
	}
	nodes := map[string]int{}
	for id := range want {
		if claims[id] != 1 {
			t.Errorf("entry %d claimed %d times, want once", id, claims[id])
			continue
		}
		if got := leasedBy(t, a, id); got != by[id] {
			t.Errorf("entry %d leased_by = %q, want %q (the node that claimed it)", id, got, by[id])
		}
		nodes[by[id]]++
	}
	if len(claims) != n {
		t.Errorf("claimed %d entries, want %d", len(claims), n)
	}
	t.Logf("claims per node: %v", nodes)
}

// TestClusterReleaseLeases: a node's ReleaseLeases ends its own leases
// and leaves the other node's.
func TestClusterReleaseLeases(t *testing.T) {
	a, b := nodesAB(t)
	ctx := context.Background()
	for i := range 6 {
		queueEntry(t, a, 0, "r.example", 10, clusterNow.Add(time.Duration(i-10)*time.Second), false)
	}
	gotA, err := a.ClaimOutbound(ctx, clusterNow, time.Hour, 3, mailstore.ClaimOptions{})
	if err != nil || len(gotA) != 3 {
		t.Fatalf("a.ClaimOutbound() = %d entries, %v; want 3", len(gotA), err)
	}
	gotB, err := b.ClaimOutbound(ctx, clusterNow, time.Hour, 10, mailstore.ClaimOptions{})
	if err != nil || len(gotB) != 3 {
		t.Fatalf("b.ClaimOutbound() = %d entries, %v; want 3", len(gotB), err)
	}
	n, err := a.ReleaseLeases(ctx, clusterNow)
	if err != nil || n != 3 {
		t.Fatalf("a.ReleaseLeases() = %d, %v; want 3", n, err)
	}
	es, _, err := b.OutboundEntries(ctx, mailstore.Page{})
	if err != nil {
		t.Fatal(err)
	}
	mine := map[int64]bool{}
	for _, o := range gotA {
		mine[o.ID] = true
	}
	for _, e := range es {
		if mine[e.ID] {
			if e.Leased || !e.NextAttempt.Equal(clusterNow) || leasedBy(t, a, e.ID) != "" {
				t.Errorf("a's entry %d after a.ReleaseLeases = %+v, want due now, not leased", e.ID, e)
			}
			continue
		}
		if !e.Leased || !e.NextAttempt.Equal(clusterNow.Add(time.Hour)) || leasedBy(t, a, e.ID) != "b" {
			t.Errorf("b's entry %d after a.ReleaseLeases = %+v, want still leased by b for an hour", e.ID, e)
		}
	}
	// What a released, a or b may claim again; b's leases still hold.
	got, err := b.ClaimOutbound(ctx, clusterNow, time.Hour, 10, mailstore.ClaimOptions{})
	if err != nil || len(got) != 3 {
		t.Errorf("b.ClaimOutbound() after a's release = %d entries, %v; want a's 3", len(got), err)
	}
	if n, err := a.ReleaseLeases(ctx, clusterNow); err != nil || n != 0 {
		t.Errorf("a.ReleaseLeases() with no lease of its own = %d, %v; want 0", n, err)
	}
	if n, err := b.ReleaseLeases(ctx, clusterNow); err != nil || n != 6 {
		t.Errorf("b.ReleaseLeases() = %d, %v; want 6", n, err)
	}
}

// TestClusterDeadNode: the entries a node claimed and never recorded
// (it died) are claimable by another node once the lease runs out, and
// not before.
func TestClusterDeadNode(t *testing.T) {
	a, b := nodesAB(t)
	ctx := context.Background()
	id := queueEntry(t, a, 0, "r.example", 10, clusterNow, false)
	lease := 5 * time.Minute
	if got, err := a.ClaimOutbound(ctx, clusterNow, lease, 10, mailstore.ClaimOptions{}); err != nil || len(got) != 1 {
		t.Fatalf("a.ClaimOutbound() = %d entries, %v; want 1", len(got), err)
	}
	a.Close() // a dies: it never records nor releases
	if n, err := b.ReleaseLeases(ctx, clusterNow); err != nil || n != 0 {
		t.Errorf("b.ReleaseLeases() = %d, %v; want 0 (a's lease is not b's)", n, err)
	}
	if got, err := b.ClaimOutbound(ctx, clusterNow.Add(lease-time.Second), time.Minute, 10, mailstore.ClaimOptions{}); err != nil || len(got) != 0 {
		t.Errorf("b.ClaimOutbound(before a's lease ends) = %d entries, %v; want none", len(got), err)
	}
	got, err := b.ClaimOutbound(ctx, clusterNow.Add(lease), time.Minute, 10, mailstore.ClaimOptions{})
	if err != nil || len(got) != 1 || got[0].ID != id {
		t.Fatalf("b.ClaimOutbound(at a's lease end) = %+v, %v; want entry %d", got, err, id)
	}
	if node := leasedBy(t, b, id); node != "b" {
		t.Errorf("leased_by after b's claim = %q, want b", node)
	}
	o, err := b.RecordAttempt(ctx, id, mailstore.Attempt{Now: clusterNow.Add(lease), Delivered: []string{"x@r.example"}})
	if err != nil || len(o.Pending()) != 0 {
		t.Errorf("b.RecordAttempt() = %+v, %v; want the entry done", o, err)
	}
}

// TestClusterReleaseHeldCap: releases racing on two nodes keep a domain
// under its transfer cap: the entries that go are those one release
// alone would let go, counted once.
func TestClusterReleaseHeldCap(t *testing.T) {
	a, b := nodesAB(t)
	ctx := context.Background()
	var pid, did int64
	if err := a.Pool().QueryRow(ctx, `INSERT INTO partners (name, created_at) VALUES ('p', $1) RETURNING id`, clusterNow).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if err := a.Pool().QueryRow(ctx, `
		INSERT INTO domains (partner_id, name, plan, max_mailboxes, max_aliases, quota_mb, retention_days, transfer_monthly_mb, created_at)
		VALUES ($1, 'capped.example', 'p', 10, 10, 100, 0, 1, $2) RETURNING id`, pid, clusterNow).Scan(&did); err != nil {
		t.Fatal(err)
	}
	const size = 100 * 1024
	for i := range 30 {
		queueEntry(t, a, did, fmt.Sprintf("r%d.example", i), size, clusterNow, true)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0 // guarded by mu
	for w := range 8 {
		s := a
		if w%2 == 1 {
			s = b
		}
		wg.Go(func() {
			n, err := s.ReleaseHeld(ctx, clusterNow)
			if err != nil {
				t.Errorf("ReleaseHeld() = %v", err)
			}
			mu.Lock()
			total += n
			mu.Unlock()
		})
	}
	wg.Wait()
	// 1 MB is 10.24 entries: ten are under the cap, the eleventh crosses it.
	if total != 11 {
		t.Errorf("racing ReleaseHeld() released %d entries, want 11", total)
	}
	var out int64
	if err := a.Pool().QueryRow(ctx, `SELECT sum(out_bytes) FROM transfer WHERE domain_id = $1 AND month = $2`,
		did, mailstore.Month(clusterNow)).Scan(&out); err != nil {
		t.Fatal(err)
	}
	if out != 11*size {
		t.Errorf("out bytes = %d, want %d", out, 11*size)
	}
	var held int
	if err := a.Pool().QueryRow(ctx, `SELECT count(*) FROM queue WHERE held`).Scan(&held); err != nil {
		t.Fatal(err)
	}
	if held != 19 {
		t.Errorf("%d entries still held, want 19", held)
	}
}

// TestClusterRunOnce: two nodes racing RunOnce for one slot, one call of
// one node wins; two racing to make a setting both answer one value.
func TestClusterRunOnce(t *testing.T) {
	a, b := nodesAB(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var winners []string // guarded by mu
	values := map[string]bool{}
	for i := range 20 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			ok, err := s.RunOnce(ctx, "retention", clusterNow)
			if err != nil {
				t.Errorf("%s.RunOnce() = %v", s.Node(), err)
			}
			v, err := s.Setting(ctx, "srs_secret", func() (string, error) { return fmt.Sprint(s.Node(), i), nil })
			if err != nil {
				t.Errorf("%s.Setting() = %v", s.Node(), err)
			}
			mu.Lock()
			if ok {
				winners = append(winners, s.Node())
			}
			values[v] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(winners) != 1 {
		t.Fatalf("RunOnce() won by %v, want exactly one caller", winners)
	}
	var node string
	if err := a.Pool().QueryRow(ctx, `SELECT last_node FROM jobs WHERE name = 'retention'`).Scan(&node); err != nil || node != winners[0] {
		t.Errorf("jobs.last_node = %q, %v; want %q", node, err, winners[0])
	}
	if len(values) != 1 {
		t.Errorf("Setting() answered %v, want one value", values)
	}
	for _, s := range []*pgstore.Store{a, b} {
		if ok, err := s.RunOnce(ctx, "retention", clusterNow); err != nil || ok {
			t.Errorf("%s.RunOnce(taken slot) = %v, %v; want false", s.Node(), ok, err)
		}
	}
	if ok, err := b.RunOnce(ctx, "retention", clusterNow.Add(24*time.Hour)); err != nil || !ok {
		t.Errorf("b.RunOnce(next slot) = %v, %v; want true", ok, err)
	}
}

// TestClusterReleaseHeldAgainstDeliver: one node releases held entries
// while the other delivers submissions of the same domain: both decide
// on the figures under the domain row's lock, so the domain ends at most
// one message past its cap, and what it counted is what went.
func TestClusterReleaseHeldAgainstDeliver(t *testing.T) {
	a, b := nodesAB(t)
	ctx := context.Background()
	p, err := a.CreatePartner(ctx, "p", clusterNow)
	if err != nil {
		t.Fatal(err)
	}
	d, err := a.CreateDomain(ctx, p.ID, mailstore.NewDomain{Name: "capped.example",
		Plan: mailstore.Plan{Name: "tiny", QuotaMB: 100, TransferMonthlyMB: 1}, MaxMailboxes: 10, MaxAliases: 10}, clusterNow)
	if err != nil {
		t.Fatal(err)
	}
	const size = 100 * 1024
	for i := range 20 {
		queueEntry(t, a, d.ID, fmt.Sprintf("r%d.example", i), size, clusterNow, true)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	released, delivered, refused := 0, 0, 0 // guarded by mu
	for i := range 24 {
		if i%3 == 0 {
			wg.Go(func() {
				n, err := a.ReleaseHeld(ctx, clusterNow)
				if err != nil {
					t.Errorf("ReleaseHeld() = %v", err)
				}
				mu.Lock()
				released += n
				mu.Unlock()
			})
			continue
		}
		wg.Go(func() {
			_, err := b.Deliver(ctx, mailstore.Delivery{Body: make([]byte, size), ReceivedAt: clusterNow, SenderDomainID: d.ID,
				Relay: []mailstore.Relay{{Kind: mailstore.KindSubmission, DomainID: d.ID, From: "x@capped.example", To: []string{"y@far.example"}}}})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				delivered++
			case errors.Is(err, mailstore.ErrTransferCapReached):
				refused++
			default:
				t.Errorf("Deliver() = %v", err)
			}
		})
	}
	wg.Wait()
	x, err := a.Transfer(ctx, d.ID, mailstore.Month(clusterNow))
	if err != nil {
		t.Fatal(err)
	}
	if x.OutBytes != int64(released+delivered)*size {
		t.Errorf("out bytes = %d, want %d (%d released, %d delivered)", x.OutBytes, int64(released+delivered)*size, released, delivered)
	}
	if x.OutBytes >= mailstore.MB+size {
		t.Errorf("out bytes = %d: more than one message past the cap of %d (%d released, %d delivered)", x.OutBytes, mailstore.MB, released, delivered)
	}
	if released+delivered != 11 {
		t.Errorf("%d released + %d delivered, want 11 in all (ten under the cap, one across)", released, delivered)
	}
	t.Logf("released %d, delivered %d, refused %d", released, delivered, refused)
}
