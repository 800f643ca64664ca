package policy

import (
	"net"
	"sync"
)

// ConnsPerAddress counts the connections each client address holds and
// admits at most max of them at once (max_conns_per_ip), so that one
// address cannot take every session of a server. The MX, submission and
// IMAP each keep one; each wraps it in a listener that answers a refusal
// in its own protocol.
type ConnsPerAddress struct {
	max int

	// mu guards n.
	mu sync.Mutex
	n  map[string]int
}

// NewConnsPerAddress admits max connections per address.
func NewConnsPerAddress(max int) *ConnsPerAddress {
	return &ConnsPerAddress{max: max, n: map[string]int{}}
}

// Acquire takes a slot for ip, or answers false when ip holds max.
func (c *ConnsPerAddress) Acquire(ip string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[ip] >= c.max {
		return false
	}
	c.n[ip]++
	return true
}

// Release gives back a slot Acquire took for ip.
func (c *ConnsPerAddress) Release(ip string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[ip]--; c.n[ip] <= 0 {
		delete(c.n, ip)
	}
}

// RemoteIP is the address a connection's limits count: the IP of its
// remote end, without the port.
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
