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
//     writes the used bytes it counted into the answers it holds.
//   - A change through another node (a domain suspended, a mailbox
//     deleted, a quota lowered, mail delivered there): at most
//     recipientTTL. As a remedy for the quota, which another node's
//     deliveries fill, a mailbox within a tenth of its quota is always
//     read afresh (nearQuota), so the 452 at RCPT comes on time unless
//     more than a tenth of the quota arrives through other nodes within
//     the TTL.
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
	return &recipientCache{ttl: ttl, now: time.Now, byEmail: map[string]*recipient{}, byID: map[int64]*recipient{}}
}

// nearQuota: a mailbox whose answer is not kept, since another node's
// deliveries could take it to its quota within the TTL.
func nearQuota(m mailstore.Mailbox) bool {
	q := m.QuotaBytes()
	return m.UsedBytes >= q-q/10
}

func (c *recipientCache) get(email string) (mailstore.Mailbox, mailstore.Domain, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.byEmail[email]
	if r == nil || r.gen != c.gen || c.now().Sub(r.at) >= c.ttl || nearQuota(r.m) {
		return mailstore.Mailbox{}, mailstore.Domain{}, c.gen, false
	}
	return r.m, r.d, c.gen, true
}

// put keeps an answer read after get returned gen, unless a write came
// since (it may have changed what the answer says).
func (c *recipientCache) put(email string, gen uint64, m mailstore.Mailbox, d mailstore.Domain) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if old := c.byEmail[email]; old != nil {
		delete(c.byID, old.m.ID)
	}
	if len(c.byEmail) >= maxRecipients {
		clear(c.byEmail)
		clear(c.byID)
	}
	r := &recipient{m: m, d: d, gen: gen, at: c.now()}
	c.byEmail[email] = r
	c.byID[m.ID] = r
}

// forget voids every answer: a write of this store is about to return.
func (c *recipientCache) forget() {
	c.mu.Lock()
	c.gen++
	clear(c.byEmail)
	clear(c.byID)
	c.mu.Unlock()
}

// delivered writes a committed delivery batch's counts into the answers
// held for its recipients: used bytes and quota as the batch read them
// under their rows' locks, plus what it added.
func (c *recipientCache) delivered(mbs map[int64]*mailstore.Mailbox) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, m := range mbs {
		if r := c.byID[id]; r != nil && r.gen == c.gen {
			r.m.UsedBytes, r.m.QuotaMB = m.UsedBytes, m.QuotaMB
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
	var gen uint64
	if c != nil {
		m, d, g, ok := c.get(email)
		if ok {
			return m, d, nil
		}
		gen = g
	}
	m, d, err := s.MailboxByEmail(ctx, email)
	m.PasswordHash = ""
	if err == nil && c != nil {
		c.put(email, gen, m, d)
	}
	return m, d, err
}
