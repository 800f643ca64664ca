package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mailhost/mailhost/mailstore"
)

func (m *mt) summaries(ctx context.Context, mb, folderID int64, uids []uint32) (bodiesCall, error) {
	var got bodiesCall
	err := m.s.Summaries(ctx, mb, folderID, uids, func(uid uint32, header []byte) error {
		got.uids = append(got.uids, uid)
		got.bodies = append(got.bodies, string(header)) // a copy: header is valid only during fn
		return nil
	})
	return got, err
}

// summaryBody is a message whose summary keeps some of its fields and
// leaves others (Received, DKIM-Signature, X-Other) out.
func summaryBody(i int) string {
	return fmt.Sprintf("Received: from x by y;\r\n\tMon, 1 Jan 2024 00:00:00 +0000\r\n"+
		"From: A <a@example.org>\r\nTo: u@a.example,\r\n v@a.example\r\nSubject: message %d\r\n"+
		"DKIM-Signature: v=1; b=xyz\r\nList-Id: <l.example.org>\r\nX-Other: no\r\n"+
		"Date: Mon, 1 Jan 2024 00:00:00 +0000\r\nMessage-ID: <%d@example.org>\r\n\r\nbody %d\r\nSubject: not a header\r\n", i, i, i)
}

// summaryOf is what Summaries answers for summaryBody(i).
func summaryOf(i int) string {
	return fmt.Sprintf("From: A <a@example.org>\r\nTo: u@a.example,\r\n v@a.example\r\nSubject: message %d\r\n"+
		"List-Id: <l.example.org>\r\nDate: Mon, 1 Jan 2024 00:00:00 +0000\r\nMessage-ID: <%d@example.org>\r\n\r\n", i, i)
}

func mailSummaries(t *testing.T, open Open) {
	m := newMT(t, open)
	u := m.mailbox(m.pid, "a.example", "u@a.example")
	v := m.mailbox(m.pid, "a.example", "v@a.example")
	for i := range 3 {
		m.deliver(summaryBody(i+1), mailNow, u.ID)
	}
	inbox := m.folder(u.ID, "INBOX")
	if _, err := m.s.Expunge(m.ctx, u.ID, inbox.ID, []uint32{2}); err != nil {
		t.Fatalf("Expunge(2) = %v", err)
	}

	t.Run("header_summary", func(t *testing.T) {
		if got, want := string(mailstore.HeaderSummary([]byte(summaryBody(1)))), summaryOf(1); got != want {
			t.Errorf("HeaderSummary = %q, want %q", got, want)
		}
		for _, c := range []struct{ name, body, want string }{
			{"no header", "\r\nbody", "\r\n"},
			{"empty", "", "\r\n"},
			{"LF only", "subject: a\n b\nX: c\n\nbody", "subject: a\n b\n\r\n"},
			{"unterminated", "To: x", "To: x\r\n\r\n"},
		} {
			if got := string(mailstore.HeaderSummary([]byte(c.body))); got != c.want {
				t.Errorf("HeaderSummary(%s) = %q, want %q", c.name, got, c.want)
			}
		}
	})
	t.Run("order_and_missing", func(t *testing.T) {
		got, err := m.summaries(m.ctx, u.ID, inbox.ID, []uint32{3, 1, 2, 99, 1})
		want := bodiesCall{uids: []uint32{3, 1, 1}, bodies: []string{summaryOf(3), summaryOf(1), summaryOf(1)}}
		if err != nil || !slices.Equal(got.uids, want.uids) || !slices.Equal(got.bodies, want.bodies) {
			t.Errorf("Summaries(3, 1, 2 expunged, 99, 1) = %+v, %v; want %+v, nil", got, err, want)
		}
	})
	t.Run("append_copy_move", func(t *testing.T) {
		sent := m.folder(u.ID, "Sent")
		a, err := m.s.Append(m.ctx, u.ID, sent.ID, []byte(summaryBody(7)), nil, mailNow)
		if err != nil {
			t.Fatalf("Append = %v", err)
		}
		archive := m.folder(u.ID, "Archive")
		copied, err := m.s.Copy(m.ctx, u.ID, inbox.ID, []uint32{1}, archive.ID)
		if err != nil {
			t.Fatalf("Copy = %v", err)
		}
		moved, err := m.s.Move(m.ctx, u.ID, sent.ID, []uint32{a.UID}, archive.ID)
		if err != nil {
			t.Fatalf("Move = %v", err)
		}
		uids := append(copied, moved...)
		got, err := m.summaries(m.ctx, u.ID, archive.ID, uids)
		want := bodiesCall{uids: uids, bodies: []string{summaryOf(1), summaryOf(7)}}
		if err != nil || !slices.Equal(got.uids, want.uids) || !slices.Equal(got.bodies, want.bodies) {
			t.Errorf("Summaries(copied, moved) = %+v, %v; want %+v, nil", got, err, want)
		}
		// The copy's summary outlives the original, whose body it shares.
		if _, err := m.s.Expunge(m.ctx, u.ID, inbox.ID, []uint32{1}); err != nil {
			t.Fatalf("Expunge(1) = %v", err)
		}
		got, err = m.summaries(m.ctx, u.ID, archive.ID, copied)
		if err != nil || !slices.Equal(got.bodies, []string{summaryOf(1)}) {
			t.Errorf("Summaries(copy after the original's expunge) = %+v, %v; want %q, nil", got, err, summaryOf(1))
		}
	})
	t.Run("empty", func(t *testing.T) {
		for _, uids := range [][]uint32{nil, {}, {2, 99}} {
			if got, err := m.summaries(m.ctx, u.ID, inbox.ID, uids); err != nil || len(got.uids) != 0 {
				t.Errorf("Summaries(%v) = %v, %v; want no call, nil", uids, got, err)
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
			got, err := m.summaries(m.ctx, c.mb, c.folder, []uint32{3})
			if !ctlIs(err, mailstore.ErrFolderNotFound) || len(got.uids) != 0 {
				t.Errorf("Summaries(%s) = %v, %v; want no call, ErrFolderNotFound", c.name, got, err)
			}
		}
	})
	t.Run("fn_error", func(t *testing.T) {
		stop := errors.New("stop")
		calls := 0
		err := m.s.Summaries(m.ctx, u.ID, inbox.ID, []uint32{3, 3}, func(uint32, []byte) error {
			calls++
			return stop
		})
		if err != stop || calls != 1 {
			t.Errorf("Summaries(fn fails) = %v after %d calls, want %v (unwrapped) after 1", err, calls, stop)
		}
	})
	t.Run("done_ctx", func(t *testing.T) {
		ctx, cancel := context.WithCancel(m.ctx)
		cancel()
		if got, err := m.summaries(ctx, u.ID, inbox.ID, []uint32{3}); !errors.Is(err, context.Canceled) || len(got.uids) != 0 {
			t.Errorf("Summaries(done ctx) = %v, %v; want no call, context.Canceled", got, err)
		}
	})

	// Enough messages, some with long headers, to cross any sensible
	// bound on one read: each summary must come back whole and its own.
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
					body := summaryBody(i)
					if i%50 == 7 {
						long := "References: " + strings.Repeat("<r@example.org>\r\n ", 20000) + "<r@example.org>\r\n"
						body = long + body
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
		slices.Reverse(uids)
		got, err := m.summaries(m.ctx, w.ID, win.ID, uids)
		if err != nil || !slices.Equal(got.uids, uids) {
			t.Fatalf("Summaries(300 uids) = %d calls, %v; want the 300 uids in order, nil", len(got.uids), err)
		}
		for i, uid := range uids {
			body := m.body(w.ID, win.ID, uid)
			if h := string(mailstore.HeaderSummary([]byte(body))); got.bodies[i] != h {
				t.Errorf("Summaries: summary of uid %d = %d bytes %.40q, want HeaderSummary(body)'s %d bytes %.40q", uid, len(got.bodies[i]), got.bodies[i], len(h), h)
			}
		}
	})
}
