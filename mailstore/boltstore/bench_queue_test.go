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

// Outbound queue benchmarks; BENCHMARKS_MAIL.md has the command and
// figures. As for the mail plane, every measured write is committed and
// synced, and loads go straight through the internals.

// fillQueue files n entries of size bytes each, one body each, for domain
// domainID, due at `due`.
func fillQueue(b *testing.B, s *Store, domainID int64, n, size int, due time.Time) {
	b.Helper()
	body := bytes.Repeat([]byte{'q'}, size)
	for done := 0; done < n; {
		err := s.db.Update(func(tx *bolt.Tx) error {
			t := newMailTx(tx)
			q := newQueueTx(tx)
			for i := 0; i < 5000 && done < n; i, done = i+1, done+1 {
				blob, err := nextID(t.blobs)
				if err != nil {
					return err
				}
				if err := t.blobs.Put(id8(blob), body); err != nil {
					return err
				}
				t.rcache[blob] = 1
				id, err := nextID(q.entries)
				if err != nil {
					return err
				}
				g := mailstore.RelayGroup{Relay: &mailstore.Relay{Kind: mailstore.KindForward, DomainID: domainID}, Destination: "r.example", To: []string{fmt.Sprintf("x%d@r.example", id)}}
				o := mailstore.RelayEntry(g, blob, int64(size), due, false)
				o.ID = id
				if err := q.put(o); err != nil {
					return err
				}
			}
			return t.flushRefs()
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDeliverRelay is a submission of a 4 KB message to one local
// mailbox and two remote domains: a local copy, two queue entries on one
// body, inbound and outbound transfer, the cap check. One at a time (one
// commit each), then from 20 goroutines sharing commits.
func BenchmarkDeliverRelay(b *testing.B) {
	relay := func(i int64) []mailstore.Relay {
		return []mailstore.Relay{{Kind: mailstore.KindSubmission, DomainID: 1, From: "u0@bench.example",
			To: []string{fmt.Sprintf("x%d@r1.example", i), fmt.Sprintf("y%d@r2.example", i)}}}
	}
	body := bytes.Repeat([]byte{'x'}, 4096)
	ctx := context.Background()
	b.Run("serial", func(b *testing.B) {
		s, ids := benchMailStore(b, 2)
		b.SetBytes(int64(len(body)))
		before := s.db.Stats().TxStats
		var n int64
		for b.Loop() {
			n++
			res, err := s.Deliver(ctx, mailstore.Delivery{Body: body, ReceivedAt: benchMailNow, SenderDomainID: 1, MailboxIDs: ids[1:], Relay: relay(n)})
			if err != nil || len(res.Queued) != 2 {
				b.Fatalf("Deliver() = %+v, %v", res, err)
			}
		}
		after := s.db.Stats().TxStats
		b.ReportMetric(float64(after.GetWrite()-before.GetWrite())/float64(n), "pages/op")
	})
	b.Run("parallel_20", func(b *testing.B) {
		s, ids := benchMailStore(b, 100)
		var next atomic.Int64
		procs := runtime.GOMAXPROCS(0)
		b.SetParallelism((20 + procs - 1) / procs)
		b.SetBytes(int64(len(body)))
		b.ResetTimer()
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := next.Add(1)
				_, err := s.Deliver(ctx, mailstore.Delivery{Body: body, ReceivedAt: benchMailNow, SenderDomainID: 1,
					MailboxIDs: []int64{ids[i%int64(len(ids))]}, Relay: relay(i)})
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
	})
}

// BenchmarkClaimRecord is the delivery workers' side: 8 workers claim
// entries ten at a time and record each one delivered (which removes it
// and its body). One op is one entry. The queue also holds 0 or 100,000
// entries deferred to later, which a claim must not read.
func BenchmarkClaimRecord(b *testing.B) {
	for _, deferred := range []int{0, 100_000} {
		b.Run(fmt.Sprintf("deferred_%d", deferred), func(b *testing.B) {
			s, _ := benchMailStore(b, 1)
			if deferred > 0 {
				fillQueue(b, s, 1, deferred, 1024, benchMailNow.Add(time.Hour))
			}
			fillQueue(b, s, 1, b.N, 4096, benchMailNow.Add(-time.Minute))
			ctx := context.Background()
			procs := runtime.GOMAXPROCS(0)
			b.SetParallelism((8 + procs - 1) / procs)
			var claims atomic.Int64
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				var mine []mailstore.Outbound
				for pb.Next() {
					if len(mine) == 0 {
						got, err := s.ClaimOutbound(ctx, benchMailNow, time.Hour, 10, mailstore.ClaimOptions{})
						if err != nil {
							b.Error(err)
							return
						}
						claims.Add(1)
						if len(got) == 0 {
							// Another worker holds the rest; pb's count is
							// shared, so this op did no work.
							continue
						}
						mine = got
					}
					o := mine[0]
					mine = mine[1:]
					if _, err := s.RecordAttempt(ctx, o.ID, mailstore.Attempt{Now: benchMailNow, Delivered: o.Pending()}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "entries/s")
			b.ReportMetric(float64(claims.Load()), "claims")
		})
	}
}
