package pgstore

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mailhost/mailhost/mailstore"
)

// Deliver is the hot path: every SMTP session's DATA ends in one. It runs
// as a group commit, as bbolt's db.Batch does, so that 20 sessions cost
// one commit (one WAL flush) per batch rather than one per message, and
// add to the node's counter rows once per batch. One loop (per Store)
// runs the batches, by default one at a time (Options.DeliverDepth),
// each of every call pending when it starts: a call that finds the loop
// idle goes at once, and under load a batch gathers the calls that came
// during the one before, so the batch grows with the load without a
// fixed delay. A batch skips the recipients' rows another transaction
// holds (another node's batch, or this node's other one in flight) and
// defers those calls to its next batch, which waits for them, so that
// batches of several nodes do not queue behind each other's commits.
//
// One batch is one transaction of two round trips, whatever its size,
// BEGIN going with the first and COMMIT with the second (pipeline):
//
//  1. set the transaction's plans (sqlBatchSettings); lock the
//     recipients' INBOX rows, then their mailbox rows, then the
//     rows of the domains a cap is decided for (sender's and relays'),
//     each sorted by id (the lock order of mail.go); read the transfer
//     figures the caps are decided on (under the domain locks, so they
//     are exact: every writer of a domain's transfer holds its row); take
//     ids for the queue entries from their sequence, and for the bodies
//     when the node's pool of them is short (idPool);
//  2. insert the bodies, the messages (sqlAddMessages: UIDs, counters,
//     change log), the mailbox and domain counters, the transfer upserts
//     and the queue entries, all set-based (unnest).
//
// Each delivery of the batch is decided in Go between the two, in order,
// on the figures as the earlier ones of the batch left them, as if they
// had run one after the other. A refusal (cap reached, unknown sender or
// relay domain, every local recipient full) leaves the delivery out of
// step 2 and fails only its own call. The quota of concurrent deliveries
// (mailstore.Mail.Deliver) is decided so on the recipients' mailbox rows,
// which step 1 locked: another node's batch that wants them waits (or
// skips and defers) until this one commits, and then reads its counters,
// so that two nodes cannot both find room that only one has. If the
// transaction fails for another reason, each delivery of the batch runs
// again alone, so that one bad delivery cannot fail the others.

const (
	// maxDeliverDepth bounds Options.DeliverDepth, how many batches may
	// be in flight at once: the next one gathers calls and takes its
	// locks while the one before waits for its commit to be flushed.
	maxDeliverDepth = 4
	// deliverSettle is how long the loop waits after starting a batch
	// before it starts another, so that calls gather into it.
	deliverSettle = 200 * time.Microsecond
	// deliverMax bounds a batch; a full one goes at once.
	deliverMax = 256
	// deliverTimeout bounds a batch's transaction, which runs under no
	// caller's context (it serves several).
	deliverTimeout = time.Minute
)

// deliveries gathers concurrent Deliver calls. The zero value is ready.
type deliveries struct {
	mu      sync.Mutex
	pending []*delivery
	running bool                  // deliverLoop is running
	depth   int                   // Options.DeliverDepth; 0 is taken as 1
	slots   [maxDeliverDepth]bool // the batches in flight, by slot
	kick    chan struct{}         // wakes deliverLoop: a call came, or a batch ended
}

// delivery is one Deliver call, checked, and what became of it.
type delivery struct {
	ctx context.Context
	mailstore.CheckedDelivery
	// wait: take the recipients' rows even if another transaction holds
	// them (set for a call deferred once, so that it cannot be deferred
	// for ever, and for one delivered to a Junk folder); otherwise the
	// batch skips locked rows and defers the call (deferred) to the next.
	wait, deferred bool

	res  mailstore.DeliveryResult
	blob int64 // the body's id, once the batch gave it one
	err  error
	done chan struct{}
}

// Deliver implements mailstore.Store.
func (s *Store) Deliver(ctx context.Context, d mailstore.Delivery) (mailstore.DeliveryResult, error) {
	checked, err := mailstore.CheckDelivery(d)
	if err != nil {
		return mailstore.DeliveryResult{}, fmt.Errorf("deliver: %w", err)
	}
	if checked.Empty() {
		return mailstore.DeliveryResult{}, ctx.Err()
	}
	if err := ctx.Err(); err != nil {
		return mailstore.DeliveryResult{}, err
	}
	c := &delivery{ctx: ctx, CheckedDelivery: checked, done: make(chan struct{})}
	s.deliveries.enqueue(s, c)
	select {
	case <-c.done:
	case <-ctx.Done():
		// The batch may still commit it: the sender then retries, and the
		// message may come twice, never zero times.
		return mailstore.DeliveryResult{}, fmt.Errorf("deliver: %w", ctx.Err())
	}
	if c.err != nil {
		return mailstore.DeliveryResult{}, fmt.Errorf("deliver: %w", c.err)
	}
	return c.res, nil
}

// enqueue adds c to the next batch, and starts the loop that runs the
// batches if it is not running.
func (q *deliveries) enqueue(s *Store, c *delivery) {
	q.mu.Lock()
	q.pending = append(q.pending, c)
	q.wakeLocked(s)
	q.mu.Unlock()
}

// wakeLocked starts deliverLoop, or wakes it; q.mu is held.
func (q *deliveries) wakeLocked(s *Store) {
	if q.kick == nil {
		q.kick = make(chan struct{}, 1)
	}
	if !q.running {
		q.running = true
		go s.deliverLoop()
		return
	}
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

// deliverLoop starts a batch of every pending call (up to deliverMax)
// whenever a slot is free, up to deliveries.depth in flight, and ends when
// nothing is pending or in flight. At depth 1 (the default) it runs each
// batch itself: a goroutine and a timer a batch cost 10-40% of the Go
// side's CPU per message (BenchmarkDeliverNodes, 2026-11-27). Each batch
// has a slot of its own, and with it its own shard of the counters
// (deliverShard), so that two batches in flight do not wait for each
// other there.
func (s *Store) deliverLoop() {
	q := &s.deliveries
	for {
		q.mu.Lock()
		if len(q.pending) == 0 && !slices.Contains(q.slots[:], true) {
			q.running = false
			q.mu.Unlock()
			return
		}
		slot := -1
		if len(q.pending) > 0 {
			slot = slices.Index(q.slots[:max(q.depth, 1)], false)
		}
		if slot < 0 {
			q.mu.Unlock()
			<-q.kick
			continue
		}
		n := min(len(q.pending), deliverMax)
		batch := slices.Clone(q.pending[:n])
		q.pending = append(q.pending[:0], q.pending[n:]...)
		q.slots[slot] = true
		q.mu.Unlock()
		run := func() {
			deferred := s.runDeliveries(batch, slot)
			q.mu.Lock()
			// Deferred calls go first in the next batch.
			q.pending = append(deferred, q.pending...)
			q.slots[slot] = false
			q.wakeLocked(s)
			q.mu.Unlock()
		}
		if q.depth <= 1 {
			// One batch at a time: the loop runs it itself, with no
			// goroutine to start and no settling to wait for (the calls
			// that come meanwhile are the next batch).
			run()
			continue
		}
		go run()
		time.Sleep(deliverSettle)
	}
}

// deliverShard is the counters' shard of a batch in slot: this node's
// own, and the next ones for its other slots.
func (s *Store) deliverShard(slot int) int { return (s.shard + slot) % shards }

// runDeliveries runs a batch in slot, answers each call but those it
// deferred (returned, each to wait in its next batch), and notifies the
// accounts that got mail (the last of deliverTx's steps).
func (s *Store) runDeliveries(batch []*delivery, slot int) (deferred []*delivery) {
	live := make([]*delivery, 0, len(batch))
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			c.err = err
			close(c.done)
			continue
		}
		live = append(live, c)
	}
	if len(live) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), deliverTimeout)
	defer cancel()
	err := s.deliverBatch(ctx, live, slot)
	if err != nil && len(live) > 1 {
		for _, c := range live {
			c.wait = true // alone: nothing to defer it for
			if err := s.deliverBatch(ctx, []*delivery{c}, slot); err != nil {
				c.res, c.err = mailstore.DeliveryResult{}, err
			}
		}
	} else if err != nil {
		live[0].res, live[0].err, live[0].deferred = mailstore.DeliveryResult{}, err, false
	}
	var changed []int64
	answered := live[:0:0]
	for _, c := range live {
		if c.deferred && c.err == nil {
			c.wait = true
			deferred = append(deferred, c)
			continue
		}
		answered = append(answered, c)
		if c.err == nil {
			changed = append(changed, c.res.Delivered...)
		}
	}
	s.notify(changed...)
	for _, c := range answered {
		close(c.done)
	}
	return deferred
}

// idPoolRefill is how many body ids a delivery batch takes from the
// sequence when the pool is short: a statement in one batch of about 20
// instead of one in each. Ids taken and not used are gaps, as those of a
// rolled-back transaction are.
const idPoolRefill = 256

// idPool is ids taken ahead from a sequence. Safe for concurrent use.
type idPool struct {
	mu  sync.Mutex
	ids []int64
}

func (p *idPool) add(ids []int64) {
	p.mu.Lock()
	p.ids = append(p.ids, ids...)
	p.mu.Unlock()
}

// take moves up to n ids from the pool to the end of dst.
func (p *idPool) take(dst []int64, n int) []int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	n = min(n, len(p.ids))
	dst = append(dst, p.ids[:n]...)
	p.ids = p.ids[n:]
	return dst
}

// pipeline is a delivery batch's transaction on one connection, with
// BEGIN sent in the first round trip and COMMIT in the last: two round
// trips a batch instead of four, as pgx.BeginTxFunc would make.
type pipeline struct {
	conn          *pgxpool.Conn
	begun, closed bool
}

// send runs b's statements in one round trip, after BEGIN for the first
// and followed by COMMIT when last. After an error the statements that
// follow in b do not run (the server skips to the end of the batch) and
// the transaction is left aborted: deliverBatch rolls it back.
func (p *pipeline) send(ctx context.Context, b *pgx.Batch, last bool) error {
	if !p.begun {
		b.QueuedQueries = append([]*pgx.QueuedQuery{{SQL: "BEGIN"}}, b.QueuedQueries...)
		p.begun = true
	}
	if last {
		b.Queue("COMMIT")
		p.closed = true
	}
	return p.conn.SendBatch(ctx, b).Close()
}

// deliverBatch runs deliverTx for calls in a pipeline, retrying a
// serialization failure or deadlock as Store.tx does (retry).
func (s *Store) deliverBatch(ctx context.Context, calls []*delivery, slot int) error {
	return retry(ctx, func() error { return s.deliverOnce(ctx, calls, slot) })
}

func (s *Store) deliverOnce(ctx context.Context, calls []*delivery, slot int) (err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return beforeCommit(err)
	}
	defer conn.Release() // a connection left in a transaction is closed, not reused
	p := &pipeline{conn: conn}
	err = s.deliverTx(ctx, p, s.deliverShard(slot), calls)
	if err != nil && !p.closed {
		// Lost before COMMIT was sent: rolled back, run again (retry).
		err = beforeCommit(err)
	}
	switch {
	case err != nil && p.begun && !conn.Conn().PgConn().IsClosed():
		if _, rerr := conn.Exec(ctx, "ROLLBACK"); rerr != nil {
			conn.Conn().PgConn().Close(ctx)
		}
	case err == nil && !p.closed:
		// Nothing to write (every call refused): end the transaction.
		_, err = conn.Exec(ctx, "COMMIT")
	}
	return err
}
