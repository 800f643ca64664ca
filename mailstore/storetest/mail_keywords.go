package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mailhost/mailhost/mailstore"
)

// mailKeywordLimit: a folder holds at most mailstore.DefaultMaxKeywords
// distinct keywords (the stores' default). A SetFlags, Append, Copy or
// Move that would add one beyond is ErrTooManyKeywords and changes
// nothing; system flags and keywords the folder has (in any case) cost
// nothing; a keyword no message holds any more (removed, replaced,
// expunged, moved out) frees its place.
func mailKeywordLimit(t *testing.T, open Open) {
	m := newMT(t, open)
	mb := m.mailbox(m.pid, "a.example", "u@a.example")
	for range 3 {
		m.deliver("msg", mailNow, mb.ID)
	}
	inbox := m.folder(mb.ID, "INBOX")
	other, err := m.s.CreateFolder(m.ctx, mb.ID, "Other")
	if err != nil {
		t.Fatal(err)
	}
	const max = mailstore.DefaultMaxKeywords
	kws := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s%04d", prefix, i)
		}
		return out
	}
	set := func(uid uint32, op mailstore.FlagOp, flags ...string) error {
		t.Helper()
		_, err := m.s.SetFlags(m.ctx, mb.ID, inbox.ID, []uint32{uid}, op, flags)
		return err
	}
	mustSet := func(uid uint32, op mailstore.FlagOp, flags ...string) {
		t.Helper()
		if err := set(uid, op, flags...); err != nil {
			t.Fatalf("SetFlags(%d, %v, %d flags) = %v, want nil", uid, op, len(flags), err)
		}
	}
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, mailstore.ErrTooManyKeywords) {
			t.Errorf("%s = %v, want ErrTooManyKeywords", what, err)
		}
	}
	flagsOf := func(folderID int64) map[uint32][]string {
		out := map[uint32][]string{}
		for _, msg := range m.messages(mb.ID, folderID) {
			out[msg.UID] = msg.Flags
		}
		return out
	}
	same := func(what string, a, b map[uint32][]string) {
		t.Helper()
		if len(a) != len(b) {
			t.Errorf("%s changed the folder: %d messages, want %d", what, len(b), len(a))
		}
		for uid, f := range a {
			if !slices.Equal(b[uid], f) {
				t.Errorf("%s changed message %d's flags: %d flags, want %d", what, uid, len(b[uid]), len(f))
			}
		}
	}

	mustSet(1, mailstore.FlagsAdd, kws("k", max)...)
	mustSet(2, mailstore.FlagsAdd, "k0001", "K0002", `\Seen`, `\Flagged`)
	before := flagsOf(inbox.ID)
	refused("SetFlags(a keyword past the limit)", set(2, mailstore.FlagsAdd, "k0003", "new"))
	refused("SetFlags(replace, a keyword past the limit)", set(3, mailstore.FlagsReplace, "new"))
	_, err = m.s.Append(m.ctx, mb.ID, inbox.ID, []byte("x"), []string{"new"}, mailNow)
	refused("Append(a keyword past the limit)", err)
	same("a refused SetFlags or Append", before, flagsOf(inbox.ID))
	if f := m.folder(mb.ID, "INBOX"); f.Messages != 3 {
		t.Errorf("INBOX after a refused Append: %d messages, want 3", f.Messages)
	}
	if _, err := m.s.Append(m.ctx, mb.ID, inbox.ID, []byte("x"), []string{"K0005", `\Seen`}, mailNow); err != nil {
		t.Errorf("Append(a keyword the folder has) = %v, want nil", err)
	}
	m.deliver("msg", mailNow, mb.ID) // a delivery sets no keyword

	// Copy and Move into a folder at the limit.
	if _, err := m.s.Append(m.ctx, mb.ID, other.ID, []byte("x"), kws("o", max), mailNow); err != nil {
		t.Fatalf("Append(%d keywords to an empty folder) = %v", max, err)
	}
	inboxBefore, otherBefore := flagsOf(inbox.ID), flagsOf(other.ID)
	_, err = m.s.Copy(m.ctx, mb.ID, inbox.ID, []uint32{1}, other.ID)
	refused("Copy(past the limit)", err)
	_, err = m.s.Move(m.ctx, mb.ID, inbox.ID, []uint32{2}, other.ID)
	refused("Move(past the limit)", err)
	same("a refused Copy or Move (source)", inboxBefore, flagsOf(inbox.ID))
	same("a refused Copy or Move (target)", otherBefore, flagsOf(other.ID))
	if _, err := m.s.Copy(m.ctx, mb.ID, inbox.ID, []uint32{3}, other.ID); err != nil {
		t.Errorf("Copy(a message without keywords) = %v, want nil", err)
	}

	// Places freed: replaced, removed, expunged, moved out.
	mustSet(1, mailstore.FlagsReplace, append(kws("k", max-1), "new")...) // k0999 leaves, new comes
	refused("SetFlags(k0999 again)", set(3, mailstore.FlagsAdd, "k0999"))
	mustSet(1, mailstore.FlagsRemove, "new")
	mustSet(3, mailstore.FlagsAdd, "new2")
	if _, err := m.s.Expunge(m.ctx, mb.ID, inbox.ID, []uint32{3}); err != nil {
		t.Fatal(err)
	}
	mustSet(2, mailstore.FlagsAdd, "new3")
	if _, err := m.s.Move(m.ctx, mb.ID, inbox.ID, []uint32{2}, inbox.ID); err != nil {
		t.Errorf("Move(into its own folder, at the limit) = %v, want nil", err)
	}
	if _, err := m.s.Move(m.ctx, mb.ID, other.ID, uidsOf(m.messages(mb.ID, other.ID)), inbox.ID); err == nil {
		t.Errorf("Move(%d new keywords into a full folder) = nil, want ErrTooManyKeywords", max)
	}
	// A folder deleted and made again starts with no keyword.
	if err := m.s.DeleteFolder(m.ctx, mb.ID, "Other"); err != nil {
		t.Fatal(err)
	}
	if other, err = m.s.CreateFolder(m.ctx, mb.ID, "Other"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.s.Copy(m.ctx, mb.ID, inbox.ID, []uint32{1}, other.ID); err != nil {
		t.Errorf("Copy(%d keywords into a new folder) = %v, want nil", max, err)
	}
	// A keyword's length is bounded too; removing a long one is not.
	long := strings.Repeat("k", mailstore.MaxKeywordBytes+1)
	if err := set(2, mailstore.FlagsAdd, long); !errors.Is(err, mailstore.ErrKeywordTooLong) {
		t.Errorf("SetFlags(a keyword of %d bytes) = %v, want ErrKeywordTooLong", len(long), err)
	}
	if _, err := m.s.Append(m.ctx, mb.ID, other.ID, []byte("x"), []string{long}, mailNow); !errors.Is(err, mailstore.ErrKeywordTooLong) {
		t.Errorf("Append(a keyword of %d bytes) = %v, want ErrKeywordTooLong", len(long), err)
	}
	if _, err := m.s.Append(m.ctx, mb.ID, other.ID, []byte("x"), []string{long[1:]}, mailNow); err != nil {
		t.Errorf("Append(a keyword of %d bytes) = %v, want nil", len(long)-1, err)
	}
	mustSet(2, mailstore.FlagsRemove, long)
	m.invariants("a.example")
}
