package imapd

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/mailhost/mailhost/mailstore"
)

// deafStore is a store whose Watch never signals, as for a session on one
// node when another node's notification is lost; it counts the reads of
// a folder's change log (Changes) and of its messages (Messages).
type deafStore struct {
	mailstore.Store
	changeReads, messageReads atomic.Int64
}

func (d *deafStore) Watch(int64) (<-chan struct{}, func()) {
	return make(chan struct{}), func() {}
}

func (d *deafStore) Changes(ctx context.Context, mailboxID, folderID int64, since uint64) (mailstore.Folder, []mailstore.Change, error) {
	d.changeReads.Add(1)
	return d.Store.Changes(ctx, mailboxID, folderID, since)
}

func (d *deafStore) Messages(ctx context.Context, mailboxID, folderID int64) ([]mailstore.Message, error) {
	d.messageReads.Add(1)
	return d.Store.Messages(ctx, mailboxID, folderID)
}

// TestIdleWithoutWatch: an idling session whose Watch signal is lost
// still hears of new mail, from its periodic check, and that check reads
// the folder's change log, not its messages.
func TestIdleWithoutWatch(t *testing.T) {
	deaf := &deafStore{}
	e := newEnv(t, envOptions{pollInterval: 20 * time.Millisecond, wrap: func(st mailstore.Store) mailstore.Store {
		deaf.Store = st
		return deaf
	}})
	exists := make(chan uint32, 4)
	c := e.login(&imapclient.Options{UnilateralDataHandler: &imapclient.UnilateralDataHandler{
		Mailbox: func(d *imapclient.UnilateralDataMailbox) {
			if d.NumMessages != nil {
				exists <- *d.NumMessages
			}
		},
	}})
	if _, err := c.Select("INBOX", nil).Wait(); err != nil {
		t.Fatalf("SELECT: %v", err)
	}
	idle, err := c.Idle()
	if err != nil {
		t.Fatalf("IDLE: %v", err)
	}
	// Ten checks of a quiet folder read its messages only for SELECT.
	for deadline := time.Now().Add(10 * time.Second); deaf.changeReads.Load() < 10; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d change log reads after 10s of IDLE, want its periodic checks", deaf.changeReads.Load())
		}
	}
	if n := deaf.messageReads.Load(); n > 1 {
		t.Errorf("a quiet folder's messages were read %d times over ten checks, want once (SELECT)", n)
	}
	if _, err := e.st.Deliver(context.Background(), mailstore.Delivery{Body: []byte("Subject: x\r\n\r\nx\r\n"), ReceivedAt: time.Now(), MailboxIDs: []int64{e.mb.ID}}); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-exists:
		if n != 1 {
			t.Errorf("EXISTS %d, want 1", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no EXISTS within 5s of a delivery whose Watch signal was lost")
	}
	if err := idle.Close(); err != nil {
		t.Fatal(err)
	}
	if err := idle.Wait(); err != nil {
		t.Fatalf("IDLE: %v", err)
	}
}
