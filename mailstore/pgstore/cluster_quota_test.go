package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/pgstore"
)

// TestClusterQuota: deliveries racing on two nodes into one 1 MB mailbox
// (the quota of concurrent deliveries, mailstore.Mail.Deliver) take it
// past its quota by one message at most, however the nodes' batches
// interleave: each decides on the mailbox row it holds locked, so two
// cannot both find the room that only one has. Also with several
// batches in flight on each node.
func TestClusterQuota(t *testing.T) {
	for _, depth := range []int{1, 3} {
		t.Run(fmt.Sprintf("depth %d", depth), func(t *testing.T) { testClusterQuota(t, depth) })
	}
}

func testClusterQuota(t *testing.T, depth int) {
	a, b := nodesABWith(t, pgstore.Options{DeliverDepth: depth})
	ctx := context.Background()
	mb := clusterMailbox(t, a)
	if _, err := a.SetQuota(ctx, mb.PartnerID, mb.Email, 1); err != nil {
		t.Fatal(err)
	}
	const perNode, size = 10, 300 << 10
	start := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	delivered := 0
	for _, st := range []mailstore.Store{a, b} {
		for range perNode {
			wg.Go(func() {
				<-start
				_, err := st.Deliver(ctx, mailstore.Delivery{Body: make([]byte, size), ReceivedAt: clusterNow, MailboxIDs: []int64{mb.ID}})
				switch {
				case err == nil:
					mu.Lock()
					delivered++
					mu.Unlock()
				case !errors.Is(err, mailstore.ErrOverQuota):
					t.Errorf("Deliver = %v, want nil or ErrOverQuota", err)
				}
			})
		}
	}
	close(start)
	wg.Wait()
	// 3 × 300 KB fit below 1 MB, the 4th takes the mailbox past it.
	if delivered < 1 || delivered > 4 {
		t.Errorf("%d deliveries of 300 KB into 1 MB on two nodes: %d delivered, want 1 to 4", 2*perNode, delivered)
	}
	got, err := b.Mailbox(ctx, mb.PartnerID, mb.Email)
	if err != nil {
		t.Fatal(err)
	}
	if got.UsedBytes != int64(delivered)*size || got.MessageCount != int64(delivered) {
		t.Errorf("mailbox = %d messages, %d bytes; want %d, %d", got.MessageCount, got.UsedBytes, delivered, int64(delivered)*size)
	}
	drift, err := a.Verify(ctx)
	if err != nil || len(drift) != 0 {
		t.Errorf("Verify() = %v, %v; want no drift", drift, err)
	}
}
