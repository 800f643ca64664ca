package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// The doorbell tells the IMAP sessions of every node that an account
// changed: a writer rings it after its transaction commits. This node's
// watchers are signalled at once; the others through NOTIFY on a channel
// named for the schema. The NOTIFY is sent after the commit, by one
// goroutine that gathers the rings of a few milliseconds into one
// statement: a NOTIFY inside the writing transaction would take
// PostgreSQL's notification queue lock at commit and serialise every
// writer of the cluster.
//
// A doorbell is only a hint. A notification lost (the listening
// connection dropped) is made good by signalling every local watcher when
// the connection is back, and the sessions' own periodic check reads one
// row per folder (its highest_modseq).

// notifyDelay is how long rings gather before they are sent: short enough
// for IDLE on another node to show new mail well within a second, long
// enough that under load one NOTIFY carries several delivery batches.
// Each NOTIFY is a transaction of its own and wakes every node's
// listening connection; at 5 ms there was one per batch, and with two
// nodes the notifications were a measurable part of the database's work
// per batch (bench/README.md, "Two nodes").
const notifyDelay = 25 * time.Millisecond

// maxPayload keeps each NOTIFY under PostgreSQL's 8,000-byte limit.
const maxPayload = 7000

type doorbell struct {
	s        *Store
	channel  string
	instance string // tags this store's own notifications, which it skips

	// mu guards pending.
	mu      sync.Mutex
	pending map[int64]struct{}
	kick    chan struct{}

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func startDoorbell(ctx context.Context, s *Store) (*doorbell, error) {
	var schema string
	if err := s.pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return nil, err
	}
	var id [6]byte
	rand.Read(id[:])
	bctx, cancel := context.WithCancel(context.Background())
	b := &doorbell{
		s:        s,
		channel:  "mailhost_" + schema,
		instance: hex.EncodeToString(id[:]),
		pending:  map[int64]struct{}{},
		kick:     make(chan struct{}, 1),
		cancel:   cancel,
	}
	ready := make(chan error, 1)
	b.wg.Add(2)
	go b.listen(bctx, ready)
	go b.send(bctx)
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

func (b *doorbell) stop() {
	b.cancel()
	b.wg.Wait()
}

// ring signals the accounts' local watchers and queues the accounts for
// the other nodes. Call it after the commit.
func (b *doorbell) ring(mailboxIDs ...int64) {
	if len(mailboxIDs) == 0 {
		return
	}
	b.s.watch.Notify(mailboxIDs...)
	b.mu.Lock()
	for _, id := range mailboxIDs {
		b.pending[id] = struct{}{}
	}
	b.mu.Unlock()
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// send sends the queued rings, a few milliseconds' worth at a time.
func (b *doorbell) send(ctx context.Context) {
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
		b.mu.Unlock()
		for _, p := range payloads(b.instance, ids) {
			// Sent again on a new connection if the one it took was lost
			// (a doorbell rung twice costs a look, not a wrong answer);
			// any other failure is not retried: the other nodes' periodic
			// checks find the change within their interval.
			retry(ctx, func() error {
				_, err := b.s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, b.channel, p)
				return beforeCommit(err)
			})
		}
	}
}

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

// listen holds a connection of its own that LISTENs on the channel and
// signals local watchers of the accounts other nodes name. When the
// connection drops it connects again, and then signals every local
// watcher, since notifications sent meanwhile are lost.
func (b *doorbell) listen(ctx context.Context, ready chan<- error) {
	defer b.wg.Done()
	first := true
	for backoff := 100 * time.Millisecond; ctx.Err() == nil; {
		conn, err := pgx.ConnectConfig(ctx, b.s.pool.Config().ConnConfig.Copy())
		if err == nil {
			_, err = conn.Exec(ctx, "LISTEN "+pgx.Identifier{b.channel}.Sanitize())
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
			b.s.watch.NotifyAll()
		}
		if err == nil {
			backoff = 100 * time.Millisecond
			for {
				n, werr := conn.WaitForNotification(ctx)
				if werr != nil {
					break
				}
				b.deliver(n.Payload)
			}
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

func (b *doorbell) deliver(payload string) {
	inst, list, ok := strings.Cut(payload, ":")
	if !ok || inst == b.instance {
		return
	}
	var ids []int64
	for f := range strings.SplitSeq(list, ",") {
		if id, err := strconv.ParseInt(f, 10, 64); err == nil {
			ids = append(ids, id)
		}
	}
	b.s.watch.Notify(ids...)
}

// Watch implements mailstore.Mail: it answers the signals of this node's
// commits and of the other nodes' notifications.
func (s *Store) Watch(mailboxID int64) (<-chan struct{}, func()) {
	return s.watch.Watch(mailboxID)
}
