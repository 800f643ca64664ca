package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/mailhost/mailhost/mailstore"
)

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

// deliverTx runs a batch of deliveries in tx (see Deliver) in the steps
// boltstore's Deliver has, by the same names: lock (round trip 1), decide
// (in Go, call by call), write (round trip 2, with COMMIT); notify is
// runDeliveries', after the commit. It sets each call's result, or its
// refusal; an error fails the whole batch. It starts from scratch, as
// deliverBatch may run it again.
func (s *Store) deliverTx(ctx context.Context, tx *pipeline, shard int, calls []*delivery) error {
	x := newDeliveryTx(s, shard, calls)
	if err := x.lock(ctx, tx); err != nil {
		return err
	}
	if err := x.decide(); err != nil {
		return err
	}
	return x.write(ctx, tx)
}

// deliveryTx is a batch's work in its transaction: what lock asks for
// and reads, what decide makes of it, what write stores.
type deliveryTx struct {
	s     *Store
	shard int
	calls []*delivery

	// What lock asks for (gather).
	mbIDs, domIDs []int64
	junkIDs       []int64 // mailboxes whose \Junk folder a call delivers to
	placeM        []int64 // with placeN: the folders placements name
	placeN        []string
	pairD         []int64 // with pairM: the domain months a cap is decided on
	pairM         []string
	months        []string
	waitMB        map[int64]bool // recipients whose rows are waited for (delivery.wait)
	seen, seenDom map[int64]bool
	nQueue, nBlob int

	// What lock reads.
	inboxes map[int64]inbox
	junks   map[int64]inbox    // the \Junk folder of each of junkIDs that has one
	named   map[placeKey]inbox // the folders placements name that exist
	exists  map[int64]bool
	// For the events (mailstore.Webhooks): the recipients as locked, and
	// every domain's name, owner, cap and month's figures, read without
	// a lock for a recipient's domain (see queueRecipients).
	mbInfo  map[int64]*mailstore.Mailbox
	domInfo map[int64]mailstore.Domain
	evFigs  map[domainMonth]*mailstore.Transfer
	// caps and figs are the locked domains' caps and figures, which the
	// caps are decided on.
	caps              map[int64]int64 // domain -> transfer_monthly_mb
	figs              map[domainMonth]*mailstore.Transfer
	blobIDs, queueIDs []int64

	// What decide makes: the rows write stores.
	transfer            map[domainMonth][2]int64 // what the batch adds: in, out
	events              []mailstore.Event
	rearm               []string // the quota_full marks of the recipients
	add                 addBatch
	mbUse, domUse       usage
	bIDs, bRefs         []int64
	bBodies, bHeaders   [][]byte
	qRows               queueRows
	nextBlob, nextQueue int
	retryRows           queueRows   // KindLocal entries, without ids
	retryOf             []*delivery // the call of each of retryRows
	retryAddr           []string    // and its recipient
}

func newDeliveryTx(s *Store, shard int, calls []*delivery) *deliveryTx {
	return &deliveryTx{
		s: s, shard: shard, calls: calls,
		waitMB: map[int64]bool{}, seen: map[int64]bool{}, seenDom: map[int64]bool{},
		inboxes: map[int64]inbox{}, junks: map[int64]inbox{}, named: map[placeKey]inbox{}, exists: map[int64]bool{},
		mbInfo: map[int64]*mailstore.Mailbox{}, domInfo: map[int64]mailstore.Domain{},
		evFigs: map[domainMonth]*mailstore.Transfer{}, caps: map[int64]int64{},
		figs: map[domainMonth]*mailstore.Transfer{}, transfer: map[domainMonth][2]int64{},
		mbUse: usage{}, domUse: usage{},
	}
}

// lock is round trip 1: it sets the transaction's plans
// (sqlBatchSettings), locks the recipients' rows and the domains a cap
// is decided for, reads the figures, and takes the ids.
func (x *deliveryTx) lock(ctx context.Context, tx *pipeline) error {
	x.gather()
	b := &pgx.Batch{}
	b.Queue(sqlBatchSettings)
	skipping := x.queueRecipients(b)
	x.queueCaps(b)
	if !skipping {
		x.queueEventFigures(b)
	}
	x.queueNewIDs(b)
	if err := tx.send(ctx, b, false); err != nil {
		return fmt.Errorf("lock recipients: %w", err)
	}
	return nil
}

// gather resets each call and lists what lock asks for: the recipients,
// the folders, the domain months the caps are decided on, how many ids.
func (x *deliveryTx) gather() {
	for _, c := range x.calls {
		c.res, c.err, c.deferred, c.blob = mailstore.DeliveryResult{}, nil, false, 0
		if len(c.JunkMailboxIDs) > 0 {
			// Which \Junk folder is the first is decided on every row.
			c.wait = true
		}
		for id, p := range c.Places {
			if p.Folder != "" {
				// The named folders are locked with the INBOX rows.
				c.wait = true
				x.placeM, x.placeN = append(x.placeM, id), append(x.placeN, p.Folder)
			}
		}
		for _, id := range c.IDs {
			if c.wait {
				x.waitMB[id] = true
			}
			if !x.seen[id] {
				x.seen[id] = true
				x.mbIDs = append(x.mbIDs, id)
			}
			if c.ToJunk(id) && !slices.Contains(x.junkIDs, id) {
				x.junkIDs = append(x.junkIDs, id)
			}
		}
		if c.SenderDomainID != 0 {
			x.wantFigures(c.SenderDomainID, c.Month)
		}
		for _, g := range c.Groups {
			x.nQueue++
			if g.Relay.DomainID != 0 {
				x.wantFigures(g.Relay.DomainID, c.Month)
			}
		}
		x.nBlob++
		if !slices.Contains(x.months, c.Month) {
			x.months = append(x.months, c.Month)
		}
	}
}

// wantFigures asks lock for a domain's row and its figures of a month.
func (x *deliveryTx) wantFigures(did int64, month string) {
	if !x.seenDom[did] {
		x.seenDom[did] = true
		x.domIDs = append(x.domIDs, did)
	}
	k := domainMonth{did, month}
	if x.figs[k] == nil {
		x.figs[k] = &mailstore.Transfer{Month: month}
		x.pairD, x.pairM = append(x.pairD, did), append(x.pairM, month)
	}
}

// queueRecipients queues the locks of the recipients' rows: first, in
// one id order each, the INBOX (and for the calls that deliver to Junk,
// the \Junk) rows and the mailbox rows of the calls that wait (mail.go's
// lock order); then the others', skipping rows another transaction
// holds (another node's batch, or this node's other one in flight): a
// call that misses one is deferred to the next batch rather than waiting
// here with this batch's locks held. A skipping statement never waits,
// so the waiting ones coming first keep the lock order. It answers
// whether it queued a skipping statement, which reads the event figures
// too (one statement less a batch).
func (x *deliveryTx) queueRecipients(b *pgx.Batch) (skipping bool) {
	var waitIDs, skipIDs []int64
	for _, id := range x.mbIDs {
		if x.waitMB[id] {
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
			ORDER BY f.id FOR NO KEY UPDATE OF f`, ids, x.junkIDs, x.placeM, x.placeN).Query(func(rows pgx.Rows) error {
			var fid, mid, did int64
			var name string
			var isJunk bool
			_, err := pgx.ForEachRow(rows, []any{&fid, &mid, &did, &name, &isJunk}, func() error {
				if name == "INBOX" {
					x.inboxes[mid] = inbox{fid, did}
				}
				if _, ok := x.junks[mid]; isJunk && !ok {
					x.junks[mid] = inbox{fid, did} // the first by id
				}
				x.named[placeKey{mid, name}] = inbox{fid, did}
				return nil
			})
			return err
		})
		b.Queue(`SELECT id, domain_id, partner_id, email, quota_mb, used_bytes FROM mailboxes WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE`, ids).Query(func(rows pgx.Rows) error {
			var m mailstore.Mailbox
			_, err := pgx.ForEachRow(rows, []any{&m.ID, &m.DomainID, &m.PartnerID, &m.Email, &m.QuotaMB, &m.UsedBytes}, func() error {
				x.exists[m.ID] = true
				mb := m
				x.mbInfo[m.ID] = &mb
				return nil
			})
			return err
		})
	}
	if len(skipIDs) == 0 {
		return false
	}
	// Both rows of each recipient, then the domains' rows (kind 1): the
	// locking part never waits, so the order it takes the rows in does
	// not matter. (Calls to a Junk folder wait, above.) A recipient's
	// domain is not locked (see queueCaps), so with several nodes
	// delivering to one domain at once its crossing may be seen by two
	// of them or by none; on one node, batches run one at a time and see
	// each other's figures.
	b.Queue(sqlLockSkipping, skipIDs, x.mbIDs, x.domIDs, x.months).Query(func(rows pgx.Rows) error {
		var kind int
		var fid, mid, partner, quota, used, cap *int64
		var email, name, month *string
		var in, out *int64
		var did int64
		_, err := pgx.ForEachRow(rows, []any{&kind, &fid, &mid, &did, &partner, &email, &quota, &used, &name, &cap, &month, &in, &out}, func() error {
			if kind == 1 {
				x.domainRow(mailstore.Domain{ID: did, PartnerID: *partner, Name: *name, TransferMonthlyMB: *cap}, month, in, out)
				return nil
			}
			m := &mailstore.Mailbox{ID: *mid, DomainID: did, PartnerID: *partner, Email: *email, QuotaMB: *quota, UsedBytes: *used}
			x.inboxes[m.ID] = inbox{*fid, did}
			x.exists[m.ID] = true
			x.mbInfo[m.ID] = m
			return nil
		})
		return err
	})
	return true
}

// domainRow keeps a domain's row and its figures of a month, for the
// events.
func (x *deliveryTx) domainRow(d mailstore.Domain, month *string, in, out *int64) {
	x.domInfo[d.ID] = d
	if month != nil {
		x.evFigs[domainMonth{d.ID, *month}] = &mailstore.Transfer{Month: *month, InBytes: *in, OutBytes: *out}
	}
}

// queueCaps queues the locks of the domains a cap is decided for (the
// sender's and the relays') and the reading of their figures, exact
// under the locks: every writer of a domain's transfer holds its row.
// A recipient's domain is only counted, in this node's shard of
// domain_usage and transfer, so that deliveries on several nodes to one
// domain do not queue on its row until each commits.
func (x *deliveryTx) queueCaps(b *pgx.Batch) {
	if len(x.domIDs) > 0 {
		b.Queue(`SELECT id, transfer_monthly_mb FROM domains
			WHERE id = ANY($1::bigint[])
			ORDER BY id FOR NO KEY UPDATE`, x.domIDs).Query(func(rows pgx.Rows) error {
			var id, mb int64
			_, err := pgx.ForEachRow(rows, []any{&id, &mb}, func() error {
				x.caps[id] = mb
				return nil
			})
			return err
		})
	}
	if len(x.pairD) > 0 {
		b.Queue(`SELECT t.domain_id, t.month, sum(t.in_bytes)::bigint, sum(t.out_bytes)::bigint
			FROM transfer t JOIN unnest($1::bigint[], $2::text[]) AS p(domain_id, month)
			ON t.domain_id = p.domain_id AND t.month = p.month
			GROUP BY t.domain_id, t.month`, x.pairD, x.pairM).Query(func(rows pgx.Rows) error {
			var k domainMonth
			var in, out int64
			_, err := pgx.ForEachRow(rows, []any{&k.domain, &k.month, &in, &out}, func() error {
				if f := x.figs[k]; f != nil {
					f.InBytes, f.OutBytes = in, out
				}
				return nil
			})
			return err
		})
	}
}

// queueEventFigures queues the reading of the figures the events are
// decided on, for a batch whose recipients all wait (otherwise the
// skipping statement reads them).
func (x *deliveryTx) queueEventFigures(b *pgx.Batch) {
	b.Queue(sqlDomainFigures, x.mbIDs, x.domIDs, x.months).Query(func(rows pgx.Rows) error {
		var d mailstore.Domain
		var month *string
		var in, out *int64
		_, err := pgx.ForEachRow(rows, []any{&d.ID, &d.PartnerID, &d.Name, &d.TransferMonthlyMB, &month, &in, &out}, func() error {
			x.domainRow(d, month, in, out)
			return nil
		})
		return err
	})
}

// queueNewIDs takes the bodies' ids from the node's pool, queueing a refill
// when it is short, and queues the taking of the queue entries' ids. The
// pool's ids are taken now, so that a batch in flight beside this one
// cannot take them too.
func (x *deliveryTx) queueNewIDs(b *pgx.Batch) {
	x.blobIDs = x.s.blobIDPool.take(x.blobIDs, x.nBlob)
	if need := x.nBlob - len(x.blobIDs); need > 0 {
		b.Queue(`SELECT nextval(pg_get_serial_sequence('blobs', 'id')) FROM generate_series(1, $1::int)`, need+idPoolRefill).Query(func(rows pgx.Rows) error {
			ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
			if err != nil {
				return err
			}
			x.blobIDs = append(x.blobIDs, ids[:need]...)
			x.s.blobIDPool.add(ids[need:])
			return nil
		})
	}
	if x.nQueue > 0 {
		b.Queue(`SELECT nextval(pg_get_serial_sequence('queue', 'id')) FROM generate_series(1, $1::int)`, x.nQueue).Query(func(rows pgx.Rows) error {
			var err error
			x.queueIDs, err = pgx.CollectRows(rows, pgx.RowTo[int64])
			return err
		})
	}
}

// decide takes each call's decisions in order, on the figures as the
// batch's earlier calls left them, and stages the rows of each call
// taken.
func (x *deliveryTx) decide() error {
	for _, c := range x.calls {
		held, ok, err := x.decideCall(c)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if err := x.stage(c, held); err != nil {
			return err
		}
	}
	return nil
}

// capUsed reports whether a locked domain has used its cap for the
// month, on the figures as the batch changed them.
func (x *deliveryTx) capUsed(did int64, month string) (bool, error) {
	mb, ok := x.caps[did]
	if !ok {
		return false, mailstore.ErrDomainNotFound
	}
	return mailstore.Domain{TransferMonthlyMB: mb}.TransferCapReached(*x.figs[domainMonth{did, month}]), nil
}

// decideCall decides c's caps (mailstore.DecideCaps), defers it when a
// row it needs was skipped, and decides each recipient: gone (Skipped),
// full (OverQuota) or delivered, refusing c when every one is full
// (mailstore.RefuseAllFull). ok is false for a call refused or deferred;
// an error (a recipient without INBOX) fails the batch.
func (x *deliveryTx) decideCall(c *delivery) (held map[int64]bool, ok bool, err error) {
	held, err = mailstore.DecideCaps(c.SenderDomainID, c.Groups, func(did int64) (bool, error) {
		return x.capUsed(did, c.Month)
	})
	if err != nil {
		c.err = err
		return nil, false, nil
	}
	if !c.wait && slices.ContainsFunc(c.IDs, func(id int64) bool { _, ok := x.inboxes[id]; return !ok || !x.exists[id] }) {
		// A row skipped: held by another transaction, or gone; the
		// next batch waits for it and knows.
		c.deferred = true
		return nil, false, nil
	}
	for _, id := range c.IDs {
		if _, ok := x.inboxes[id]; !ok {
			if x.exists[id] {
				return nil, false, fmt.Errorf("mailbox %d: INBOX: %w", id, mailstore.ErrFolderNotFound)
			}
			c.res.Skipped = append(c.res.Skipped, id)
			continue
		}
		// mbInfo has the locked row's counters plus what the batch's
		// earlier deliveries added (stage).
		if m := x.mbInfo[id]; m != nil && !c.IgnoreQuota && m.Full() {
			c.res.OverQuota = append(c.res.OverQuota, id)
			continue
		}
		c.res.Delivered = append(c.res.Delivered, id)
	}
	if err := mailstore.RefuseAllFull(c.res); err != nil {
		c.err, c.res = err, mailstore.DeliveryResult{}
		return nil, false, nil
	}
	return held, true, nil
}

// stage adds c's rows to what write stores: its body, its messages, its
// queue entries and local retries, its counters and transfer, and the
// events of the thresholds they cross.
func (x *deliveryTx) stage(c *delivery, held map[int64]bool) error {
	refs := len(c.res.Delivered) + len(c.Groups) + len(c.res.OverQuota)
	if refs == 0 {
		return nil
	}
	blob := x.blobIDs[x.nextBlob]
	x.nextBlob++
	c.blob = blob
	x.bIDs, x.bRefs, x.bBodies = append(x.bIDs, blob), append(x.bRefs, int64(refs)), append(x.bBodies, c.Body)
	var summary []byte // NULL for a body only queued
	if len(c.res.Delivered) > 0 {
		summary = c.Summary
	}
	x.bHeaders = append(x.bHeaders, summary)
	var inDomains []int64
	for _, id := range c.res.Delivered {
		in := x.inboxes[id]
		if j, ok := x.junks[id]; ok && c.ToJunk(id) {
			in = j
		}
		pl := c.Places[id]
		if pl.Folder != "" {
			in = x.inboxes[id] // a folder the mailbox does not have
			if f, ok := x.named[placeKey{id, pl.Folder}]; ok {
				in = f
			}
		}
		if !slices.Contains(inDomains, in.domain) {
			inDomains = append(inDomains, in.domain)
		}
		x.add.add(newMessage{folderID: in.folder, mailboxID: id, domainID: in.domain, blobID: blob, size: c.Size, received: c.Received, flags: pl.Flags, header: c.Summary})
		x.mbUse.add(id, 1, c.Size)
		x.domUse.add(in.domain, 1, c.Size)
		if m := x.mbInfo[id]; m != nil {
			was := m.UsedBytes
			m.UsedBytes += c.Size
			if mailstore.QuotaCrossed(was, m.UsedBytes, m.QuotaBytes()) {
				x.events = append(x.events, mailstore.NewQuotaEvent(mailstore.EventQuotaWarning, *m, x.domInfo[in.domain].Name, c.Received))
			}
		}
		x.rearm = append(x.rearm, mailstore.QuotaFullMark(id))
	}
	for _, g := range c.Groups {
		id := x.queueIDs[x.nextQueue]
		x.nextQueue++
		if err := x.qRows.add(mailstore.RelayEntry(g, blob, c.Size, c.Received, held[g.Relay.DomainID]), id); err != nil {
			return err
		}
		c.res.Queued = append(c.res.Queued, id)
	}
	// Their ids come with the insert (rare: they are not taken in round
	// trip 1 for every batch); neither counted nor held: the recipient's
	// domain counts the message when the queue delivers it.
	for _, id := range c.res.OverQuota {
		if err := x.retryRows.add(mailstore.RelayEntry(mailstore.LocalRetry(*x.mbInfo[id], c.From), blob, c.Size, c.Received, false), 0); err != nil {
			return err
		}
		x.retryOf = append(x.retryOf, c)
		x.retryAddr = append(x.retryAddr, x.mbInfo[id].Email)
	}
	for _, did := range inDomains {
		x.count(did, c.Month, c.Size, 0, c.Received)
	}
	for _, did := range mailstore.OutboundDomains(c.SenderDomainID, c.Groups, held) {
		x.count(did, c.Month, 0, c.Size, c.Received)
	}
	return nil
}

// count adds a message's bytes to a domain's transfer of the month: to
// what write stores, to the figures later caps are decided on, and to
// those of the events, adding the events of the thresholds crossed.
func (x *deliveryTx) count(did int64, month string, in, out int64, at time.Time) {
	k := domainMonth{did, month}
	v := x.transfer[k]
	x.transfer[k] = [2]int64{v[0] + in, v[1] + out}
	if f := x.figs[k]; f != nil {
		f.InBytes += in
		f.OutBytes += out
	}
	ef := x.evFigs[k]
	if ef == nil {
		ef = &mailstore.Transfer{Month: month}
		x.evFigs[k] = ef
	}
	was := ef.InBytes + ef.OutBytes
	ef.InBytes += in
	ef.OutBytes += out
	if d, ok := x.domInfo[did]; ok {
		for _, typ := range mailstore.TransferCrossings(was, ef.InBytes+ef.OutBytes, d.TransferMonthlyMB*mailstore.MB) {
			x.events = append(x.events, mailstore.NewTransferEvent(typ, d, *ef, at))
		}
	}
}

// write is round trip 2, with COMMIT: the writes, set-based; then, once
// committed, each local retry's id and what the node keeps of the batch
// (the recipients' bytes, the new bodies and summaries).
func (x *deliveryTx) write(ctx context.Context, tx *pipeline) error {
	if len(x.bIDs) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	td, tm, ti, to := x.transferArrays()
	mIDs, mMsgs, mBytes := x.mbUse.arrays()
	dIDs, dMsgs, dBytes := x.domUse.arrays()
	args := append(x.add.args(), x.bIDs, x.bRefs, x.bBodies, x.bHeaders, mIDs, mMsgs, mBytes,
		dIDs, dMsgs, dBytes, x.shard, td, tm, ti, to, x.rearm, x.add.rHeader)
	b.Queue(sqlDeliverWrites, args...)
	q := x.qRows
	if len(q.id) > 0 {
		b.Queue(`INSERT INTO queue (id, kind, domain_id, from_addr, destination, recipients, blob_id, size, queued_at, next_attempt, held)
			SELECT q.id, q.kind, q.domain_id, q.from_addr, q.destination, q.recipients::jsonb, q.blob_id, q.size, q.at, q.at, q.held
			FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::bigint[], $9::timestamptz[], $10::bool[])
			AS q(id, kind, domain_id, from_addr, destination, recipients, blob_id, size, at, held)`,
			q.id, q.kind, q.domain, q.from, q.dest, q.rcpts, q.blob, q.size, q.at, q.held)
	}
	// RETURNING's order is not the insert's: each KindLocal entry is
	// found by its body and address, one per (delivery, mailbox).
	type retryKey struct {
		blob int64
		addr string
	}
	retryIDs := map[retryKey]int64{}
	if r := x.retryRows; len(r.blob) > 0 {
		b.Queue(`INSERT INTO queue (kind, domain_id, from_addr, destination, recipients, blob_id, size, queued_at, next_attempt, held)
			SELECT q.kind, q.domain_id, q.from_addr, q.destination, q.recipients::jsonb, q.blob_id, q.size, q.at, q.at, false
			FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[], $8::timestamptz[])
			AS q(kind, domain_id, from_addr, destination, recipients, blob_id, size, at)
			RETURNING id, blob_id, recipients->0->>'address'`,
			r.kind, r.domain, r.from, r.dest, r.rcpts, r.blob, r.size, r.at).Query(func(rows pgx.Rows) error {
			var id int64
			var k retryKey
			_, err := pgx.ForEachRow(rows, []any{&id, &k.blob, &k.addr}, func() error {
				retryIDs[k] = id
				return nil
			})
			return err
		})
	}
	if len(x.events) > 0 {
		var r eventRows
		for _, e := range x.events {
			r.add(e)
		}
		b.Queue(sqlAddEvents, r.args()...)
	}
	if err := tx.send(ctx, b, true); err != nil {
		return fmt.Errorf("store deliveries: %w", err)
	}
	for i, c := range x.retryOf {
		// Every row inserted is returned: none can be missing here.
		c.res.Queued = append(c.res.Queued, retryIDs[retryKey{x.retryRows.blob[i], x.retryAddr[i]}])
	}
	x.keep()
	return nil
}

// transferArrays are what the batch adds to transfer, as write's
// arguments: domain, month, in, out.
func (x *deliveryTx) transferArrays() (td []int64, tm []string, ti, to []int64) {
	if len(x.transfer) == 0 {
		return nil, nil, nil, nil
	}
	keys := make([]domainMonth, 0, len(x.transfer))
	for k := range x.transfer {
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
		td[i], tm[i], ti[i], to[i] = k.domain, k.month, x.transfer[k][0], x.transfer[k][1]
	}
	return td, tm, ti, to
}

// keep is what the node keeps of a committed batch.
func (x *deliveryTx) keep() {
	s := x.s
	if s.recipients != nil {
		// The recipients' bytes as the batch counted them under their
		// rows' locks, for the MX's next RCPT.
		s.recipients.deliveredTo(x.mbInfo)
	}
	// New mail is what mail clients read next (IDLE tells them at
	// once): the node that stored it keeps it, as a disk's page cache
	// keeps what was just written for a store on files.
	for _, c := range x.calls {
		if c.err == nil && !c.deferred && len(c.res.Delivered) > 0 {
			s.bodies.put(c.blob, c.Body)
			s.summaries.put(c.blob, c.Summary)
		}
	}
}

// queueRows are the queue entries a batch inserts, column by column.
type queueRows struct {
	id, domain, blob, size []int64
	kind, from, dest       []string
	rcpts                  []string // JSON of []mailstore.OutboundRecipient
	at                     []time.Time
	held                   []bool
}

// add adds entry o with id (0: the insert's).
func (q *queueRows) add(o mailstore.Outbound, id int64) error {
	js, err := json.Marshal(o.Recipients)
	if err != nil {
		return err
	}
	q.id = append(q.id, id)
	q.kind = append(q.kind, string(o.Kind))
	q.domain = append(q.domain, o.DomainID)
	q.from = append(q.from, o.From)
	q.dest = append(q.dest, o.Destination)
	q.rcpts = append(q.rcpts, string(js))
	q.blob = append(q.blob, o.BlobID)
	q.size = append(q.size, o.Size)
	q.at = append(q.at, o.QueuedAt)
	q.held = append(q.held, o.Held)
	return nil
}

// placeKey is a folder a placement names: its mailbox and canonical name.
type placeKey struct {
	mailbox int64
	name    string
}
