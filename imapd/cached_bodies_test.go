package imapd

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/emersion/go-imap/v2"

	"github.com/mailhost/mailhost/mailstore"
)

// keptBodies is a store that keeps the bodies it is given by body id in
// memory (as pgstore keeps those its node stored or read), and counts
// the reads that go to the store itself.
type keptBodies struct {
	mailstore.Store
	mu        sync.Mutex
	kept      map[int64][]byte
	summaries map[int64][]byte
	reads     atomic.Int64 // of bodies
	sumReads  atomic.Int64 // of summaries
}

func (k *keptBodies) CachedSummary(blob int64) ([]byte, bool) { return k.get(k.summaries, blob) }

func (k *keptBodies) Summaries(ctx context.Context, mailboxID, folderID int64, uids []uint32, fn func(uid uint32, header []byte) error) error {
	k.sumReads.Add(1)
	return k.Store.Summaries(ctx, mailboxID, folderID, uids, fn)
}

func (k *keptBodies) CachedBody(blob int64) ([]byte, bool) { return k.get(k.kept, blob) }

func (k *keptBodies) get(m map[int64][]byte, blob int64) ([]byte, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	b, ok := m[blob]
	return b, ok
}

func (k *keptBodies) Bodies(ctx context.Context, mailboxID, folderID int64, uids []uint32, fn func(uid uint32, body []byte) error) error {
	k.reads.Add(1)
	return k.Store.Bodies(ctx, mailboxID, folderID, uids, fn)
}

// TestFetchFromKeptBodies: a FETCH whose bodies the store keeps in
// memory is answered from them, without a read of the store; one that
// needs a body not kept reads them all from the store, as before; the
// answers are the same either way.
func TestFetchFromKeptBodies(t *testing.T) {
	k := &keptBodies{kept: map[int64][]byte{}}
	e := newEnv(t, envOptions{wrap: func(s mailstore.Store) mailstore.Store {
		k.Store = s
		return k
	}})
	bodies := []string{msgPlain, msgMultipart, msgLarge}
	for _, b := range bodies {
		e.deliver(b, t1)
	}
	ctx := context.Background()
	inbox, err := e.st.Folder(ctx, e.mb.ID, "INBOX")
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := e.st.Messages(ctx, e.mb.ID, inbox.ID)
	if err != nil || len(msgs) != 3 {
		t.Fatalf("Messages = %v, %v", msgs, err)
	}
	// The first two are kept, under their ids.
	for i := range 2 {
		k.kept[msgs[i].BlobID] = []byte(bodies[i])
	}

	c := e.login(nil)
	selectInbox(t, c)
	fetch := func(seq string) []string {
		t.Helper()
		var set imap.SeqSet
		for _, n := range strings.Split(seq, ",") {
			var v uint32
			for _, d := range n {
				v = v*10 + uint32(d-'0')
			}
			set.AddNum(v)
		}
		section := &imap.FetchItemBodySection{Peek: true}
		got, err := c.Fetch(set, &imap.FetchOptions{BodySection: []*imap.FetchItemBodySection{section}}).Collect()
		if err != nil {
			t.Fatalf("FETCH %s: %v", seq, err)
		}
		var out []string
		for _, m := range got {
			out = append(out, string(m.FindBodySection(section)))
		}
		return out
	}
	for _, tt := range []struct {
		seq   string
		want  []string
		reads int64
	}{
		{"1", bodies[:1], 0},
		{"2", bodies[1:2], 0},
		{"1,2", bodies[:2], 0},
		{"3", bodies[2:], 1},   // not kept: read from the store
		{"2,3", bodies[1:], 1}, // one not kept: all read from the store
		{"1,2,3", bodies[:3], 1},
	} {
		before := k.reads.Load()
		got := fetch(tt.seq)
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("FETCH %s BODY.PEEK[]: got %d bodies, not those delivered", tt.seq, len(got))
		}
		if n := k.reads.Load() - before; n != tt.reads {
			t.Errorf("FETCH %s BODY.PEEK[]: %d reads of the store, want %d", tt.seq, n, tt.reads)
		}
	}
}

// TestListFromKeptSummaries: a folder's listing (ENVELOPE, from the
// bodies' summaries) and a SEARCH on header fields are answered from the
// summaries the store keeps when it keeps all those asked, and the same
// as from the store.
func TestListFromKeptSummaries(t *testing.T) {
	k := &keptBodies{kept: map[int64][]byte{}, summaries: map[int64][]byte{}}
	e := newEnv(t, envOptions{wrap: func(s mailstore.Store) mailstore.Store {
		k.Store = s
		return k
	}})
	for _, b := range []string{msgPlain, msgMultipart, msgLarge} {
		e.deliver(b, t1)
	}
	c := e.login(nil)
	selectInbox(t, c)
	envelopes := func() []string {
		t.Helper()
		got, err := c.Fetch(imap.SeqSetNum(1, 2, 3), &imap.FetchOptions{Envelope: true}).Collect()
		if err != nil {
			t.Fatalf("FETCH ENVELOPE: %v", err)
		}
		var out []string
		for _, m := range got {
			out = append(out, m.Envelope.Subject+" <"+m.Envelope.MessageID+">")
		}
		return out
	}
	search := func() []imap.UID {
		t.Helper()
		d, err := c.UIDSearch(&imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: "Subject", Value: "e"}}}, nil).Wait()
		if err != nil {
			t.Fatalf("UID SEARCH SUBJECT: %v", err)
		}
		return d.AllUIDs()
	}
	fromStore, foundInStore := envelopes(), search()
	if n := k.sumReads.Load(); n == 0 {
		t.Fatalf("nothing kept, and the store was not read")
	}
	if len(fromStore) != 3 || len(foundInStore) == 0 {
		t.Fatalf("from the store: envelopes %q, SEARCH %v; want 3 and some", fromStore, foundInStore)
	}

	// Keep what the store has, under the bodies' ids.
	ctx := context.Background()
	inbox, err := e.st.Folder(ctx, e.mb.ID, "INBOX")
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := e.st.Messages(ctx, e.mb.ID, inbox.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.Summaries(ctx, e.mb.ID, inbox.ID, []uint32{1, 2, 3}, func(uid uint32, h []byte) error {
		k.summaries[msgs[uid-1].BlobID] = slices.Clone(h)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	before := k.sumReads.Load()
	if got := envelopes(); !slices.Equal(got, fromStore) {
		t.Errorf("ENVELOPE from kept summaries = %q, want %q as from the store", got, fromStore)
	}
	if got := search(); !slices.Equal(got, foundInStore) {
		t.Errorf("SEARCH from kept summaries = %v, want %v as from the store", got, foundInStore)
	}
	if n := k.sumReads.Load() - before; n != 0 {
		t.Errorf("%d reads of the store's summaries with all kept, want 0", n)
	}
}
