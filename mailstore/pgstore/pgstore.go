// Package pgstore is the PostgreSQL implementation of mailstore.Store, for
// providers who run several mailhost nodes on one shared state. It keeps
// the contract of package mailstore (mailstore/storetest checks it) under
// concurrent writers on several nodes:
//
//   - every method is one transaction; serialization failures and
//     deadlocks are retried here (tx) and never reach a caller;
//   - counters change by delta (SET n = n + $1) in the transaction of what
//     they count, never as a value computed in Go from an earlier read;
//   - limits (domains per partner, mailboxes and aliases per domain,
//     folders, quota, transfer cap) are taken with one conditional UPDATE
//     of the counting row, which holds under racing requests;
//   - a folder's UIDs come from its own row (uid_next) under that row's
//     lock, so they are dense and become visible in increasing order;
//   - queue entries are claimed with FOR UPDATE SKIP LOCKED and leased in
//     the name of a node (Options.Node);
//   - IMAP sessions on other nodes learn of changes through LISTEN/NOTIFY,
//     a notification after commit (notify.go); what changed is read from
//     the folder's change log.
//
// The schema is in migrations/, applied at Open under an advisory lock,
// one transaction per file. Migrations only add what an older binary
// ignores, so that two versions can run during a rolling upgrade; see
// migrate.go.
package pgstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mailhost/mailhost/mailstore"
)

// Options tune Open. The zero value is ready to use.
type Options struct {
	// Node names this process in the queue's leases and the jobs table;
	// empty means host name and process id. Two live processes must not
	// share a name: each releases its own leases when it starts.
	Node string
	// MaxConns bounds the connection pool; zero means 16.
	MaxConns int32
	// Now is the clock of the events the control plane records (a
	// domain suspended, resumed); nil means time.Now.
	Now func() time.Time
	// DeliverDepth is how many delivery batches may be in flight at once
	// (mail_deliver.go); zero means 1, at most maxDeliverDepth. More than
	// one hides the round trips to a database on another machine; on one
	// small machine shared with the database, 2 cost the database more
	// CPU per message than they saved (bench/README.md).
	DeliverDepth int
	// BodyCacheBytes bounds the bodies this node keeps after reading or
	// storing them (body_cache.go), for the next FETCH or SEARCH BODY of
	// many; zero means 64 MiB, less than zero none. Less than zero also
	// turns off the cache of the bodies' summaries (16 MiB), which keeps
	// a folder's listing and header SEARCH in the same way.
	BodyCacheBytes int64
	// RecipientTTL bounds how old the used bytes of this node's MX's
	// cached recipient look-ups may be (recipients.go): other nodes'
	// deliveries go unseen by RCPT meanwhile (changes to what else an
	// answer says are announced by the database). Zero means a minute,
	// less than zero no cache.
	RecipientTTL time.Duration
	// MaxKeywords is the most distinct keywords a folder may hold
	// (mailstore.DefaultMaxKeywords): zero means that default, less than
	// zero no limit.
	MaxKeywords int
}

// Store is the PostgreSQL implementation of mailstore.Store.
type Store struct {
	pool *pgxpool.Pool
	node string
	// shard is this node's row in the counters that deliveries on every
	// node add to (domain_usage, transfer; 001_init.sql), from its name,
	// so that a node keeps its row across restarts.
	shard int
	// watch wakes this node's IMAP sessions: at once after a local
	// commit, and when another node's notification arrives (notify.go).
	watch    mailstore.Watchers
	notifier *notifier
	// now is Options.Now with its default.
	now func() time.Time
	// maxKeywords is Options.MaxKeywords with its default.
	maxKeywords int
	// deliveries gathers concurrent Deliver calls into shared
	// transactions (mail_deliver.go).
	deliveries deliveries
	// blobIDPool holds ids taken ahead from the bodies' sequence for
	// deliveries, so that most batches need no statement for them.
	blobIDPool idPool
	// bodies keeps the bodies Bodies read last, and summaries their
	// summaries (mailstore.HeaderSummary), both by body id.
	bodies, summaries *bodyCache
	// recipients keeps the MX's look-ups of recipients (RecipientByEmail);
	// nil without.
	recipients *recipientCache
}

var _ mailstore.Store = (*Store)(nil)

// IsURL reports whether a store setting names a PostgreSQL database
// rather than a bbolt data directory.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// Open connects to the database at url (a postgres:// URL; its
// search_path parameter, if any, selects the schema), applies the
// migrations this binary has and the database lacks, and starts
// listening for other nodes' changes.
func Open(ctx context.Context, url string, opt Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// The URL may hold a password: say what is wrong, not the URL.
		return nil, fmt.Errorf("open postgres store: bad URL: %w", errors.Unwrap(err))
	}
	cfg.MaxConns = opt.MaxConns
	if cfg.MaxConns == 0 {
		cfg.MaxConns = 16
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	node := opt.Node
	if node == "" {
		host, _ := os.Hostname()
		node = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	s := &Store{pool: pool, node: node, shard: shardOf(node), now: opt.Now,
		maxKeywords: cmp.Or(opt.MaxKeywords, mailstore.DefaultMaxKeywords)}
	s.deliveries.depth = min(max(opt.DeliverDepth, 1), maxDeliverDepth)
	s.recipients = newRecipientCache(opt.RecipientTTL)
	switch {
	case opt.BodyCacheBytes == 0:
		s.bodies = newBodyCache(defaultBodyCacheBytes)
		s.summaries = newBodyCache(defaultSummaryCacheBytes)
	default:
		s.bodies = newBodyCache(opt.BodyCacheBytes) // none if negative
		s.summaries = newBodyCache(min(opt.BodyCacheBytes, defaultSummaryCacheBytes))
	}
	if s.now == nil {
		s.now = time.Now
	}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	notifier, err := startNotifier(ctx, s)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	s.notifier = notifier
	return s, nil
}

// shards bounds the rows per domain in domain_usage and per domain and
// month in transfer. Nodes whose names fall in one shard share its rows,
// and wait for each other there, as all did before sharding.
const shards = 64

func shardOf(node string) int {
	h := fnv.New32a()
	h.Write([]byte(node))
	return int(h.Sum32() % shards)
}

// Close stops listening and closes the pool; it waits for methods under
// way.
func (s *Store) Close() error {
	if s.notifier != nil {
		s.notifier.stop()
	}
	s.pool.Close()
	return nil
}

// Node is the name this store's leases and jobs are taken under.
func (s *Store) Node() string { return s.node }

// Pool is the connection pool, for tests and tools (store verify) that
// read the tables directly.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// maxRetries bounds how often a transaction that lost a serialization
// race or a deadlock is run again before its error is answered.
const maxRetries = 10

// tx runs fn in a transaction and commits it, running it again (from the
// start, so fn must depend only on the transaction) when PostgreSQL
// aborted it for a serialization failure or a deadlock, or when the
// connection was lost before COMMIT was sent (lostBeforeCommit). A done
// ctx answers its error and changes nothing.
func (s *Store) tx(ctx context.Context, opts pgx.TxOptions, fn func(pgx.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return retry(ctx, func() error {
		tx, err := s.pool.BeginTx(ctx, opts)
		if err != nil {
			return beforeCommit(err)
		}
		if err := fn(tx); err != nil {
			tx.Rollback(ctx) // a lost connection has rolled it back already
			return beforeCommit(err)
		}
		// A connection lost here leaves the outcome unknown: answered,
		// not run again.
		return tx.Commit(ctx)
	})
}

// lostBeforeCommit is a transaction's error when its connection was lost
// (the database restarted or failed over, or the session was ended)
// before COMMIT was sent: PostgreSQL rolled the transaction back when the
// session ended, so it is safe to run again, on another connection. The
// pool pings only the connections idle for over a second before handing
// them out, so after a failover each of the others fails its first
// statement this way.
type lostBeforeCommit struct{ err error }

func (e lostBeforeCommit) Error() string { return e.err.Error() }
func (e lostBeforeCommit) Unwrap() error { return e.err }

// beforeCommit marks err as lostBeforeCommit when it is a lost
// connection; the caller knows COMMIT was not sent.
func beforeCommit(err error) error {
	if connLost(err) {
		return lostBeforeCommit{err}
	}
	return err
}

// connLost reports whether err is the end of the connection rather than
// the failure of a statement: the server ended the session (SQLSTATE
// class 57P: administrator command, crash, starting up; class 08:
// connection exceptions), or the connection broke or could not be made.
// A done context is not one: its caller has gone.
func connLost(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "57P") || strings.HasPrefix(pe.Code, "08")
	}
	var ne net.Error
	var ce *pgconn.ConnectError
	return errors.As(err, &ne) || errors.As(err, &ce) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || pgconn.SafeToRetry(err)
}

// retry runs try, a whole transaction, again (up to maxRetries times)
// while PostgreSQL aborts it for a serialization failure or a deadlock,
// or its connection was lost before its commit (lostBeforeCommit).
func retry(ctx context.Context, try func() error) error {
	for attempt := 0; ; attempt++ {
		err := try()
		if err == nil || !retryable(err) || attempt >= maxRetries {
			return noSpace(err)
		}
		// Jittered backoff, so that the transactions that collided do not
		// collide again in step.
		d := time.Duration(1+rand.IntN(1<<min(attempt, 6))) * time.Millisecond
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
		}
	}
}

// write is tx for a read-write transaction at READ COMMITTED, the level
// every method uses unless it says otherwise: rows are locked where a
// decision depends on them.
//
// Whatever it changes, this node's MX decides on it from the moment it
// returns (recipients.go), even if it failed after its commit: the other
// nodes learn of it from the database's triggers, at the commit.
func (s *Store) write(ctx context.Context, fn func(pgx.Tx) error) error {
	defer s.recipients.forget()
	return s.tx(ctx, pgx.TxOptions{}, fn)
}

// writeKeep is write for the writes that change nothing a recipient's
// look-up answers (messages, folders, the queue, webhook events, node
// heartbeats), so that they keep this node's recipient cache: a busy IMAP
// node or a job's claim every second would otherwise void it again and
// again. A mailbox's used bytes are no such thing: the cache bounds
// their age itself.
func (s *Store) writeKeep(ctx context.Context, fn func(pgx.Tx) error) error {
	return s.tx(ctx, pgx.TxOptions{}, fn)
}

// read is tx for a read-only transaction that sees one snapshot
// (REPEATABLE READ), for methods that read several rows that must agree.
func (s *Store) read(ctx context.Context, fn func(pgx.Tx) error) error {
	return s.tx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
}

// querier is what a one-statement method needs: the pool, or a
// transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// one runs fn, which sends a single statement, on the pool with no
// explicit transaction: one statement is atomic and reads one snapshot
// by itself, and BEGIN and COMMIT around it would triple the round trips
// of the look-ups every RCPT and login makes. A done ctx answers its
// error and sends nothing.
func (s *Store) one(ctx context.Context, fn func(querier) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return noSpace(fn(s.pool))
}

// look is one for a statement that only reads, run again on a new
// connection when its connection was lost: a read can always be repeated
// (a write of one statement cannot, as it may have committed just before
// the connection ended).
func (s *Store) look(ctx context.Context, fn func(querier) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return retry(ctx, func() error { return beforeCommit(fn(s.pool)) })
}

// retryRead runs a read of rows (query, then each) again on a new
// connection when its connection was lost before each had taken a row
// (each answers whether it took any): a lost connection fails a query's
// first read, before any row, so nothing each did is repeated.
func retryRead(ctx context.Context, query func() (pgx.Rows, error), each func(pgx.Rows) (took bool, err error)) error {
	return retry(ctx, func() error {
		rows, err := query()
		if err != nil {
			return beforeCommit(err)
		}
		took, err := each(rows)
		if err != nil && !took {
			return beforeCommit(err)
		}
		return err
	})
}

// SQLSTATE codes (PostgreSQL appendix A).
const (
	codeSerialization = "40001"
	codeDeadlock      = "40P01"
	codeUnique        = "23505"
	codeForeignKey    = "23503"
	codeCheck         = "23514"
	codeDiskFull      = "53100"
)

// noSpace marks PostgreSQL's disk_full as mailstore.ErrNoSpace: the
// statement failed whole and the same write succeeds once the
// database's disk has room again.
func noSpace(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == codeDiskFull {
		return fmt.Errorf("%w: %w", mailstore.ErrNoSpace, err)
	}
	return err
}

func retryable(err error) bool {
	var pe *pgconn.PgError
	var lost lostBeforeCommit
	return errors.As(err, &lost) || errors.As(err, &pe) && (pe.Code == codeSerialization || pe.Code == codeDeadlock)
}

// isUnique reports whether err is a unique violation of the named
// constraint (any, when constraint is empty).
func isUnique(err error, constraint string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == codeUnique && (constraint == "" || pe.ConstraintName == constraint)
}

// noRows reports whether a QueryRow found nothing.
func noRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }

// nullTime is a nullable column's value for a time whose zero means
// "none".
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := mailstore.UTC(t)
	return &u
}

// fromNull is the zero time for NULL.
func fromNull(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}
