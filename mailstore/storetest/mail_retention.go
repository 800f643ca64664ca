package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// Retention, concurrency and watch tests of runMail.

func mailPurge(t *testing.T, open Open) {
	m := newMT(t, open) // a.example: 30 days
	long := mailPlan
	long.RetentionDays = 60
	m.domain(m.pid, "b.example", long, 0, 0)
	keep := mailPlan
	keep.RetentionDays = 0
	m.domain(m.pid, "c.example", keep, 0, 0)
	a := m.mailbox(m.pid, "a.example", "u@a.example")
	b := m.mailbox(m.pid, "b.example", "u@b.example")
	c := m.mailbox(m.pid, "c.example", "u@c.example")
	day := 24 * time.Hour
	ages := []time.Duration{100 * day, 45 * day, 30*day + time.Second, 30 * day, 29 * day, time.Hour}
	for _, age := range ages {
		m.deliver(fmt.Sprintf("aged %v", age), mailNow.Add(-age), a.ID, b.ID, c.ID)
	}
	// A message moved to another folder is purged there too; an appended
	// message goes by its received time.
	ainbox := m.folder(a.ID, "INBOX")
	arch := m.folder(a.ID, "Archive")
	if _, err := m.s.Move(m.ctx, a.ID, ainbox.ID, []uint32{1}, arch.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := m.s.Append(m.ctx, a.ID, arch.ID, []byte("old draft"), nil, mailNow.Add(-40*day)); err != nil {
		t.Fatal(err)
	}
	w, stop := m.s.Watch(a.ID)
	defer stop()
	res, err := m.s.PurgeBefore(m.ctx, mailNow)
	if err != nil {
		t.Fatalf("PurgeBefore() = %v", err)
	}
	msgSize := func(age time.Duration) int64 { return int64(len(fmt.Sprintf("aged %v", age))) }
	wantA := mailstore.PurgeResult{Domain: "a.example", Messages: 4, Bytes: msgSize(ages[0]) + msgSize(ages[1]) + msgSize(ages[2]) + int64(len("old draft"))}
	wantB := mailstore.PurgeResult{Domain: "b.example", Messages: 1, Bytes: msgSize(ages[0])}
	if len(res) != 2 {
		t.Fatalf("PurgeBefore() = %+v, want results for a and b", res)
	}
	slices.SortFunc(res, func(x, y mailstore.PurgeResult) int { return int(x.DomainID - y.DomainID) })
	for i, want := range []mailstore.PurgeResult{wantA, wantB} {
		got := res[i]
		if got.Domain != want.Domain || got.Messages != want.Messages || got.Bytes != want.Bytes || got.DomainID == 0 {
			t.Errorf("PurgeBefore()[%d] = %+v, want %+v", i, got, want)
		}
	}
	select {
	case <-w:
	default:
		t.Errorf("Watch(a) not signalled by the purge")
	}
	// What is left: a keeps 30 days exactly and younger; b keeps 45 days.
	left := func(mb int64) int {
		n := 0
		fs, _ := m.s.Folders(m.ctx, mb)
		for _, f := range fs {
			n += len(m.messages(mb, f.ID))
		}
		return n
	}
	if got := left(a.ID); got != 3 {
		t.Errorf("a has %d messages left, want 3", got)
	}
	if got := left(b.ID); got != 5 {
		t.Errorf("b has %d messages left, want 5", got)
	}
	if got := left(c.ID); got != 6 {
		t.Errorf("c (retention 0) has %d messages left, want 6", got)
	}
	// Shared bodies of the purged messages are still there for c.
	cin := m.folder(c.ID, "INBOX")
	if got := m.body(c.ID, cin.ID, 1); got != fmt.Sprintf("aged %v", ages[0]) {
		t.Errorf("Body(c, 1) = %q after a's and b's copies were purged", got)
	}
	for _, d := range []string{"a.example", "b.example", "c.example"} {
		m.invariants(d)
	}
	// Again: nothing to do.
	res, err = m.s.PurgeBefore(m.ctx, mailNow)
	if err != nil || len(res) != 0 {
		t.Errorf("PurgeBefore() again = %+v, %v; want nothing", res, err)
	}
	// Retention follows SetRetention.
	if _, err := m.s.SetRetention(m.ctx, m.pid, "c.example", 1); err != nil {
		t.Fatal(err)
	}
	res, err = m.s.PurgeBefore(m.ctx, mailNow)
	if err != nil || len(res) != 1 || res[0].Domain != "c.example" || res[0].Messages != 5 {
		t.Errorf("PurgeBefore() after SetRetention(c, 1) = %+v, %v; want 5 of c", res, err)
	}
	m.invariants("c.example")
}

func mailPurgeBatches(t *testing.T, open Open) {
	m := newMT(t, open)
	mb := m.mailbox(m.pid, "a.example", "u@a.example")
	// More than one purge batch of the bbolt store (5,000), cheaply: one
	// delivery, copied many times.
	m.deliver("x", mailNow.AddDate(0, -3, 0), mb.ID)
	inbox := m.folder(mb.ID, "INBOX")
	arch := m.folder(mb.ID, "Archive")
	const n = 6000
	if _, err := m.s.Copy(m.ctx, mb.ID, inbox.ID, []uint32{1}, arch.ID); err != nil {
		t.Fatal(err)
	}
	for len(m.messages(mb.ID, arch.ID)) < n-1 {
		ms := m.messages(mb.ID, arch.ID)
		if _, err := m.s.Copy(m.ctx, mb.ID, arch.ID, uidsOf(ms)[:min(len(ms), n-1-len(ms))], arch.ID); err != nil {
			t.Fatal(err)
		}
	}
	m.deliver("young", mailNow, mb.ID)
	res, err := m.s.PurgeBefore(m.ctx, mailNow)
	if err != nil || len(res) != 1 || res[0].Messages != n || res[0].Bytes != n {
		t.Errorf("PurgeBefore() = %+v, %v; want %d messages", res, err, n)
	}
	if u := m.getMailbox(m.pid, "u@a.example"); u.MessageCount != 1 || u.UsedBytes != 5 {
		t.Errorf("usage after purge = %d, %d; want 1, 5", u.MessageCount, u.UsedBytes)
	}
	m.invariants("a.example")
}

func mailConcurrent(t *testing.T, open Open) {
	m := newMT(t, open)
	u := m.mailbox(m.pid, "a.example", "u@a.example")
	v := m.mailbox(m.pid, "a.example", "v@a.example")
	inbox := m.folder(u.ID, "INBOX")
	arch := m.folder(u.ID, "Archive")
	var wg sync.WaitGroup
	errc := make(chan error, 100)
	for g := range 4 {
		wg.Go(func() {
			for i := range 25 {
				at := mailNow
				if i%2 == 0 {
					at = mailNow.AddDate(0, 0, -40) // purged by a pass
				}
				_, err := m.s.Deliver(m.ctx, mailstore.Delivery{Body: []byte(fmt.Sprintf("g%d m%d", g, i)), ReceivedAt: at, MailboxIDs: []int64{u.ID, v.ID}})
				if err != nil {
					errc <- err
					return
				}
			}
		})
	}
	wg.Go(func() {
		for range 10 {
			if _, err := m.s.PurgeBefore(m.ctx, mailNow); err != nil {
				errc <- err
				return
			}
		}
	})
	wg.Go(func() {
		for range 10 {
			ms, err := m.s.Messages(m.ctx, u.ID, inbox.ID)
			if err != nil {
				errc <- err
				return
			}
			if len(ms) == 0 {
				continue
			}
			uid := ms[len(ms)-1].UID
			// The message may be purged meanwhile: not found is fine.
			if _, err := m.s.Copy(m.ctx, u.ID, inbox.ID, []uint32{uid}, arch.ID); err != nil && !errors.Is(err, mailstore.ErrMessageNotFound) {
				errc <- err
				return
			}
			if _, err := m.s.SetFlags(m.ctx, u.ID, inbox.ID, []uint32{uid}, mailstore.FlagsAdd, []string{`\Seen`}); err != nil {
				errc <- err
				return
			}
			if _, err := m.s.Expunge(m.ctx, u.ID, inbox.ID, []uint32{uid}); err != nil {
				errc <- err
				return
			}
		}
	})
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Errorf("concurrent call = %v", err)
	}
	m.invariants("a.example")
	if _, err := m.s.PurgeBefore(m.ctx, mailNow); err != nil {
		t.Fatal(err)
	}
	m.invariants("a.example")
	vin := m.folder(v.ID, "INBOX")
	if vin.Messages != 4*12 { // i odd: 12 of 25 per goroutine
		t.Errorf("v's INBOX after purging the old ones = %d messages, want 48", vin.Messages)
	}
}

func mailWatch(t *testing.T, open Open) {
	m := newMT(t, open)
	mb := m.mailbox(m.pid, "a.example", "u@a.example")
	other := m.mailbox(m.pid, "a.example", "v@a.example")
	w, stop := m.s.Watch(mb.ID)
	w2, stop2 := m.s.Watch(mb.ID)
	wo, stopo := m.s.Watch(other.ID)
	defer stopo()
	signalled := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		case <-time.After(2 * time.Second):
			return false
		}
	}
	quiet := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return false
		default:
			return true
		}
	}
	m.deliver("hi", mailNow, mb.ID)
	if !signalled(w) || !signalled(w2) {
		t.Fatalf("Watch not signalled after Deliver")
	}
	if !quiet(wo) {
		t.Errorf("another account's watch signalled")
	}
	// The change is visible when the signal arrives.
	if f := m.folder(mb.ID, "INBOX"); f.Messages != 1 {
		t.Errorf("INBOX after signal has %d messages, want 1", f.Messages)
	}
	// Signals coalesce and never block the writer.
	for range 5 {
		m.deliver("more", mailNow, mb.ID)
	}
	if !signalled(w) || !quiet(w) {
		t.Errorf("five deliveries did not coalesce into one pending signal")
	}
	<-w2 // the pending signal of the deliveries above
	stop2()
	stop2() // harmless twice
	inbox := m.folder(mb.ID, "INBOX")
	ops := []struct {
		name string
		do   func() error
	}{
		{"flags", func() error {
			_, err := m.s.SetFlags(m.ctx, mb.ID, inbox.ID, []uint32{1}, mailstore.FlagsAdd, []string{`\Seen`})
			return err
		}},
		{"append", func() error {
			_, err := m.s.Append(m.ctx, mb.ID, inbox.ID, []byte("a"), nil, mailNow)
			return err
		}},
		{"copy", func() error {
			_, err := m.s.Copy(m.ctx, mb.ID, inbox.ID, []uint32{1}, inbox.ID)
			return err
		}},
		{"expunge", func() error {
			_, err := m.s.Expunge(m.ctx, mb.ID, inbox.ID, []uint32{1})
			return err
		}},
		{"create folder", func() error {
			_, err := m.s.CreateFolder(m.ctx, mb.ID, "New")
			return err
		}},
		{"rename folder", func() error { return m.s.RenameFolder(m.ctx, mb.ID, "New", "Newer") }},
		{"delete folder", func() error { return m.s.DeleteFolder(m.ctx, mb.ID, "Newer") }},
		{"delete mailbox", func() error { return m.s.DeleteMailbox(m.ctx, m.pid, "u@a.example") }},
	}
	for _, op := range ops {
		if err := op.do(); err != nil {
			t.Fatalf("%s: %v", op.name, err)
		}
		if !signalled(w) {
			t.Errorf("Watch not signalled after %s", op.name)
		}
	}
	if !quiet(w2) {
		t.Errorf("stopped watch signalled")
	}
	stop()
}
