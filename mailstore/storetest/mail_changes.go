package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// Tests of Mail.Changes, the per-folder change log, for runMail.

// changes calls Changes and fails the test on error.
func (m *mt) changes(mb, folderID int64, since uint64) (mailstore.Folder, []mailstore.Change) {
	m.t.Helper()
	f, ch, err := m.s.Changes(m.ctx, mb, folderID, since)
	if err != nil {
		m.t.Fatalf("Changes(%d, %d, since %d) = %v, want nil", mb, folderID, since, err)
	}
	return f, ch
}

// changeStep is what a test expects of one Change.
type changeStep struct {
	kind  mailstore.ChangeKind
	uid   uint32
	flags []string
}

func (c changeStep) String() string { return fmt.Sprintf("%d:%d%q", c.kind, c.uid, c.flags) }

// checkChanges compares changes with want: kinds, UIDs and flags in order,
// ModSeqs from first on, one apart, all of folderID.
func checkChanges(t *testing.T, what string, got []mailstore.Change, folderID int64, first uint64, want []changeStep) {
	t.Helper()
	var gotSteps []changeStep
	for i, c := range got {
		gotSteps = append(gotSteps, changeStep{c.Kind, c.Message.UID, c.Message.Flags})
		if c.ModSeq != first+uint64(i) {
			t.Errorf("%s: change %d has ModSeq %d, want %d", what, i, c.ModSeq, first+uint64(i))
		}
		if c.Message.FolderID != folderID {
			t.Errorf("%s: change %d is of folder %d, want %d", what, i, c.Message.FolderID, folderID)
		}
	}
	eq := func(a, b changeStep) bool {
		return a.kind == b.kind && a.uid == b.uid && slices.Equal(a.flags, b.flags)
	}
	if !slices.EqualFunc(gotSteps, want, eq) {
		t.Errorf("%s = %v, want %v", what, gotSteps, want)
	}
}

// sameCounts compares what Changes answers of a folder with Folder's.
func sameCounts(t *testing.T, what string, got, want mailstore.Folder) {
	t.Helper()
	if got.ID != want.ID || got.Messages != want.Messages || got.Unseen != want.Unseen || got.Size != want.Size ||
		got.UIDNext != want.UIDNext || got.UIDValidity != want.UIDValidity || got.HighestModSeq != want.HighestModSeq {
		t.Errorf("%s folder = %+v, want %+v", what, got, want)
	}
}

// mailChanges: every writer of messages logs what it did, in order, one
// ModSeq per change; Changes answers those after since with the folder's
// counts.
func mailChanges(t *testing.T, open Open) {
	m := newMT(t, open)
	u := m.mailbox(m.pid, "a.example", "u@a.example")
	inbox := m.folder(u.ID, "INBOX")
	if inbox.HighestModSeq != 0 {
		t.Errorf("new INBOX HighestModSeq = %d, want 0", inbox.HighestModSeq)
	}
	if f, ch := m.changes(u.ID, inbox.ID, 0); len(ch) != 0 || f.HighestModSeq != 0 {
		t.Errorf("Changes(new folder, since 0) = %+v, %+v; want none", f, ch)
	}

	m.deliver("one", mailNow, u.ID)
	m.deliver("two", mailNow, u.ID)
	app, err := m.s.Append(m.ctx, u.ID, inbox.ID, []byte("three"), []string{"Work"}, mailNow.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.s.SetFlags(m.ctx, u.ID, inbox.ID, []uint32{1}, mailstore.FlagsAdd, []string{`\Seen`}); err != nil {
		t.Fatal(err)
	}
	// A flag change that changes nothing logs nothing.
	if _, err := m.s.SetFlags(m.ctx, u.ID, inbox.ID, []uint32{1, 99}, mailstore.FlagsAdd, []string{`\seen`}); err != nil {
		t.Fatal(err)
	}
	archive := m.folder(u.ID, "Archive")
	trash := m.folder(u.ID, "Trash")
	if _, err := m.s.Copy(m.ctx, u.ID, inbox.ID, []uint32{2}, archive.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := m.s.Move(m.ctx, u.ID, inbox.ID, []uint32{3}, trash.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := m.s.Expunge(m.ctx, u.ID, inbox.ID, []uint32{1}); err != nil {
		t.Fatal(err)
	}

	all := []changeStep{
		{mailstore.ChangeAdd, 1, nil},
		{mailstore.ChangeAdd, 2, nil},
		{mailstore.ChangeAdd, 3, []string{"Work"}},
		{mailstore.ChangeFlags, 1, []string{`\Seen`}},
		{mailstore.ChangeExpunge, 3, nil}, // moved out
		{mailstore.ChangeExpunge, 1, nil},
	}
	f, ch := m.changes(u.ID, inbox.ID, 0)
	checkChanges(t, "Changes(INBOX, since 0)", ch, inbox.ID, 1, all)
	sameCounts(t, "Changes(INBOX, since 0)", f, m.folder(u.ID, "INBOX"))
	if f.HighestModSeq != 6 || f.Messages != 1 || f.UIDNext != 4 {
		t.Errorf("Changes(INBOX) folder = %+v, want HighestModSeq 6, 1 message, UIDNext 4", f)
	}
	// An added message is whole: size, received time, flags.
	if len(ch) == 6 {
		add := ch[2].Message
		if add.UID != app.UID || add.Size != 5 || !add.ReceivedAt.Equal(app.ReceivedAt) || add.BlobID != app.BlobID {
			t.Errorf("ChangeAdd of the APPEND = %+v, want %+v", add, app)
		}
		if ex := ch[5].Message; ex.Size != 0 || len(ex.Flags) != 0 || ex.BlobID != 0 {
			t.Errorf("ChangeExpunge message = %+v, want only its UID and folder", ex)
		}
	}

	// since filters; a since at the folder's latest answers nothing.
	f, ch = m.changes(u.ID, inbox.ID, 4)
	checkChanges(t, "Changes(INBOX, since 4)", ch, inbox.ID, 5, all[4:])
	sameCounts(t, "Changes(INBOX, since 4)", f, m.folder(u.ID, "INBOX"))
	f, ch = m.changes(u.ID, inbox.ID, 6)
	if len(ch) != 0 {
		t.Errorf("Changes(INBOX, since 6) = %+v, want none", ch)
	}
	sameCounts(t, "Changes(INBOX, since 6)", f, m.folder(u.ID, "INBOX"))

	// Each folder has its own sequence.
	f, ch = m.changes(u.ID, archive.ID, 0)
	checkChanges(t, "Changes(Archive, since 0)", ch, archive.ID, 1, []changeStep{{mailstore.ChangeAdd, 1, nil}})
	sameCounts(t, "Changes(Archive)", f, m.folder(u.ID, "Archive"))
	f, ch = m.changes(u.ID, trash.ID, 0)
	checkChanges(t, "Changes(Trash, since 0)", ch, trash.ID, 1, []changeStep{{mailstore.ChangeAdd, 1, []string{"Work"}}})
	sameCounts(t, "Changes(Trash)", f, m.folder(u.ID, "Trash"))

	// Several changes in one call: one each, in the order made.
	if _, err := m.s.SetFlags(m.ctx, u.ID, trash.ID, []uint32{1}, mailstore.FlagsReplace, []string{`\Deleted`}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.s.Copy(m.ctx, u.ID, archive.ID, []uint32{1}, trash.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := m.s.Expunge(m.ctx, u.ID, trash.ID, nil); err != nil {
		t.Fatal(err)
	}
	f, ch = m.changes(u.ID, trash.ID, 1)
	checkChanges(t, "Changes(Trash, since 1)", ch, trash.ID, 2, []changeStep{
		{mailstore.ChangeFlags, 1, []string{`\Deleted`}},
		{mailstore.ChangeAdd, 2, nil},
		{mailstore.ChangeExpunge, 1, nil},
	})
	sameCounts(t, "Changes(Trash, since 1)", f, m.folder(u.ID, "Trash"))

	// Retention expunges.
	m.deliver("old", mailNow.AddDate(0, 0, -100), u.ID)
	if _, err := m.s.PurgeBefore(m.ctx, mailNow); err != nil {
		t.Fatal(err)
	}
	f, ch = m.changes(u.ID, inbox.ID, 6)
	checkChanges(t, "Changes(INBOX) after retention", ch, inbox.ID, 7, []changeStep{
		{mailstore.ChangeAdd, 4, nil},
		{mailstore.ChangeExpunge, 4, nil},
	})
	sameCounts(t, "Changes(INBOX) after retention", f, m.folder(u.ID, "INBOX"))
	m.invariants("a.example")
}

// mailChangesNotFound: Changes sees only the account's folders, and a
// deleted folder's log goes with it.
func mailChangesNotFound(t *testing.T, open Open) {
	m := newMT(t, open)
	u := m.mailbox(m.pid, "a.example", "u@a.example")
	v := m.mailbox(m.pid, "a.example", "v@a.example")
	m.deliver("private", mailNow, u.ID)
	uin := m.folder(u.ID, "INBOX")
	for _, tt := range []struct {
		name     string
		mb, fold int64
	}{
		{"another account's folder", v.ID, uin.ID},
		{"unknown folder", u.ID, 9999},
		{"unknown account", 9999, uin.ID},
	} {
		if _, _, err := m.s.Changes(m.ctx, tt.mb, tt.fold, 0); !errors.Is(err, mailstore.ErrFolderNotFound) || !errors.Is(err, mailstore.ErrNotFound) {
			t.Errorf("Changes(%s) = %v, want ErrFolderNotFound", tt.name, err)
		}
	}
	f, err := m.s.CreateFolder(m.ctx, u.ID, "Gone")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.s.Copy(m.ctx, u.ID, uin.ID, []uint32{1}, f.ID); err != nil {
		t.Fatal(err)
	}
	if err := m.s.DeleteFolder(m.ctx, u.ID, "Gone"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.s.Changes(m.ctx, u.ID, f.ID, 0); !errors.Is(err, mailstore.ErrFolderNotFound) {
		t.Errorf("Changes(deleted folder) = %v, want ErrFolderNotFound", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := m.s.Changes(ctx, u.ID, uin.ID, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Changes(done ctx) = %v, want context.Canceled", err)
	}
}

// mailChangesPruned: the log keeps the last ChangeLogKeep changes of a
// folder, and answers ErrChangesGone for a since it no longer reaches.
// An implementation may keep more than ChangeLogKeep (prune in batches),
// so the test asks for ErrChangesGone only more than twice that far back.
func mailChangesPruned(t *testing.T, open Open) {
	m := newMT(t, open)
	u := m.mailbox(m.pid, "a.example", "u@a.example")
	m.deliver("x", mailNow, u.ID)
	inbox := m.folder(u.ID, "INBOX")
	// Copies of the folder into itself double it: few calls, many changes.
	for n := 1; n <= 2*mailstore.ChangeLogKeep; n *= 2 {
		uids := make([]uint32, n)
		for i := range uids {
			uids[i] = uint32(i + 1)
		}
		if _, err := m.s.Copy(m.ctx, u.ID, inbox.ID, uids, inbox.ID); err != nil {
			t.Fatalf("Copy(%d messages) = %v", n, err)
		}
	}
	now := m.folder(u.ID, "INBOX")
	h := now.HighestModSeq
	if h != uint64(now.Messages) || h <= 2*mailstore.ChangeLogKeep {
		t.Fatalf("INBOX = %+v, want HighestModSeq = Messages > %d", now, 2*mailstore.ChangeLogKeep)
	}
	f, ch := m.changes(u.ID, inbox.ID, h-mailstore.ChangeLogKeep)
	if len(ch) != mailstore.ChangeLogKeep || ch[0].ModSeq != h-mailstore.ChangeLogKeep+1 || ch[len(ch)-1].ModSeq != h {
		t.Errorf("Changes(since HighestModSeq-ChangeLogKeep) = %d changes, want the last %d", len(ch), mailstore.ChangeLogKeep)
	}
	sameCounts(t, "Changes(since HighestModSeq-ChangeLogKeep)", f, now)
	for _, since := range []uint64{0, h - 2*mailstore.ChangeLogKeep - 1} {
		if _, _, err := m.s.Changes(m.ctx, u.ID, inbox.ID, since); !errors.Is(err, mailstore.ErrChangesGone) {
			t.Errorf("Changes(since %d of %d) = %v, want ErrChangesGone", since, h, err)
		}
	}
	// The log goes on after pruning.
	if _, err := m.s.SetFlags(m.ctx, u.ID, inbox.ID, []uint32{7}, mailstore.FlagsAdd, []string{`\Flagged`}); err != nil {
		t.Fatal(err)
	}
	_, ch = m.changes(u.ID, inbox.ID, h)
	checkChanges(t, "Changes(since the pruned log's latest)", ch, inbox.ID, h+1, []changeStep{{mailstore.ChangeFlags, 7, []string{`\Flagged`}}})
}

// mailChangesConcurrent: writers at once still give each change of a
// folder its own ModSeq, one apart, with nothing lost.
func mailChangesConcurrent(t *testing.T, open Open) {
	m := newMT(t, open)
	u := m.mailbox(m.pid, "a.example", "u@a.example")
	inbox := m.folder(u.ID, "INBOX")
	const workers, each = 8, 5
	var wg sync.WaitGroup
	errs := make(chan error, workers*each*2)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				if w%2 == 0 {
					_, err := m.s.Deliver(m.ctx, mailstore.Delivery{Body: []byte("d"), ReceivedAt: mailNow, MailboxIDs: []int64{u.ID}})
					errs <- err
					continue
				}
				msg, err := m.s.Append(m.ctx, u.ID, inbox.ID, []byte("a"), nil, mailNow)
				errs <- err
				if err == nil && i%2 == 0 {
					_, err = m.s.SetFlags(m.ctx, u.ID, inbox.ID, []uint32{msg.UID}, mailstore.FlagsAdd, []string{`\Seen`})
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent write: %v", err)
		}
	}
	f, ch := m.changes(u.ID, inbox.ID, 0)
	adds, flags := 0, 0
	for i, c := range ch {
		if c.ModSeq != uint64(i+1) {
			t.Fatalf("change %d has ModSeq %d, want %d", i, c.ModSeq, i+1)
		}
		switch c.Kind {
		case mailstore.ChangeAdd:
			adds++
		case mailstore.ChangeFlags:
			flags++
		}
	}
	wantFlags := workers / 2 * ((each + 1) / 2)
	if adds != workers*each || flags != wantFlags || f.HighestModSeq != uint64(len(ch)) {
		t.Errorf("Changes after concurrent writes = %d adds, %d flag changes, HighestModSeq %d; want %d, %d, %d",
			adds, flags, f.HighestModSeq, workers*each, wantFlags, len(ch))
	}
	sameCounts(t, "Changes after concurrent writes", f, m.folder(u.ID, "INBOX"))
}

// mailMessageModSeq: a message's ModSeq is the ModSeq of its latest
// change, set with it, as Messages, SetFlags, Append, Copy, Move and
// Changes answer it; a message not changed keeps its own.
func mailMessageModSeq(t *testing.T, open Open) {
	m := newMT(t, open)
	u := m.mailbox(m.pid, "a.example", "u@a.example")
	inbox := m.folder(u.ID, "INBOX")
	m.deliver("one", mailNow, u.ID)
	m.deliver("two", mailNow, u.ID)
	app, err := m.s.Append(m.ctx, u.ID, inbox.ID, []byte("three"), nil, mailNow)
	if err != nil {
		t.Fatal(err)
	}
	if app.ModSeq != 3 {
		t.Errorf("Append's message ModSeq = %d, want 3", app.ModSeq)
	}
	modseqs := func(what string, folderID int64, want map[uint32]uint64) {
		t.Helper()
		got := map[uint32]uint64{}
		for _, msg := range m.messages(u.ID, folderID) {
			got[msg.UID] = msg.ModSeq
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: ModSeq by UID = %v, want %v", what, got, want)
		}
	}
	modseqs("after three arrivals", inbox.ID, map[uint32]uint64{1: 1, 2: 2, 3: 3})

	// Two flag changes in one call take the next two ModSeqs, in the
	// order of uids; one that changes nothing keeps its ModSeq.
	changed, err := m.s.SetFlags(m.ctx, u.ID, inbox.ID, []uint32{3, 1}, mailstore.FlagsAdd, []string{`\Seen`})
	if err != nil {
		t.Fatal(err)
	}
	if len(changed) != 2 || changed[0].UID != 3 || changed[0].ModSeq != 4 || changed[1].UID != 1 || changed[1].ModSeq != 5 {
		t.Errorf("SetFlags answered %+v, want UID 3 at ModSeq 4 and UID 1 at 5", changed)
	}
	if _, err := m.s.SetFlags(m.ctx, u.ID, inbox.ID, []uint32{1}, mailstore.FlagsAdd, []string{`\Seen`}); err != nil {
		t.Fatal(err)
	}
	modseqs("after SetFlags", inbox.ID, map[uint32]uint64{1: 5, 2: 2, 3: 4})
	if f := m.folder(u.ID, "INBOX"); f.HighestModSeq != 5 {
		t.Errorf("INBOX HighestModSeq = %d, want 5", f.HighestModSeq)
	}

	// Changes carries each message's ModSeq as of the change.
	_, ch := m.changes(u.ID, inbox.ID, 3)
	if len(ch) != 2 || ch[0].Message.ModSeq != 4 || ch[1].Message.ModSeq != 5 {
		t.Errorf("Changes(since 3) = %+v, want messages at ModSeq 4 and 5", ch)
	}

	// Copy and Move give the new messages the destination's ModSeqs; the
	// expunge of a move moves the source's HighestModSeq.
	archive := m.folder(u.ID, "Archive")
	if _, err := m.s.SetFlags(m.ctx, u.ID, archive.ID, nil, mailstore.FlagsAdd, []string{`\Seen`}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.s.Copy(m.ctx, u.ID, inbox.ID, []uint32{2}, archive.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := m.s.Move(m.ctx, u.ID, inbox.ID, []uint32{1}, archive.ID); err != nil {
		t.Fatal(err)
	}
	modseqs("Archive after Copy and Move", archive.ID, map[uint32]uint64{1: 1, 2: 2})
	modseqs("INBOX after Move", inbox.ID, map[uint32]uint64{2: 2, 3: 4})
	if f := m.folder(u.ID, "INBOX"); f.HighestModSeq != 6 {
		t.Errorf("INBOX HighestModSeq after Move = %d, want 6", f.HighestModSeq)
	}

	// SetFlagsIf changes only the messages not changed since: UID 2 is
	// at 2, UID 3 at 4; since 3 leaves 3 alone, and a UID not in the
	// folder is neither.
	changed, modified, err := m.s.SetFlagsIf(m.ctx, u.ID, inbox.ID, []uint32{3, 2, 99}, mailstore.FlagsAdd, []string{`\Flagged`}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(changed) != 1 || changed[0].UID != 2 || changed[0].ModSeq != 7 || !slices.Equal(modified, []uint32{3}) {
		t.Errorf("SetFlagsIf(since 3) = %+v, modified %v; want UID 2 changed at ModSeq 7, UID 3 modified", changed, modified)
	}
	// Since 0 passes none of them.
	changed, modified, err = m.s.SetFlagsIf(m.ctx, u.ID, inbox.ID, []uint32{2, 3}, mailstore.FlagsAdd, []string{`\Answered`}, 0)
	if err != nil || len(changed) != 0 || !slices.Equal(modified, []uint32{2, 3}) {
		t.Errorf("SetFlagsIf(since 0) = %+v, modified %v, %v; want none changed, both modified", changed, modified, err)
	}
	modseqs("INBOX after SetFlagsIf", inbox.ID, map[uint32]uint64{2: 7, 3: 4})
	m.invariants("a.example")

	// A dump loaded into another store keeps every message's ModSeq, so
	// that a client's mod-sequences stay valid across a store copy.
	d, dok := m.s.(mailstore.Dumper)
	dst := open(t)
	l, lok := dst.(mailstore.Loader)
	if !dok || !lok {
		t.Fatalf("%T is not a Dumper and a Loader", m.s)
	}
	if err := l.Load(m.ctx, func(put func(mailstore.Record) error) error { return d.Dump(m.ctx, put) }); err != nil {
		t.Fatalf("Load(Dump()) = %v", err)
	}
	loaded, err := dst.Messages(m.ctx, u.ID, inbox.ID)
	if err != nil {
		t.Fatal(err)
	}
	got := map[uint32]uint64{}
	for _, msg := range loaded {
		got[msg.UID] = msg.ModSeq
	}
	if want := map[uint32]uint64{2: 7, 3: 4}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("loaded INBOX ModSeq by UID = %v, want %v", got, want)
	}
}
