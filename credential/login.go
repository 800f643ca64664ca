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
	// MaxFailures is how many failed logins are allowed in Window for one
	// address from one IP, and (times ipFactor) for one IP. 0 means 10.
	MaxFailures int
	// Window is the span over which failures count. 0 means 15 minutes.
	Window time.Duration
	// CacheTTL is how long a verified password is remembered. 0 means 10
	// minutes.
	CacheTTL time.Duration
	// Share, when set, is this node's part of the cluster's limits: with
	// n live nodes sharing the store, each allows MaxFailures/n (rounded
	// up), so that a guesser spreading over the nodes gets no more.
	Share *policy.Share
}

// Throttling rule. Failures are counted in three sliding windows:
//
//   - per (address, IP): MaxFailures, then that pair is refused for the
//     rest of the window. A guesser from one place stops here.
//   - per IP (IPv6: per /64, which one customer line gets): MaxFailures
//     times ipFactor, then every address from it is refused. This stops
//     spraying many addresses from one place while leaving room for an
//     office behind one NAT where several people mistype.
//   - per address, from all IPs: MaxFailures times addrFactor, then the
//     address is refused, but only from IPs that have themselves failed
//     on it in the window. An IP with no recent failure for the address
//     (the owner's usual client) is never locked out by attackers
//     elsewhere; a distributed guesser gets one guess per IP before its
//     pair counts against it.
//
// Every counter forgets a failure at most Window after it happened, so no
// lockout outlasts the window. A successful login resets its (address, IP)
// counter only: resetting the IP counter would let an attacker with one
// valid account clear its record between guesses.
const (
	ipFactor   = 3
	addrFactor = 3
)

// Tables are bounded so a flood of distinct keys costs fixed memory.
const (
	maxCounters     = 1 << 16
	maxCacheEntries = 1 << 14
	slots           = 8 // sub-windows per Window
)

// Logins authenticates mailbox users for IMAP and SMTP submission: it
// normalises the address, throttles failures, checks the domain is not
// suspended on every login, and caches successful argon2id checks.
type Logins struct {
	accounts Accounts
	verifier *Verifier
	now      func() time.Time
	max      int
	window   time.Duration
	ttl      time.Duration
	share    *policy.Share // nil: one node
	salt     [32]byte

	// dummy is a hash to verify against for unknown addresses, made on
	// first use.
	dummyOnce sync.Once
	dummy     string

	// mu guards pairs, ips, addrs and cache.
	mu    sync.Mutex
	pairs map[string]*counter
	ips   map[string]*counter
	addrs map[string]*counter
	cache map[[32]byte]time.Time // verified key -> expiry
}

// NewLogins returns Logins with cfg's defaults applied.
func NewLogins(cfg LoginConfig) *Logins {
	l := &Logins{
		accounts: cfg.Accounts,
		verifier: cfg.Verifier,
		now:      cfg.Now,
		max:      cfg.MaxFailures,
		window:   cfg.Window,
		ttl:      cfg.CacheTTL,
		share:    cfg.Share,
		pairs:    make(map[string]*counter),
		ips:      make(map[string]*counter),
		addrs:    make(map[string]*counter),
		cache:    make(map[[32]byte]time.Time),
	}
	if l.verifier == nil {
		l.verifier = NewVerifier(0)
	}
	if l.now == nil {
		l.now = time.Now
	}
	if l.max <= 0 {
		l.max = 10
	}
	if l.window <= 0 {
		l.window = 15 * time.Minute
	}
	if l.ttl <= 0 {
		l.ttl = 10 * time.Minute
	}
	if _, err := rand.Read(l.salt[:]); err != nil {
		panic(fmt.Sprintf("credential: random salt: %v", err)) // crypto/rand does not fail
	}
	return l
}

// Authenticate checks email and password for a login from ip and returns
// the mailbox. It answers an error matching ErrInvalidCredentials for an
// unknown address, a wrong password or a suspended domain, ErrThrottled
// when ip or the address has failed too often (see the throttling rule),
// and other errors (store, ctx) as they are. Every call looks the mailbox
// up, so a deletion, suspension or password change takes effect at the
// next login; only the argon2id check is cached, keyed by mailbox id,
// password hash, password change time and the password.
func (l *Logins) Authenticate(ctx context.Context, email, password string, ip netip.Addr) (mailstore.Mailbox, error) {
	now := l.now()
	addr, err := policy.NormalizeAddress(strings.TrimSpace(email))
	if err != nil {
		addr = strings.ToLower(strings.TrimSpace(email))
	}
	ipKey := ipKeyOf(ip)
	pairKey := addr + "|" + ipKey
	if l.throttled(addr, ipKey, pairKey, now) {
		return mailstore.Mailbox{}, fmt.Errorf("login %s from %s: %w", addr, ip, ErrThrottled)
	}
	if err != nil || password == "" || len(password) > 1024 {
		l.fail(addr, ipKey, pairKey, now)
		return mailstore.Mailbox{}, fmt.Errorf("login %s: malformed: %w", addr, ErrInvalidCredentials)
	}

	mb, dom, err := l.accounts.MailboxByEmail(ctx, addr)
	if errors.Is(err, mailstore.ErrNotFound) {
		// Verifying a dummy hash makes an unknown address cost what a
		// known one does, so response time does not tell which exist.
		l.dummyOnce.Do(func() { l.dummy, _ = HashPassword(string(l.salt[:8])) })
		if verr := l.verifier.Verify(ctx, l.dummy, password); verr != nil && ctx.Err() != nil {
			return mailstore.Mailbox{}, ctx.Err()
		}
		l.fail(addr, ipKey, pairKey, now)
		return mailstore.Mailbox{}, fmt.Errorf("login %s: no such mailbox: %w", addr, ErrInvalidCredentials)
	}
	if err != nil {
		return mailstore.Mailbox{}, fmt.Errorf("login %s: %w", addr, err)
	}

	key := l.cacheKey(mb, password)
	if !l.cached(key, now) {
		err := l.verifier.Verify(ctx, mb.PasswordHash, password)
		switch {
		case errors.Is(err, ErrMismatch):
			l.fail(addr, ipKey, pairKey, now)
			return mailstore.Mailbox{}, fmt.Errorf("login %s: wrong password: %w", addr, ErrInvalidCredentials)
		case errors.Is(err, ErrBadHash):
			return mailstore.Mailbox{}, fmt.Errorf("login %s: stored hash: %w: %w", addr, err, ErrInvalidCredentials)
		case err != nil:
			return mailstore.Mailbox{}, fmt.Errorf("login %s: %w", addr, err)
		}
		l.remember(key, now)
	}
	// Checked after the password, so a guesser learns nothing from it.
	if dom.Suspended {
		return mailstore.Mailbox{}, fmt.Errorf("login %s: domain %s suspended: %w", addr, dom.Name, ErrInvalidCredentials)
	}
	l.mu.Lock()
	delete(l.pairs, pairKey)
	l.mu.Unlock()
	return mb, nil
}

// ipKeyOf is the throttling key of an IP: the address itself for IPv4,
// its /64 for IPv6.
func ipKeyOf(ip netip.Addr) string {
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
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

func (l *Logins) throttled(addr, ipKey, pairKey string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	limit := l.share.Int(l.max)
	pair := l.count(l.pairs, pairKey, now)
	if pair >= limit || l.count(l.ips, ipKey, now) >= limit*ipFactor {
		return true
	}
	return pair > 0 && l.count(l.addrs, addr, now) >= limit*addrFactor
}

func (l *Logins) fail(addr, ipKey, pairKey string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.add(l.pairs, pairKey, now)
	l.add(l.ips, ipKey, now)
	l.add(l.addrs, addr, now)
}

// count is the number of failures of key in the window ending at now.
func (l *Logins) count(m map[string]*counter, key string, now time.Time) int {
	c, ok := m[key]
	if !ok {
		return 0
	}
	n := c.count(l.slot(now))
	if n == 0 {
		delete(m, key)
	}
	return n
}

func (l *Logins) add(m map[string]*counter, key string, now time.Time) {
	slot := l.slot(now)
	c, ok := m[key]
	if !ok {
		if len(m) >= maxCounters {
			evict(m, slot)
		}
		c = &counter{}
		m[key] = c
	}
	c.add(slot)
}

// evict frees room in a full table: first expired counters, then, under a
// flood of distinct keys, arbitrary ones (map order is random), which at
// worst forgets some failures early.
func evict(m map[string]*counter, slot int64) {
	for k, c := range m {
		if c.count(slot) == 0 {
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

func (l *Logins) slot(now time.Time) int64 {
	return now.UnixNano() / int64(l.window/slots)
}

// counter is a sliding window in fixed memory: failures per sub-window of
// Window/slots, the newest ending at slot last. A failure counts until
// slots sub-windows have begun after its own, that is for at most Window.
type counter struct {
	last int64
	n    [slots]uint16
}

func (c *counter) advance(slot int64) {
	if slot <= c.last {
		return
	}
	if slot-c.last >= slots {
		c.n = [slots]uint16{}
	} else {
		for s := c.last + 1; s <= slot; s++ {
			c.n[s%slots] = 0
		}
	}
	c.last = slot
}

func (c *counter) add(slot int64) {
	c.advance(slot)
	if i := slot % slots; slot >= c.last-slots+1 && c.n[i] < 1<<16-1 {
		c.n[i]++
	}
}

func (c *counter) count(slot int64) int {
	c.advance(slot)
	n := 0
	for _, v := range c.n {
		n += int(v)
	}
	return n
}
