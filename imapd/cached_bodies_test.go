package imapd

import (
	"context"
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
	mu    sync.Mutex
	kept  map[int64][]byte
	reads atomic.Int64
}

func (k *keptBodies) CachedBody(blob int64) ([]byte, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	b, ok := k.kept[blob]
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
