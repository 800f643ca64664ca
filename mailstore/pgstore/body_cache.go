package pgstore

import (
	"container/list"
	"sync"
)

// bodyCache keeps the bodies this node read or stored last, by body id,
// up to a number of bytes (least recently used out first). A body read from
// PostgreSQL costs its TOAST fetch, about 20 µs of the database's CPU
// for 4 KB on the project's machine against 3 µs for its message's row
// (bench/README.md, "On PostgreSQL"), and that bounded SEARCH BODY and
// FETCH of many bodies. A body never changes once stored and its id is
// never reused (an identity column; Load writes into an empty store),
// so an entry is right for as long as it is kept, on every node: one
// whose body was freed is only no longer asked for.
type bodyCache struct {
	mu    sync.Mutex
	max   int64 // bytes; no cache at 0
	bytes int64
	lru   list.List // of *cachedBody, most recent first
	byID  map[int64]*list.Element
}

type cachedBody struct {
	id   int64
	body []byte
}

// defaultBodyCacheBytes is Options.BodyCacheBytes when zero.
const defaultBodyCacheBytes = 64 << 20

// defaultSummaryCacheBytes bounds the summaries a node keeps: at 300-600
// bytes each, those of 30,000-50,000 messages.
const defaultSummaryCacheBytes = 16 << 20

func newBodyCache(max int64) *bodyCache {
	return &bodyCache{max: max, byID: map[int64]*list.Element{}}
}

// get answers the body of id if kept. The caller must not change it.
func (c *bodyCache) get(id int64) ([]byte, bool) {
	if c.max <= 0 {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byID[id]
	if !ok {
		return nil, false
	}
	c.lru.MoveToFront(e)
	return e.Value.(*cachedBody).body, true
}

// put keeps a copy of body as id's, unless it would take more than an
// eighth of the cache (one large message would push out many small).
func (c *bodyCache) put(id int64, body []byte) {
	if c.max <= 0 || int64(len(body)) > c.max/8 {
		return
	}
	kept := append([]byte(nil), body...) // body may be the driver's memory
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byID[id]; ok {
		return
	}
	c.byID[id] = c.lru.PushFront(&cachedBody{id: id, body: kept})
	c.bytes += int64(len(kept))
	for c.bytes > c.max {
		e := c.lru.Back()
		b := e.Value.(*cachedBody)
		c.lru.Remove(e)
		delete(c.byID, b.id)
		c.bytes -= int64(len(b.body))
	}
}
