package credential

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/policy"
)

// Login errors. A client is told only that its credentials are invalid,
// whether the address is unknown, the password wrong or the domain
// suspended; the wrapped error text says which, for the log.
var (
	ErrInvalidCredentials = errors.New("invalid credentials")
	ErrThrottled          = errors.New("too many failed logins")
)

// Accounts finds a mailbox and its domain by normalised address;
// mailstore.Store satisfies it. It answers an error matching
// mailstore.ErrNotFound for an unknown address.
type Accounts interface {
	MailboxByEmail(ctx context.Context, email string) (mailstore.Mailbox, mailstore.Domain, error)
}

// LoginConfig configures Logins. Accounts is required.
type LoginConfig struct {
	Accounts Accounts
	// Verifier bounds concurrent argon2id checks; nil means NewVerifier(0).
	Verifier *Verifier
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Guesses are the budgets of wrong passwords (see the throttling
	// rule); a zero Budget in it means that of DefaultGuesses.
	Guesses GuessLimits
	// TrustFor is how long after a successful login its (account,
	// address) pair stays exempt from the account's and the address's
	// budgets. 0 means 30 days.
	TrustFor time.Duration
	// CacheTTL is how long a verified password is remembered. 0 means 10
	// minutes.
	CacheTTL time.Duration
	// Share, when set, is this node's part of the cluster's limits: with
	// n live nodes sharing the store, each allows 1/n of every budget
	// (bursts rounded up), so that a guesser spreading over the nodes
	// gets no more.
	Share *policy.Share
}

// Budget is a token bucket of guesses: Burst at once, then PerHour.
type Budget struct {
	Burst   int
	PerHour float64
}

// GuessLimits are the three budgets of the throttling rule.
type GuessLimits struct {
	// Pair bounds the guesses at one account from one address.
	Pair Budget
	// Account bounds the guesses at one account from the addresses it
	// has not logged in from: a distributed brute force.
	Account Budget
	// Address bounds the guesses from one address at the accounts that
	// have not logged in from it: a spray.
	Address Budget
}

// DefaultGuesses are the cluster-wide budgets (docs/decisions/0015-login-throttling.md):
//
//   - one account from one address: 10, then 10 an hour (one every 6
//     minutes), which is all a guesser behind the owner's own address
//     gets, and what an owner who mistyped ten times waits for;
//   - one account from everywhere else: 20, then 12 an hour (one every 5
//     minutes): about 300 a day however many addresses a botnet has;
//   - one address over all accounts: 30, then 60 an hour: a spray of one
//     password over 1,000 accounts takes 16 hours.
//
// The owner's usual addresses (trusted pairs) are held only to the first,
// so a brute force elsewhere never locks them out.
var DefaultGuesses = GuessLimits{
	Pair:    Budget{Burst: 10, PerHour: 10},
	Account: Budget{Burst: 20, PerHour: 12},
	Address: Budget{Burst: 30, PerHour: 60},
}

// Throttling rule. A guess is a failed login whose password is not one
// this (account, address) pair already failed with lately: a phone that
// keeps sending the password its owner has since changed costs one guess,
// however often it retries, and its repeats are answered at once without
// an argon2id check. Each pair keeps keyed hashes (HMAC-like SHA-256 under
// a random per-process salt, with the mailbox's id and password stamp;
// never the password) of its last staleKept wrong passwords, for staleFor
// after each was last sent.
//
// Guesses are counted in three token buckets (GuessLimits): per pair, per
// account (across addresses) and per address (across accounts; an IPv6
// address counts by its /64, which one customer line gets). A login is
// refused ErrThrottled, before any password check (else the answer would
// tell a guesser whether its guess was right), when its pair's bucket is
// empty, or, for a pair that is not trusted, the account's or the
// address's. A pair is trusted for TrustFor after a successful login: the
// owner's office, home or phone network. So a brute force from elsewhere
// (which empties the account's bucket) and a spray from the owner's own
// address (which empties the address's) never refuse the owner where it
// logged in before; a new address waits for the account's next token
// (minutes) while a distributed attack goes on. A successful login
// refills its pair's bucket and nothing else: refilling the address's
// would let an attacker with one valid account clear its record between
// guesses.
//
// No refusal outlasts the time one token takes to come back (6 minutes
// for a pair at the defaults). The buckets are checked again inside the
// argon2id slot, so concurrent guesses overshoot a budget by at most the
// Verifier's concurrency.
const (
	staleKept = 4
	staleFor  = 24 * time.Hour
)

// Tables are bounded so a flood of distinct keys costs fixed memory.
const (
	maxCounters     = 1 << 16
	maxTrusted      = 1 << 18
	maxCacheEntries = 1 << 14
)

// Logins authenticates mailbox users for IMAP and SMTP submission: it
// normalises the address, throttles guessing, checks the domain is not
// suspended on every login, and caches successful argon2id checks.
type Logins struct {
	accounts Accounts
	verifier *Verifier
	now      func() time.Time
	lim      GuessLimits
	trustFor time.Duration
	ttl      time.Duration
	share    *policy.Share // nil: one node
	salt     [32]byte

	// dummy is a hash to verify against for unknown addresses, made on
	// first use.
	dummyOnce sync.Once
	dummy     string

	// mu guards pairs, accts, addrs, trusted and cache.
	mu      sync.Mutex
	pairs   map[string]*pairState
	accts   map[string]*bucket
	addrs   map[string]*bucket
	trusted map[[16]byte]time.Time // pair -> trusted until
	cache   map[[32]byte]time.Time // verified key -> expiry
}

// pairState is what Logins keeps of one (account, address) pair.
type pairState struct {
	guesses bucket
	// stale are the fingerprints of its last wrong passwords, a ring.
	stale [staleKept]staleEntry
	next  int
}

type staleEntry struct {
	fp [32]byte
	at time.Time // last sent; zero: empty
}

// NewLogins returns Logins with cfg's defaults applied.
func NewLogins(cfg LoginConfig) *Logins {
	l := &Logins{
		accounts: cfg.Accounts,
		verifier: cfg.Verifier,
		now:      cfg.Now,
		lim:      cfg.Guesses,
		trustFor: cfg.TrustFor,
		ttl:      cfg.CacheTTL,
		share:    cfg.Share,
		pairs:    make(map[string]*pairState),
		accts:    make(map[string]*bucket),
		addrs:    make(map[string]*bucket),
		trusted:  make(map[[16]byte]time.Time),
		cache:    make(map[[32]byte]time.Time),
	}
	if l.verifier == nil {
		l.verifier = NewVerifier(0)
	}
	if l.now == nil {
		l.now = time.Now
	}
	for _, b := range []struct{ b, def *Budget }{
		{&l.lim.Pair, &DefaultGuesses.Pair},
		{&l.lim.Account, &DefaultGuesses.Account},
		{&l.lim.Address, &DefaultGuesses.Address},
	} {
		if b.b.Burst <= 0 || b.b.PerHour <= 0 {
			*b.b = *b.def
		}
	}
	if l.trustFor <= 0 {
		l.trustFor = 30 * 24 * time.Hour
	}
	if l.ttl <= 0 {
		l.ttl = 10 * time.Minute
	}
	if _, err := rand.Read(l.salt[:]); err != nil {
		panic(fmt.Sprintf("credential: random salt: %v", err)) // crypto/rand does not fail
	}
	return l
}

// loginKeys are the throttling keys of one attempt.
type loginKeys struct {
	acct, addr, pair string
	trust            [16]byte
}

func (l *Logins) keysOf(acct string, ip netip.Addr) loginKeys {
	k := loginKeys{acct: acct, addr: policy.AddrKey(ip)}
	k.pair = acct + "|" + k.addr
	h := sha256.New()
	h.Write(l.salt[:])
	fmt.Fprintf(h, "trust:%d:%s", len(k.pair), k.pair)
	copy(k.trust[:], h.Sum(nil))
	return k
}

// errThrottledInSlot is what the check inside the argon2id slot answers.
var errThrottledInSlot = errors.New("throttled")

// Authenticate checks email and password for a login from ip and returns
// the mailbox. It answers an error matching ErrInvalidCredentials for an
// unknown address, a wrong password or a suspended domain, ErrThrottled
// when the attempt is over a guess budget (see the throttling rule), and
// other errors (store, ctx) as they are. Every call looks the mailbox up,
// so a deletion, suspension or password change takes effect at the next
// login; only the argon2id check is cached, keyed by mailbox id, password
// hash, password change time and the password.
func (l *Logins) Authenticate(ctx context.Context, email, password string, ip netip.Addr) (mailstore.Mailbox, error) {
	addr, err := policy.NormalizeAddress(strings.TrimSpace(email))
	if err != nil {
		addr = strings.ToLower(strings.TrimSpace(email))
	}
	k := l.keysOf(addr, ip)
	malformed := err != nil || password == "" || len(password) > 1024

	var (
		mb       mailstore.Mailbox
		dom      mailstore.Domain
		known    bool
		identity = "unknown|" + addr
	)
	if malformed {
		identity = "malformed|" + addr
	} else {
		mb, dom, err = l.accounts.MailboxByEmail(ctx, addr)
		if err != nil && !errors.Is(err, mailstore.ErrNotFound) {
			return mailstore.Mailbox{}, fmt.Errorf("login %s: %w", addr, err)
		}
		if known = err == nil; known {
			identity = fmt.Sprintf("%d|%d|%d:%s", mb.ID, mb.PasswordChangedAt.UnixNano(), len(mb.PasswordHash), mb.PasswordHash)
		}
	}
	if l.repeated(k, l.fingerprint(identity, password), l.now()) {
		// Not a guess: the client learns nothing it did not know.
		return mailstore.Mailbox{}, fmt.Errorf("login %s: wrong password sent again: %w", addr, ErrInvalidCredentials)
	}
	if !l.allowed(k, l.now()) {
		return mailstore.Mailbox{}, fmt.Errorf("login %s from %s: %w", addr, ip, ErrThrottled)
	}
	if malformed {
		return mailstore.Mailbox{}, l.wrong(k, identity, password, "malformed")
	}

	var key [32]byte
	if known {
		key = l.cacheKey(mb, password)
	}
	if !known || !l.cached(key, l.now()) {
		hash := mb.PasswordHash
		if !known {
			// Verifying a dummy hash makes an unknown address cost what a
			// known one does, so response time does not tell which exist.
			l.dummyOnce.Do(func() { l.dummy, _ = HashPassword(string(l.salt[:8])) })
			hash = l.dummy
		}
		err := l.verifier.run(ctx, func() error {
			// Again in the slot: guesses that passed the check above
			// together may have used the budget since.
			if !l.allowed(k, l.now()) {
				return errThrottledInSlot
			}
			return VerifyPassword(hash, password)
		})
		switch {
		case errors.Is(err, errThrottledInSlot):
			return mailstore.Mailbox{}, fmt.Errorf("login %s from %s: %w", addr, ip, ErrThrottled)
		case !known && (err == nil || errors.Is(err, ErrMismatch)):
			return mailstore.Mailbox{}, l.wrong(k, identity, password, "no such mailbox")
		case errors.Is(err, ErrMismatch):
			return mailstore.Mailbox{}, l.wrong(k, identity, password, "wrong password")
		case errors.Is(err, ErrBadHash):
			return mailstore.Mailbox{}, fmt.Errorf("login %s: stored hash: %w: %w", addr, err, ErrInvalidCredentials)
		case err != nil:
			return mailstore.Mailbox{}, fmt.Errorf("login %s: %w", addr, err)
		}
		l.remember(key, l.now())
	}
	// Checked after the password, so a guesser learns nothing from it.
	if dom.Suspended {
		return mailstore.Mailbox{}, fmt.Errorf("login %s: domain %s suspended: %w", addr, dom.Name, ErrInvalidCredentials)
	}
	l.succeeded(k, l.now())
	return mb, nil
}

// wrong records a guess and answers ErrInvalidCredentials.
func (l *Logins) wrong(k loginKeys, identity, password, why string) error {
	l.guessed(k, l.fingerprint(identity, password), l.now())
	return fmt.Errorf("login %s: %s: %w", k.acct, why, ErrInvalidCredentials)
}

// fingerprint is the keyed hash a wrong password is remembered by. The
// identity (mailbox id, password stamp and hash) makes a password change
// forget every fingerprint taken before it.
func (l *Logins) fingerprint(identity, password string) [32]byte {
	h := sha256.New()
	h.Write(l.salt[:])
	fmt.Fprintf(h, "stale:%d:%s%d:%s", len(identity), identity, len(password), password)
	var fp [32]byte
	h.Sum(fp[:0])
	return fp
}

func (l *Logins) cacheKey(mb mailstore.Mailbox, password string) [32]byte {
	h := sha256.New()
	h.Write(l.salt[:])
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(mb.ID))
	binary.BigEndian.PutUint64(b[8:], uint64(mb.PasswordChangedAt.UnixNano()))
	h.Write(b[:])
	fmt.Fprintf(h, "%d:%s%d:%s", len(mb.PasswordHash), mb.PasswordHash, len(password), password)
	var k [32]byte
	h.Sum(k[:0])
	return k
}

func (l *Logins) cached(key [32]byte, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	exp, ok := l.cache[key]
	if ok && now.Before(exp) {
		return true
	}
	if ok {
		delete(l.cache, key)
	}
	return false
}

func (l *Logins) remember(key [32]byte, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.cache) >= maxCacheEntries {
		for k, exp := range l.cache {
			if !now.Before(exp) {
				delete(l.cache, k)
			}
		}
		// Still full: drop arbitrary entries (map order is random); they
		// only cost a fresh argon2id check.
		for k := range l.cache {
			if len(l.cache) < maxCacheEntries {
				break
			}
			delete(l.cache, k)
		}
	}
	l.cache[key] = now.Add(l.ttl)
}

// repeated reports whether fp is one of k's pair's recent wrong
// passwords, and if so keeps it for staleFor from now.
func (l *Logins) repeated(k loginKeys, fp [32]byte, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.pairs[k.pair]
	if p == nil {
		return false
	}
	for i := range p.stale {
		e := &p.stale[i]
		if !e.at.IsZero() && now.Sub(e.at) < staleFor && e.fp == fp {
			e.at = now
			return true
		}
	}
	return false
}

// allowed reports whether k's buckets have a guess left: the pair's, and
// unless the pair is trusted, the account's and the address's.
func (l *Logins) allowed(k loginKeys, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p := l.pairs[k.pair]; p != nil && !l.left(&p.guesses, l.lim.Pair, now) {
		return false
	}
	if l.isTrusted(k, now) {
		return true
	}
	if b := l.accts[k.acct]; b != nil && !l.left(b, l.lim.Account, now) {
		return false
	}
	if b := l.addrs[k.addr]; b != nil && !l.left(b, l.lim.Address, now) {
		return false
	}
	return true
}

// guessed takes a guess from k's buckets (the account's and the
// address's only for a pair not trusted) and remembers fp for the pair.
func (l *Logins) guessed(k loginKeys, fp [32]byte, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.pairs[k.pair]
	if p == nil {
		if len(l.pairs) >= maxCounters {
			l.evictPairs(now)
		}
		p = &pairState{}
		l.pairs[k.pair] = p
	}
	l.take(&p.guesses, l.lim.Pair, now)
	p.stale[p.next] = staleEntry{fp: fp, at: now}
	p.next = (p.next + 1) % staleKept
	if l.isTrusted(k, now) {
		return
	}
	l.take(l.bucketOf(l.accts, k.acct, l.lim.Account, now), l.lim.Account, now)
	l.take(l.bucketOf(l.addrs, k.addr, l.lim.Address, now), l.lim.Address, now)
}

// succeeded refills k's pair's bucket and trusts the pair.
func (l *Logins) succeeded(k loginKeys, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p := l.pairs[k.pair]; p != nil {
		p.guesses = bucket{}
	}
	if _, ok := l.trusted[k.trust]; !ok && len(l.trusted) >= maxTrusted {
		for t, until := range l.trusted {
			if !now.Before(until) {
				delete(l.trusted, t)
			}
		}
		// Still full: drop arbitrary entries (map order is random); they
		// only lose their exemption until their next login.
		for t := range l.trusted {
			if len(l.trusted) < maxTrusted*7/8 {
				break
			}
			delete(l.trusted, t)
		}
	}
	l.trusted[k.trust] = now.Add(l.trustFor)
}

// isTrusted: l.mu is held.
func (l *Logins) isTrusted(k loginKeys, now time.Time) bool {
	until, ok := l.trusted[k.trust]
	return ok && now.Before(until)
}

// bucketOf finds or makes key's bucket in m; l.mu is held.
func (l *Logins) bucketOf(m map[string]*bucket, key string, b Budget, now time.Time) *bucket {
	bk := m[key]
	if bk == nil {
		if len(m) >= maxCounters {
			l.evictBuckets(m, b, now)
		}
		bk = &bucket{}
		m[key] = bk
	}
	return bk
}

// limits are this node's share of b: burst and guesses a second.
func (l *Logins) limits(b Budget) (burst, rate float64) {
	return float64(l.share.Int(b.Burst)), l.share.Float(b.PerHour) / 3600
}

// left reports whether bk has a guess left; l.mu is held.
func (l *Logins) left(bk *bucket, b Budget, now time.Time) bool {
	burst, rate := l.limits(b)
	return bk.used(now, rate)+1 <= burst
}

// take uses one guess of bk; l.mu is held.
func (l *Logins) take(bk *bucket, b Budget, now time.Time) {
	_, rate := l.limits(b)
	bk.used(now, rate)
	bk.n++
}

// evictPairs frees room in the pair table: first pairs that remember
// nothing (bucket refilled, no recent wrong password), then, under a flood
// of distinct pairs, arbitrary ones, which at worst forgets some guesses
// early (the account's and the address's buckets still hold them).
func (l *Logins) evictPairs(now time.Time) {
	_, rate := l.limits(l.lim.Pair)
	for k, p := range l.pairs {
		if p.guesses.used(now, rate) == 0 && !p.remembers(now) {
			delete(l.pairs, k)
		}
	}
	for k := range l.pairs {
		if len(l.pairs) < maxCounters*7/8 {
			return
		}
		delete(l.pairs, k)
	}
}

func (p *pairState) remembers(now time.Time) bool {
	for _, e := range p.stale {
		if !e.at.IsZero() && now.Sub(e.at) < staleFor {
			return true
		}
	}
	return false
}

// evictBuckets is evictPairs for an account or address table.
func (l *Logins) evictBuckets(m map[string]*bucket, b Budget, now time.Time) {
	_, rate := l.limits(b)
	for k, bk := range m {
		if bk.used(now, rate) == 0 {
			delete(m, k)
		}
	}
	for k := range m {
		if len(m) < maxCounters*7/8 {
			return
		}
		delete(m, k)
	}
}

// bucket is a token bucket kept as what has been used of it, so that its
// zero value is full and a change of the burst (a node joining the
// cluster) applies at once: n guesses used, which drain at the rate.
type bucket struct {
	n    float64
	last time.Time
}

// used brings the bucket up to now at rate (guesses a second) and
// answers what is used of it.
func (b *bucket) used(now time.Time, rate float64) float64 {
	if d := now.Sub(b.last); d > 0 {
		if !b.last.IsZero() {
			b.n = max(0, b.n-d.Seconds()*rate)
		}
		b.last = now
	}
	return b.n
}
