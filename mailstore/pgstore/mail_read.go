package pgstore

import (
	"context"
	"slices"
	"sync"
)

// The read path of Bodies and Summaries: a folder's messages in chunks,
// each one statement (one snapshot), read one chunk ahead of the caller
// so that the database and the caller's writes to its client overlap.

// readChunk is one query's worth of Bodies or Summaries: its UIDs in the
// order asked, and their values in buf.
type readChunk struct {
	uids  []int64
	buf   []byte
	spans map[int64][2]int // uid -> its value's start and end in buf
	err   error
	// after, when not nil, runs on the reader once fn has the chunk:
	// a cache fill that need not delay the caller. It owns its data.
	after func(ctx context.Context)
	done  chan struct{} // closed once read has filled it
}

// put copies uid's value into the chunk.
func (c *readChunk) put(uid int64, v []byte) {
	start := len(c.buf)
	c.buf = append(c.buf, v...)
	c.spans[uid] = [2]int{start, len(c.buf)}
}

// want reports whether a row a query read is one of the chunk's: a
// query by range (uidRange) reads the rows between the chunk's UIDs too.
func (c *readChunk) want(uid int64, ranged bool) bool {
	if !ranged {
		return true
	}
	_, ok := slices.BinarySearch(c.uids, uid)
	return ok
}

// uidRange answers the bounds of uids (a chunk, or all that a call asks)
// when they are ascending and at most spread times as many as the rows
// of the messages key between their ends: then one range of the key
// reads them, where `uid = ANY(...)` descends the key once per UID
// (PostgreSQL 15), which was most of a chunk's time in the database.
func uidRange(uids []int64, spread int64) (lo, hi int64, ok bool) {
	if len(uids) == 0 {
		return 0, 0, false
	}
	for i := 1; i < len(uids); i++ {
		if uids[i] <= uids[i-1] {
			return 0, 0, false
		}
	}
	lo, hi = uids[0], uids[len(uids)-1]
	return lo, hi, hi-lo+1 <= int64(len(uids))*spread
}

// readAhead calls fn with the value of each of uids, in their order,
// skipping those no chunk has. cut fills a chunk's uids from the start
// of rest and answers how many of rest it took (at least one while rest
// is not empty; it may leave out UIDs known to be gone); read fills the
// chunk with values. ahead chunks are read at once, each on its own
// connection, while fn has the one before them: ahead+1 chunks exist,
// their buffers reused in turn. fn runs outside any transaction; an
// error of fn comes back as it is, one of read through wrap.
func readAhead(ctx context.Context, uids []uint32, ahead int, cut func(rest []uint32, c *readChunk) int,
	read func(ctx context.Context, c *readChunk) error, wrap func(error) error, fn func(uid uint32, b []byte) error) error {
	// Cancelling rctx (on return) stops the readers; readAhead returns
	// once none is left.
	rctx, cancel := context.WithCancel(ctx)
	var readers sync.WaitGroup
	defer readers.Wait()
	defer cancel()
	free := make(chan *readChunk, ahead+1)
	order := make(chan *readChunk, ahead) // the chunks being read, in order
	for range ahead + 1 {
		free <- &readChunk{spans: map[int64][2]int{}}
	}
	readers.Go(func() {
		defer close(order)
		for next := 0; next < len(uids); {
			var c *readChunk
			select {
			case c = <-free:
			case <-rctx.Done():
				return
			}
			c.uids, c.buf, c.err, c.after = c.uids[:0], c.buf[:0], nil, nil
			clear(c.spans)
			next += cut(uids[next:], c)
			if len(c.uids) == 0 {
				free <- c
				continue
			}
			c.done = make(chan struct{})
			readers.Go(func() {
				err := read(rctx, c)
				c.err = err
				after := c.after
				close(c.done) // c is fn's from here
				if after != nil && err == nil {
					// ctx, not rctx: the return of readAhead cancels
					// rctx, and waits for this fill.
					after(ctx)
				}
			})
			order <- c // buffered: at most ahead are being read
		}
	})
	var fnErr error
	for c := range order {
		<-c.done
		if fnErr != nil {
			continue // draining, so that the dispatcher can end
		}
		if c.err != nil {
			cancel()
			if ctx.Err() != nil {
				fnErr = ctx.Err()
			} else {
				fnErr = wrap(c.err)
			}
			continue
		}
		for _, uid := range c.uids {
			sp, ok := c.spans[uid]
			if !ok {
				continue // not in the folder (expunged): skipped
			}
			// The full slice expression keeps fn from appending into the
			// next value.
			if err := fn(uint32(uid), c.buf[sp[0]:sp[1]:sp[1]]); err != nil {
				fnErr = err
				cancel()
				break
			}
		}
		free <- c
	}
	if fnErr != nil {
		return fnErr
	}
	return ctx.Err()
}
