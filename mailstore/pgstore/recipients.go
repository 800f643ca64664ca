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
// An answer is kept until something it says changes, not for a fixed
// time, so that how often a node looks a mailbox up does not depend on
// how many nodes share its mail (a time-to-live makes each of N nodes
// look each mailbox up once per TTL, N times one node's look-ups):
//   - A change through this node: seen at once. Every control-plane write
//     (Store.write, and the auto-replies') forgets every answer (gen)
//     before it returns, and a delivery batch that commits writes the used
//     bytes it counted into the answers it holds (an answer read from the
//     database while such a batch committed is not kept: it may lack the
//     batch's bytes).
//   - A change through any node, an older binary or an operator's SQL
//     (a domain suspended, a mailbox deleted, its quota lowered, a Sieve
//     script activated): the database's triggers announce it on the
//     shared channel at its commit (017_recipient_changes.sql), and the
//     notifier forgets every answer when the announcement arrives,
//     milliseconds later. Answers are kept only while the notifier's
//     connection listens (listening): from when the notifier finds it
//     gone nothing is kept, and what was read before is void. It finds
//     a session the database ended at once; a connection that died
//     without a word, by TCP keepalives within about 25 s (notify.go).
//   - The used bytes, which deliveries through other nodes and IMAP
//     writes change without an announcement (announcing every delivery
//     would wake every node for every message): an answer is at most the
//     TTL old (Options.RecipientTTL, a minute by default), and a mailbox
//     within a tenth of its quota is always read afresh (nearQuota). So
//     the 452 at RCPT comes on time unless more than a tenth of the quota
//     arrived through other nodes since this node last read or delivered
//     to the mailbox; and when it does not, the delivery's own
//     transaction refuses to write past the quota on the locked row
//     (docs/security.md, "Quota under concurrent deliveries"), whose
//     figures it then writes into this cache.
//
// Only the answers that name a mailbox are kept; "no such mailbox" (an
// alias, a catch-all, an unknown user) is asked every time.
type recipientCache struct {
	ttl time.Duration
	now func() time.Time

	mu  sync.Mutex
	gen uint64 // bumped by every change announced or made here: older answers are void
	// listening: the notifier's connection is listening for the
	// announcements of changes; answers are kept only meanwhile.
	listening bool
	byEmail   map[string]*recipient
	byID      map[int64]*recipient
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
	// defaultRecipientTTL bounds how old the used bytes of an answer
	// may be: what other nodes delivered meanwhile goes unseen by this
	// node's RCPT (not by the delivery's transaction).
	defaultRecipientTTL = time.Minute
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
	if r == nil || r.gen != c.gen || !c.listening || c.now().Sub(r.at) >= c.ttl || nearQuota(r.m) {
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
	if t.gen != c.gen || !c.listening || c.delivered[m.ID] > t.seq {
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

// forget voids every answer: a write of this store is about to return,
// or the database announced a change. The answers stay until a look-up
// replaces them (or the cache fills), so that each costs a counter, not a
// map cleared.
func (c *recipientCache) forget() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.gen++
	c.mu.Unlock()
}

// listen tells the cache whether the announcements of changes reach it:
// the notifier's connection began or stopped listening. Either way what
// it holds is void: announcements may have been lost.
func (c *recipientCache) listen(on bool) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.gen++
	c.listening = on
	c.mu.Unlock()
}

// forgetRecipients voids this node's recipient answers after a write
// that is not Store.write changed what they say.
func (s *Store) forgetRecipients() { s.recipients.forget() }

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
			// As fresh as a read: the batch read them on the locked row.
			r.m.UsedBytes, r.m.QuotaMB = max(r.m.UsedBytes, m.UsedBytes), m.QuotaMB
			r.at = c.now()
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
