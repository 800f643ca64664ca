package boltstore

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	bolt "go.etcd.io/bbolt"
)

// Mail-plane benchmarks; BENCHMARKS_MAIL.md has the command and figures.
// Every measured write is committed and synced, as in production. The
// loads (fill) write straight through mailTx, thousands of messages to a
// transaction, so that they take seconds, not an fsync per message.

var benchMailNow = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// benchMailStore opens a store with one domain of n mailboxes.
func benchMailStore(b *testing.B, n int) (*Store, []int64) {
	b.Helper()
	ctx := context.Background()
	s, err := Open(ctx, b.TempDir(), Options{})
	if err != nil {
		b.Fatalf("Open() = %v", err)
	}
	b.Cleanup(func() { s.Close() })
	p, err := s.CreatePartner(ctx, "p", benchMailNow)
	if err != nil {
		b.Fatal(err)
	}
	plan := mailstore.Plan{Name: "big", QuotaMB: 1 << 20, RetentionDays: 30, TransferMonthlyMB: 1 << 20}
	if _, err := s.CreateDomain(ctx, p.ID, mailstore.NewDomain{Name: "bench.example", Plan: plan}, benchMailNow); err != nil {
		b.Fatal(err)
	}
	var ids []int64
	err = s.db.Update(func(tx *bolt.Tx) error {
		for i := range n {
			m, err := createMailboxTx(tx, p.ID, "bench.example", fmt.Sprintf("u%d@bench.example", i), benchHash, benchMailNow)
			if err != nil {
				return err
			}
			ids = append(ids, m.ID)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return s, ids
}

// fill files n messages of size bytes each, one body each, received at
// `at`, round-robin into the mailboxes' INBOXes.
func fill(b *testing.B, s *Store, ids []int64, n, size int, at time.Time) {
	b.Helper()
	body := bytes.Repeat([]byte{'x'}, size)
	for done := 0; done < n; {
		err := s.db.Update(func(tx *bolt.Tx) error {
			t := newMailTx(tx)
			for i := 0; i < 5000 && done < n; i, done = i+1, done+1 {
				id := ids[done%len(ids)]
				inbox, err := t.folderByName(id, "INBOX")
				if err != nil {
					return err
				}
				blob, err := nextID(t.blobs)
				if err != nil {
					return err
				}
				if err := t.blobs.Put(id8(blob), body); err != nil {
					return err
				}
				t.rcache[blob] = 1
				if _, err := t.add(inbox, mailstore.Message{BlobID: blob, Size: int64(size), ReceivedAt: at}); err != nil {
					return err
				}
			}
			return t.flush()
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDeliverParallel is 20 concurrent deliveries of 4 KB messages,
// each to one of 100 mailboxes: bbolt's Batch lets them share commits.
func BenchmarkDeliverParallel(b *testing.B) {
	s, ids := benchMailStore(b, 100)
	body := bytes.Repeat([]byte{'x'}, 4096)
	ctx := context.Background()
	var next atomic.Int64
	// RunParallel starts parallelism × GOMAXPROCS goroutines: 20 here.
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((20 + procs - 1) / procs)
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := ids[next.Add(1)%int64(len(ids))]
			if _, err := s.Deliver(ctx, mailstore.Delivery{Body: body, ReceivedAt: benchMailNow, MailboxIDs: []int64{id}}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
}

// BenchmarkDeliver is one delivery at a time (one commit each) of a 4 KB
// message to a mailbox whose INBOX is empty or holds 100,000 messages
// (among 100,000 more in other mailboxes): the cost must not grow with the
// mailbox.
func BenchmarkDeliver(b *testing.B) {
	for _, pre := range []int{0, 100_000} {
		b.Run(fmt.Sprintf("prefilled_%d", pre), func(b *testing.B) {
			s, ids := benchMailStore(b, 2)
			if pre > 0 {
				fill(b, s, ids, 2*pre, 1024, benchMailNow.Add(-time.Hour))
			}
			body := bytes.Repeat([]byte{'x'}, 4096)
			ctx := context.Background()
			b.SetBytes(int64(len(body)))
			before := s.db.Stats().TxStats
			n := 0
			for b.Loop() {
				if _, err := s.Deliver(ctx, mailstore.Delivery{Body: body, ReceivedAt: benchMailNow, MailboxIDs: ids[:1]}); err != nil {
					b.Fatal(err)
				}
				n++
			}
			// Pages written per delivery: the work a commit does, without
			// the disk's noise.
			after := s.db.Stats().TxStats
			b.ReportMetric(float64(after.GetWrite()-before.GetWrite())/float64(n), "pages/op")
		})
	}
}

// BenchmarkPurge measures the retention pass: each round deletes 20,000
// messages of 4 KB received 40 days ago, spread over 100 mailboxes, next
// to 100,000 younger messages it keeps (and must not read).
func BenchmarkPurge(b *testing.B) {
	const old = 20_000
	s, ids := benchMailStore(b, 100)
	fill(b, s, ids, 100_000, 1024, benchMailNow.Add(-time.Hour))
	ctx := context.Background()
	var purged int64
	var spent time.Duration
	for b.Loop() {
		b.StopTimer()
		fill(b, s, ids, old, 4096, benchMailNow.AddDate(0, 0, -40))
		b.StartTimer()
		start := time.Now()
		res, err := s.PurgeBefore(ctx, benchMailNow)
		spent += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if len(res) != 1 || res[0].Messages != old {
			b.Fatalf("PurgeBefore() = %+v, want %d messages", res, old)
		}
		purged += res[0].Messages
	}
	b.ReportMetric(float64(purged)/spent.Seconds(), "msgs/s")
}

// BenchmarkFolderUpdate is the store's side of telling an IMAP session of
// one new message in a folder of 10,000: before the change log
// the session re-read the folder (Messages); now it reads the changes
// after its view (Changes, here the one delivery).
func BenchmarkFolderUpdate(b *testing.B) {
	ctx := context.Background()
	s, ids := benchMailStore(b, 1)
	fill(b, s, ids, 10_000, 4096, benchMailNow)
	if _, err := s.Deliver(ctx, mailstore.Delivery{Body: []byte("new"), ReceivedAt: benchMailNow, MailboxIDs: ids}); err != nil {
		b.Fatal(err)
	}
	inbox, err := s.Folder(ctx, ids[0], "INBOX")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("messages", func(b *testing.B) {
		for b.Loop() {
			ms, err := s.Messages(ctx, ids[0], inbox.ID)
			if err != nil || len(ms) != 10_001 {
				b.Fatalf("Messages() = %d, %v", len(ms), err)
			}
		}
	})
	b.Run("changes", func(b *testing.B) {
		for b.Loop() {
			_, ch, err := s.Changes(ctx, ids[0], inbox.ID, inbox.HighestModSeq-1)
			if err != nil || len(ch) != 1 {
				b.Fatalf("Changes() = %d, %v", len(ch), err)
			}
		}
	})
}

// BenchmarkDeliverFreelist is what writing the freelist at each commit
// costs a delivery (one at a time, one commit each, 4 KB), with no free
// pages and with the ~40,000 a retention pass of 20,000 messages of 4 KB
// leaves, against not writing it (NoFreelistSync, whose price is a walk
// of the whole file at every open).
func BenchmarkDeliverFreelist(b *testing.B) {
	for _, purged := range []int{0, 20_000} {
		for _, written := range []bool{false, true} {
			b.Run(fmt.Sprintf("purged_%d/freelist_written_%v", purged, written), func(b *testing.B) {
				s, ids := benchMailStore(b, 2)
				s.db.NoFreelistSync = !written
				fill(b, s, ids, 20_000, 1024, benchMailNow.Add(-time.Hour))
				if purged > 0 {
					fill(b, s, ids[1:], purged, 4096, benchMailNow.AddDate(0, 0, -40))
					if _, err := s.PurgeBefore(context.Background(), benchMailNow); err != nil {
						b.Fatal(err)
					}
				}
				body := bytes.Repeat([]byte{'x'}, 4096)
				ctx := context.Background()
				before := s.db.Stats()
				n := 0
				for b.Loop() {
					if _, err := s.Deliver(ctx, mailstore.Delivery{Body: body, ReceivedAt: benchMailNow, MailboxIDs: ids[:1]}); err != nil {
						b.Fatal(err)
					}
					n++
				}
				after := s.db.Stats()
				b.ReportMetric(float64(before.FreePageN), "free-pages")
				b.ReportMetric(float64(after.TxStats.GetWrite()-before.TxStats.GetWrite())/float64(n), "pages/op")
			})
		}
	}
}
