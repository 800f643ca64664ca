package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// TestNotifyInterest: a delivery on node a rings only the nodes with a
// watcher of the account: node b, watching it, is woken within a second;
// node c, watching another account, receives nothing, and with no watcher
// on another node a sends no notification at all. A row left by a node that
// died (expired) is not rung, and a node's rows go when it closes. A
// watcher that begins just before the delivery, before its node has
// recorded it, is woken too (by a's recall when b announces it).
func TestNotifyInterest(t *testing.T) {
	ctx := context.Background()
	a, ids, u := mailFixtureURL(t, 2)
	open := func(node string) *Store {
		s, err := Open(ctx, u, Options{Node: node})
		if err != nil {
			t.Fatalf("Open(%s) = %v", node, err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	b, c := open("b"), open("c")
	deliver := func(id int64) {
		t.Helper()
		if _, err := a.Deliver(ctx, mailstore.Delivery{Body: []byte("Subject: x\r\n\r\nx\r\n"), ReceivedAt: benchMailNow, MailboxIDs: []int64{id}}); err != nil {
			t.Fatalf("Deliver = %v", err)
		}
	}
	rows := func(inst string) int {
		t.Helper()
		var n int
		if err := a.pool.QueryRow(ctx, `SELECT count(*) FROM watching WHERE instance = $1 AND expires_at > now()`, inst).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// A row of a node that died an hour ago names the account too.
	if _, err := a.pool.Exec(ctx, `INSERT INTO watching (mailbox_id, instance, expires_at) VALUES ($1, 'dead00000000', now() - interval '1 minute')`, ids[0]); err != nil {
		t.Fatal(err)
	}

	// Nobody watches: a's deliveries send nothing and wake nobody.
	deliver(ids[0])
	time.Sleep(300 * time.Millisecond)
	if n := a.notifier.sent.Load(); n != 0 {
		t.Errorf("a sent %d notifications with no watcher on another node, want 0", n)
	}

	// a hears b's and c's announcements (each makes it read the table
	// again, and ring again what it rang lately: the first delivery);
	// what follows counts from after them.
	a.notifier.mu.Lock()
	gen0 := a.notifier.gen
	a.notifier.mu.Unlock()
	ch, stop := b.Watch(ids[0])
	defer stop()
	_, stopC := c.Watch(ids[1])
	defer stopC()
	deadline := time.Now().Add(5 * time.Second)
	for rows(b.notifier.instance) != 1 || rows(c.notifier.instance) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("b's and c's interest not recorded within 5 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for {
		a.notifier.mu.Lock()
		heard := a.notifier.gen - gen0
		a.notifier.mu.Unlock()
		if heard >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a did not hear b's and c's announcements within 5 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	drain(ch)
	wokenB, wokenC, sentA := b.notifier.woken.Load(), c.notifier.woken.Load(), a.notifier.sent.Load()
	start := time.Now()
	deliver(ids[0])
	select {
	case <-ch:
		t.Logf("b woken %v after a's Deliver returned", time.Since(start))
	case <-time.After(time.Second):
		t.Fatal("b's watcher not woken within 1 s of a delivery on a")
	}
	time.Sleep(200 * time.Millisecond)
	if n := c.notifier.woken.Load() - wokenC; n != 0 {
		t.Errorf("c, watching another account, received %d notifications, want 0", n)
	}
	if n := b.notifier.woken.Load() - wokenB; n != 1 {
		t.Errorf("b received %d notifications, want 1", n)
	}
	if n := a.notifier.sent.Load() - sentA; n != 1 {
		t.Errorf("a sent %d notifications, want 1 (to b; none to the dead node)", n)
	}

	// A watcher that begins just before a delivery, before its node has
	// recorded it.
	d := open("d")
	chd, stopD := d.Watch(ids[1])
	defer stopD()
	start = time.Now()
	deliver(ids[1])
	select {
	case <-chd:
		t.Logf("d woken %v after a's Deliver returned", time.Since(start))
	case <-time.After(time.Second):
		t.Fatal("d's new watcher not woken within 1 s of a delivery on a")
	}

	// The last watcher gone, b's row goes, and a rings it no more once it
	// reads the table again.
	stop()
	for rows(b.notifier.instance) != 0 {
		if time.Now().After(deadline.Add(5 * time.Second)) {
			t.Fatal("b's interest not removed after its last watcher stopped")
		}
		time.Sleep(20 * time.Millisecond)
	}
	a.notifier.stale()
	sent := a.notifier.sent.Load()
	deliver(ids[0])
	time.Sleep(300 * time.Millisecond)
	if n := a.notifier.sent.Load(); n != sent {
		t.Errorf("a sent %d notifications after b stopped watching, want none", n-sent)
	}
	inst := c.notifier.instance
	c.Close()
	if n := rows(inst); n != 0 {
		t.Errorf("%d rows of c after it closed, want 0", n)
	}
}

// drain empties a watcher's channel of signals already sent.
func drain(ch <-chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}
