package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
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
	ctx      context.Context
	body     []byte
	summary  []byte // mailstore.HeaderSummary(body), nil without local recipients
	size     int64
	received time.Time
	month    string
	ids      []int64 // recipients, each once, in the order given
	junk     []int64 // of ids, those delivered to their \Junk folder
	sender   int64
	groups   []mailstore.RelayGroup
	from     string // mailstore.Delivery.From
	// ignoreQuota: mailstore.Delivery.IgnoreQuota.
	ignoreQuota bool
	// places are the Delivery's placements by mailbox, folder names
	// canonical (mailstore.CanonFolder).
	places map[int64]mailstore.Placement
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
	if d.ReceivedAt.IsZero() {
		return mailstore.DeliveryResult{}, fmt.Errorf("deliver: no received time: %w", mailstore.ErrInvalidArgument)
	}
	ids := make([]int64, 0, len(d.MailboxIDs))
	for _, id := range d.MailboxIDs {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	groups, err := mailstore.GroupRelays(d.Relay)
	if err != nil {
		return mailstore.DeliveryResult{}, fmt.Errorf("deliver: %w", err)
	}
	if len(ids) == 0 && len(groups) == 0 {
		return mailstore.DeliveryResult{}, ctx.Err()
	}
	if err := ctx.Err(); err != nil {
		return mailstore.DeliveryResult{}, err
	}
	received := utc(d.ReceivedAt)
	var summary []byte
	if len(ids) > 0 {
		summary = mailstore.HeaderSummary(d.Body)
	}
	c := &delivery{
		ctx: ctx, body: d.Body, summary: summary, size: int64(len(d.Body)), received: received,
		month: mailstore.Month(received), ids: ids, junk: d.JunkMailboxIDs, sender: d.SenderDomainID, groups: groups,
		from: d.From, ignoreQuota: d.IgnoreQuota, done: make(chan struct{}),
	}
	for _, p := range d.Placements {
		if _, ok := c.places[p.MailboxID]; ok || !slices.Contains(ids, p.MailboxID) {
			continue
		}
		if c.places == nil {
			c.places = map[int64]mailstore.Placement{}
		}
		if p.Folder != "" {
			p.Folder = mailstore.CanonFolder(p.Folder)
		}
		p.Flags = mailstore.DeliveryFlags(p.Flags)
		c.places[p.MailboxID] = p
	}
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
// deferred (returned, each to wait in its next batch), and rings the
// doorbell of the accounts that got mail.
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
	var ring []int64
	answered := live[:0:0]
	for _, c := range live {
		if c.deferred && c.err == nil {
			c.wait = true
			deferred = append(deferred, c)
			continue
		}
		answered = append(answered, c)
		if c.err == nil {
			ring = append(ring, c.res.Delivered...)
		}
	}
	if s.bell != nil {
		s.bell.ring(ring...)
	}
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

// domainMonth keys a domain's transfer figures for a month.
type domainMonth struct {
	domain int64
	month  string
}

// inbox is a recipient's INBOX, locked.
type inbox struct{ folder, domain int64 }

// sqlDeliverWrites is a delivery batch's writes but the queue entries and
// the events, in one statement (each statement costs the database its
// own start, run and end, and a batch used to be six): the messages
// (sqlAddMessagesCTEs, $1-$14), then the bodies ($15-$18), the
// mailboxes' counters ($19-$21), the node's shard ($25) of its domains'
// counters ($22-$24) and of their transfer ($26-$29), and the quota_full
// marks the deliveries rearm ($30); the messages' summaries are last
// ($31, 010). The messages' references to the new
// bodies are checked at the end of the statement, once all are in.
const sqlDeliverWrites = sqlAddMessagesHead + `$31` + sqlAddMessagesTail + `, bodies AS (
	INSERT INTO blobs (id, refs, body, header)
	SELECT * FROM unnest($15::bigint[], $16::bigint[], $17::bytea[], $18::bytea[])
), mbu AS (
	UPDATE mailboxes t SET message_count = t.message_count + x.n, used_bytes = t.used_bytes + x.b
	FROM unnest($19::bigint[], $20::bigint[], $21::bigint[]) AS x(id, n, b) WHERE t.id = x.id
), du AS (
	INSERT INTO domain_usage (domain_id, shard, message_count, used_bytes)
	SELECT x.id, $25::int, x.n, x.b FROM unnest($22::bigint[], $23::bigint[], $24::bigint[]) AS x(id, n, b)
	ON CONFLICT (domain_id, shard) DO UPDATE
	SET message_count = domain_usage.message_count + EXCLUDED.message_count,
		used_bytes = domain_usage.used_bytes + EXCLUDED.used_bytes
), tr AS (
	INSERT INTO transfer (domain_id, month, in_bytes, out_bytes, shard)
	SELECT x.d, x.m, x.i, x.o, $25::int FROM unnest($26::bigint[], $27::text[], $28::bigint[], $29::bigint[]) AS x(d, m, i, o)
	ON CONFLICT (domain_id, month, shard) DO UPDATE
	SET in_bytes = transfer.in_bytes + EXCLUDED.in_bytes, out_bytes = transfer.out_bytes + EXCLUDED.out_bytes
), marks AS (
	DELETE FROM event_marks WHERE mark = ANY($30::text[])
)
SELECT 1`

// sqlBatchSettings sets how a delivery batch's statements are planned,
// for its transaction only (and those of the other writers of messages,
// addMessages):
//   - generic plans: PostgreSQL kept planning the first round trip's
//     statement anew for every batch (custom plans, which it judged
//     cheaper), and its planning cost more than twice its run: 0.47
//     against 0.13 ms, where the generic plan, the same index scans, runs
//     in 0.17 ms. (The writes statement went generic by itself.)
//   - no sequential scans: every row a batch reads or writes is found by
//     its key, and a plan made while a table was small (a new store, a
//     plan cached since) scanned the whole folders and mailboxes tables
//     for each batch, and the whole change log of every folder each time
//     one was due for pruning.
const sqlBatchSettings = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true), set_config('enable_seqscan', 'off', true)`

// domainFigures is the query of what a batch's events are decided on,
// with its three arguments named: the row of each recipient's domain
// (rcpts: the recipients) and of each domain a cap is decided for (doms),
// with its figures of the batch's months (months), a row per month (one
// row of NULLs for a domain without figures). One list of ids, so that
// the domains are read by their key: "IN (subquery) OR id = ANY" could
// only be a scan of them all.
func domainFigures(rcpts, doms, months string) string {
	return `SELECT d.id, d.partner_id, d.name, d.transfer_monthly_mb, t.month, t.in_bytes, t.out_bytes
	FROM domains d LEFT JOIN LATERAL (
		SELECT t.month, sum(t.in_bytes)::bigint AS in_bytes, sum(t.out_bytes)::bigint AS out_bytes
		FROM transfer t WHERE t.domain_id = d.id AND t.month = ANY(` + months + `::text[]) GROUP BY t.month) t ON true
	WHERE d.id = ANY(ARRAY(SELECT domain_id FROM mailboxes WHERE id = ANY(` + rcpts + `)) || ` + doms + `::bigint[])`
}

// sqlDomainFigures is domainFigures alone, for a batch whose recipients
// all wait.
var sqlDomainFigures = domainFigures("$1", "$2", "$3")

// sqlLockSkipping takes the INBOX and mailbox rows of the recipients $1,
// skipping those another transaction holds, and reads domainFigures
// ($2-$4) in the same statement: rows of kind 0 are recipients, of kind 1
// domains, in the columns both share.
var sqlLockSkipping = `WITH r AS (
	SELECT f.id AS fid, f.mailbox_id, m.domain_id, m.partner_id, m.email, m.quota_mb, m.used_bytes
	FROM folders f JOIN mailboxes m ON m.id = f.mailbox_id
	WHERE f.mailbox_id = ANY($1) AND f.name = 'INBOX'
	FOR NO KEY UPDATE OF f, m SKIP LOCKED
), d AS (
	` + domainFigures("$2", "$3", "$4") + `
)
SELECT 0, r.fid, r.mailbox_id, r.domain_id, r.partner_id, r.email, r.quota_mb, r.used_bytes,
	NULL::text, NULL::bigint, NULL::text, NULL::bigint, NULL::bigint FROM r
UNION ALL
SELECT 1, NULL, NULL, d.id, d.partner_id, NULL, NULL, NULL, d.name, d.transfer_monthly_mb, d.month, d.in_bytes, d.out_bytes FROM d`

// deliverTx runs a batch of deliveries in tx (see Deliver). It sets each
// call's result, or its refusal; an error fails the whole batch. It
// starts from scratch, as s.tx may run it again.
func (s *Store) deliverTx(ctx context.Context, tx *pipeline, shard int, calls []*delivery) error {
	var (
		mbIDs, domIDs  []int64
		junkIDs        []int64 // mailboxes whose \Junk folder a call delivers to
		placeM         []int64 // with placeN: the folders placements name
		placeN         []string
		pairD          []int64
		pairM          []string
		seen           = map[int64]bool{}
		seenDom        = map[int64]bool{}
		figs           = map[domainMonth]*mailstore.Transfer{}
		nQueue, nBlobs int
	)
	wantFigures := func(did int64, month string) {
		if !seenDom[did] {
			seenDom[did] = true
			domIDs = append(domIDs, did)
		}
		k := domainMonth{did, month}
		if figs[k] == nil {
			figs[k] = &mailstore.Transfer{Month: month}
			pairD, pairM = append(pairD, did), append(pairM, month)
		}
	}
	waitMB := map[int64]bool{} // recipients whose rows are waited for (delivery.wait)
	for _, c := range calls {
		c.res, c.err, c.deferred, c.blob = mailstore.DeliveryResult{}, nil, false, 0
		if len(c.junk) > 0 {
			// Which \Junk folder is the first is decided on every row.
			c.wait = true
		}
		for id, p := range c.places {
			if p.Folder != "" {
				// The named folders are locked with the INBOX rows.
				c.wait = true
				placeM, placeN = append(placeM, id), append(placeN, p.Folder)
			}
		}
		for _, id := range c.ids {
			if c.wait {
				waitMB[id] = true
			}
			if !seen[id] {
				seen[id] = true
				mbIDs = append(mbIDs, id)
			}
			if slices.Contains(c.junk, id) && !slices.Contains(junkIDs, id) {
				junkIDs = append(junkIDs, id)
			}
		}
		if c.sender != 0 {
			wantFigures(c.sender, c.month)
		}
		for _, g := range c.groups {
			nQueue++
			if g.Relay.DomainID != 0 {
				wantFigures(g.Relay.DomainID, c.month)
			}
		}
		nBlobs++
	}

	// Round trip 1: locks, figures, ids.
	inboxes := map[int64]inbox{}
	junks := map[int64]inbox{}    // the \Junk folder of each of junkIDs that has one
	named := map[placeKey]inbox{} // the folders placements name that exist
	exists := map[int64]bool{}
	// For the events (mailstore.Webhooks): the recipients as locked, and
	// every domain's name, owner, cap and month's figures, read without
	// a lock for a recipient's domain (see below).
	mbInfo := map[int64]*mailstore.Mailbox{}
	domInfo := map[int64]mailstore.Domain{}
	evFigs := map[domainMonth]*mailstore.Transfer{}
	var months []string
	for _, c := range calls {
		if !slices.Contains(months, c.month) {
			months = append(months, c.month)
		}
	}
	caps := map[int64]int64{} // domain -> transfer_monthly_mb
	var blobIDs, queueIDs []int64
	b := &pgx.Batch{}
	// The batch's plans (sqlBatchSettings).
	b.Queue(sqlBatchSettings)
	// The recipients' rows: first, in one id order each, the INBOX (and
	// for the calls that deliver to Junk, the \Junk) rows and the mailbox
	// rows of the calls that wait (mail.go's lock order); then the others',
	// skipping rows another transaction holds (another node's batch, or
	// this node's other one in flight): a call that misses one is
	// deferred to the next batch rather than waiting here with this
	// batch's locks held. A skipping statement never waits, so the
	// waiting ones coming first keep the lock order.
	var waitIDs, skipIDs []int64
	for _, id := range mbIDs {
		if waitMB[id] {
			waitIDs = append(waitIDs, id)
		} else {
			skipIDs = append(skipIDs, id)
		}
	}
	if ids := waitIDs; len(ids) > 0 {
		b.Queue(`SELECT f.id, f.mailbox_id, m.domain_id, f.name, coalesce(f.mailbox_id = ANY($2) AND f.special_use = '\Junk', false)
			FROM folders f JOIN mailboxes m ON m.id = f.mailbox_id
			WHERE f.mailbox_id = ANY($1) AND (f.name = 'INBOX' OR f.mailbox_id = ANY($2) AND f.special_use = '\Junk'
				OR (f.mailbox_id, f.name) IN (SELECT * FROM unnest($3::bigint[], $4::text[])))
			ORDER BY f.id FOR NO KEY UPDATE OF f`, ids, junkIDs, placeM, placeN).Query(func(rows pgx.Rows) error {
			var fid, mid, did int64
			var name string
			var isJunk bool
			_, err := pgx.ForEachRow(rows, []any{&fid, &mid, &did, &name, &isJunk}, func() error {
				if name == "INBOX" {
					inboxes[mid] = inbox{fid, did}
				}
				if _, ok := junks[mid]; isJunk && !ok {
					junks[mid] = inbox{fid, did} // the first by id
				}
				named[placeKey{mid, name}] = inbox{fid, did}
				return nil
			})
			return err
		})
		b.Queue(`SELECT id, domain_id, partner_id, email, quota_mb, used_bytes FROM mailboxes WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE`, ids).Query(func(rows pgx.Rows) error {
			var m mailstore.Mailbox
			_, err := pgx.ForEachRow(rows, []any{&m.ID, &m.DomainID, &m.PartnerID, &m.Email, &m.QuotaMB, &m.UsedBytes}, func() error {
				exists[m.ID] = true
				mb := m
				mbInfo[m.ID] = &mb
				return nil
			})
			return err
		})
	}
	// The figures the events are decided on, read with the rows of the
	// recipients that do not wait when there are any (one statement
	// less a batch), else alone. A recipient's domain is not locked (see
	// below), so with several nodes delivering to one domain at once its
	// crossing may be seen by two of them or by none; on one node,
	// batches run one at a time and see each other's figures.
	domRow := func(d mailstore.Domain, month *string, in, out *int64) {
		domInfo[d.ID] = d
		if month != nil {
			evFigs[domainMonth{d.ID, *month}] = &mailstore.Transfer{Month: *month, InBytes: *in, OutBytes: *out}
		}
	}
	if len(skipIDs) > 0 {
		// Both rows of each recipient, then the domains' rows (kind 1):
		// the locking part never waits, so the order it takes the rows in
		// does not matter. (Calls to a Junk folder wait, above.)
		b.Queue(sqlLockSkipping, skipIDs, mbIDs, domIDs, months).Query(func(rows pgx.Rows) error {
			var kind int
			var fid, mid, partner, quota, used, cap *int64
			var email, name, month *string
			var in, out *int64
			var did int64
			_, err := pgx.ForEachRow(rows, []any{&kind, &fid, &mid, &did, &partner, &email, &quota, &used, &name, &cap, &month, &in, &out}, func() error {
				if kind == 1 {
					domRow(mailstore.Domain{ID: did, PartnerID: *partner, Name: *name, TransferMonthlyMB: *cap}, month, in, out)
					return nil
				}
				m := &mailstore.Mailbox{ID: *mid, DomainID: did, PartnerID: *partner, Email: *email, QuotaMB: *quota, UsedBytes: *used}
				inboxes[m.ID] = inbox{*fid, did}
				exists[m.ID] = true
				mbInfo[m.ID] = m
				return nil
			})
			return err
		})
	}
	// Only the domains a cap is decided for are locked (the sender's and
	// the relays'): a recipient's domain is only counted, in this node's
	// shard of domain_usage and transfer, so that deliveries on several
	// nodes to one domain do not queue on its row until each commits.
	if len(domIDs) > 0 {
		b.Queue(`SELECT id, transfer_monthly_mb FROM domains
			WHERE id = ANY($1::bigint[])
			ORDER BY id FOR NO KEY UPDATE`, domIDs).Query(func(rows pgx.Rows) error {
			var id, mb int64
			_, err := pgx.ForEachRow(rows, []any{&id, &mb}, func() error {
				caps[id] = mb
				return nil
			})
			return err
		})
	}
	if len(pairD) > 0 {
		b.Queue(`SELECT t.domain_id, t.month, sum(t.in_bytes)::bigint, sum(t.out_bytes)::bigint
			FROM transfer t JOIN unnest($1::bigint[], $2::text[]) AS p(domain_id, month)
			ON t.domain_id = p.domain_id AND t.month = p.month
			GROUP BY t.domain_id, t.month`, pairD, pairM).Query(func(rows pgx.Rows) error {
			var k domainMonth
			var in, out int64
			_, err := pgx.ForEachRow(rows, []any{&k.domain, &k.month, &in, &out}, func() error {
				if f := figs[k]; f != nil {
					f.InBytes, f.OutBytes = in, out
				}
				return nil
			})
			return err
		})
	}
	if len(skipIDs) == 0 {
		b.Queue(sqlDomainFigures, mbIDs, domIDs, months).Query(func(rows pgx.Rows) error {
			var d mailstore.Domain
			var month *string
			var in, out *int64
			_, err := pgx.ForEachRow(rows, []any{&d.ID, &d.PartnerID, &d.Name, &d.TransferMonthlyMB, &month, &in, &out}, func() error {
				domRow(d, month, in, out)
				return nil
			})
			return err
		})
	}
	// The pool's ids are taken now, so that a batch in flight beside
	// this one cannot take them too; what it lacks comes with a refill.
	blobIDs = s.blobIDPool.take(blobIDs, nBlobs)
	if need := nBlobs - len(blobIDs); need > 0 {
		b.Queue(`SELECT nextval(pg_get_serial_sequence('blobs', 'id')) FROM generate_series(1, $1::int)`, need+idPoolRefill).Query(func(rows pgx.Rows) error {
			ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
			if err != nil {
				return err
			}
			blobIDs = append(blobIDs, ids[:need]...)
			s.blobIDPool.add(ids[need:])
			return nil
		})
	}
	if nQueue > 0 {
		b.Queue(`SELECT nextval(pg_get_serial_sequence('queue', 'id')) FROM generate_series(1, $1::int)`, nQueue).Query(func(rows pgx.Rows) error {
			var err error
			queueIDs, err = pgx.CollectRows(rows, pgx.RowTo[int64])
			return err
		})
	}
	if err := tx.send(ctx, b, false); err != nil {
		return fmt.Errorf("lock recipients: %w", err)
	}

	// Decisions, in order, on the figures as the batch changes them.
	capUsed := func(did int64, month string) bool {
		return mailstore.Domain{TransferMonthlyMB: caps[did]}.TransferCapReached(*figs[domainMonth{did, month}])
	}
	transfer := map[domainMonth][2]int64{} // what the batch adds: in, out
	var events []mailstore.Event
	var rearm []string // the quota_full marks of the recipients
	count := func(did int64, month string, in, out int64, at time.Time) {
		k := domainMonth{did, month}
		v := transfer[k]
		transfer[k] = [2]int64{v[0] + in, v[1] + out}
		if f := figs[k]; f != nil {
			f.InBytes += in
			f.OutBytes += out
		}
		ef := evFigs[k]
		if ef == nil {
			ef = &mailstore.Transfer{Month: month}
			evFigs[k] = ef
		}
		was := ef.InBytes + ef.OutBytes
		ef.InBytes += in
		ef.OutBytes += out
		if d, ok := domInfo[did]; ok {
			for _, typ := range mailstore.TransferCrossings(was, ef.InBytes+ef.OutBytes, d.TransferMonthlyMB*mailstore.MB) {
				events = append(events, mailstore.NewTransferEvent(typ, d, *ef, at))
			}
		}
	}
	var (
		add                 addBatch
		mbUse, domUse       = usage{}, usage{}
		bIDs, bRefs         []int64
		bBodies, bHeaders   [][]byte
		qRows               queueRows
		nextBlob, nextQueue int
		retryRows           queueRows   // KindLocal entries, without ids
		retryOf             []*delivery // the call of each of retryRows
		retryAddr           []string    // and its recipient
	)
	for _, c := range calls {
		if c.sender != 0 {
			if _, ok := caps[c.sender]; !ok {
				c.err = fmt.Errorf("sender domain %d: %w", c.sender, mailstore.ErrDomainNotFound)
				continue
			}
			if capUsed(c.sender, c.month) {
				c.err = fmt.Errorf("sender domain %d: %w", c.sender, mailstore.ErrTransferCapReached)
				continue
			}
		}
		held := map[int64]bool{}
		for _, g := range c.groups {
			did := g.Relay.DomainID
			if _, ok := held[did]; ok || did == 0 || did == c.sender {
				continue
			}
			if _, ok := caps[did]; !ok {
				c.err = fmt.Errorf("relay domain %d: %w", did, mailstore.ErrDomainNotFound)
				break
			}
			held[did] = capUsed(did, c.month)
		}
		if c.err != nil {
			continue
		}
		if !c.wait && slices.ContainsFunc(c.ids, func(id int64) bool { _, ok := inboxes[id]; return !ok || !exists[id] }) {
			// A row skipped: held by another transaction, or gone; the
			// next batch waits for it and knows.
			c.deferred = true
			continue
		}
		var inDomains []int64
		for _, id := range c.ids {
			in, ok := inboxes[id]
			if !ok {
				if exists[id] {
					return fmt.Errorf("mailbox %d: INBOX: %w", id, mailstore.ErrFolderNotFound)
				}
				c.res.Skipped = append(c.res.Skipped, id)
				continue
			}
			// mbInfo has the locked row's counters plus what the batch's
			// earlier deliveries added (below).
			if m := mbInfo[id]; m != nil && !c.ignoreQuota && m.Full() {
				c.res.OverQuota = append(c.res.OverQuota, id)
				continue
			}
			c.res.Delivered = append(c.res.Delivered, id)
			if !slices.Contains(inDomains, in.domain) {
				inDomains = append(inDomains, in.domain)
			}
		}
		if len(c.res.OverQuota) > 0 && len(c.res.Delivered) == 0 {
			c.err = fmt.Errorf("mailbox %d: %w", c.res.OverQuota[0], mailstore.ErrOverQuota)
			c.res = mailstore.DeliveryResult{}
			continue
		}
		refs := len(c.res.Delivered) + len(c.groups) + len(c.res.OverQuota)
		if refs == 0 {
			continue
		}
		blob := blobIDs[nextBlob]
		nextBlob++
		c.blob = blob
		bIDs, bRefs, bBodies = append(bIDs, blob), append(bRefs, int64(refs)), append(bBodies, c.body)
		var summary []byte // NULL for a body only queued
		if len(c.res.Delivered) > 0 {
			summary = c.summary
		}
		bHeaders = append(bHeaders, summary)
		for _, id := range c.res.Delivered {
			in := inboxes[id]
			if j, ok := junks[id]; ok && slices.Contains(c.junk, id) {
				in = j
			}
			pl := c.places[id]
			if pl.Folder != "" {
				in = inboxes[id] // a folder the mailbox does not have
				if f, ok := named[placeKey{id, pl.Folder}]; ok {
					in = f
				}
			}
			add.add(newMessage{folderID: in.folder, mailboxID: id, domainID: in.domain, blobID: blob, size: c.size, received: c.received, flags: pl.Flags, header: c.summary})
			mbUse.add(id, 1, c.size)
			domUse.add(in.domain, 1, c.size)
			if m := mbInfo[id]; m != nil {
				was := m.UsedBytes
				m.UsedBytes += c.size
				if mailstore.QuotaCrossed(was, m.UsedBytes, m.QuotaBytes()) {
					events = append(events, mailstore.NewQuotaEvent(mailstore.EventQuotaWarning, *m, domInfo[in.domain].Name, c.received))
				}
			}
			rearm = append(rearm, mailstore.QuotaFullMark(id))
		}
		for _, g := range c.groups {
			id := queueIDs[nextQueue]
			nextQueue++
			if err := qRows.add(id, g, blob, c.size, c.received, held[g.Relay.DomainID]); err != nil {
				return err
			}
			c.res.Queued = append(c.res.Queued, id)
		}
		// Their ids come with the insert (rare: they are not taken in
		// round trip 1 for every batch); neither counted nor held: the
		// recipient's domain counts the message when the queue delivers it.
		for _, id := range c.res.OverQuota {
			if err := retryRows.add(0, mailstore.LocalRetry(*mbInfo[id], c.from), blob, c.size, c.received, false); err != nil {
				return err
			}
			retryOf = append(retryOf, c)
			retryAddr = append(retryAddr, mbInfo[id].Email)
		}
		for _, did := range inDomains {
			count(did, c.month, c.size, 0, c.received)
		}
		// Outbound: once per domain per message, the sender's and each
		// relay's that is not held.
		var outDomains []int64
		if c.sender != 0 {
			outDomains = append(outDomains, c.sender)
		}
		for _, g := range c.groups {
			did := g.Relay.DomainID
			if did != 0 && !held[did] && !slices.Contains(outDomains, did) {
				outDomains = append(outDomains, did)
			}
		}
		for _, did := range outDomains {
			count(did, c.month, 0, c.size, c.received)
		}
	}
	if len(bIDs) == 0 {
		return nil
	}

	// Round trip 2: the writes, set-based.
	b = &pgx.Batch{}
	var td, ti, to []int64
	var tm []string
	if len(transfer) > 0 {
		keys := make([]domainMonth, 0, len(transfer))
		for k := range transfer {
			keys = append(keys, k)
		}
		// Sorted, so that concurrent upserts take the rows in one order.
		slices.SortFunc(keys, func(a, b domainMonth) int {
			if a.domain != b.domain {
				return int(a.domain - b.domain)
			}
			return strings.Compare(a.month, b.month)
		})
		td, tm = make([]int64, len(keys)), make([]string, len(keys))
		ti, to = make([]int64, len(keys)), make([]int64, len(keys))
		for i, k := range keys {
			td[i], tm[i], ti[i], to[i] = k.domain, k.month, transfer[k][0], transfer[k][1]
		}
	}
	mIDs, mMsgs, mBytes := mbUse.arrays()
	dIDs, dMsgs, dBytes := domUse.arrays()
	args := append(add.args(), bIDs, bRefs, bBodies, bHeaders, mIDs, mMsgs, mBytes,
		dIDs, dMsgs, dBytes, shard, td, tm, ti, to, rearm, add.rHeader)
	b.Queue(sqlDeliverWrites, args...)
	if len(qRows.id) > 0 {
		b.Queue(`INSERT INTO queue (id, kind, domain_id, from_addr, destination, recipients, blob_id, size, queued_at, next_attempt, held)
			SELECT q.id, q.kind, q.domain_id, q.from_addr, q.destination, q.recipients::jsonb, q.blob_id, q.size, q.at, q.at, q.held
			FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::bigint[], $9::timestamptz[], $10::bool[])
			AS q(id, kind, domain_id, from_addr, destination, recipients, blob_id, size, at, held)`,
			qRows.id, qRows.kind, qRows.domain, qRows.from, qRows.dest, qRows.rcpts, qRows.blob, qRows.size, qRows.at, qRows.held)
	}
	// RETURNING's order is not the insert's: each KindLocal entry is
	// found by its body and address, one per (delivery, mailbox).
	type retryKey struct {
		blob int64
		addr string
	}
	retryIDs := map[retryKey]int64{}
	if len(retryRows.blob) > 0 {
		b.Queue(`INSERT INTO queue (kind, domain_id, from_addr, destination, recipients, blob_id, size, queued_at, next_attempt, held)
			SELECT q.kind, q.domain_id, q.from_addr, q.destination, q.recipients::jsonb, q.blob_id, q.size, q.at, q.at, false
			FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[], $8::timestamptz[])
			AS q(kind, domain_id, from_addr, destination, recipients, blob_id, size, at)
			RETURNING id, blob_id, recipients->0->>'address'`,
			retryRows.kind, retryRows.domain, retryRows.from, retryRows.dest, retryRows.rcpts, retryRows.blob, retryRows.size, retryRows.at).Query(func(rows pgx.Rows) error {
			var id int64
			var k retryKey
			_, err := pgx.ForEachRow(rows, []any{&id, &k.blob, &k.addr}, func() error {
				retryIDs[k] = id
				return nil
			})
			return err
		})
	}
	if len(events) > 0 {
		var r eventRows
		for _, e := range events {
			r.add(e)
		}
		b.Queue(sqlAddEvents, r.args()...)
	}
	if err := tx.send(ctx, b, true); err != nil {
		return fmt.Errorf("store deliveries: %w", err)
	}
	for i, c := range retryOf {
		// Every row inserted is returned: none can be missing here.
		c.res.Queued = append(c.res.Queued, retryIDs[retryKey{retryRows.blob[i], retryAddr[i]}])
	}
	if s.recipients != nil {
		// Committed: the recipients' bytes as the batch counted them
		// under their rows' locks, for the MX's next RCPT.
		s.recipients.deliveredTo(mbInfo)
	}
	// New mail is what mail clients read next (IDLE tells them at
	// once): the node that stored it keeps it, as a disk's page cache
	// keeps what was just written for a store on files.
	for _, c := range calls {
		if c.err == nil && !c.deferred && len(c.res.Delivered) > 0 {
			s.bodies.put(c.blob, c.body)
			s.summaries.put(c.blob, c.summary)
		}
	}
	return nil
}

// queueRows are the queue entries a batch inserts, column by column.
type queueRows struct {
	id, domain, blob, size []int64
	kind, from, dest       []string
	rcpts                  []string // JSON of []mailstore.OutboundRecipient
	at                     []time.Time
	held                   []bool
}

func (q *queueRows) add(id int64, g mailstore.RelayGroup, blob, size int64, at time.Time, held bool) error {
	rcpts := make([]mailstore.OutboundRecipient, len(g.To))
	for i, a := range g.To {
		rcpts[i] = mailstore.OutboundRecipient{Address: a, State: mailstore.RecipientPending}
	}
	js, err := json.Marshal(rcpts)
	if err != nil {
		return err
	}
	q.id = append(q.id, id)
	q.kind = append(q.kind, string(g.Relay.Kind))
	q.domain = append(q.domain, g.Relay.DomainID)
	q.from = append(q.from, g.Relay.From)
	q.dest = append(q.dest, g.Destination)
	q.rcpts = append(q.rcpts, string(js))
	q.blob = append(q.blob, blob)
	q.size = append(q.size, size)
	q.at = append(q.at, at)
	q.held = append(q.held, held)
	return nil
}

// placeKey is a folder a placement names: its mailbox and canonical name.
type placeKey struct {
	mailbox int64
	name    string
}
