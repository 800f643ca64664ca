package pgstore

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
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
	s, ids, _ := mailFixtureURL(tb, n)
	return s, ids
}

// mailFixtureURL is mailFixture, and the URL of its schema (for a second
// node).
func mailFixtureURL(tb testing.TB, n int) (*Store, []int64, string) {
	tb.Helper()
	ctx := context.Background()
	u := pgtest.URL(tb)
	s, err := Open(ctx, u, Options{Node: "bench", MaxConns: 32})
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
	return s, ids, u
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

// BenchmarkDeliverNodes is BenchmarkDeliver's load (20 concurrent callers,
// 4 KB, 100 mailboxes) on one store handle, and split over two handles on
// one schema (two nodes, 10 callers each), without SMTP: what a second
// node costs the database. Besides msgs/s it reports the CPU per message
// of the database backends of the handles' connections (db-ms/msg, read
// from /proc: the database must run on this machine), of this process
// (go-ms/msg), and the messages per batch (from domain_usage's updates).
func BenchmarkDeliverNodes(b *testing.B) {
	// One node with 10 callers has batches as small as two nodes' with 10
	// each, without a second writer: it tells the cost of a batch from
	// the cost of two writers at once.
	// One node with two batches in flight (DeliverDepth 2) has two
	// writers at once without a second handle.
	// MAILHOST_BENCH_NODES="nodes/callers/depth ..." replaces the set
	// (for the cost of a batch against its size, say "1/1/1 1/4/1 1/20/1").
	set := []struct{ nodes, callers, depth int }{{1, 20, 1}, {2, 20, 1}, {1, 10, 1}, {1, 20, 2}}
	if v := os.Getenv("MAILHOST_BENCH_NODES"); v != "" {
		set = set[:0]
		for _, f := range strings.Fields(v) {
			var c struct{ nodes, callers, depth int }
			if _, err := fmt.Sscanf(f, "%d/%d/%d", &c.nodes, &c.callers, &c.depth); err != nil || c.nodes < 1 || c.callers < c.nodes || c.depth < 1 {
				b.Fatalf("MAILHOST_BENCH_NODES: %q is not nodes/callers/depth", f)
			}
			set = append(set, c)
		}
	}
	for _, c := range set {
		nodes := c.nodes
		b.Run(fmt.Sprintf("nodes=%d/callers=%d/depth=%d", nodes, c.callers, c.depth), func(b *testing.B) {
			_, ids, u := mailFixtureURL(b, 100)
			// The handles measured are opened anew with a name of their own
			// (application_name), by which their backends are found.
			u += "&application_name=" + benchApp
			stores := []*Store{}
			for i := range nodes {
				o, err := Open(context.Background(), u, Options{Node: fmt.Sprintf("bench%d", i), MaxConns: 32, DeliverDepth: c.depth})
				if err != nil {
					b.Fatalf("Open() = %v", err)
				}
				b.Cleanup(func() { o.Close() })
				stores = append(stores, o)
			}
			body := bytes.Repeat([]byte{'x'}, 4096)
			ctx := context.Background()
			// Warm every handle's connections, so that their backends exist
			// before the first reading of their CPU.
			var wg sync.WaitGroup
			for _, st := range stores {
				for i := range 20 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						st.Deliver(ctx, mailstore.Delivery{Body: body, ReceivedAt: benchMailNow, MailboxIDs: []int64{ids[i]}})
					}()
				}
			}
			wg.Wait()
			s := stores[0]
			db0, go0, batches0 := backendCPU(b, s), processCPU(), domainUsageWrites(b, s)
			b.SetBytes(int64(len(body)))
			b.ResetTimer()
			start := time.Now()
			var next atomic.Int64
			var done atomic.Int64
			per := c.callers / nodes
			for n := range nodes {
				for range per {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							i := next.Add(1)
							if i > int64(b.N) {
								return
							}
							id := ids[i%int64(len(ids))]
							if _, err := stores[n].Deliver(ctx, mailstore.Delivery{Body: body, ReceivedAt: benchMailNow, MailboxIDs: []int64{id}}); err != nil {
								b.Error(err)
								return
							}
							done.Add(1)
						}
					}()
				}
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			n := float64(done.Load())
			b.ReportMetric(n/elapsed.Seconds(), "msgs/s")
			b.ReportMetric((backendCPU(b, s)-db0).Seconds()*1000/n, "db-ms/msg")
			b.ReportMetric((processCPU()-go0).Seconds()*1000/n, "go-ms/msg")
			if w := domainUsageWrites(b, s) - batches0; w > 0 {
				b.ReportMetric(n/float64(w), "msgs/batch")
			}
		})
	}
}

// benchApp names the connections BenchmarkDeliverNodes measures.
const benchApp = "mhbench_nodes"

// backendCPU is the CPU time so far of the database backends of the
// connections named benchApp (those still open; the benchmark's pools
// keep theirs), from /proc.
func backendCPU(tb testing.TB, s *Store) time.Duration {
	tb.Helper()
	rows, err := s.pool.Query(context.Background(), `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()`, benchApp)
	if err != nil {
		tb.Fatalf("backends: %v", err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		tb.Fatalf("backends: %v", err)
	}
	var total time.Duration
	for _, pid := range pids {
		total += procCPU(int(pid))
	}
	return total
}

// procCPU is the user and system CPU time of a process so far; zero if
// it cannot be read (gone, or not on this machine).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name (which may hold spaces): utime
	// and stime are the 12th and 13th, in clock ticks (100 a second).
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}

// processCPU is this process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// domainUsageWrites is how many times rows of domain_usage were written:
// a delivery batch writes its node's row of its recipients' domain once.
func domainUsageWrites(tb testing.TB, s *Store) int64 {
	tb.Helper()
	// The statistics reach the view within a second of the transaction.
	time.Sleep(1100 * time.Millisecond)
	var n int64
	err := s.pool.QueryRow(context.Background(), `SELECT n_tup_ins + n_tup_upd FROM pg_stat_user_tables
		WHERE relid = 'domain_usage'::regclass`).Scan(&n)
	if err != nil {
		tb.Fatalf("domain_usage statistics: %v", err)
	}
	return n
}

// fillMessages files n messages of size bytes each, one body each,
// received at `at`, round-robin into the mailboxes' INBOXes, with the
// counters they make, in a few set-based statements.
func fillMessages(tb testing.TB, s *Store, n, size int, at time.Time) {
	tb.Helper()
	ctx := context.Background()
	body := bytes.Repeat([]byte{'x'}, size)
	err := s.write(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
			WITH f AS (
				SELECT row_number() OVER (ORDER BY f.id) - 1 AS k, count(*) OVER () AS nf,
					f.id, f.mailbox_id, f.uid_next, m.domain_id
				FROM folders f JOIN mailboxes m ON m.id = f.mailbox_id WHERE f.name = 'INBOX'
			), g AS (
				SELECT i, nextval(pg_get_serial_sequence('blobs', 'id')) AS blob FROM generate_series(0, $1::bigint - 1) i
			), b AS (
				INSERT INTO blobs (id, refs, body) SELECT blob, 1, $2::bytea FROM g
			)
			INSERT INTO messages (folder_id, uid, mailbox_id, domain_id, blob_id, size, received_at)
			SELECT f.id, f.uid_next + g.i / f.nf, f.mailbox_id, f.domain_id, g.blob, $3, $4
			FROM g JOIN f ON f.k = g.i % f.nf`, n, body, size, at)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `
			WITH c AS (SELECT folder_id, max(uid) AS top, count(*) AS n, sum(size) AS bytes FROM messages GROUP BY folder_id)
			UPDATE folders f SET uid_next = c.top + 1, messages = c.n, unseen = c.n, size = c.bytes FROM c WHERE f.id = c.folder_id`)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `
			WITH c AS (SELECT mailbox_id, count(*) AS n, sum(size) AS bytes FROM messages GROUP BY mailbox_id)
			UPDATE mailboxes m SET message_count = c.n, used_bytes = c.bytes FROM c WHERE m.id = c.mailbox_id`)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `
			WITH c AS (SELECT domain_id, count(*) AS n, sum(size) AS bytes FROM messages GROUP BY domain_id)
			UPDATE domains d SET message_count = c.n, used_bytes = c.bytes FROM c WHERE d.id = c.domain_id`)
		return err
	})
	if err != nil {
		tb.Fatalf("fill: %v", err)
	}
}

// BenchmarkPurge is PurgeBefore: each round deletes 20,000 messages of 4
// KB received 40 days ago (retention 30), over 100 mailboxes, beside
// 100,000 younger messages it keeps: mailstore's BenchmarkPurge against
// PostgreSQL.
func BenchmarkPurge(b *testing.B) {
	const old = 20_000
	s, _ := mailFixture(b, 100)
	fillMessages(b, s, 100_000, 1024, benchMailNow.Add(-time.Hour))
	ctx := context.Background()
	var purged int64
	var spent time.Duration
	for b.Loop() {
		b.StopTimer()
		fillMessages(b, s, old, 4096, benchMailNow.AddDate(0, 0, -40))
		if _, err := s.pool.Exec(ctx, `VACUUM ANALYZE messages`); err != nil {
			b.Fatal(err)
		}
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

// BenchmarkBodies is the read of an IMAP `FETCH 1:* BODY.PEEK[]`: every
// body of a folder of 10,000 messages of 4 KB, through Bodies, with fn
// copying each body out as a session's write does: from the database
// (no body cache), and from the node's cache (bodyCache) once the first
// read has filled it.
func BenchmarkBodies(b *testing.B) {
	s, ids := mailFixture(b, 1)
	fillMessages(b, s, 10000, 4096, benchMailNow)
	ctx := context.Background()
	folder, uids := benchInbox(b, s, ids[0], 10000)
	out := make([]byte, 0, 8192)
	read := func(b *testing.B) {
		n := 0
		if err := s.Bodies(ctx, ids[0], folder, uids, func(uid uint32, body []byte) error {
			out = append(out[:0], body...)
			n++
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		if n != len(uids) {
			b.Fatalf("Bodies gave %d bodies, want %d", n, len(uids))
		}
	}
	for _, c := range []struct {
		name  string
		cache int64
	}{{"database", -1}, {"cached", defaultBodyCacheBytes}} {
		b.Run(c.name, func(b *testing.B) {
			s.bodies = newBodyCache(c.cache)
			read(b) // fills the cache, if any
			b.SetBytes(10000 * 4096)
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				read(b)
			}
			b.ReportMetric(float64(b.N*len(uids))/time.Since(start).Seconds(), "msgs/s")
		})
	}
}

// BenchmarkSummaries is the read of a folder's listing or a SEARCH of
// header fields: every summary of a folder of 10,000 messages (made and
// stored by the first call, as for bodies stored before migration 008).
func BenchmarkSummaries(b *testing.B) {
	s, ids := mailFixture(b, 1)
	fillMessages(b, s, 10000, 4096, benchMailNow)
	ctx := context.Background()
	folder, uids := benchInbox(b, s, ids[0], 10000)
	read := func() {
		n := 0
		if err := s.Summaries(ctx, ids[0], folder, uids, func(uid uint32, h []byte) error {
			n++
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		if n != len(uids) {
			b.Fatalf("Summaries gave %d, want %d", n, len(uids))
		}
	}
	read() // the summaries made and stored
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		read()
	}
	b.ReportMetric(float64(b.N*len(uids))/time.Since(start).Seconds(), "msgs/s")
}

// benchInbox analyzes the tables (with statistics, as autovacuum soon
// gives a real table: before them the planner chooses differently) and
// answers the INBOX of mailbox and its UIDs 1..n.
func benchInbox(b *testing.B, s *Store, mailbox int64, n int) (int64, []uint32) {
	b.Helper()
	ctx := context.Background()
	if _, err := s.pool.Exec(ctx, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
	var folder int64
	if err := s.pool.QueryRow(ctx, `SELECT id FROM folders WHERE mailbox_id = $1 AND name = 'INBOX'`, mailbox).Scan(&folder); err != nil {
		b.Fatal(err)
	}
	uids := make([]uint32, n)
	for i := range uids {
		uids[i] = uint32(i + 1)
	}
	return folder, uids
}
