package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// The notifier tells IMAP sessions that an account changed: a writer
// notifies after its transaction commits. This node's watchers are
// signalled at once; another node's only if one of its sessions watches
// the account, through a NOTIFY on that node's own channel. A node
// records the accounts its sessions watch in the watching table (one row
// per account and node instance, renewed while watched, expiring when
// the node is gone), and announces a new row on the schema's shared
// channel; the other nodes then read the table again before their next
// notification. So a delivery costs no statement and wakes no node when no
// other node watches its account, and each node's cost per message does
// not grow with the number of nodes.
//
// The NOTIFY is sent after the commit, by one goroutine that gathers the
// notifications of a few milliseconds into one statement: a NOTIFY inside the
// writing transaction would take PostgreSQL's notification queue lock at
// commit and serialise every writer of the cluster.
//
// A writer may notify with a view of the interest that predates another
// node's new row (recorded after its session began to watch, and
// announced a few milliseconds after that): when the announcement
// comes, the writer notifies that node again for the accounts it names that
// the writer rang in the last recallWindow.
//
// A notification is only a hint. A notification lost (the listening
// connection dropped) is made good by signalling every local watcher when
// the connection is back, and the sessions' own periodic check reads one
// row per folder (its highest_modseq).

// notifyDelay is how long notifications gather before they are sent: short enough
// for IDLE on another node to show new mail well within a second, long
// enough that under load one NOTIFY carries several delivery batches.
const notifyDelay = 25 * time.Millisecond

// maxPayload keeps each NOTIFY under PostgreSQL's 8,000-byte limit.
const maxPayload = 7000

const (
	// watchTTL is how long a node's row in watching lives unrenewed: a
	// node that died stops receiving notifications within it (and the
	// writers' interestMaxAge).
	watchTTL = 60 * time.Second
	// watchRenew is how often a node with watched accounts renews its
	// rows; a node with none sends nothing.
	watchRenew = 15 * time.Second
	// interestMaxAge is the oldest view of the other nodes' interest a
	// writer sends by: it reads the table again when it has something
	// to send, so that it stops sending to nodes that died or stopped
	// watching (which announce nothing).
	interestMaxAge = 30 * time.Second
	// recallWindow is how long a writer remembers the accounts it rang,
	// to notify them again for a node that announces it watches them: it
	// bounds the time from a session's Watch to the announcement that
	// a notification cannot miss.
	recallWindow = 5 * time.Second
)

type notifier struct {
	s *Store
	// channel is the schema's shared channel: announcements of new
	// interest, and the notifications of older nodes, which notify every node.
	channel string
	// instance names this store in watching, in payloads (so that it
	// skips its own announcements) and in its own channel, own.
	instance string
	own      string

	// mu guards the fields below.
	mu      sync.Mutex
	pending map[int64]struct{}
	// recent is when each account was last notified, over recallWindow.
	recent map[int64]time.Time
	// wanted counts this node's watchers per account; registered is
	// what watching holds for this instance, as of the last sync.
	wanted     map[int64]int
	registered map[int64]bool
	// others is the other instances' interest by account, read at
	// othersAt; nil when it must be read again. gen counts the
	// announcements, so that a read that crossed one is not kept.
	others   map[int64][]string
	othersAt time.Time
	gen      uint64

	// sent counts the notifications sent, woken those received naming
	// accounts, for the tests.
	sent, woken atomic.Int64

	kick     chan struct{} // wakes send
	syncKick chan struct{} // wakes syncWatching

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func startNotifier(ctx context.Context, s *Store) (*notifier, error) {
	var schema string
	if err := s.pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return nil, err
	}
	var id [6]byte
	rand.Read(id[:])
	bctx, cancel := context.WithCancel(context.Background())
	b := &notifier{
		s:          s,
		channel:    channelName("mailhost_" + schema),
		instance:   hex.EncodeToString(id[:]),
		pending:    map[int64]struct{}{},
		recent:     map[int64]time.Time{},
		wanted:     map[int64]int{},
		registered: map[int64]bool{},
		kick:       make(chan struct{}, 1),
		syncKick:   make(chan struct{}, 1),
		cancel:     cancel,
	}
	b.own = "mailhost_node_" + b.instance
	ready := make(chan error, 1)
	b.wg.Add(3)
	go b.listen(bctx, ready)
	go b.send(bctx)
	go b.syncWatching(bctx)
	select {
	case err := <-ready:
		if err != nil {
			b.stop()
			return nil, err
		}
	case <-ctx.Done():
		b.stop()
		return nil, ctx.Err()
	}
	return b, nil
}

// channelName cuts a channel's name as PostgreSQL cuts an identifier
// (NAMEDATALEN-1 bytes, at a character's start): LISTEN takes a longer
// name cut, pg_notify refuses it. The recipient triggers cut theirs the
// same way (017_recipient_changes.sql).
func channelName(s string) string {
	const max = 63
	if len(s) <= max {
		return s
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// stop ends the goroutines and removes this instance's interest, so
// that the other nodes stop notifying it (at their next read of it).
func (b *notifier) stop() {
	b.cancel()
	b.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	b.s.pool.Exec(ctx, `DELETE FROM watching WHERE instance = $1`, b.instance)
}

// notify tells the watchers of the accounts, on this node and the others,
// that they changed; a writer calls it after its commit. boltstore's
// notify does the same on its one node.
func (s *Store) notify(mailboxIDs ...int64) {
	if s.notifier != nil {
		s.notifier.notify(mailboxIDs...)
	}
}

// notify signals the accounts' local watchers and queues the accounts for
// the other nodes. Call it after the commit.
func (b *notifier) notify(mailboxIDs ...int64) {
	if len(mailboxIDs) == 0 {
		return
	}
	b.s.watch.Notify(mailboxIDs...)
	now := time.Now()
	b.mu.Lock()
	for _, id := range mailboxIDs {
		b.pending[id] = struct{}{}
		b.recent[id] = now
	}
	b.mu.Unlock()
	b.wake()
}

// recall notifies again the accounts of ids notified in the last recallWindow.
func (b *notifier) recall(ids []int64) {
	b.mu.Lock()
	n := 0
	for _, id := range ids {
		if at, ok := b.recent[id]; ok && time.Since(at) < recallWindow {
			b.pending[id] = struct{}{}
			n++
		}
	}
	b.mu.Unlock()
	if n > 0 {
		b.wake()
	}
}

func (b *notifier) wake() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// want adds delta to the account's local watchers; the first and the
// last change what this node records in watching.
func (b *notifier) want(mailboxID int64, delta int) {
	b.mu.Lock()
	n := b.wanted[mailboxID] + delta
	if n <= 0 {
		delete(b.wanted, mailboxID)
	} else {
		b.wanted[mailboxID] = n
	}
	changed := (n > 0) != b.registered[mailboxID]
	b.mu.Unlock()
	if changed {
		select {
		case b.syncKick <- struct{}{}:
		default:
		}
	}
}

// send sends the queued notifications, a few milliseconds' worth at a time, to
// the nodes that watch their accounts.
func (b *notifier) send(ctx context.Context) {
	defer b.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.kick:
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(notifyDelay):
		}
		b.mu.Lock()
		ids := b.pending
		b.pending = map[int64]struct{}{}
		for id, at := range b.recent {
			if time.Since(at) >= recallWindow {
				delete(b.recent, id)
			}
		}
		b.mu.Unlock()
		others, err := b.interest(ctx)
		if err != nil {
			// The other nodes' sessions find the change by their
			// periodic check.
			continue
		}
		to := map[string]map[int64]struct{}{}
		for id := range ids {
			for _, inst := range others[id] {
				if to[inst] == nil {
					to[inst] = map[int64]struct{}{}
				}
				to[inst][id] = struct{}{}
			}
		}
		if len(to) == 0 {
			continue
		}
		var chans, pays []string
		for inst, set := range to {
			for _, p := range payloads(b.instance, set) {
				chans = append(chans, "mailhost_node_"+inst)
				pays = append(pays, p)
			}
		}
		// Sent again on a new connection if the one it took was lost (a
		// notification sent twice costs a look, not a wrong answer); any
		// other failure is not retried: the other nodes' periodic checks
		// find the change within their interval.
		retry(ctx, func() error {
			_, err := b.s.pool.Exec(ctx, `SELECT pg_notify(c, p) FROM unnest($1::text[], $2::text[]) AS t (c, p)`, chans, pays)
			return beforeCommit(err)
		})
		b.sent.Add(int64(len(pays)))
	}
}

// interest answers the other instances' interest by account, reading it
// again when an announcement came since, or it is older than
// interestMaxAge.
func (b *notifier) interest(ctx context.Context) (map[int64][]string, error) {
	for attempt := 0; ; attempt++ {
		b.mu.Lock()
		others, at, gen := b.others, b.othersAt, b.gen
		b.mu.Unlock()
		if others != nil && time.Since(at) < interestMaxAge {
			return others, nil
		}
		start := time.Now()
		m := map[int64][]string{}
		rows, err := b.s.pool.Query(ctx, `SELECT mailbox_id, instance FROM watching WHERE expires_at > now() AND instance <> $1`, b.instance)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id int64
			var inst string
			if err := rows.Scan(&id, &inst); err != nil {
				rows.Close()
				return nil, err
			}
			m[id] = append(m[id], inst)
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
		b.mu.Lock()
		kept := b.gen == gen
		if kept {
			b.others, b.othersAt = m, start
		}
		b.mu.Unlock()
		// An announcement that came during the read may name a row the
		// read missed: read again, a few times at most.
		if kept || attempt >= 2 {
			return m, nil
		}
	}
}

// stale drops the view of the other nodes' interest.
func (b *notifier) stale() {
	b.mu.Lock()
	b.others = nil
	b.gen++
	b.mu.Unlock()
}

// syncWatching keeps this instance's rows in watching as wanted says:
// at once when an account's first local watcher comes or its last goes,
// and renewed every watchRenew while there are any.
func (b *notifier) syncWatching(ctx context.Context) {
	defer b.wg.Done()
	t := time.NewTicker(watchRenew)
	defer t.Stop()
	for {
		renew := false
		select {
		case <-ctx.Done():
			return
		case <-b.syncKick:
		case <-t.C:
			renew = true
		}
		if err := b.sync(ctx, renew); err != nil && ctx.Err() == nil {
			// Tried again at the next change or renewal; meanwhile the
			// sessions' periodic checks stand in.
			continue
		}
	}
}

func (b *notifier) sync(ctx context.Context, renew bool) error {
	b.mu.Lock()
	var add, keep, drop []int64
	for id := range b.wanted {
		if b.registered[id] {
			keep = append(keep, id)
		} else {
			add = append(add, id)
		}
	}
	for id := range b.registered {
		if b.wanted[id] == 0 {
			drop = append(drop, id)
		}
	}
	b.mu.Unlock()
	upsert := add
	if renew {
		upsert = append(upsert, keep...)
	}
	if len(upsert) == 0 && len(drop) == 0 {
		return nil
	}
	var inserted []int64
	// Not Store.write: these rows are no answer of the recipient cache,
	// which every write of the store voids.
	err := retry(ctx, func() error {
		tx, err := b.s.pool.Begin(ctx)
		if err != nil {
			return beforeCommit(err)
		}
		if err := b.record(ctx, tx, renew, drop, upsert, &inserted); err != nil {
			tx.Rollback(ctx)
			return beforeCommit(err)
		}
		return tx.Commit(ctx)
	})
	if err != nil {
		return err
	}
	b.mu.Lock()
	for _, id := range upsert {
		b.registered[id] = true
	}
	for _, id := range drop {
		delete(b.registered, id)
	}
	// A watcher that came or went during the transaction.
	again := false
	for id := range b.wanted {
		again = again || !b.registered[id]
	}
	for id := range b.registered {
		again = again || b.wanted[id] == 0
	}
	b.mu.Unlock()
	if again {
		select {
		case b.syncKick <- struct{}{}:
		default:
		}
	}
	return nil
}

// record makes this instance's rows in watching: it deletes drop,
// inserts or renews upsert, and announces the accounts it inserted
// (inserted) on the shared channel.
func (b *notifier) record(ctx context.Context, tx pgx.Tx, renew bool, drop, upsert []int64, inserted *[]int64) error {
	*inserted = (*inserted)[:0]
	if len(drop) > 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM watching WHERE instance = $1 AND mailbox_id = ANY($2)`, b.instance, drop); err != nil {
			return err
		}
	}
	if len(upsert) == 0 {
		return nil
	}
	if renew {
		// What nodes that died left behind; nothing reads it.
		if _, err := tx.Exec(ctx, `DELETE FROM watching WHERE expires_at < now() - interval '1 hour'`); err != nil {
			return err
		}
	}
	rows, err := tx.Query(ctx, `
		INSERT INTO watching (mailbox_id, instance, expires_at)
		SELECT unnest($2::bigint[]), $1, now() + make_interval(secs => $3)
		ON CONFLICT (mailbox_id, instance) DO UPDATE SET expires_at = EXCLUDED.expires_at
		RETURNING mailbox_id, xmax = 0`, b.instance, upsert, watchTTL.Seconds())
	if err != nil {
		return err
	}
	for rows.Next() {
		var id int64
		var isNew bool
		if err := rows.Scan(&id, &isNew); err != nil {
			rows.Close()
			return err
		}
		if isNew {
			*inserted = append(*inserted, id)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(*inserted) == 0 {
		return nil
	}
	// Delivered at the commit: the other nodes read the table again
	// before their next notification, and notify this node for the accounts
	// they notified of late. An older node takes it for a notification of
	// these accounts, which costs its sessions a look.
	ids := map[int64]struct{}{}
	for _, id := range *inserted {
		ids[id] = struct{}{}
	}
	_, err = tx.Exec(ctx, `SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p`, b.channel, payloads(b.instance+announce, ids))
	return err
}

// recipientsChanged is the payload of the database's announcements on the
// shared channel that a recipient's look-up may answer otherwise
// (017_recipient_changes.sql; recipients.go). It has no colon, so older
// nodes skip it.
const recipientsChanged = "/r"

// announce marks a payload on the shared channel as new interest
// ("instance/w:id,..."), not a notification.
const announce = "/w"

// payloads are "instance:id,id,...", each under maxPayload bytes.
func payloads(instance string, ids map[int64]struct{}) []string {
	var out []string
	var sb strings.Builder
	for id := range ids {
		if sb.Len() == 0 {
			sb.WriteString(instance)
			sb.WriteByte(':')
		} else {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.FormatInt(id, 10))
		if sb.Len() > maxPayload {
			out = append(out, sb.String())
			sb.Reset()
		}
	}
	if sb.Len() > 0 {
		out = append(out, sb.String())
	}
	return out
}

// listen holds a connection of its own that LISTENs on the shared channel
// and on this instance's, and signals local watchers of the accounts
// other nodes name. When the connection drops it connects again, and
// then signals every local watcher, since notifications sent meanwhile
// are lost, and reads the other nodes' interest again before the next
// notification.
func (b *notifier) listen(ctx context.Context, ready chan<- error) {
	defer b.wg.Done()
	first := true
	for backoff := 100 * time.Millisecond; ctx.Err() == nil; {
		cfg := b.s.pool.Config().ConnConfig.Copy()
		cfg.DialFunc = listenDialer.DialContext
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err == nil {
			_, err = conn.Exec(ctx, "LISTEN "+pgx.Identifier{b.channel}.Sanitize()+"; LISTEN "+pgx.Identifier{b.own}.Sanitize())
		}
		if first {
			ready <- err
			if err != nil {
				if conn != nil {
					conn.Close(context.Background())
				}
				return
			}
			first = false
		} else if err == nil {
			b.stale()
			b.s.watch.NotifyAll()
		}
		if err == nil {
			backoff = 100 * time.Millisecond
			b.s.recipients.listen(true)
			for {
				n, werr := conn.WaitForNotification(ctx)
				if werr != nil {
					break
				}
				b.deliver(n.Channel, n.Payload)
			}
			b.s.recipients.listen(false)
		}
		if conn != nil {
			conn.Close(context.Background())
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// listenDialer finds a listening connection that died without a word (a
// database host gone, a network cut) by TCP keepalives within about 25 s,
// rather than the system's two hours: until then the recipient cache
// would keep answers whose changes it can no longer hear of.
var listenDialer = &net.Dialer{
	Timeout: 10 * time.Second,
	KeepAliveConfig: net.KeepAliveConfig{
		Enable:   true,
		Idle:     10 * time.Second,
		Interval: 5 * time.Second,
		Count:    3,
	},
}

func (b *notifier) deliver(channel, payload string) {
	if channel == b.channel && payload == recipientsChanged {
		b.s.recipients.forget()
		return
	}
	inst, list, ok := strings.Cut(payload, ":")
	if !ok || strings.TrimSuffix(inst, announce) == b.instance {
		return
	}
	var ids []int64
	for f := range strings.SplitSeq(list, ",") {
		if id, err := strconv.ParseInt(f, 10, 64); err == nil {
			ids = append(ids, id)
		}
	}
	if channel == b.channel && strings.HasSuffix(inst, announce) {
		b.stale()
		b.recall(ids)
		return
	}
	// A notification for this node, or an older node's, which notifies every
	// node on the shared channel.
	if len(ids) > 0 {
		b.woken.Add(1)
	}
	b.s.watch.Notify(ids...)
}

// Watch implements mailstore.Mail: it answers the signals of this node's
// commits and of the other nodes' notifications, which notify this node while
// the account has a watcher here.
func (s *Store) Watch(mailboxID int64) (<-chan struct{}, func()) {
	ch, stop := s.watch.Watch(mailboxID)
	if s.notifier == nil {
		return ch, stop
	}
	s.notifier.want(mailboxID, 1)
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			stop()
			s.notifier.want(mailboxID, -1)
		})
	}
}
