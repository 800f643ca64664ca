package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// runMail checks the mail plane: delivery, folders, messages, retention.
func runMail(t *testing.T, open Open) {
	t.Run("domain_with_id", func(t *testing.T) { mailDomainWithID(t, open) })
	t.Run("deliver", func(t *testing.T) { mailDeliver(t, open) })
	t.Run("deliver_junk", func(t *testing.T) { mailDeliverJunk(t, open) })
	t.Run("deliver_placement", func(t *testing.T) { mailDeliverPlacement(t, open) })
	t.Run("spam_filter", func(t *testing.T) { controlSpamFilter(t, open) })
	t.Run("deliver_concurrent", func(t *testing.T) { mailDeliverConcurrent(t, open) })
	t.Run("default_folders", func(t *testing.T) { mailDefaultFolders(t, open) })
	t.Run("folders", func(t *testing.T) { mailFolders(t, open) })
	t.Run("subscriptions", func(t *testing.T) { mailSubscriptions(t, open) })
	t.Run("subscriptions_apart", func(t *testing.T) { mailSubscriptionsApart(t, open) })
	t.Run("subscription_limit", func(t *testing.T) { mailSubscriptionLimit(t, open) })
	t.Run("subscriptions_deleted_account", func(t *testing.T) { mailSubscriptionsDeletedAccount(t, open) })
	t.Run("append_many", func(t *testing.T) { mailAppendMany(t, open) })
	t.Run("copy_move_expunge", func(t *testing.T) { mailCopyMoveExpunge(t, open) })
	t.Run("delete_folder", func(t *testing.T) { mailDeleteFolder(t, open) })
	t.Run("concurrent", func(t *testing.T) { mailConcurrent(t, open) })
	t.Run("watch", func(t *testing.T) { mailWatch(t, open) })
	t.Run("changes", func(t *testing.T) { mailChanges(t, open) })
	t.Run("changes_not_found", func(t *testing.T) { mailChangesNotFound(t, open) })
	t.Run("changes_pruned", func(t *testing.T) { mailChangesPruned(t, open) })
	t.Run("message_modseq", func(t *testing.T) { mailMessageModSeq(t, open) })
	t.Run("changes_concurrent", func(t *testing.T) { mailChangesConcurrent(t, open) })
	t.Run("delete_mailbox", func(t *testing.T) { mailDeleteMailbox(t, open) })
	t.Run("isolation", func(t *testing.T) { mailIsolation(t, open) })
	t.Run("bodies", func(t *testing.T) { mailBodies(t, open) })
	t.Run("summaries", func(t *testing.T) { mailSummaries(t, open) })
	t.Run("record_login", func(t *testing.T) { mailRecordLogin(t, open) })
	t.Run("context_done", func(t *testing.T) { mailContextDone(t, open) })
}

var (
	mailNow  = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	mailPlan = mailstore.Plan{Name: "small", QuotaMB: 1, RetentionDays: 30, TransferMonthlyMB: 100}
)

// mt is one mail test's store: a partner, domain "a.example" with the
// mailboxes asked for, and helpers that fail the test on error.
type mt struct {
	*ctl
	pid int64
}

func newMT(t *testing.T, open Open) *mt {
	t.Helper()
	c := newCtl(t, open)
	p := c.partner("p")
	c.domain(p.ID, "a.example", mailPlan, 0, 0)
	return &mt{ctl: c, pid: p.ID}
}

func (m *mt) deliver(body string, at time.Time, ids ...int64) mailstore.DeliveryResult {
	m.t.Helper()
	r, err := m.s.Deliver(m.ctx, mailstore.Delivery{Body: []byte(body), ReceivedAt: at, MailboxIDs: ids})
	if err != nil {
		m.t.Fatalf("Deliver(%v) = %v, want nil", ids, err)
	}
	return r
}

func (m *mt) folder(mb int64, name string) mailstore.Folder {
	m.t.Helper()
	f, err := m.s.Folder(m.ctx, mb, name)
	if err != nil {
		m.t.Fatalf("Folder(%d, %q) = %v, want nil", mb, name, err)
	}
	return f
}

func (m *mt) messages(mb, folderID int64) []mailstore.Message {
	m.t.Helper()
	ms, err := m.s.Messages(m.ctx, mb, folderID)
	if err != nil {
		m.t.Fatalf("Messages(%d, %d) = %v, want nil", mb, folderID, err)
	}
	return ms
}

func (m *mt) body(mb, folderID int64, uid uint32) string {
	m.t.Helper()
	b, err := m.s.Body(m.ctx, mb, folderID, uid)
	if err != nil {
		m.t.Fatalf("Body(%d, %d, %d) = %v, want nil", mb, folderID, uid, err)
	}
	return string(b)
}

func uidsOf(ms []mailstore.Message) []uint32 {
	out := []uint32{}
	for _, m := range ms {
		out = append(out, m.UID)
	}
	return out
}

// invariants checks, through the public interface only, that every
// counter equals what it counts: each folder's messages, unseen and size;
// each mailbox's message count and used bytes (the sum of its messages'
// sizes); the domain's, over its mailboxes.
func (m *mt) invariants(domain string) {
	m.t.Helper()
	d := m.getDomain(m.pid, domain)
	mbs, _ := m.mailboxes(m.pid, d.ID, mailstore.Page{})
	var dMsgs, dBytes int64
	for _, mb := range mbs {
		full, dom, err := m.s.MailboxByEmail(m.ctx, mb.Email)
		if err != nil {
			m.t.Fatalf("MailboxByEmail(%q) = %v, want nil", mb.Email, err)
		}
		if dom.ID != d.ID {
			m.t.Errorf("MailboxByEmail(%q) domain = %d, want %d", mb.Email, dom.ID, d.ID)
		}
		folders, err := m.s.Folders(m.ctx, mb.ID)
		if err != nil {
			m.t.Fatalf("Folders(%d) = %v, want nil", mb.ID, err)
		}
		var msgs, size int64
		for _, f := range folders {
			var fm, fu, fs int64
			for _, msg := range m.messages(mb.ID, f.ID) {
				fm++
				fs += msg.Size
				if !slices.Contains(msg.Flags, `\Seen`) {
					fu++
				}
				if msg.UID >= f.UIDNext {
					m.t.Errorf("folder %q: message UID %d >= UIDNext %d", f.Name, msg.UID, f.UIDNext)
				}
			}
			if f.Messages != fm || f.Unseen != fu || f.Size != fs {
				m.t.Errorf("%s folder %q counters = %d messages, %d unseen, %d bytes; messages say %d, %d, %d",
					mb.Email, f.Name, f.Messages, f.Unseen, f.Size, fm, fu, fs)
			}
			msgs += fm
			size += fs
		}
		if full.MessageCount != msgs || full.UsedBytes != size {
			m.t.Errorf("%s counters = %d messages, %d bytes; folders hold %d, %d", mb.Email, full.MessageCount, full.UsedBytes, msgs, size)
		}
		dMsgs += msgs
		dBytes += size
	}
	d = m.getDomain(m.pid, domain)
	if d.MessageCount != dMsgs || d.UsedBytes != dBytes {
		m.t.Errorf("domain %s counters = %d messages, %d bytes; mailboxes hold %d, %d", domain, d.MessageCount, d.UsedBytes, dMsgs, dBytes)
	}
}

func (m *mt) transferIn(domain string, month string) int64 {
	m.t.Helper()
	u, err := m.s.DomainUsage(m.ctx, m.pid, domain, month)
	if err != nil {
		m.t.Fatalf("DomainUsage(%q) = %v, want nil", domain, err)
	}
	return u.Transfer.InBytes
}

func mailDeliver(t *testing.T, open Open) {
	m := newMT(t, open)
	m.domain(m.pid, "b.example", mailPlan, 0, 0)
	a1 := m.mailbox(m.pid, "a.example", "one@a.example")
	a2 := m.mailbox(m.pid, "a.example", "two@a.example")
	b1 := m.mailbox(m.pid, "b.example", "one@b.example")
	body := "Subject: hi\r\n\r\nhello\r\n"
	at := time.Date(2026, 11, 22, 10, 30, 0, 999, time.FixedZone("X", 3600))
	res := m.deliver(body, at, a1.ID, a2.ID, b1.ID, a1.ID, 9999)
	if want := []int64{a1.ID, a2.ID, b1.ID}; !slices.Equal(res.Delivered, want) {
		t.Errorf("Deliver().Delivered = %v, want %v", res.Delivered, want)
	}
	if want := []int64{9999}; !slices.Equal(res.Skipped, want) {
		t.Errorf("Deliver().Skipped = %v, want %v", res.Skipped, want)
	}
	var blob int64
	for _, id := range res.Delivered {
		inbox := m.folder(id, "INBOX")
		ms := m.messages(id, inbox.ID)
		if len(ms) != 1 {
			t.Fatalf("Messages(%d, INBOX) = %d messages, want 1", id, len(ms))
		}
		msg := ms[0]
		if msg.UID != 1 || msg.Size != int64(len(body)) || !msg.ReceivedAt.Equal(at.Truncate(time.Second)) || len(msg.Flags) != 0 || msg.FolderID != inbox.ID {
			t.Errorf("message in %d = %+v, want uid 1, size %d, received %v, no flags", id, msg, len(body), at.Truncate(time.Second))
		}
		if msg.ReceivedAt.Location() != time.UTC {
			t.Errorf("message ReceivedAt zone = %v, want UTC", msg.ReceivedAt.Location())
		}
		if blob == 0 {
			blob = msg.BlobID
		} else if msg.BlobID != blob {
			t.Errorf("message in %d BlobID = %d, want %d (one body for all recipients)", id, msg.BlobID, blob)
		}
		if got := m.body(id, inbox.ID, msg.UID); got != body {
			t.Errorf("Body() = %q, want %q", got, body)
		}
		if inbox.UIDNext != 2 || inbox.Messages != 1 || inbox.Unseen != 1 || inbox.Size != int64(len(body)) {
			t.Errorf("INBOX of %d = %+v, want UIDNext 2, 1 message, 1 unseen, %d bytes", id, inbox, len(body))
		}
	}
	m.invariants("a.example")
	m.invariants("b.example")
	if d := m.getDomain(m.pid, "a.example"); d.MessageCount != 2 || d.UsedBytes != 2*int64(len(body)) {
		t.Errorf("domain a counters = %d, %d; want 2, %d", d.MessageCount, d.UsedBytes, 2*len(body))
	}
	// Inbound transfer counts once per domain per message.
	if got := m.transferIn("a.example", "2026-11"); got != int64(len(body)) {
		t.Errorf("a.example transfer in = %d, want %d", got, len(body))
	}
	if got := m.transferIn("b.example", "2026-11"); got != int64(len(body)) {
		t.Errorf("b.example transfer in = %d, want %d", got, len(body))
	}
	// A later message takes the next UID; a message in another month counts
	// there.
	m.deliver("second", at.AddDate(0, 1, 0), a1.ID)
	if got := m.transferIn("a.example", "2026-12"); got != int64(len("second")) {
		t.Errorf("a.example December transfer in = %d, want %d", got, len("second"))
	}
	inbox := m.folder(a1.ID, "INBOX")
	if got := uidsOf(m.messages(a1.ID, inbox.ID)); !slices.Equal(got, []uint32{1, 2}) {
		t.Errorf("INBOX UIDs = %v, want [1 2]", got)
	}
	m.invariants("a.example")

	// Only unknown recipients: nothing stored, nothing counted.
	res = m.deliver("nobody", mailNow, 9998)
	if len(res.Delivered) != 0 || !slices.Equal(res.Skipped, []int64{9998}) {
		t.Errorf("Deliver(unknown) = %+v, want all skipped", res)
	}
	if _, err := m.s.Deliver(m.ctx, mailstore.Delivery{Body: []byte("x"), MailboxIDs: []int64{a1.ID}}); !errors.Is(err, mailstore.ErrInvalidArgument) {
		t.Errorf("Deliver(no ReceivedAt) = %v, want ErrInvalidArgument", err)
	}
}

func mailDeliverConcurrent(t *testing.T, open Open) {
	m := newMT(t, open)
	var ids []int64
	for i := range 4 {
		ids = append(ids, m.mailbox(m.pid, "a.example", fmt.Sprintf("u%d@a.example", i)).ID)
	}
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			_, err := m.s.Deliver(m.ctx, mailstore.Delivery{
				Body: bytes.Repeat([]byte{'x'}, 100+i), ReceivedAt: mailNow, MailboxIDs: []int64{ids[i%4], ids[(i+1)%4]},
			})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent Deliver() = %v, want nil", err)
		}
	}
	var total int
	for _, id := range ids {
		inbox := m.folder(id, "INBOX")
		ms := m.messages(id, inbox.ID)
		total += len(ms)
		for i, msg := range ms {
			if msg.UID != uint32(i+1) {
				t.Errorf("mailbox %d message %d UID = %d, want %d", id, i, msg.UID, i+1)
			}
		}
	}
	if total != 2*n {
		t.Errorf("messages delivered = %d, want %d", total, 2*n)
	}
	m.invariants("a.example")
	var want int64
	for i := range n {
		want += int64(100 + i)
	}
	if got := m.transferIn("a.example", "2026-11"); got != want {
		t.Errorf("transfer in = %d, want %d", got, want)
	}
}

func mailDefaultFolders(t *testing.T, open Open) {
	m := newMT(t, open)
	mb := m.mailbox(m.pid, "a.example", "u@a.example")
	fs, err := m.s.Folders(m.ctx, mb.ID)
	if err != nil {
		t.Fatalf("Folders() = %v, want nil", err)
	}
	got := map[string]string{}
	validity := map[uint32]bool{}
	for _, f := range fs {
		got[f.Name] = f.SpecialUse
		if f.UIDNext != 1 || f.UIDValidity == 0 || f.MailboxID != mb.ID || f.Messages != 0 {
			t.Errorf("default folder %+v, want UIDNext 1, UIDValidity set, empty", f)
		}
		validity[f.UIDValidity] = true
	}
	if len(got) != len(mailstore.DefaultFolders) {
		t.Errorf("Folders() = %v, want %v", got, mailstore.DefaultFolders)
	}
	for _, df := range mailstore.DefaultFolders {
		if su, ok := got[df[0]]; !ok || su != df[1] {
			t.Errorf("folder %q special use = %q (present %v), want %q", df[0], su, ok, df[1])
		}
	}
	names := make([]string, 0, len(fs))
	for _, f := range fs {
		names = append(names, f.Name)
	}
	if !slices.IsSorted(names) {
		t.Errorf("Folders() names = %v, want sorted", names)
	}
	for _, name := range []string{"INBOX", "inbox", "Inbox"} {
		if f := m.folder(mb.ID, name); f.Name != "INBOX" {
			t.Errorf("Folder(%q).Name = %q, want INBOX", name, f.Name)
		}
	}
	if _, err := m.s.Folder(m.ctx, mb.ID, "sent"); !ctlIs(err, mailstore.ErrFolderNotFound) || !errors.Is(err, mailstore.ErrNotFound) {
		t.Errorf("Folder(sent) = %v, want ErrFolderNotFound (names other than INBOX are exact)", err)
	}
	if _, err := m.s.Folders(m.ctx, 9999); !errors.Is(err, mailstore.ErrMailboxNotFound) {
		t.Errorf("Folders(unknown) = %v, want ErrMailboxNotFound", err)
	}
}

func mailFolders(t *testing.T, open Open) {
	m := newMT(t, open)
	mb := m.mailbox(m.pid, "a.example", "u@a.example")
	work, err := m.s.CreateFolder(m.ctx, mb.ID, "Work")
	if err != nil {
		t.Fatalf("CreateFolder(Work) = %v", err)
	}
	if work.Name != "Work" || work.UIDNext != 1 || work.UIDValidity == 0 || work.SpecialUse != "" {
		t.Errorf("CreateFolder(Work) = %+v", work)
	}
	sub, err := m.s.CreateFolder(m.ctx, mb.ID, "Work/Sub")
	if err != nil {
		t.Fatalf("CreateFolder(Work/Sub) = %v", err)
	}
	if _, err := m.s.CreateFolder(m.ctx, mb.ID, "Workshop"); err != nil {
		t.Fatalf("CreateFolder(Workshop) = %v", err)
	}
	for _, name := range []string{"Work", "INBOX", "inbox", "Sent"} {
		if _, err := m.s.CreateFolder(m.ctx, mb.ID, name); !errors.Is(err, mailstore.ErrFolderExists) {
			t.Errorf("CreateFolder(%q) = %v, want ErrFolderExists", name, err)
		}
	}
	if _, err := m.s.CreateFolder(m.ctx, 9999, "X"); !errors.Is(err, mailstore.ErrMailboxNotFound) {
		t.Errorf("CreateFolder(unknown mailbox) = %v, want ErrMailboxNotFound", err)
	}
	// A message in the child survives the rename with its UID.
	if _, err := m.s.Append(m.ctx, mb.ID, sub.ID, []byte("kept"), nil, mailNow); err != nil {
		t.Fatalf("Append() = %v", err)
	}
	if err := m.s.RenameFolder(m.ctx, mb.ID, "Work", "Projects"); err != nil {
		t.Fatalf("RenameFolder(Work, Projects) = %v", err)
	}
	for _, name := range []string{"Work", "Work/Sub"} {
		if _, err := m.s.Folder(m.ctx, mb.ID, name); !errors.Is(err, mailstore.ErrFolderNotFound) {
			t.Errorf("Folder(%q) after rename = %v, want ErrFolderNotFound", name, err)
		}
	}
	p := m.folder(mb.ID, "Projects")
	ps := m.folder(mb.ID, "Projects/Sub")
	if p.ID != work.ID || p.UIDValidity != work.UIDValidity || ps.ID != sub.ID || ps.Messages != 1 {
		t.Errorf("renamed folders = %+v, %+v; want ids and UIDValidity kept, message kept", p, ps)
	}
	if got := m.body(mb.ID, ps.ID, 1); got != "kept" {
		t.Errorf("Body after rename = %q, want kept", got)
	}
	if m.folder(mb.ID, "Workshop").Name != "Workshop" {
		t.Errorf("Workshop renamed with Work, want untouched")
	}
	tests := []struct {
		name     string
		old, new string
		want     error
	}{
		{"inbox", "INBOX", "Old", mailstore.ErrFolderProtected},
		{"inbox any case", "inbox", "Old", mailstore.ErrFolderProtected},
		{"taken", "Projects", "Sent", mailstore.ErrFolderExists},
		{"to inbox", "Projects", "INBOX", mailstore.ErrFolderExists},
		{"child taken", "Workshop", "Projects/Sub", mailstore.ErrFolderExists},
		{"missing", "Nope", "Other", mailstore.ErrFolderNotFound},
		{"bad name", "Projects", "a//b", mailstore.ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := m.s.RenameFolder(m.ctx, mb.ID, tt.old, tt.new); !errors.Is(err, tt.want) {
				t.Errorf("RenameFolder(%q, %q) = %v, want %v", tt.old, tt.new, err, tt.want)
			}
		})
	}
	// A failed rename changes nothing.
	if m.folder(mb.ID, "Projects/Sub").ID != sub.ID {
		t.Errorf("Projects/Sub moved by a failed rename")
	}
	// Special-use folders can be renamed and keep their attribute.
	if err := m.s.RenameFolder(m.ctx, mb.ID, "Archive", "Old mail"); err != nil {
		t.Fatalf("RenameFolder(Archive) = %v", err)
	}
	if f := m.folder(mb.ID, "Old mail"); f.SpecialUse != `\Archive` {
		t.Errorf("renamed Archive special use = %q, want \\Archive", f.SpecialUse)
	}
	// A folder made again under a former name has a new UIDValidity.
	again, err := m.s.CreateFolder(m.ctx, mb.ID, "Work")
	if err != nil {
		t.Fatalf("CreateFolder(Work) again = %v", err)
	}
	if again.UIDValidity == work.UIDValidity {
		t.Errorf("recreated Work UIDValidity = %d, the old folder's", again.UIDValidity)
	}

	for _, name := range []string{"INBOX", "inbox"} {
		if err := m.s.DeleteFolder(m.ctx, mb.ID, name); !errors.Is(err, mailstore.ErrFolderProtected) {
			t.Errorf("DeleteFolder(%q) = %v, want ErrFolderProtected", name, err)
		}
	}
	if err := m.s.DeleteFolder(m.ctx, mb.ID, "Nope"); !errors.Is(err, mailstore.ErrFolderNotFound) {
		t.Errorf("DeleteFolder(missing) = %v, want ErrFolderNotFound", err)
	}
	// Deleting a parent leaves its children.
	if err := m.s.DeleteFolder(m.ctx, mb.ID, "Projects"); err != nil {
		t.Fatalf("DeleteFolder(Projects) = %v", err)
	}
	if _, err := m.s.Folder(m.ctx, mb.ID, "Projects"); !errors.Is(err, mailstore.ErrFolderNotFound) {
		t.Errorf("Folder(Projects) after delete = %v, want ErrFolderNotFound", err)
	}
	m.folder(mb.ID, "Projects/Sub")
	m.invariants("a.example")
}

// mailFolderLimit fills an account to MaxFolders: one more folder is
// ErrTooManyFolders until one is deleted; renames and other accounts do
// not count.
func mailFolderLimit(t *testing.T, open Open) {
	m := newMT(t, open)
	mb := m.mailbox(m.pid, "a.example", "u@a.example")
	other := m.mailbox(m.pid, "a.example", "v@a.example")
	for i := len(mailstore.DefaultFolders); i < mailstore.MaxFolders; i++ {
		if _, err := m.s.CreateFolder(m.ctx, mb.ID, fmt.Sprintf("f%d", i)); err != nil {
			t.Fatalf("CreateFolder(f%d) = %v, want nil below MaxFolders", i, err)
		}
	}
	if _, err := m.s.CreateFolder(m.ctx, mb.ID, "one-more"); !errors.Is(err, mailstore.ErrTooManyFolders) {
		t.Errorf("CreateFolder() at MaxFolders = %v, want ErrTooManyFolders", err)
	}
	if _, err := m.s.CreateFolder(m.ctx, other.ID, "one-more"); err != nil {
		t.Errorf("CreateFolder() in another account = %v, want nil", err)
	}
	if err := m.s.RenameFolder(m.ctx, mb.ID, "f10", "renamed"); err != nil {
		t.Errorf("RenameFolder() at MaxFolders = %v, want nil", err)
	}
	if err := m.s.DeleteFolder(m.ctx, mb.ID, "renamed"); err != nil {
		t.Fatalf("DeleteFolder() = %v", err)
	}
	if _, err := m.s.CreateFolder(m.ctx, mb.ID, "one-more"); err != nil {
		t.Errorf("CreateFolder() after a delete = %v, want nil", err)
	}
	if _, err := m.s.CreateFolder(m.ctx, mb.ID, "two-more"); !errors.Is(err, mailstore.ErrTooManyFolders) {
		t.Errorf("CreateFolder() at MaxFolders again = %v, want ErrTooManyFolders", err)
	}
	if got, err := m.s.Folders(m.ctx, mb.ID); err != nil || len(got) != mailstore.MaxFolders {
		t.Errorf("Folders() = %d folders, %v; want %d", len(got), err, mailstore.MaxFolders)
	}
}

func mailFolderNames(t *testing.T, open Open) {
	m := newMT(t, open)
	mb := m.mailbox(m.pid, "a.example", "u@a.example")
	for _, name := range []string{"", "/a", "a/", "a//b", "a*", "b%", "tab\there", "bad\xff"} {
		if _, err := m.s.CreateFolder(m.ctx, mb.ID, name); !errors.Is(err, mailstore.ErrInvalidArgument) {
			t.Errorf("CreateFolder(%q) = %v, want ErrInvalidArgument", name, err)
		}
	}
	for _, name := range []string{"Ünïcödé", "a/b/c", "with space", "INBOX/child"} {
		if _, err := m.s.CreateFolder(m.ctx, mb.ID, name); err != nil {
			t.Errorf("CreateFolder(%q) = %v, want nil", name, err)
		}
	}
}

func mailAppendQuota(t *testing.T, open Open) {
	m := newMT(t, open)
	mb := m.mailbox(m.pid, "a.example", "u@a.example")
	drafts := m.folder(mb.ID, "Drafts")
	big := bytes.Repeat([]byte{'x'}, 600*1024)
	msg, err := m.s.Append(m.ctx, mb.ID, drafts.ID, big, []string{`\seen`, `\Draft`, `\Recent`, "$Label", "$label", `\Seen`}, mailNow.Add(time.Second/2))
	if err != nil {
		t.Fatalf("Append() = %v, want nil", err)
	}
	if want := []string{`\Seen`, `\Draft`, "$Label"}; !slices.Equal(msg.Flags, want) {
		t.Errorf("Append() flags = %q, want %q", msg.Flags, want)
	}
	if msg.UID != 1 || msg.Size != int64(len(big)) || msg.FolderID != drafts.ID || !msg.ReceivedAt.Equal(mailNow) {
		t.Errorf("Append() = %+v", msg)
	}
	if f := m.folder(mb.ID, "Drafts"); f.Unseen != 0 || f.Messages != 1 || f.UIDNext != 2 {
		t.Errorf("Drafts = %+v, want 1 message, 0 unseen, UIDNext 2", f)
	}
	m.invariants("a.example")
	// Transfer counts mail received, not APPEND.
	if got := m.transferIn("a.example", "2026-11"); got != 0 {
		t.Errorf("transfer in after Append = %d, want 0", got)
	}
	if _, err := m.s.Append(m.ctx, mb.ID, drafts.ID, big, nil, mailNow); !errors.Is(err, mailstore.ErrOverQuota) {
		t.Errorf("Append(over quota) = %v, want ErrOverQuota", err)
	}
	// Exactly up to the quota is fine; then nothing more fits.
	rest := mailstore.MB - int64(len(big))
	if _, err := m.s.Append(m.ctx, mb.ID, drafts.ID, make([]byte, rest), nil, mailNow); err != nil {
		t.Errorf("Append(to the quota) = %v, want nil", err)
	}
	if _, err := m.s.Append(m.ctx, mb.ID, drafts.ID, []byte("x"), nil, mailNow); !errors.Is(err, mailstore.ErrOverQuota) {
		t.Errorf("Append(at quota) = %v, want ErrOverQuota", err)
	}
	// Nor does a delivery, once the mailbox is at its quota (Mail.Deliver).
	if _, err := m.s.Deliver(m.ctx, mailstore.Delivery{Body: []byte("x"), ReceivedAt: mailNow, MailboxIDs: []int64{mb.ID}}); !errors.Is(err, mailstore.ErrOverQuota) {
		t.Errorf("Deliver(at quota) = %v, want ErrOverQuota", err)
	}
	m.invariants("a.example")
	if _, err := m.s.Append(m.ctx, mb.ID, 9999, []byte("x"), nil, mailNow); !errors.Is(err, mailstore.ErrFolderNotFound) {
		t.Errorf("Append(unknown folder) = %v, want ErrFolderNotFound", err)
	}
}

// mailAppendMany: AppendMany adds all the messages under consecutive
// UIDs, or, over quota, none of them.
func mailAppendMany(t *testing.T, open Open) {
	m := newMT(t, open)
	mb := m.mailbox(m.pid, "a.example", "u@a.example")
	drafts := m.folder(mb.ID, "Drafts")
	msgs := []mailstore.AppendMessage{
		{Body: []byte("Subject: one\r\n\r\n1\r\n"), Flags: []string{`\seen`, "$One"}, ReceivedAt: mailNow},
		{Body: []byte("Subject: two\r\n\r\n2\r\n"), ReceivedAt: mailNow.Add(time.Hour)},
	}
	got, err := m.s.AppendMany(m.ctx, mb.ID, drafts.ID, msgs)
	if err != nil {
		t.Fatalf("AppendMany() = %v", err)
	}
	if len(got) != 2 || got[0].UID != 1 || got[1].UID != 2 || !slices.Equal(got[0].Flags, []string{`\Seen`, "$One"}) ||
		got[1].Size != int64(len(msgs[1].Body)) || !got[1].ReceivedAt.Equal(mailNow.Add(time.Hour)) || got[0].BlobID == got[1].BlobID {
		t.Errorf("AppendMany() = %+v", got)
	}
	if f := m.folder(mb.ID, "Drafts"); f.Messages != 2 || f.Unseen != 1 || f.UIDNext != 3 {
		t.Errorf("Drafts = %+v, want 2 messages, 1 unseen, UIDNext 3", f)
	}
	var bodies []string
	if err := m.s.Bodies(m.ctx, mb.ID, drafts.ID, []uint32{1, 2}, func(_ uint32, b []byte) error {
		bodies = append(bodies, string(b))
		return nil
	}); err != nil || len(bodies) != 2 || bodies[1] != string(msgs[1].Body) {
		t.Errorf("Bodies() = %q, %v", bodies, err)
	}
	m.invariants("a.example")
	// Each fits the quota alone, not all together: nothing is added.
	half := bytes.Repeat([]byte{'x'}, int(mailstore.MB/2))
	over := []mailstore.AppendMessage{{Body: half, ReceivedAt: mailNow}, {Body: half, ReceivedAt: mailNow}}
	if _, err := m.s.AppendMany(m.ctx, mb.ID, drafts.ID, over); !errors.Is(err, mailstore.ErrOverQuota) {
		t.Errorf("AppendMany(over quota) = %v, want ErrOverQuota", err)
	}
	if f := m.folder(mb.ID, "Drafts"); f.Messages != 2 || f.UIDNext != 3 {
		t.Errorf("Drafts after a refused AppendMany = %+v, want it unchanged", f)
	}
	m.invariants("a.example")
	if _, err := m.s.AppendMany(m.ctx, mb.ID, drafts.ID, []mailstore.AppendMessage{{Body: []byte("x")}}); !errors.Is(err, mailstore.ErrInvalidArgument) {
		t.Errorf("AppendMany(no time) = %v, want ErrInvalidArgument", err)
	}
}

func mailFlags(t *testing.T, open Open) {
	m := newMT(t, open)
	mb := m.mailbox(m.pid, "a.example", "u@a.example")
	for range 3 {
		m.deliver("msg", mailNow, mb.ID)
	}
	inbox := m.folder(mb.ID, "INBOX")
	set := func(uids []uint32, op mailstore.FlagOp, flags ...string) []mailstore.Message {
		t.Helper()
		ms, err := m.s.SetFlags(m.ctx, mb.ID, inbox.ID, uids, op, flags)
		if err != nil {
			t.Fatalf("SetFlags(%v, %v, %q) = %v", uids, op, flags, err)
		}
		m.invariants("a.example")
		return ms
	}
	flagsOf := func() map[uint32][]string {
		out := map[uint32][]string{}
		for _, msg := range m.messages(mb.ID, inbox.ID) {
			out[msg.UID] = msg.Flags
		}
		return out
	}
	changed := set([]uint32{1, 2, 77}, mailstore.FlagsAdd, `\Seen`, "Work")
	if len(changed) != 2 || changed[0].UID != 1 || !slices.Equal(changed[1].Flags, []string{`\Seen`, "Work"}) {
		t.Errorf("SetFlags(add) = %+v, want uids 1, 2 with [\\Seen Work]", changed)
	}
	if f := m.folder(mb.ID, "INBOX"); f.Unseen != 1 {
		t.Errorf("Unseen after \\Seen on 2 of 3 = %d, want 1", f.Unseen)
	}
	if got := set([]uint32{1}, mailstore.FlagsAdd, `\seen`); len(got) != 0 {
		t.Errorf("SetFlags(add present flag) = %+v, want nothing changed", got)
	}
	set([]uint32{1}, mailstore.FlagsRemove, `\SEEN`)
	set([]uint32{3}, mailstore.FlagsReplace, `\Flagged`, `\Recent`, `\Deleted`)
	got := flagsOf()
	want := map[uint32][]string{1: {"Work"}, 2: {`\Seen`, "Work"}, 3: {`\Flagged`, `\Deleted`}}
	for uid, w := range want {
		if !slices.Equal(got[uid], w) {
			t.Errorf("flags of %d = %q, want %q", uid, got[uid], w)
		}
	}
	set([]uint32{1, 2, 3}, mailstore.FlagsReplace)
	for uid, f := range flagsOf() {
		if len(f) != 0 {
			t.Errorf("flags of %d after replace with none = %q, want none", uid, f)
		}
	}
	if f := m.folder(mb.ID, "INBOX"); f.Unseen != 3 {
		t.Errorf("Unseen = %d, want 3", f.Unseen)
	}
	other := m.mailbox(m.pid, "a.example", "v@a.example")
	if _, err := m.s.SetFlags(m.ctx, other.ID, inbox.ID, []uint32{1}, mailstore.FlagsAdd, []string{`\Seen`}); !errors.Is(err, mailstore.ErrFolderNotFound) {
		t.Errorf("SetFlags(another's folder) = %v, want ErrFolderNotFound", err)
	}
}

func mailCopyMoveExpunge(t *testing.T, open Open) {
	m := newMT(t, open)
	mb := m.mailbox(m.pid, "a.example", "u@a.example")
	for i := range 4 {
		m.deliver(fmt.Sprintf("message %d", i), mailNow.Add(time.Duration(i)*time.Minute), mb.ID)
	}
	inbox := m.folder(mb.ID, "INBOX")
	archive := m.folder(mb.ID, "Archive")
	trash := m.folder(mb.ID, "Trash")
	orig := m.messages(mb.ID, inbox.ID)

	// Copy shares bodies and counts in full.
	newUIDs, err := m.s.Copy(m.ctx, mb.ID, inbox.ID, []uint32{3, 1}, archive.ID)
	if err != nil {
		t.Fatalf("Copy() = %v", err)
	}
	if !slices.Equal(newUIDs, []uint32{1, 2}) {
		t.Errorf("Copy() = %v, want [1 2]", newUIDs)
	}
	arch := m.messages(mb.ID, archive.ID)
	if len(arch) != 2 || arch[0].BlobID != orig[2].BlobID || arch[1].BlobID != orig[0].BlobID || !arch[0].ReceivedAt.Equal(orig[2].ReceivedAt) {
		t.Errorf("copies = %+v, want bodies and times of uids 3, 1", arch)
	}
	if got := m.body(mb.ID, archive.ID, 1); got != "message 2" {
		t.Errorf("Body(copy) = %q, want %q", got, "message 2")
	}
	m.invariants("a.example")
	if _, err := m.s.Copy(m.ctx, mb.ID, inbox.ID, []uint32{1, 99}, archive.ID); !errors.Is(err, mailstore.ErrMessageNotFound) {
		t.Errorf("Copy(missing uid) = %v, want ErrMessageNotFound", err)
	}
	if got := len(m.messages(mb.ID, archive.ID)); got != 2 {
		t.Errorf("Archive after failed copy has %d messages, want 2", got)
	}

	// Move keeps used bytes, flags and time; the source loses the UIDs.
	before := m.getMailbox(m.pid, "u@a.example")
	if _, err := m.s.SetFlags(m.ctx, mb.ID, inbox.ID, []uint32{2}, mailstore.FlagsAdd, []string{`\Seen`}); err != nil {
		t.Fatal(err)
	}
	moved, err := m.s.Move(m.ctx, mb.ID, inbox.ID, []uint32{2, 4}, trash.ID)
	if err != nil {
		t.Fatalf("Move() = %v", err)
	}
	if !slices.Equal(moved, []uint32{1, 2}) {
		t.Errorf("Move() = %v, want [1 2]", moved)
	}
	if got := uidsOf(m.messages(mb.ID, inbox.ID)); !slices.Equal(got, []uint32{1, 3}) {
		t.Errorf("INBOX after move = %v, want [1 3]", got)
	}
	tr := m.messages(mb.ID, trash.ID)
	if len(tr) != 2 || !slices.Equal(tr[0].Flags, []string{`\Seen`}) || tr[1].BlobID != orig[3].BlobID {
		t.Errorf("Trash after move = %+v", tr)
	}
	after := m.getMailbox(m.pid, "u@a.example")
	if after.UsedBytes != before.UsedBytes || after.MessageCount != before.MessageCount {
		t.Errorf("Move changed usage %d/%d -> %d/%d", before.UsedBytes, before.MessageCount, after.UsedBytes, after.MessageCount)
	}
	if f := m.folder(mb.ID, "INBOX"); f.UIDNext != 5 {
		t.Errorf("INBOX UIDNext = %d, want 5 (UIDs are never reused)", f.UIDNext)
	}
	m.invariants("a.example")

	// Expunge nil: only \Deleted. Expunge with UIDs: those.
	if _, err := m.s.SetFlags(m.ctx, mb.ID, trash.ID, []uint32{2}, mailstore.FlagsAdd, []string{`\Deleted`}); err != nil {
		t.Fatal(err)
	}
	gone, err := m.s.Expunge(m.ctx, mb.ID, trash.ID, nil)
	if err != nil || !slices.Equal(gone, []uint32{2}) {
		t.Errorf("Expunge(nil) = %v, %v; want [2]", gone, err)
	}
	gone, err = m.s.Expunge(m.ctx, mb.ID, inbox.ID, []uint32{1, 3, 99})
	if err != nil || !slices.Equal(gone, []uint32{1, 3}) {
		t.Errorf("Expunge([1 3 99]) = %v, %v; want [1 3]", gone, err)
	}
	if gone, err = m.s.Expunge(m.ctx, mb.ID, inbox.ID, []uint32{}); err != nil || len(gone) != 0 {
		t.Errorf("Expunge([]) = %v, %v; want nothing", gone, err)
	}
	// The copies still read their shared bodies.
	if got := m.body(mb.ID, archive.ID, 2); got != "message 0" {
		t.Errorf("Body(copy after original expunged) = %q, want %q", got, "message 0")
	}
	if _, err := m.s.Body(m.ctx, mb.ID, inbox.ID, 1); !errors.Is(err, mailstore.ErrMessageNotFound) {
		t.Errorf("Body(expunged) = %v, want ErrMessageNotFound", err)
	}
	m.invariants("a.example")
	gone, err = m.s.Expunge(m.ctx, mb.ID, archive.ID, []uint32{1, 2})
	if err != nil || len(gone) != 2 {
		t.Errorf("Expunge(archive) = %v, %v", gone, err)
	}
	gone, err = m.s.Expunge(m.ctx, mb.ID, trash.ID, []uint32{1})
	if err != nil || len(gone) != 1 {
		t.Errorf("Expunge(trash) = %v, %v", gone, err)
	}
	if u := m.getMailbox(m.pid, "u@a.example"); u.UsedBytes != 0 || u.MessageCount != 0 {
		t.Errorf("usage after expunging all = %d bytes, %d messages, want 0", u.UsedBytes, u.MessageCount)
	}
	m.invariants("a.example")

	// Copy over quota copies nothing.
	big := bytes.Repeat([]byte{'y'}, 700*1024)
	if _, err := m.s.Append(m.ctx, mb.ID, inbox.ID, big, nil, mailNow); err != nil {
		t.Fatal(err)
	}
	if _, err := m.s.Copy(m.ctx, mb.ID, inbox.ID, []uint32{5}, archive.ID); !errors.Is(err, mailstore.ErrOverQuota) {
		t.Errorf("Copy(over quota) = %v, want ErrOverQuota", err)
	}
	if _, err := m.s.Move(m.ctx, mb.ID, inbox.ID, []uint32{5}, archive.ID); err != nil {
		t.Errorf("Move(at 70%% of quota) = %v, want nil (a move adds nothing)", err)
	}
	m.invariants("a.example")
	other := m.mailbox(m.pid, "a.example", "v@a.example")
	if _, err := m.s.Copy(m.ctx, mb.ID, archive.ID, []uint32{3}, m.folder(other.ID, "INBOX").ID); !errors.Is(err, mailstore.ErrFolderNotFound) {
		t.Errorf("Copy(to another account) = %v, want ErrFolderNotFound", err)
	}
}

func mailDeleteFolder(t *testing.T, open Open) {
	m := newMT(t, open)
	mb := m.mailbox(m.pid, "a.example", "u@a.example")
	m.deliver("one", mailNow, mb.ID)
	m.deliver("two", mailNow, mb.ID)
	f, err := m.s.CreateFolder(m.ctx, mb.ID, "Keep")
	if err != nil {
		t.Fatal(err)
	}
	inbox := m.folder(mb.ID, "INBOX")
	if _, err := m.s.Copy(m.ctx, mb.ID, inbox.ID, []uint32{1, 2}, f.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := m.s.Move(m.ctx, mb.ID, inbox.ID, []uint32{2}, f.ID); err != nil {
		t.Fatal(err)
	}
	if err := m.s.DeleteFolder(m.ctx, mb.ID, "Keep"); err != nil {
		t.Fatalf("DeleteFolder() = %v", err)
	}
	if _, err := m.s.Messages(m.ctx, mb.ID, f.ID); !errors.Is(err, mailstore.ErrFolderNotFound) {
		t.Errorf("Messages(deleted folder) = %v, want ErrFolderNotFound", err)
	}
	if got := m.body(mb.ID, inbox.ID, 1); got != "one" {
		t.Errorf("Body(INBOX 1) = %q, want one (its copy's deletion must not free it)", got)
	}
	u := m.getMailbox(m.pid, "u@a.example")
	if u.MessageCount != 1 || u.UsedBytes != 3 {
		t.Errorf("usage = %d messages, %d bytes; want 1, 3", u.MessageCount, u.UsedBytes)
	}
	m.invariants("a.example")
}

// mailConcurrent runs deliveries, IMAP-style changes and retention passes
// at once; afterwards every counter must still equal what it counts.
func mailDeleteMailbox(t *testing.T, open Open) {
	m := newMT(t, open)
	u := m.mailbox(m.pid, "a.example", "u@a.example")
	v := m.mailbox(m.pid, "a.example", "v@a.example")
	m.deliver("shared body", mailNow, u.ID, v.ID)
	m.deliver("only u", mailNow, u.ID)
	if err := m.s.DeleteMailbox(m.ctx, m.pid, "u@a.example"); err != nil {
		t.Fatalf("DeleteMailbox() = %v", err)
	}
	d := m.getDomain(m.pid, "a.example")
	if d.MessageCount != 1 || d.UsedBytes != int64(len("shared body")) {
		t.Errorf("domain after DeleteMailbox = %d messages, %d bytes; want 1, %d", d.MessageCount, d.UsedBytes, len("shared body"))
	}
	if got := m.body(v.ID, m.folder(v.ID, "INBOX").ID, 1); got != "shared body" {
		t.Errorf("Body(v) = %q after u's deletion, want the shared body", got)
	}
	if _, err := m.s.Folders(m.ctx, u.ID); !errors.Is(err, mailstore.ErrMailboxNotFound) {
		t.Errorf("Folders(deleted mailbox) = %v, want ErrMailboxNotFound", err)
	}
	m.invariants("a.example")
	// Mail for the deleted account is skipped; a new account with the same
	// address starts empty with new UIDValidity values.
	res := m.deliver("late", mailNow, u.ID)
	if len(res.Delivered) != 0 || !slices.Equal(res.Skipped, []int64{u.ID}) {
		t.Errorf("Deliver(deleted) = %+v, want skipped", res)
	}
	u2 := m.mailbox(m.pid, "a.example", "u@a.example")
	if f := m.folder(u2.ID, "INBOX"); f.Messages != 0 || f.UIDNext != 1 {
		t.Errorf("new INBOX = %+v, want empty", f)
	}
	// A forced domain deletion takes everything.
	m.deliver("bye", mailNow, u2.ID, v.ID)
	if err := m.s.DeleteDomain(m.ctx, m.pid, "a.example", true); err != nil {
		t.Fatalf("DeleteDomain(force) = %v", err)
	}
	if _, err := m.s.PurgeBefore(m.ctx, mailNow.AddDate(1, 0, 0)); err != nil {
		t.Errorf("PurgeBefore() after DeleteDomain = %v", err)
	}
}

func mailIsolation(t *testing.T, open Open) {
	m := newMT(t, open)
	u := m.mailbox(m.pid, "a.example", "u@a.example")
	v := m.mailbox(m.pid, "a.example", "v@a.example")
	m.deliver("private", mailNow, u.ID)
	uin := m.folder(u.ID, "INBOX")
	if _, err := m.s.Messages(m.ctx, v.ID, uin.ID); !ctlIs(err, mailstore.ErrFolderNotFound) || !errors.Is(err, mailstore.ErrNotFound) {
		t.Errorf("Messages(v, u's INBOX) = %v, want ErrFolderNotFound", err)
	}
	if _, err := m.s.Body(m.ctx, v.ID, uin.ID, 1); !errors.Is(err, mailstore.ErrFolderNotFound) {
		t.Errorf("Body(v, u's INBOX) = %v, want ErrFolderNotFound", err)
	}
	if _, err := m.s.Expunge(m.ctx, v.ID, uin.ID, nil); !errors.Is(err, mailstore.ErrFolderNotFound) {
		t.Errorf("Expunge(v, u's INBOX) = %v, want ErrFolderNotFound", err)
	}
	if _, err := m.s.Move(m.ctx, v.ID, uin.ID, []uint32{1}, m.folder(v.ID, "INBOX").ID); !errors.Is(err, mailstore.ErrFolderNotFound) {
		t.Errorf("Move(v, from u's INBOX) = %v, want ErrFolderNotFound", err)
	}
	if _, err := m.s.Body(m.ctx, u.ID, uin.ID, 2); !errors.Is(err, mailstore.ErrMessageNotFound) || !errors.Is(err, mailstore.ErrNotFound) {
		t.Errorf("Body(missing uid) = %v, want ErrMessageNotFound", err)
	}
	if got := len(m.messages(u.ID, uin.ID)); got != 1 {
		t.Errorf("u's INBOX has %d messages, want 1", got)
	}
}

func mailRecordLogin(t *testing.T, open Open) {
	m := newMT(t, open)
	u := m.mailbox(m.pid, "a.example", "u@a.example")
	at := time.Date(2026, 11, 22, 12, 0, 0, 500, time.FixedZone("X", 7200))
	if err := m.s.RecordLogin(m.ctx, u.ID, at); err != nil {
		t.Fatalf("RecordLogin() = %v", err)
	}
	got := m.getMailbox(m.pid, "u@a.example").LastLogin
	if !got.Equal(at.Truncate(time.Second)) {
		t.Errorf("LastLogin = %v, want %v", got, at.Truncate(time.Second))
	}
	if err := m.s.RecordLogin(m.ctx, 9999, at); !errors.Is(err, mailstore.ErrMailboxNotFound) {
		t.Errorf("RecordLogin(unknown) = %v, want ErrMailboxNotFound", err)
	}
}

func mailContextDone(t *testing.T, open Open) {
	m := newMT(t, open)
	u := m.mailbox(m.pid, "a.example", "u@a.example")
	inbox := m.folder(u.ID, "INBOX")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := map[string]error{}
	_, calls["Deliver"] = m.s.Deliver(ctx, mailstore.Delivery{Body: []byte("x"), ReceivedAt: mailNow, MailboxIDs: []int64{u.ID}})
	_, calls["Append"] = m.s.Append(ctx, u.ID, inbox.ID, []byte("x"), nil, mailNow)
	_, calls["CreateFolder"] = m.s.CreateFolder(ctx, u.ID, "X")
	_, calls["PurgeBefore"] = m.s.PurgeBefore(ctx, mailNow)
	_, calls["Folders"] = m.s.Folders(ctx, u.ID)
	for name, err := range calls {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s(done ctx) = %v, want context.Canceled", name, err)
		}
	}
	if f := m.folder(u.ID, "INBOX"); f.Messages != 0 {
		t.Errorf("INBOX has %d messages after calls with a done context", f.Messages)
	}
	if _, err := m.s.Folder(m.ctx, u.ID, "X"); !errors.Is(err, mailstore.ErrFolderNotFound) {
		t.Errorf("Folder(X) = %v, want not created", err)
	}
}

// mailDomainWithID: the mail plane finds any partner's domain by id, as
// it finds it by name; an unknown id is not found.
func mailDomainWithID(t *testing.T, open Open) {
	c := newCtl(t, open)
	for _, p := range []string{"a", "b"} {
		pid := c.partner(p).ID
		d := c.domain(pid, p+".example", ctlStarter, 0, 0)
		got, err := c.s.DomainWithID(c.ctx, d.ID)
		if err != nil || ctlJSON(t, got) != ctlJSON(t, c.getDomain(pid, d.Name)) {
			t.Errorf("DomainWithID(%d) = %+v, %v; want %s of partner %s", d.ID, got, err, d.Name, p)
		}
	}
	if _, err := c.s.DomainWithID(c.ctx, 9999); !ctlIs(err, mailstore.ErrDomainNotFound) {
		t.Errorf("DomainWithID(9999) = %v, want ErrDomainNotFound", err)
	}
}
