package pgstore

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/mailhost/mailhost/mailstore"
)

// TestBodyCache: the cache keeps at most its bytes, drops the least
// recently used first, keeps copies, and skips a body over an eighth of
// it; a cache of 0 bytes keeps nothing.
func TestBodyCache(t *testing.T) {
	c := newBodyCache(800)
	body := func(b byte) []byte { return bytes.Repeat([]byte{b}, 100) }
	for id := int64(1); id <= 8; id++ {
		c.put(id, body(byte('a'+id)))
	}
	if _, ok := c.get(1); !ok { // 1 is now the most recent
		t.Fatal("get(1) after 8 puts of 100 bytes in 800: not kept")
	}
	c.put(9, body('z'))
	if _, ok := c.get(2); ok {
		t.Error("get(2): kept, want dropped as the least recently used")
	}
	if b, ok := c.get(1); !ok || !bytes.Equal(b, body('b')) {
		t.Errorf("get(1) = %q, %v; want its body, true", b, ok)
	}
	if c.bytes > c.max {
		t.Errorf("cache holds %d bytes, more than its %d", c.bytes, c.max)
	}
	src := body('q')
	c.put(10, src)
	src[0] = 'X'
	if b, _ := c.get(10); b[0] != 'q' {
		t.Error("a body kept shares the caller's memory")
	}
	c.put(11, bytes.Repeat([]byte{'l'}, 101))
	if _, ok := c.get(11); ok {
		t.Error("a body over an eighth of the cache was kept")
	}
	none := newBodyCache(-1)
	none.put(1, body('a'))
	if _, ok := none.get(1); ok {
		t.Error("a cache of no bytes kept a body")
	}
}

// TestBodiesCached: Bodies answers a body it has read from the node's
// cache the next time (here seen by the database's copy changed behind
// it, which no writer does), and from the database without a cache.
func TestBodiesCached(t *testing.T) {
	s, ids := mailFixture(t, 1)
	ctx := context.Background()
	for _, body := range []string{"Subject: one\r\n\r\n1", "Subject: two\r\n\r\n2"} {
		if _, err := s.Deliver(ctx, mailstore.Delivery{Body: []byte(body), ReceivedAt: benchMailNow, MailboxIDs: ids}); err != nil {
			t.Fatal(err)
		}
	}
	inbox, err := s.Folder(ctx, ids[0], "INBOX")
	if err != nil {
		t.Fatal(err)
	}
	read := func() (got []string) {
		t.Helper()
		if err := s.Bodies(ctx, ids[0], inbox.ID, []uint32{1, 2}, func(_ uint32, b []byte) error {
			got = append(got, string(b))
			return nil
		}); err != nil {
			t.Fatalf("Bodies = %v", err)
		}
		return got
	}
	first := read()
	if _, err := s.pool.Exec(ctx, `UPDATE blobs SET body = 'changed'`); err != nil {
		t.Fatal(err)
	}
	if got := read(); len(got) != 2 || got[0] != first[0] || got[1] != first[1] {
		t.Errorf("Bodies again = %q, want %q from the cache", got, first)
	}
	s.bodies = newBodyCache(-1)
	if got := read(); len(got) != 2 || got[0] != "changed" {
		t.Errorf("Bodies without a cache = %q, want the database's", got)
	}
}

// TestDeliveredBodiesCached: the node that stored new mail serves its
// first FETCH from memory, as it serves a body it read before.
func TestDeliveredBodiesCached(t *testing.T) {
	s, ids := mailFixture(t, 1)
	ctx := context.Background()
	bodies := []string{"Subject: new\r\n\r\nnew mail", "Subject: newer\r\n\r\nnewer mail"}
	for _, body := range bodies {
		if _, err := s.Deliver(ctx, mailstore.Delivery{Body: []byte(body), ReceivedAt: benchMailNow, MailboxIDs: ids}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.pool.Exec(ctx, `UPDATE blobs SET body = 'changed'`); err != nil {
		t.Fatal(err)
	}
	inbox, err := s.Folder(ctx, ids[0], "INBOX")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := s.Bodies(ctx, ids[0], inbox.ID, []uint32{1, 2}, func(_ uint32, b []byte) error {
		got = append(got, string(b))
		return nil
	}); err != nil {
		t.Fatalf("Bodies = %v", err)
	}
	if !slices.Equal(got, bodies) {
		t.Errorf("Bodies right after delivery = %q, want %q from the node's cache", got, bodies)
	}
}

// TestBodyReadCached: a body read alone (Body, as FETCH n does) is kept,
// and CachedBody answers it by its id without the database; a body not
// kept is not answered.
func TestBodyReadCached(t *testing.T) {
	s, ids := mailFixture(t, 1)
	ctx := context.Background()
	const body = "Subject: once\r\n\r\nread once"
	inbox, blob := deliverOne(t, s, ids[0], []byte(body))
	s.bodies = newBodyCache(defaultBodyCacheBytes) // as on a node that did not store it
	if b, ok := s.CachedBody(blob); ok {
		t.Fatalf("CachedBody before any read = %q, want none", b)
	}
	got, err := s.Body(ctx, ids[0], inbox.ID, 1)
	if err != nil || string(got) != body {
		t.Fatalf("Body = %q, %v; want %q", got, err, body)
	}
	if _, err := s.pool.Exec(ctx, `UPDATE blobs SET body = 'changed'`); err != nil {
		t.Fatal(err)
	}
	if b, ok := s.CachedBody(blob); !ok || string(b) != body {
		t.Errorf("CachedBody after Body = %q, %v; want %q from the node's memory", b, ok, body)
	}
	if b, ok := s.CachedBody(blob + 1000); ok {
		t.Errorf("CachedBody of an unknown id = %q, want none", b)
	}
}

// TestSummariesCached: the node keeps the summaries of what it delivers
// and of what Summaries reads, by body id; CachedSummary answers them
// without the database, and nothing with the caches off.
func TestSummariesCached(t *testing.T) {
	s, ids, u := mailFixtureURL(t, 1)
	ctx := context.Background()
	body := []byte("From: a@example.test\r\nSubject: kept\r\n\r\nbody")
	inbox, blob := deliverOne(t, s, ids[0], body)
	want := string(mailstore.HeaderSummary(body))
	if got, ok := s.CachedSummary(blob); !ok || string(got) != want {
		t.Errorf("CachedSummary after Deliver = %q, %v; want %q", got, ok, want)
	}

	s.summaries = newBodyCache(defaultSummaryCacheBytes) // as on another node
	if got, ok := s.CachedSummary(blob); ok {
		t.Fatalf("CachedSummary before a read = %q, want none", got)
	}
	var read string
	if err := s.Summaries(ctx, ids[0], inbox.ID, []uint32{1}, func(_ uint32, h []byte) error {
		read = string(h)
		return nil
	}); err != nil || read != want {
		t.Fatalf("Summaries = %q, %v; want %q", read, err, want)
	}
	if got, ok := s.CachedSummary(blob); !ok || string(got) != want {
		t.Errorf("CachedSummary after Summaries = %q, %v; want %q", got, ok, want)
	}

	off, err := Open(ctx, u, Options{Node: "off", BodyCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
	if err := off.Summaries(ctx, ids[0], inbox.ID, []uint32{1}, func(uint32, []byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if got, ok := off.CachedSummary(blob); ok {
		t.Errorf("CachedSummary with the caches off = %q, want none", got)
	}
}

// deliverOne delivers body to the empty INBOX of mailbox and answers the
// folder and the body's id.
func deliverOne(t *testing.T, s *Store, mailbox int64, body []byte) (mailstore.Folder, int64) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Deliver(ctx, mailstore.Delivery{Body: body, ReceivedAt: benchMailNow, MailboxIDs: []int64{mailbox}}); err != nil {
		t.Fatal(err)
	}
	inbox, err := s.Folder(ctx, mailbox, "INBOX")
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := s.Messages(ctx, mailbox, inbox.ID)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("Messages = %v, %v; want one", msgs, err)
	}
	return inbox, msgs[0].BlobID
}
