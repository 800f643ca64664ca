// Package groupcommit is an experiment behind bench/README.md: why
// mailhost commits about three deliveries per fsync under 20 SMTP
// connections, and what a group commit that adapts to the commit time
// would do instead. It uses bbolt directly, with mailstore's options
// (map freelist, no freelist sync, Batch window 2 ms, up to 256 calls), and
// a write shaped like a delivery: a 4 KB body under a new key, a small
// message record, a counter updated in place.
//
//	go test -run XXX -bench . -benchtime 4000x ./bench/groupcommit
//
// Each of 20 goroutines stands for one SMTP connection: it spends a random
// time averaging think (the SMTP exchange and the server's work on the
// message outside the store) then delivers, then starts over. The figures are deliveries per
// second and deliveries per commit (two fdatasyncs each).
package groupcommit

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

var (
	bBlobs    = []byte("blobs")
	bMessages = []byte("messages")
	bCounters = []byte("counters")
)

func open(b *testing.B) *bolt.DB {
	b.Helper()
	db, err := bolt.Open(filepath.Join(b.TempDir(), "gc.db"), 0o600, &bolt.Options{
		FreelistType: bolt.FreelistMapType, NoFreelistSync: true,
	})
	if err != nil {
		b.Fatal(err)
	}
	db.MaxBatchDelay = 2 * time.Millisecond
	db.MaxBatchSize = 256
	err = db.Update(func(tx *bolt.Tx) error {
		for _, n := range [][]byte{bBlobs, bMessages, bCounters} {
			if _, err := tx.CreateBucketIfNotExists(n); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

var body = make([]byte, 4096)

// deliver is one delivery's writes inside a transaction.
func deliver(tx *bolt.Tx, id uint64, mailbox uint64) error {
	k := binary.BigEndian.AppendUint64(nil, id)
	if err := tx.Bucket(bBlobs).Put(k, body); err != nil {
		return err
	}
	rec := fmt.Appendf(nil, `{"blob_id":%d,"size":4096,"received_at":"2026-11-23T18:00:00Z"}`, id)
	if err := tx.Bucket(bMessages).Put(binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, mailbox), id), rec); err != nil {
		return err
	}
	c := tx.Bucket(bCounters)
	ck := binary.BigEndian.AppendUint64(nil, mailbox)
	n := uint64(0)
	if v := c.Get(ck); v != nil {
		n = binary.BigEndian.Uint64(v)
	}
	return c.Put(ck, binary.BigEndian.AppendUint64(nil, n+1))
}

// committer is a group commit that adapts to the commit time: one
// goroutine takes the first waiting delivery, then every other already
// waiting (up to max), commits them in one transaction, answers them all,
// and starts over. While it commits, new deliveries queue for the next
// round, so the busier the disk, the bigger the group; an idle store
// commits a lone delivery at once, without a timer.
type committer struct {
	db   *bolt.DB
	reqs chan req
	max  int
}

type req struct {
	fn   func(*bolt.Tx) error
	done chan error
}

func newCommitter(db *bolt.DB, max int) *committer {
	c := &committer{db: db, reqs: make(chan req, 1024), max: max}
	go c.loop()
	return c
}

func (c *committer) loop() {
	for r := range c.reqs {
		group := []req{r}
	drain:
		for len(group) < c.max {
			select {
			case r, ok := <-c.reqs:
				if !ok {
					break drain
				}
				group = append(group, r)
			default:
				break drain
			}
		}
		// A failing function fails only itself: it runs in a
		// savepoint-free transaction here, so the experiment keeps it
		// simple and fails the group (mailstore's real version would
		// retry the others, as bbolt's Batch does).
		err := c.db.Update(func(tx *bolt.Tx) error {
			for _, r := range group {
				if err := r.fn(tx); err != nil {
					return err
				}
			}
			return nil
		})
		for _, r := range group {
			r.done <- err
		}
	}
}

func (c *committer) do(fn func(*bolt.Tx) error) error {
	done := make(chan error, 1)
	c.reqs <- req{fn, done}
	return <-done
}

func run(b *testing.B, think time.Duration, commit func(func(*bolt.Tx) error) error) {
	const conns = 20
	var next atomic.Uint64
	n := uint64(b.N)
	// txs holds the id of every transaction a delivery ran in: their
	// number is the number of commits.
	var mu sync.Mutex
	txs := map[int]bool{}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				id := next.Add(1)
				if id > n {
					return
				}
				if think > 0 {
					// Uniform in [0, 2*think): connections do not
					// move in step, as real ones do not.
					time.Sleep(time.Duration(rand.Int64N(int64(2 * think))))
				}
				err := commit(func(tx *bolt.Tx) error {
					mu.Lock()
					txs[tx.ID()] = true
					mu.Unlock()
					return deliver(tx, id, id%100)
				})
				if err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/el.Seconds(), "deliveries/s")
	b.ReportMetric(float64(b.N)/float64(len(txs)), "deliveries/commit")
}

func BenchmarkCommit(b *testing.B) {
	for _, think := range []time.Duration{0, time.Millisecond, 3 * time.Millisecond, 10 * time.Millisecond} {
		b.Run(fmt.Sprintf("bbolt_Batch/think_%s", think), func(b *testing.B) {
			db := open(b)
			run(b, think, db.Batch)
		})
		b.Run(fmt.Sprintf("adaptive/think_%s", think), func(b *testing.B) {
			db := open(b)
			c := newCommitter(db, 256)
			defer close(c.reqs)
			run(b, think, c.do)
		})
	}
}
