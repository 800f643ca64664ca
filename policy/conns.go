package policy

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Connection limits, per client address (docs/decisions/0029-connection-limits.md). Each service
// (the MX, submission, IMAP) keeps its own Conns; each node counts its own
// connections: these bound what one node holds, so they are not divided
// by Share the way the cluster's login and sending budgets are.
//
// The figures are sized for an office of 200 people behind one NAT
// address, each with a desktop client and a phone:
//
//   - PerUserAddress 10, Dovecot's mail_max_userip_connections: Thunderbird
//     keeps up to 5 IMAP connections per account, Outlook about as many, a
//     phone one or two; 10 takes a desktop, a phone and a tablet of one
//     person, and stops one account's runaway client from taking more.
//   - PerAddress 1,500 for IMAP and submission: 200 people x (5 desktop + 2
//     phone) = 1,400, rounded up. It is a ceiling for one address, not a
//     fair share: it stops one address from taking a whole node.
//   - PerAddress 50 for the MX: Postfix's smtpd_client_connection_count_limit
//     (half its default_process_limit of 100). Large senders open many
//     sessions from few addresses; 50 is what they meet everywhere.
//   - RatePerMinute 600 new connections per address, after a burst of
//     PerAddress: an office whose line comes back reconnects every client
//     at once (the burst), and then opens a few a second at most (phones
//     polling every 15 minutes, clients reconnecting); a scanner or a flood
//     that opens and closes connections as fast as it can gets 10 a second,
//     each closed before it costs a greeting, a TLS handshake or a login.
const (
	DefaultConnsPerAddress     = 1500
	DefaultMXConnsPerAddress   = 50
	DefaultConnsPerUserAddress = 10
	DefaultConnRatePerMinute   = 600
)

// Refusals of Conns. The protocols answer them as a temporary refusal
// (421 4.7.0, BYE or NO [UNAVAILABLE]).
var (
	ErrTooManyConns     = errors.New("too many connections from the address")
	ErrConnRate         = errors.New("connections opened too fast from the address")
	ErrTooManyUserConns = errors.New("too many connections of the user from the address")
)

// ConnLimits are the connection limits of one service; a zero field is
// no limit.
type ConnLimits struct {
	// PerAddress is the most connections at once from one client address
	// (see AddressKey), counted from accept.
	PerAddress int
	// PerUserAddress is the most logged-in connections at once of one
	// user from one client address, counted from login.
	PerUserAddress int
	// RatePerMinute is how many connections one client address may open
	// a minute once it has used a burst of max(PerAddress, RatePerMinute).
	RatePerMinute int
}

// Conns counts the connections of one service per client address and per
// user and address, and admits them within its ConnLimits. Its methods
// may be called from any goroutine.
type Conns struct {
	lim ConnLimits
	now func() time.Time

	// mu guards open, users and rate.
	mu    sync.Mutex
	open  map[string]int
	users map[userAddress]int
	rate  map[string]*connBucket
}

type userAddress struct {
	user int64
	addr string
}

// connBucket is a token bucket of connections.
type connBucket struct {
	tokens float64
	last   time.Time
}

// maxRateBuckets bounds the rate table: past it, buckets that have
// refilled are dropped (they say nothing a missing one does not), then,
// under a flood of distinct addresses, arbitrary ones, which only gives
// those addresses a fresh burst.
const maxRateBuckets = 1 << 16

// NewConns makes a Conns with lim; now is the clock of the rate limit
// (nil: time.Now).
func NewConns(lim ConnLimits, now func() time.Time) *Conns {
	if now == nil {
		now = time.Now
	}
	return &Conns{lim: lim, now: now, open: map[string]int{}, users: map[userAddress]int{}, rate: map[string]*connBucket{}}
}

// Acquire admits a new connection from addr (an AddressKey), or answers
// ErrTooManyConns or ErrConnRate. A refused connection takes nothing:
// only admitted ones count against the rate.
func (c *Conns) Acquire(addr string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lim.PerAddress > 0 && c.open[addr] >= c.lim.PerAddress {
		return fmt.Errorf("%s holds %d: %w", addr, c.open[addr], ErrTooManyConns)
	}
	if c.lim.RatePerMinute > 0 && !c.takeRate(addr) {
		return fmt.Errorf("%s over %d a minute: %w", addr, c.lim.RatePerMinute, ErrConnRate)
	}
	c.open[addr]++
	return nil
}

// Release gives back a connection Acquire admitted.
func (c *Conns) Release(addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open[addr]--; c.open[addr] <= 0 {
		delete(c.open, addr)
	}
}

// AcquireUser counts a login of user on a connection from addr, or
// answers ErrTooManyUserConns when user holds PerUserAddress logged-in
// connections from addr already.
func (c *Conns) AcquireUser(user int64, addr string) error {
	k := userAddress{user, addr}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lim.PerUserAddress > 0 && c.users[k] >= c.lim.PerUserAddress {
		return fmt.Errorf("user %d from %s holds %d: %w", user, addr, c.users[k], ErrTooManyUserConns)
	}
	c.users[k]++
	return nil
}

// ReleaseUser gives back what AcquireUser took, at logout or when the
// connection closes.
func (c *Conns) ReleaseUser(user int64, addr string) {
	k := userAddress{user, addr}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.users[k]--; c.users[k] <= 0 {
		delete(c.users, k)
	}
}

// takeRate takes one connection from addr's bucket; c.mu is held.
func (c *Conns) takeRate(addr string) bool {
	now := c.now()
	rate := float64(c.lim.RatePerMinute) / 60
	burst := float64(max(c.lim.PerAddress, c.lim.RatePerMinute))
	b := c.rate[addr]
	if b == nil {
		if len(c.rate) >= maxRateBuckets {
			c.sweepRate(now, rate, burst)
		}
		b = &connBucket{tokens: burst, last: now}
		c.rate[addr] = b
	}
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(burst, b.tokens+d.Seconds()*rate)
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

func (c *Conns) sweepRate(now time.Time, rate, burst float64) {
	for k, b := range c.rate {
		if b.tokens+now.Sub(b.last).Seconds()*rate >= burst {
			delete(c.rate, k)
		}
	}
	for k := range c.rate {
		if len(c.rate) < maxRateBuckets*7/8 {
			return
		}
		delete(c.rate, k)
	}
}

// AddressKey is the client address a connection's limits count: the IPv4
// address, or the /64 of an IPv6 address, since one customer line is
// given a whole /64 and could otherwise open each connection from a new
// address. Other addresses (Unix sockets) count as themselves.
func AddressKey(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		ip := ta.AddrPort().Addr().Unmap()
		if ip.Is6() {
			p, _ := ip.Prefix(64)
			return p.String()
		}
		return ip.String()
	}
	return RemoteIP(a)
}

// AddrKey is AddressKey of an IP.
func AddrKey(ip netip.Addr) string {
	return AddressKey(net.TCPAddrFromAddrPort(netip.AddrPortFrom(ip, 0)))
}

// RemoteIP is the IP of a connection's remote end, without the port, as
// logs show it.
func RemoteIP(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}
