package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mailhost/mailhost/mailstore"
)

func (m *mt) subscriptions(mb int64) []string {
	m.t.Helper()
	subs, err := m.s.Subscriptions(m.ctx, mb)
	if err != nil {
		m.t.Fatalf("Subscriptions(%d) = %v, want nil", mb, err)
	}
	return subs
}

func (m *mt) subscribe(mb int64, name string) {
	m.t.Helper()
	if err := m.s.Subscribe(m.ctx, mb, name); err != nil {
		m.t.Fatalf("Subscribe(%d, %q) = %v, want nil", mb, name, err)
	}
}

func (m *mt) unsubscribe(mb int64, name string) {
	m.t.Helper()
	if err := m.s.Unsubscribe(m.ctx, mb, name); err != nil {
		m.t.Fatalf("Unsubscribe(%d, %q) = %v, want nil", mb, name, err)
	}
}

// defaultSubscriptions are a new account's: its DefaultFolders, sorted.
func defaultSubscriptions() []string {
	var out []string
	for _, df := range mailstore.DefaultFolders {
		out = append(out, df[0])
	}
	slices.Sort(out)
	return out
}

// mailSubscriptions checks the set itself: a new account's, adding and
// removing names with or without a folder, INBOX in any case, repeats,
// the names refused, unknown accounts.
func mailSubscriptions(t *testing.T, open Open) {
	m := newMT(t, open)
	mb := m.mailbox(m.pid, "a.example", "u@a.example")
	if got, want := m.subscriptions(mb.ID), defaultSubscriptions(); !slices.Equal(got, want) {
		t.Fatalf("Subscriptions(new account) = %q, want %q (the default folders)", got, want)
	}
	// A name with no folder may be subscribed (RFC 9051 section 6.3.7);
	// subscribing twice is no error and keeps one.
	for _, name := range []string{"News/Later", "Zebra", "Alpha", "Alpha", "a/b"} {
		m.subscribe(mb.ID, name)
	}
	want := append(defaultSubscriptions(), "Alpha", "News/Later", "Zebra", "a/b")
	slices.Sort(want)
	if got := m.subscriptions(mb.ID); !slices.Equal(got, want) {
		t.Errorf("Subscriptions() = %q, want %q (bytewise order)", got, want)
	}
	for _, name := range []string{"News/Later", "inbox"} {
		m.unsubscribe(mb.ID, name)
	}
	// Unsubscribing a name not subscribed is no error (RFC 9051 section 6.3.8).
	m.unsubscribe(mb.ID, "Never")
	m.unsubscribe(mb.ID, "INBOX")
	want = slices.DeleteFunc(want, func(n string) bool { return n == "News/Later" || n == "INBOX" })
	if got := m.subscriptions(mb.ID); !slices.Equal(got, want) {
		t.Errorf("Subscriptions() after Unsubscribe = %q, want %q", got, want)
	}
	// INBOX is one name in any case.
	m.subscribe(mb.ID, "Inbox")
	if got := m.subscriptions(mb.ID); !slices.Contains(got, "INBOX") || slices.Contains(got, "Inbox") {
		t.Errorf("Subscriptions() after Subscribe(Inbox) = %q, want INBOX", got)
	}
	for _, name := range []string{"", "a//b", "/a", "a/", "a*", "b%", "x\x01", strings.Repeat("n", 513), "\xff"} {
		if err := m.s.Subscribe(m.ctx, mb.ID, name); !errors.Is(err, mailstore.ErrInvalidArgument) {
			t.Errorf("Subscribe(%q) = %v, want ErrInvalidArgument", name, err)
		}
	}
	if err := m.s.Subscribe(m.ctx, 9999, "X"); !errors.Is(err, mailstore.ErrMailboxNotFound) {
		t.Errorf("Subscribe(unknown mailbox) = %v, want ErrMailboxNotFound", err)
	}
	if err := m.s.Unsubscribe(m.ctx, 9999, "X"); !errors.Is(err, mailstore.ErrMailboxNotFound) {
		t.Errorf("Unsubscribe(unknown mailbox) = %v, want ErrMailboxNotFound", err)
	}
	if _, err := m.s.Subscriptions(m.ctx, 9999); !errors.Is(err, mailstore.ErrMailboxNotFound) {
		t.Errorf("Subscriptions(unknown mailbox) = %v, want ErrMailboxNotFound", err)
	}
	// Another account's are its own.
	other := m.mailbox(m.pid, "a.example", "v@a.example")
	if got := m.subscriptions(other.ID); !slices.Equal(got, defaultSubscriptions()) {
		t.Errorf("Subscriptions(other account) = %q, want the default folders only", got)
	}
}

// mailSubscriptionsApart checks that folders and subscriptions do not
// follow each other: CREATE does not subscribe (RFC 9051 section 6.3.4),
// DELETE keeps the subscription (section 6.3.7: a server does not remove
// a name unilaterally), RENAME leaves it on the old name (section 6.3.6),
// and a folder made again under a subscribed name is subscribed at once.
func mailSubscriptionsApart(t *testing.T, open Open) {
	m := newMT(t, open)
	mb := m.mailbox(m.pid, "a.example", "u@a.example")
	if _, err := m.s.CreateFolder(m.ctx, mb.ID, "Work"); err != nil {
		t.Fatalf("CreateFolder(Work) = %v", err)
	}
	if got := m.subscriptions(mb.ID); slices.Contains(got, "Work") {
		t.Errorf("Subscriptions() after CreateFolder(Work) = %q, want Work not subscribed", got)
	}
	m.subscribe(mb.ID, "Work")
	if _, err := m.s.CreateFolder(m.ctx, mb.ID, "Work/Sub"); err != nil {
		t.Fatalf("CreateFolder(Work/Sub) = %v", err)
	}
	m.subscribe(mb.ID, "Work/Sub")
	if err := m.s.RenameFolder(m.ctx, mb.ID, "Work", "Projects"); err != nil {
		t.Fatalf("RenameFolder(Work, Projects) = %v", err)
	}
	got := m.subscriptions(mb.ID)
	if !slices.Contains(got, "Work") || !slices.Contains(got, "Work/Sub") || slices.Contains(got, "Projects") || slices.Contains(got, "Projects/Sub") {
		t.Errorf("Subscriptions() after RenameFolder(Work, Projects) = %q, want Work and Work/Sub, not Projects", got)
	}
	if err := m.s.DeleteFolder(m.ctx, mb.ID, "Sent"); err != nil {
		t.Fatalf("DeleteFolder(Sent) = %v", err)
	}
	if got := m.subscriptions(mb.ID); !slices.Contains(got, "Sent") {
		t.Errorf("Subscriptions() after DeleteFolder(Sent) = %q, want Sent still subscribed", got)
	}
	if _, err := m.s.CreateFolder(m.ctx, mb.ID, "Sent"); err != nil {
		t.Fatalf("CreateFolder(Sent) again = %v", err)
	}
	m.unsubscribe(mb.ID, "Projects") // not subscribed: no error, no change
	want := append(defaultSubscriptions(), "Work", "Work/Sub")
	slices.Sort(want)
	if got := m.subscriptions(mb.ID); !slices.Equal(got, want) {
		t.Errorf("Subscriptions() = %q, want %q", got, want)
	}
	// Folders are untouched by subscriptions.
	m.unsubscribe(mb.ID, "Drafts")
	m.folder(mb.ID, "Drafts")
	m.subscribe(mb.ID, "Nowhere")
	if _, err := m.s.Folder(m.ctx, mb.ID, "Nowhere"); !errors.Is(err, mailstore.ErrFolderNotFound) {
		t.Errorf("Folder(Nowhere) after Subscribe = %v, want ErrFolderNotFound", err)
	}
}

// mailSubscriptionLimit checks MaxSubscriptions, also under racing
// subscribes, and that a name already subscribed is no error at the limit.
func mailSubscriptionLimit(t *testing.T, open Open) {
	m := newMT(t, open)
	mb := m.mailbox(m.pid, "a.example", "u@a.example")
	n := mailstore.MaxSubscriptions - len(mailstore.DefaultFolders)
	var wg sync.WaitGroup
	errs := make(chan error, n+10)
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < n+10; i += 4 {
				errs <- m.s.Subscribe(m.ctx, mb.ID, fmt.Sprintf("s%04d", i))
			}
		})
	}
	wg.Wait()
	close(errs)
	var ok, full int
	for err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, mailstore.ErrTooManySubscriptions):
			full++
		default:
			t.Errorf("Subscribe() = %v, want nil or ErrTooManySubscriptions", err)
		}
	}
	if ok != n || full != 10 {
		t.Errorf("racing Subscribe: %d subscribed, %d refused; want %d and 10", ok, full, n)
	}
	if got := len(m.subscriptions(mb.ID)); got != mailstore.MaxSubscriptions {
		t.Errorf("len(Subscriptions()) = %d, want MaxSubscriptions (%d)", got, mailstore.MaxSubscriptions)
	}
	if err := m.s.Subscribe(m.ctx, mb.ID, "INBOX"); err != nil {
		t.Errorf("Subscribe(INBOX) at the limit = %v, want nil (already subscribed)", err)
	}
	m.unsubscribe(mb.ID, "s0000")
	m.subscribe(mb.ID, "again")
	// Folders are not subscriptions: the account can still make folders.
	if _, err := m.s.CreateFolder(m.ctx, mb.ID, "Fresh"); err != nil {
		t.Errorf("CreateFolder() at the subscription limit = %v, want nil", err)
	}
}

// mailSubscriptionsDeletedAccount checks that an account's subscriptions
// go with it (through a dump, the one view of a deleted account's data),
// whether by DeleteMailbox or a forced DeleteDomain.
func mailSubscriptionsDeletedAccount(t *testing.T, open Open) {
	m := newMT(t, open)
	u := m.mailbox(m.pid, "a.example", "u@a.example")
	v := m.mailbox(m.pid, "a.example", "v@a.example")
	m.subscribe(u.ID, "Gone/With/It")
	m.subscribe(v.ID, "Kept")
	if err := m.s.DeleteMailbox(m.ctx, m.pid, "u@a.example"); err != nil {
		t.Fatalf("DeleteMailbox() = %v", err)
	}
	if _, err := m.s.Subscriptions(m.ctx, u.ID); !errors.Is(err, mailstore.ErrMailboxNotFound) {
		t.Errorf("Subscriptions(deleted account) = %v, want ErrMailboxNotFound", err)
	}
	if got := m.dumpedSubscriptions(); len(got[u.ID]) != 0 || !slices.Contains(got[v.ID], "Kept") {
		t.Errorf("dumped subscriptions after DeleteMailbox(u) = %v, want none of u's, v's kept", got)
	}
	// The address again is a new account, with the defaults only.
	u2 := m.mailbox(m.pid, "a.example", "u@a.example")
	if got := m.subscriptions(u2.ID); !slices.Equal(got, defaultSubscriptions()) {
		t.Errorf("Subscriptions(new account, old address) = %q, want the default folders", got)
	}
	if err := m.s.DeleteDomain(m.ctx, m.pid, "a.example", true); err != nil {
		t.Fatalf("DeleteDomain(force) = %v", err)
	}
	if got := m.dumpedSubscriptions(); len(got) != 0 {
		t.Errorf("dumped subscriptions after DeleteDomain = %v, want none", got)
	}
}

// dumpedSubscriptions reads every account's subscriptions from a dump.
func (m *mt) dumpedSubscriptions() map[int64][]string {
	m.t.Helper()
	d, ok := m.s.(mailstore.Dumper)
	if !ok {
		m.t.Fatalf("%T does not implement mailstore.Dumper, which this test reads deleted accounts through", m.s)
	}
	out := map[int64][]string{}
	err := d.Dump(m.ctx, func(r mailstore.Record) error {
		if s, ok := r.(mailstore.SubscriptionRecord); ok {
			out[s.MailboxID] = append(out[s.MailboxID], s.Name)
		}
		return nil
	})
	if err != nil {
		m.t.Fatalf("Dump() = %v", err)
	}
	return out
}
