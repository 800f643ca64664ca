package imapd

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
)

// TestFetchExpungedMeanwhile: a message expunged by another client after
// SELECT is left out of FETCH (RFC 2180 section 4.1.2); the others come
// back whole, with their own sequence numbers.
func TestFetchExpungedMeanwhile(t *testing.T) {
	e := mailEnv(t)
	c := e.login(nil)
	selectInbox(t, c)
	inbox, err := e.st.Folder(context.Background(), e.mb.ID, "INBOX")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.Expunge(context.Background(), e.mb.ID, inbox.ID, []uint32{2}); err != nil {
		t.Fatalf("Expunge(2): %v", err)
	}
	msgs, err := c.Fetch(imap.SeqSetNum(1, 2, 3), &imap.FetchOptions{
		UID: true, BodySection: []*imap.FetchItemBodySection{{Peek: true}},
	}).Collect()
	if err != nil {
		t.Fatalf("FETCH 1:3: %v", err)
	}
	var got, want []string
	for _, m := range msgs {
		got = append(got, fmt.Sprintf("%d uid %d %d bytes", m.SeqNum, m.UID, len(m.FindBodySection(&imap.FetchItemBodySection{}))))
	}
	want = []string{
		fmt.Sprintf("1 uid 1 %d bytes", len(msgPlain)),
		fmt.Sprintf("3 uid 3 %d bytes", len(msgLarge)),
	}
	if !slices.Equal(got, want) {
		t.Errorf("FETCH 1:3 after another client's EXPUNGE of 2 = %q, want %q", got, want)
	}
}

// TestFetchMany crosses the store's batches of bodies (256 messages):
// every message comes back, in order, with its own body.
func TestFetchMany(t *testing.T) {
	e := newEnv(t, envOptions{})
	const n = 300
	for i := range n { // one at a time, so that UIDs follow i
		e.deliver(fmt.Sprintf("Subject: %d\r\n\r\nbody %d\r\n", i, i), t1)
	}
	c := e.login(nil)
	selectInbox(t, c)
	var all imap.SeqSet
	all.AddRange(1, 0)
	msgs, err := c.Fetch(all, &imap.FetchOptions{UID: true, BodySection: []*imap.FetchItemBodySection{{Peek: true}}}).Collect()
	if err != nil {
		t.Fatalf("FETCH 1:*: %v", err)
	}
	if len(msgs) != n {
		t.Fatalf("FETCH 1:* returned %d messages, want %d", len(msgs), n)
	}
	for i, m := range msgs {
		want := fmt.Sprintf("Subject: %d\r\n\r\nbody %d\r\n", i, i)
		if got := string(m.FindBodySection(&imap.FetchItemBodySection{})); m.SeqNum != uint32(i+1) || got != want {
			t.Errorf("FETCH 1:* message %d: seq %d body %q, want seq %d body %q", i, m.SeqNum, got, i+1, want)
		}
	}
}

// writeBatch is the size of imapserver's write buffer, which it fills
// with a FETCH's responses before it writes them.
const writeBatch = 32 << 10

// TestFetchGathered: imapserver gathers FETCH output into writes of up to
// its write buffer (writeBatch); bodies on either side of that size, and
// across its boundaries, come back whole and in order, and the command
// after it is answered at once.
func TestFetchGathered(t *testing.T) {
	e := newEnv(t, envOptions{})
	at := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	// 22,000 to 27,000 bytes after a small message: a literal written
	// straight through must not overtake what came before it.
	sizes := []int{100, 25000, 22000, 27000, writeBatch/2 - 1, writeBatch / 2, writeBatch - 7, writeBatch + 1, 3*writeBatch + 5, 10, 200}
	var bodies []string
	for i, n := range sizes {
		h := fmt.Sprintf("From: a@example.org\r\nSubject: %d\r\n\r\n", i)
		body := h + strings.Repeat(string(rune('a'+i)), max(n-len(h), 0))
		bodies = append(bodies, body)
		e.deliver(body, at)
	}
	c := e.login(nil)
	if _, err := c.Select("INBOX", nil).Wait(); err != nil {
		t.Fatalf("SELECT: %v", err)
	}
	var all imap.SeqSet
	all.AddRange(1, 0)
	for range 2 {
		msgs, err := c.Fetch(all, &imap.FetchOptions{UID: true, Envelope: true, BodySection: []*imap.FetchItemBodySection{{Peek: true}}}).Collect()
		if err != nil || len(msgs) != len(bodies) {
			t.Fatalf("FETCH 1:* = %d messages, %v; want %d", len(msgs), err, len(bodies))
		}
		for i, m := range msgs {
			if got := string(m.FindBodySection(&imap.FetchItemBodySection{})); got != bodies[i] {
				t.Errorf("message %d: %d bytes, want %d (%q...)", i+1, len(got), len(bodies[i]), got[:min(len(got), 40)])
			}
		}
		if err := c.Noop().Wait(); err != nil {
			t.Fatalf("NOOP after FETCH: %v", err)
		}
	}
}
