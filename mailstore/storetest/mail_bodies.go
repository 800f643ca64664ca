package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/mailhost/mailhost/mailstore"
)

// bodiesCall is what one Bodies call gave fn, bodies copied.
type bodiesCall struct {
	uids   []uint32
	bodies []string
}

func (m *mt) bodies(ctx context.Context, mb, folderID int64, uids []uint32) (bodiesCall, error) {
	var got bodiesCall
	err := m.s.Bodies(ctx, mb, folderID, uids, func(uid uint32, body []byte) error {
		got.uids = append(got.uids, uid)
		got.bodies = append(got.bodies, string(body)) // a copy: body is valid only during fn
		return nil
	})
	return got, err
}

func mailBodies(t *testing.T, open Open) {
	m := newMT(t, open)
	u := m.mailbox(m.pid, "a.example", "u@a.example")
	v := m.mailbox(m.pid, "a.example", "v@a.example")
	for i := range 3 {
		m.deliver(fmt.Sprintf("message %d", i+1), mailNow, u.ID)
	}
	inbox := m.folder(u.ID, "INBOX")
	if _, err := m.s.Expunge(m.ctx, u.ID, inbox.ID, []uint32{2}); err != nil {
		t.Fatalf("Expunge(2) = %v", err)
	}

	t.Run("order_and_missing", func(t *testing.T) {
		got, err := m.bodies(m.ctx, u.ID, inbox.ID, []uint32{3, 1, 2, 99, 1})
		want := bodiesCall{uids: []uint32{3, 1, 1}, bodies: []string{"message 3", "message 1", "message 1"}}
		if err != nil || !slices.Equal(got.uids, want.uids) || !slices.Equal(got.bodies, want.bodies) {
			t.Errorf("Bodies(3, 1, 2 expunged, 99, 1) = %v, %v; want %v, nil", got, err, want)
		}
	})
	t.Run("empty", func(t *testing.T) {
		for _, uids := range [][]uint32{nil, {}, {2, 99}} {
			if got, err := m.bodies(m.ctx, u.ID, inbox.ID, uids); err != nil || len(got.uids) != 0 {
				t.Errorf("Bodies(%v) = %v, %v; want no call, nil", uids, got, err)
			}
		}
	})
	t.Run("not_the_accounts", func(t *testing.T) {
		for _, c := range []struct {
			name       string
			mb, folder int64
		}{
			{"another account's folder", v.ID, inbox.ID},
			{"unknown folder", u.ID, 9999},
			{"unknown mailbox", 9999, inbox.ID},
		} {
			got, err := m.bodies(m.ctx, c.mb, c.folder, []uint32{1})
			if !ctlIs(err, mailstore.ErrFolderNotFound) || len(got.uids) != 0 {
				t.Errorf("Bodies(%s) = %v, %v; want no call, ErrFolderNotFound", c.name, got, err)
			}
		}
	})
	t.Run("fn_error", func(t *testing.T) {
		stop := errors.New("stop")
		calls := 0
		err := m.s.Bodies(m.ctx, u.ID, inbox.ID, []uint32{1, 3}, func(uint32, []byte) error {
			calls++
			return stop
		})
		if err != stop || calls != 1 {
			t.Errorf("Bodies(fn fails) = %v after %d calls, want %v (unwrapped) after 1", err, calls, stop)
		}
	})
	t.Run("done_ctx", func(t *testing.T) {
		ctx, cancel := context.WithCancel(m.ctx)
		cancel()
		if got, err := m.bodies(ctx, u.ID, inbox.ID, []uint32{1}); !errors.Is(err, context.Canceled) || len(got.uids) != 0 {
			t.Errorf("Bodies(done ctx) = %v, %v; want no call, context.Canceled", got, err)
		}
	})

	// Enough messages, and large enough ones, to cross any sensible bound
	// on one read transaction: each body must come back whole and its own,
	// however an implementation splits or reuses memory.
	t.Run("many", func(t *testing.T) {
		w := m.mailbox(m.pid, "a.example", "w@a.example")
		// Room for them all (Mail.Deliver refuses a full mailbox).
		if _, err := m.s.SetQuota(m.ctx, m.pid, w.Email, 10); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for g := range 10 {
			wg.Go(func() {
				for i := g; i < 300; i += 10 {
					body := fmt.Sprintf("small %d", i)
					if i%100 == 7 {
						body = string(bytes.Repeat([]byte{byte('a' + i%26)}, 700<<10))
					}
					if _, err := m.s.Deliver(m.ctx, mailstore.Delivery{Body: []byte(body), ReceivedAt: mailNow, MailboxIDs: []int64{w.ID}}); err != nil {
						t.Errorf("Deliver = %v", err)
						return
					}
				}
			})
		}
		wg.Wait()
		win := m.folder(w.ID, "INBOX")
		uids := uidsOf(m.messages(w.ID, win.ID))
		if len(uids) != 300 {
			t.Fatalf("w's INBOX has %d messages, want 300", len(uids))
		}
		slices.Reverse(uids) // any order, not only the stored one
		got, err := m.bodies(m.ctx, w.ID, win.ID, uids)
		if err != nil || !slices.Equal(got.uids, uids) {
			t.Fatalf("Bodies(300 uids) = %d calls, %v; want the 300 uids in order, nil", len(got.uids), err)
		}
		for i, uid := range uids {
			if want := m.body(w.ID, win.ID, uid); got.bodies[i] != want {
				t.Errorf("Bodies: body of uid %d = %d bytes %.20q, want Body's %d bytes %.20q", uid, len(got.bodies[i]), got.bodies[i], len(want), want)
			}
		}
	})
}
