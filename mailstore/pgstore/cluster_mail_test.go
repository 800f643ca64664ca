package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/pgstore"
)

// clusterMailbox makes, through node a, a partner, a domain and one
// mailbox, and answers the mailbox.
func clusterMailbox(t *testing.T, a mailstore.Store) mailstore.Mailbox {
	t.Helper()
	ctx := context.Background()
	p, err := a.CreatePartner(ctx, "p", clusterNow)
	if err != nil {
		t.Fatal(err)
	}
	plan := mailstore.Plan{Name: "big", QuotaMB: 1024, RetentionDays: 30, TransferMonthlyMB: 1024}
	if _, err := a.CreateDomain(ctx, p.ID, mailstore.NewDomain{Name: "a.example", Plan: plan}, clusterNow); err != nil {
		t.Fatal(err)
	}
	mb, err := a.CreateMailbox(ctx, p.ID, "a.example", "u@a.example", "x", clusterNow)
	if err != nil {
		t.Fatal(err)
	}
	return mb
}

// TestClusterDenseUIDs: deliveries to one mailbox racing on two nodes
// give the folder dense UIDs 1..n with no gap and no duplicate, and every
// counter equals what it counts, whichever node's shard holds it; also
// with several batches in flight on each node (Options.DeliverDepth),
// where every batch but one finds the mailbox's rows held and defers its
// calls.
func TestClusterDenseUIDs(t *testing.T) {
	for _, depth := range []int{1, 3} {
		t.Run(fmt.Sprintf("depth %d", depth), func(t *testing.T) { testClusterDenseUIDs(t, depth) })
	}
}

func testClusterDenseUIDs(t *testing.T, depth int) {
	a, b := nodesABWith(t, pgstore.Options{DeliverDepth: depth})
	ctx := context.Background()
	mb := clusterMailbox(t, a)
	const perNode, workers = 60, 6
	var wg sync.WaitGroup
	errs := make(chan error, 2*workers)
	for _, st := range []mailstore.Store{a, b} {
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range perNode / workers {
					body := fmt.Appendf(nil, "Subject: %d-%d\r\n\r\nhello\r\n", w, i)
					if _, err := st.Deliver(ctx, mailstore.Delivery{Body: body, ReceivedAt: clusterNow, MailboxIDs: []int64{mb.ID}}); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Deliver: %v", err)
	}
	inbox, err := b.Folder(ctx, mb.ID, "INBOX")
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := b.Messages(ctx, mb.ID, inbox.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2*perNode {
		t.Fatalf("INBOX has %d messages, want %d", len(msgs), 2*perNode)
	}
	var size int64
	for i, m := range msgs {
		if m.UID != uint32(i+1) {
			t.Fatalf("message %d has UID %d, want %d: UIDs must be dense", i, m.UID, i+1)
		}
		size += m.Size
	}
	if inbox.UIDNext != uint32(2*perNode+1) || inbox.Messages != 2*perNode || inbox.Size != size {
		t.Errorf("INBOX = uidnext %d, %d messages, %d bytes; want %d, %d, %d", inbox.UIDNext, inbox.Messages, inbox.Size, 2*perNode+1, 2*perNode, size)
	}
	d, err := a.DomainByName(ctx, "a.example")
	if err != nil {
		t.Fatal(err)
	}
	if d.MessageCount != 2*perNode || d.UsedBytes != size {
		t.Errorf("domain = %d messages, %d bytes; want %d, %d (the two nodes' shards summed)", d.MessageCount, d.UsedBytes, 2*perNode, size)
	}
	tr, err := b.Transfer(ctx, d.ID, mailstore.Month(clusterNow))
	if err != nil {
		t.Fatal(err)
	}
	if tr.InBytes != size {
		t.Errorf("transfer in = %d, want %d", tr.InBytes, size)
	}
	drift, err := a.Verify(ctx)
	if err != nil || len(drift) != 0 {
		t.Errorf("Verify() = %v, %v; want no drift", drift, err)
	}
}

// TestClusterWatch: a delivery committed on node a wakes a watcher of the
// account on node b (LISTEN/NOTIFY after commit), and b's change log has
// it; a watcher of another account is not woken.
func TestClusterWatch(t *testing.T) {
	a, b := nodesAB(t)
	ctx := context.Background()
	mb := clusterMailbox(t, a)
	ch, stop := b.Watch(mb.ID)
	defer stop()
	other, stopOther := b.Watch(mb.ID + 1000)
	defer stopOther()
	inbox, err := b.Folder(ctx, mb.ID, "INBOX")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := a.Deliver(ctx, mailstore.Delivery{Body: []byte("Subject: x\r\n\r\nx\r\n"), ReceivedAt: clusterNow, MailboxIDs: []int64{mb.ID}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
		t.Logf("node b woken %v after node a's Deliver returned", time.Since(start))
	case <-time.After(time.Second):
		t.Fatal("node b's watcher not woken within 1 s of a delivery on node a")
	}
	f, changes, err := b.Changes(ctx, mb.ID, inbox.ID, inbox.HighestModSeq)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || changes[0].Kind != mailstore.ChangeAdd || changes[0].Message.UID != 1 || f.HighestModSeq != changes[0].ModSeq {
		t.Errorf("Changes on b = %+v (folder modseq %d), want one ChangeAdd of UID 1", changes, f.HighestModSeq)
	}
	select {
	case <-other:
		t.Error("a watcher of another account was woken")
	default:
	}
}
