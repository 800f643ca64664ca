package storetest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// RunAutoReplies runs the conformance tests of mailstore.AutoReplies
// against stores made by open, which must implement it. Apart from Run,
// as RunCerts is.
func RunAutoReplies(t *testing.T, open Open) {
	runAutoReplyRecords(t, open)
	runAutoReplyTaking(t, open)
}

// autoReplySetup opens a store with one mailbox, and its AutoReplies.
func autoReplySetup(t *testing.T, open Open) (*ctl, mailstore.AutoReplies, mailstore.Mailbox) {
	t.Helper()
	c := newCtl(t, open)
	a, ok := c.s.(mailstore.AutoReplies)
	if !ok {
		t.Fatalf("%T does not implement mailstore.AutoReplies", c.s)
	}
	p := c.partner("acme")
	c.domain(p.ID, "example.com", ctlStarter, 10, 10)
	return c, a, c.mailbox(p.ID, "example.com", "alice@example.com")
}

// runAutoReplyRecords: setting, reading and the errors of a record.
func runAutoReplyRecords(t *testing.T, open Open) {
	ctx := context.Background()
	t.Run("MailboxByEmail says whether one is set", func(t *testing.T) {
		c, a, mb := autoReplySetup(t, open)
		has := func() bool {
			t.Helper()
			m, _, err := c.s.MailboxByEmail(ctx, mb.Email)
			if err != nil {
				t.Fatal(err)
			}
			return m.HasAutoReply
		}
		if has() {
			t.Fatal("HasAutoReply before any was set")
		}
		// Disabled still counts as set: the responder reads it and decides.
		if err := a.SetAutoReply(ctx, mailstore.AutoReply{MailboxID: mb.ID, Subject: "s", Body: "b"}); err != nil {
			t.Fatal(err)
		}
		if !has() {
			t.Error("HasAutoReply false with an auto-reply set")
		}
		other := c.mailbox(mb.PartnerID, "example.com", "bob@example.com")
		if m, _, err := c.s.MailboxByEmail(ctx, other.Email); err != nil || m.HasAutoReply {
			t.Errorf("another mailbox: HasAutoReply %v, %v; want false", m.HasAutoReply, err)
		}
		if err := a.DeleteAutoReply(ctx, mb.ID); err != nil {
			t.Fatal(err)
		}
		if has() {
			t.Error("HasAutoReply after DeleteAutoReply")
		}
	})
	t.Run("round trip", func(t *testing.T) {
		_, a, mb := autoReplySetup(t, open)
		if _, err := a.AutoReply(ctx, mb.ID); !errors.Is(err, mailstore.ErrNotFound) {
			t.Fatalf("AutoReply(unset) = %v, want ErrNotFound", err)
		}
		start := time.Date(2026, 12, 20, 17, 0, 0, 500, time.FixedZone("CET", 3600))
		want := mailstore.AutoReply{MailboxID: mb.ID, Enabled: true, Subject: "Away", Body: "Back in January.\nAlice",
			Start: start, End: start.Add(14 * 24 * time.Hour)}
		if err := a.SetAutoReply(ctx, want); err != nil {
			t.Fatal(err)
		}
		got, err := a.AutoReply(ctx, mb.ID)
		if err != nil {
			t.Fatal(err)
		}
		want.Start, want.End = want.Start.UTC().Truncate(time.Second), want.End.UTC().Truncate(time.Second)
		if got.MailboxID != want.MailboxID || got.Enabled != want.Enabled || got.Subject != want.Subject || got.Body != want.Body ||
			!got.Start.Equal(want.Start) || !got.End.Equal(want.End) || got.Start.Location() != time.UTC {
			t.Errorf("AutoReply = %+v, want %+v", got, want)
		}
		open := mailstore.AutoReply{MailboxID: mb.ID, Enabled: false, Subject: "s", Body: "b"}
		if err := a.SetAutoReply(ctx, open); err != nil {
			t.Fatal(err)
		}
		if got, err := a.AutoReply(ctx, mb.ID); err != nil || got.Enabled || !got.Start.IsZero() || !got.End.IsZero() {
			t.Errorf("AutoReply after replacing = %+v, %v, want disabled without times", got, err)
		}
		if err := a.DeleteAutoReply(ctx, mb.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := a.AutoReply(ctx, mb.ID); !errors.Is(err, mailstore.ErrNotFound) {
			t.Errorf("AutoReply after delete = %v, want ErrNotFound", err)
		}
		if err := a.DeleteAutoReply(ctx, mb.ID); err != nil {
			t.Errorf("DeleteAutoReply(none) = %v, want nil", err)
		}
	})
	t.Run("errors", func(t *testing.T) {
		_, a, mb := autoReplySetup(t, open)
		if err := a.SetAutoReply(ctx, mailstore.AutoReply{MailboxID: mb.ID + 1000, Enabled: true}); !errors.Is(err, mailstore.ErrMailboxNotFound) {
			t.Errorf("SetAutoReply(no mailbox) = %v, want ErrMailboxNotFound", err)
		}
		now := ctlNow
		if err := a.SetAutoReply(ctx, mailstore.AutoReply{MailboxID: mb.ID, Start: now, End: now}); !errors.Is(err, mailstore.ErrInvalidArgument) {
			t.Errorf("SetAutoReply(end = start) = %v, want ErrInvalidArgument", err)
		}
		if _, err := a.TakeAutoReply(ctx, mb.ID, "", now, time.Hour); !errors.Is(err, mailstore.ErrInvalidArgument) {
			t.Errorf("TakeAutoReply(empty sender) = %v, want ErrInvalidArgument", err)
		}
	})
}

// runAutoReplyTaking: TakeAutoReply answers once per interval per sender.
func runAutoReplyTaking(t *testing.T, open Open) {
	ctx := context.Background()
	t.Run("once per interval", func(t *testing.T) {
		_, a, mb := autoReplySetup(t, open)
		week := 7 * 24 * time.Hour
		steps := []struct {
			sender string
			at     time.Duration
			want   bool
		}{
			{"bob@remote.test", 0, true},
			{"bob@remote.test", time.Minute, false},
			{"carol@remote.test", time.Minute, true},
			{"bob@remote.test", week - time.Second, false},
			{"bob@remote.test", week, true},
			{"bob@remote.test", week + time.Hour, false},
		}
		for _, s := range steps {
			got, err := a.TakeAutoReply(ctx, mb.ID, s.sender, ctlNow.Add(s.at), week)
			if err != nil || got != s.want {
				t.Errorf("TakeAutoReply(%s, +%v) = %v, %v, want %v", s.sender, s.at, got, err, s.want)
			}
		}
		// Deleting the auto-reply forgets the senders.
		if err := a.DeleteAutoReply(ctx, mb.ID); err != nil {
			t.Fatal(err)
		}
		if got, err := a.TakeAutoReply(ctx, mb.ID, "bob@remote.test", ctlNow.Add(week+2*time.Hour), week); err != nil || !got {
			t.Errorf("TakeAutoReply after delete = %v, %v, want true", got, err)
		}
	})
	t.Run("concurrent", func(t *testing.T) {
		_, a, mb := autoReplySetup(t, open)
		var wg sync.WaitGroup
		var yes atomic.Int32
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, err := a.TakeAutoReply(ctx, mb.ID, "bob@remote.test", ctlNow, time.Hour)
				if err != nil {
					t.Errorf("TakeAutoReply = %v", err)
				}
				if ok {
					yes.Add(1)
				}
			}()
		}
		wg.Wait()
		if n := yes.Load(); n != 1 {
			t.Errorf("%d of 8 concurrent TakeAutoReply got true, want 1", n)
		}
	})
	t.Run("mailbox deleted", func(t *testing.T) {
		c, a, mb := autoReplySetup(t, open)
		if err := a.SetAutoReply(ctx, mailstore.AutoReply{MailboxID: mb.ID, Enabled: true, Subject: "s", Body: "b"}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.TakeAutoReply(ctx, mb.ID, "bob@remote.test", ctlNow, time.Hour); err != nil {
			t.Fatal(err)
		}
		if err := c.s.DeleteMailbox(ctx, mb.PartnerID, mb.Email); err != nil {
			t.Fatal(err)
		}
		if _, err := a.AutoReply(ctx, mb.ID); !errors.Is(err, mailstore.ErrNotFound) {
			t.Errorf("AutoReply of a deleted mailbox = %v, want ErrNotFound", err)
		}
	})
}
