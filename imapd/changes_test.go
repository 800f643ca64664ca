package imapd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/mailhost/mailhost/mailstore"
)

// update is one unsolicited response an idling client received.
type update struct {
	kind  string // "exists", "expunge" or "fetch"
	n     uint32 // the count, or the sequence number
	flags []imap.Flag
}

func (u update) String() string { return fmt.Sprintf("%s %d %v", u.kind, u.n, u.flags) }

// idler logs in, selects INBOX and enters IDLE; the unsolicited
// responses come on the channel, in order.
func idler(t *testing.T, e *env) (<-chan update, *imapclient.IdleCommand) {
	t.Helper()
	ch := make(chan update, 64)
	c := e.login(&imapclient.Options{UnilateralDataHandler: &imapclient.UnilateralDataHandler{
		Mailbox: func(d *imapclient.UnilateralDataMailbox) {
			if d.NumMessages != nil {
				ch <- update{kind: "exists", n: *d.NumMessages}
			}
		},
		Expunge: func(seq uint32) { ch <- update{kind: "expunge", n: seq} },
		Fetch: func(msg *imapclient.FetchMessageData) {
			buf, err := msg.Collect()
			if err != nil {
				t.Errorf("unsolicited FETCH: %v", err)
				return
			}
			ch <- update{kind: "fetch", n: buf.SeqNum, flags: buf.Flags}
		},
	}})
	selectInbox(t, c)
	idle, err := c.Idle()
	if err != nil {
		t.Fatalf("IDLE: %v", err)
	}
	t.Cleanup(func() { idle.Close() })
	return ch, idle
}

// await reads updates until it has had each of want (flags compared as
// sets), in any order: imapclient hands each unsolicited FETCH to the
// handler on a goroutine of its own, so FETCH responses may come out of
// order. It fails after 5 s, and returns the other updates read.
func await(t *testing.T, ch <-chan update, want ...update) []update {
	t.Helper()
	var other []update
	deadline := time.After(5 * time.Second)
	for len(want) > 0 {
		select {
		case u := <-ch:
			i := slices.IndexFunc(want, func(w update) bool {
				return u.kind == w.kind && u.n == w.n && sameIMAPFlags(u.flags, w.flags)
			})
			if i < 0 {
				other = append(other, u)
				continue
			}
			want = slices.Delete(want, i, i+1)
		case <-deadline:
			t.Fatalf("no %v within 5 s; got %v", want, other)
			return nil
		}
	}
	return other
}

func sameIMAPFlags(a, b []imap.Flag) bool {
	if len(a) != len(b) {
		return false
	}
	for _, f := range a {
		if !slices.Contains(b, f) {
			return false
		}
	}
	return true
}

// inbox is alice's INBOX as the store has it now.
func (e *env) inbox() mailstore.Folder {
	e.t.Helper()
	f, err := e.st.Folder(context.Background(), e.mb.ID, "INBOX")
	if err != nil {
		e.t.Fatalf("Folder(INBOX): %v", err)
	}
	return f
}

// TestIdleChanges: a session in IDLE hears of a delivery (EXISTS), of
// another session's flag change (FETCH FLAGS) and of its expunge
// (EXPUNGE, RFC 9051 section 7.5.1: allowed during IDLE), from the
// folder's change log.
func TestIdleChanges(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.deliver(msgPlain, t1)
	e.deliver(msgMultipart, t2)
	ch, _ := idler(t, e)
	other := e.login(nil)
	selectInbox(t, other)

	e.deliver(msgLarge, t3)
	if got := await(t, ch, update{kind: "exists", n: 3}); len(got) != 0 {
		t.Errorf("before EXISTS 3: %v, want nothing", got)
	}

	if err := other.Store(imap.SeqSetNum(2), &imap.StoreFlags{Op: imap.StoreFlagsAdd, Silent: true, Flags: []imap.Flag{imap.FlagFlagged, "Work"}}, nil).Close(); err != nil {
		t.Fatal(err)
	}
	if got := await(t, ch, update{kind: "fetch", n: 2, flags: []imap.Flag{imap.FlagFlagged, "Work"}}); len(got) != 0 {
		t.Errorf("before FETCH 2: %v, want nothing", got)
	}

	if err := other.Store(imap.SeqSetNum(1), &imap.StoreFlags{Op: imap.StoreFlagsAdd, Silent: true, Flags: []imap.Flag{imap.FlagDeleted}}, nil).Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Expunge().Collect(); err != nil {
		t.Fatal(err)
	}
	// The \Deleted flag may be told first (and, its FETCH handled on a
	// goroutine, reach the test late), or coalesce with the expunge.
	deletedFlag := func(u update) bool {
		return u.kind == "fetch" && u.n == 1 && sameIMAPFlags(u.flags, []imap.Flag{imap.FlagDeleted})
	}
	for _, u := range await(t, ch, update{kind: "expunge", n: 1}) {
		if !deletedFlag(u) {
			t.Errorf("before EXPUNGE 1: %v, want at most FETCH 1 (\\Deleted)", u)
		}
	}
	// After the expunge, the flagged message is number 1; changing it
	// back is told under its new number.
	if err := other.Store(imap.SeqSetNum(1), &imap.StoreFlags{Op: imap.StoreFlagsDel, Silent: true, Flags: []imap.Flag{"Work"}}, nil).Close(); err != nil {
		t.Fatal(err)
	}
	for _, u := range await(t, ch, update{kind: "fetch", n: 1, flags: []imap.Flag{imap.FlagFlagged}}) {
		if !deletedFlag(u) {
			t.Errorf("before FETCH 1: %v, want nothing", u)
		}
	}
}

// TestIdleChangesGone: a session further behind than the change log
// reaches (here a log of 2 and three changes in one STORE) re-reads the
// folder and still tells its client everything, then goes on from the log.
func TestIdleChangesGone(t *testing.T) {
	e := newEnv(t, envOptions{changeLogKeep: 2})
	for _, m := range []string{msgPlain, msgMultipart, msgLarge} {
		e.deliver(m, t1)
	}
	seen := e.inbox().HighestModSeq
	ch, _ := idler(t, e)
	other := e.login(nil)
	selectInbox(t, other)

	if err := other.Store(imap.SeqSetNum(1, 2, 3), &imap.StoreFlags{Op: imap.StoreFlagsAdd, Silent: true, Flags: []imap.Flag{imap.FlagSeen}}, nil).Close(); err != nil {
		t.Fatal(err)
	}
	// The idling session, at seen, cannot read these from the log.
	if _, _, err := e.st.Changes(context.Background(), e.mb.ID, e.inbox().ID, seen); !errors.Is(err, mailstore.ErrChangesGone) {
		t.Fatalf("Changes(since %d) = %v, want ErrChangesGone", seen, err)
	}
	seenFlag := []imap.Flag{imap.FlagSeen}
	if got := await(t, ch, update{"fetch", 1, seenFlag}, update{"fetch", 2, seenFlag}, update{"fetch", 3, seenFlag}); len(got) != 0 {
		t.Errorf("besides FETCH 1:3 (\\Seen): %v, want nothing", got)
	}

	// Back on the log: a delivery and an expunge.
	e.deliver(msgPlain, t2)
	if got := await(t, ch, update{kind: "exists", n: 4}); len(got) != 0 {
		t.Errorf("before EXISTS 4: %v, want nothing", got)
	}
	if _, err := e.st.Expunge(context.Background(), e.mb.ID, e.inbox().ID, []uint32{2}); err != nil {
		t.Fatal(err)
	}
	if got := await(t, ch, update{kind: "expunge", n: 2}); len(got) != 0 {
		t.Errorf("before EXPUNGE 2: %v, want nothing", got)
	}
}
