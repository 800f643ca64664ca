package pgstore

import (
	"context"
	"sync"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// The recipient cache keeps this node's answers of MailboxByEmail for the
// decisions on incoming mail (RecipientByEmail): every RCPT of the MX
// looked its address up in the database, one round trip of about 0.1 ms
// of the database's CPU and as much of the node's, some sixth of all the
// CPU a message cost on one machine (mailstore/pgstore/BENCHMARKS.md). A
// mailbox receiving mail is looked up again and again: 100 mailboxes
// receiving 1,500 messages a second are 15 look-ups of each a second.
//
// What an answer may miss, and for how long:
//   - A change through this node: nothing. Every read-write transaction
//     of this store (the control plane's writes, IMAP's) forgets every
//     answer (gen) before it returns, and a delivery batch that commits
//     writes the used bytes it counted into the answers it holds (an
//     answer read from the database while such a batch committed is not
//     kept: it may lack the batch's bytes).
//   - A change through another node (a domain suspended, a mailbox
//     deleted, a quota lowered, mail delivered there): at most the TTL
//     (Options.RecipientTTL, 1 s by default). As a remedy for the quota,
//     which another node's deliveries fill, a mailbox within a tenth of
//     its quota is always read afresh (nearQuota), so the 452 at RCPT
//     comes on time unless more than a tenth of the quota arrives
//     through other nodes within the TTL.
//
// Only the answers that name a mailbox are kept; "no such mailbox" (an
// alias, a catch-all, an unknown user) is asked every time.
type recipientCache struct {
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex
	gen     uint64 // bumped by every write of this store: older answers are void
	byEmail map[string]*recipient
	byID    map[int64]*recipient
	// seq counts this node's committed delivery batches, and delivered
	// holds the last one to each mailbox: an answer read before a batch
	// to its mailbox committed is not kept (it lacks that batch's bytes).
	seq       uint64
	delivered map[int64]uint64
}

// ticket is what a look-up that missed saw of the cache before it read
// the database; put keeps its answer only if nothing it lacks came since.
type ticket struct {
	gen, seq uint64
	at       time.Time // the answer is no older than this
}

type recipient struct {
	m   mailstore.Mailbox
	d   mailstore.Domain
	gen uint64
	at  time.Time
}

const (
	// defaultRecipientTTL bounds how long another node's change can go
	// unseen by this node's MX.
	defaultRecipientTTL = time.Second
	// maxRecipients bounds the cache (a few hundred bytes each); when it
	// is full it starts again empty, which costs one look-up per address.
	maxRecipients = 1 << 16
)

func newRecipientCache(ttl time.Duration) *recipientCache {
	if ttl < 0 {
		return nil
	}
	if ttl == 0 {
		ttl = defaultRecipientTTL
	}
	return &recipientCache{ttl: ttl, now: time.Now, byEmail: map[string]*recipient{}, byID: map[int64]*recipient{}, delivered: map[int64]uint64{}}
}

// nearQuota: a mailbox whose answer is not kept, since another node's
// deliveries could take it to its quota within the TTL.
func nearQuota(m mailstore.Mailbox) bool {
	q := m.QuotaBytes()
	return m.UsedBytes >= q-q/10
}

func (c *recipientCache) get(email string) (mailstore.Mailbox, mailstore.Domain, ticket, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.byEmail[email]
	if r == nil || r.gen != c.gen || c.now().Sub(r.at) >= c.ttl || nearQuota(r.m) {
		return mailstore.Mailbox{}, mailstore.Domain{}, ticket{c.gen, c.seq, c.now()}, false
	}
	return r.m, r.d, ticket{}, true
}

// put keeps an answer read after get gave t, unless a write came since
// (it may have changed what the answer says), or a delivery batch to its
// mailbox committed (it may lack that batch's bytes).
func (c *recipientCache) put(email string, t ticket, m mailstore.Mailbox, d mailstore.Domain) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.gen != c.gen || c.delivered[m.ID] > t.seq {
		return
	}
	if old := c.byEmail[email]; old != nil {
		delete(c.byID, old.m.ID)
	}
	if len(c.byEmail) >= maxRecipients {
		clear(c.byEmail)
		clear(c.byID)
	}
	r := &recipient{m: m, d: d, gen: t.gen, at: t.at}
	c.byEmail[email] = r
	c.byID[m.ID] = r
}

// forget voids every answer: a write of this store is about to return.
// The answers stay until a look-up replaces them (or the cache fills), so
// that a busy IMAP node's writes cost a counter each, not a map cleared.
func (c *recipientCache) forget() {
	c.mu.Lock()
	c.gen++
	c.mu.Unlock()
}

// deliveredTo writes a committed delivery batch's counts into the answers
// held for its recipients: used bytes and quota as the batch read them
// under their rows' locks, plus what it added. Used bytes only grow here:
// with two batches in flight (Options.DeliverDepth), the later one's
// figures may come first.
func (c *recipientCache) deliveredTo(mbs map[int64]*mailstore.Mailbox) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	if len(c.delivered)+len(mbs) > maxRecipients {
		// Forgotten which mailboxes got mail when: no answer read before
		// now may be kept.
		clear(c.delivered)
		c.gen++
	}
	for id, m := range mbs {
		c.delivered[id] = c.seq
		if r := c.byID[id]; r != nil && r.gen == c.gen {
			r.m.UsedBytes, r.m.QuotaMB = max(r.m.UsedBytes, m.UsedBytes), m.QuotaMB
		}
	}
}

// RecipientByEmail is MailboxByEmail for the decisions on incoming mail
// (the delivery package's recipient look-ups), answered from this node's
// recipient cache when it can be: see recipientCache for what an answer
// may miss. Everything else (the API, logins) reads the database. The
// answer has no password hash: deciding on mail needs none, and the
// cache keeps none.
func (s *Store) RecipientByEmail(ctx context.Context, email string) (mailstore.Mailbox, mailstore.Domain, error) {
	c := s.recipients
	var t ticket
	if c != nil {
		m, d, tk, ok := c.get(email)
		if ok {
			return m, d, nil
		}
		t = tk
	}
	m, d, err := s.MailboxByEmail(ctx, email)
	m.PasswordHash = ""
	if err == nil && c != nil {
		c.put(email, t, m, d)
	}
	return m, d, err
}
