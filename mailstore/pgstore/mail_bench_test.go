package pgstore

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mailhost/mailhost/internal/pgtest"
	"github.com/mailhost/mailhost/mailstore"
)

// Mail-plane benchmarks; BENCHMARKS.md has the command and figures. As
// mailstore's bbolt benchmarks do, the loads are written straight into
// the tables, not through the methods measured.

var benchMailNow = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// mailFixture opens a store on a fresh schema with one domain of n
// mailboxes, each with its default folders, made with SQL (so that the
// mail plane can be measured and tested without the control plane).
func mailFixture(tb testing.TB, n int) (*Store, []int64) {
	tb.Helper()
	ctx := context.Background()
	s, err := Open(ctx, pgtest.URL(tb), Options{Node: "bench", MaxConns: 32})
	if err != nil {
		tb.Fatalf("Open() = %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	var ids []int64
	err = s.write(ctx, func(tx pgx.Tx) error {
		ids = ids[:0]
		var pid, did int64
		if err := tx.QueryRow(ctx, `INSERT INTO partners (name, created_at) VALUES ('p', $1) RETURNING id`, benchMailNow).Scan(&pid); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `INSERT INTO domains (partner_id, name, plan, max_mailboxes, max_aliases, quota_mb, retention_days, transfer_monthly_mb, created_at, mailbox_count)
			VALUES ($1, 'bench.example', 'big', 0, 0, $2, 30, $2, $3, $4) RETURNING id`, pid, int64(1<<20), benchMailNow, n).Scan(&did); err != nil {
			return err
		}
		for i := range n {
			email := fmt.Sprintf("u%d@bench.example", i)
			var id int64
			if err := tx.QueryRow(ctx, `INSERT INTO mailboxes (domain_id, partner_id, email, password_hash, quota_mb, folder_count, created_at)
				VALUES ($1, $2, $3, 'x', $4, $5, $6) RETURNING id`, did, pid, email, int64(1<<20), len(mailstore.DefaultFolders), benchMailNow).Scan(&id); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO addresses (address, domain_id, kind, target_id) VALUES ($1, $2, 'm', $3)`, email, did, id); err != nil {
				return err
			}
			for _, df := range mailstore.DefaultFolders {
				if _, err := tx.Exec(ctx, `INSERT INTO folders (mailbox_id, name, special_use, uid_validity) VALUES ($1, $2, $3, nextval('uid_validity_seq'))`, id, df[0], df[1]); err != nil {
					return err
				}
			}
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("fixture: %v", err)
	}
	return s, ids
}

// BenchmarkDeliver is 20 concurrent deliveries of 4 KB messages, each to
// one of 100 mailboxes of one domain, each committed with
// synchronous_commit on: mailstore's BenchmarkDeliverParallel against
// PostgreSQL.
func BenchmarkDeliver(b *testing.B) {
	s, ids := mailFixture(b, 100)
	body := bytes.Repeat([]byte{'x'}, 4096)
	ctx := context.Background()
	var next atomic.Int64
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
