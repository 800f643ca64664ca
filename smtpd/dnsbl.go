package smtpd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/mailhost/mailhost/policy"
)

// DNS blocklists (RFC 5782), MX only.
//
// The client's address is looked up once per connection (STARTTLS does
// not repeat it: the result is kept with the connection), in every list
// of Config.DNSBL at once, from the moment the connection is accepted; the
// first RCPT waits for the answers. A listed client is refused at each
// RCPT, not at the greeting or MAIL, so that mail to postmaster still
// gets through (RFC 5321 section 4.5.1; a listed operator must be able to
// ask to be delisted) and the sender's server logs a reply that names the
// list.

// IPResolver answers address queries; *net.Resolver and
// mailauth.CachingResolver satisfy it.
type IPResolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// dnsblTimeout bounds the lookups of one connection. A list that does
// not answer in time is taken as not listing the client: a blocklist is
// an opinion, and its outage must not stop mail.
const dnsblTimeout = 10 * time.Second

// errListed is the outcome of a client found in a blocklist.
var errListed = errors.New("client listed in a DNS blocklist")

// listedError names the list and the address, for the reply.
type listedError struct {
	list, ip, answer string
}

func (e *listedError) Error() string {
	return fmt.Sprintf("%s listed in %s (%s)", e.ip, e.list, e.answer)
}
func (e *listedError) Unwrap() error { return errListed }

// dnsblCheck is the blocklist answer of one connection, computed once.
type dnsblCheck struct {
	once sync.Once
	done chan struct{}
	// listed is set before done is closed; nil: not listed.
	listed *listedError
}

// start begins the lookups of ip in lists, once for the connection.
func (c *dnsblCheck) start(r IPResolver, lists []string, ip netip.Addr, log func(string, ...any)) {
	c.once.Do(func() {
		c.done = make(chan struct{})
		go func() {
			defer close(c.done)
			ctx, cancel := context.WithTimeout(context.Background(), dnsblTimeout)
			defer cancel()
			c.listed = lookupDNSBL(ctx, r, lists, ip, log)
		}()
	})
}

// wait returns the connection's answer, or ctx's error.
func (c *dnsblCheck) wait(ctx context.Context) (*listedError, error) {
	select {
	case <-c.done:
		return c.listed, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// lookupDNSBL asks every list at once and returns the first list, in
// the configured order, that lists ip; nil when none does.
func lookupDNSBL(ctx context.Context, r IPResolver, lists []string, ip netip.Addr, log func(string, ...any)) *listedError {
	name := reverseName(ip)
	if name == "" || len(lists) == 0 {
		return nil
	}
	found := make([]*listedError, len(lists))
	var wg sync.WaitGroup
	for i, list := range lists {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := name + "." + strings.TrimSuffix(list, ".")
			addrs, err := r.LookupIPAddr(ctx, q)
			var dnsErr *net.DNSError
			switch {
			case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
				return
			case err != nil:
				log("DNS blocklist lookup failed: client taken as not listed", "list", list, "query", q, "err", err)
				return
			}
			for _, a := range addrs {
				if listedAnswer(a.IP) {
					found[i] = &listedError{list: list, ip: ip.String(), answer: a.IP.String()}
					return
				}
			}
			if len(addrs) > 0 {
				// RFC 5782 section 2.1: answers are in 127.0.0.0/8;
				// 127.255.255.0/24 is Spamhaus' "query refused" (a public
				// resolver, or over the free limit), not a listing.
				log("DNS blocklist answered outside the listing range: ignored", "list", list, "query", q, "answer", addrs[0].IP.String())
			}
		}()
	}
	wg.Wait()
	for _, f := range found {
		if f != nil {
			return f
		}
	}
	return nil
}

// listedAnswer reports whether a blocklist's A record lists the address:
// 127.0.0.0/8 (RFC 5782 section 2.1) except 127.255.255.0/24, which
// Spamhaus and others answer for refused queries.
func listedAnswer(ip net.IP) bool {
	v4 := ip.To4()
	return v4 != nil && v4[0] == 127 && !(v4[1] == 255 && v4[2] == 255)
}

// reverseName is ip's name under a list (RFC 5782 section 2.1 for IPv4,
// 2.4 for IPv6: nibbles in reverse order); "" for an invalid address.
func reverseName(ip netip.Addr) string {
	ip = ip.Unmap()
	switch {
	case ip.Is4():
		b := ip.As4()
		return fmt.Sprintf("%d.%d.%d.%d", b[3], b[2], b[1], b[0])
	case ip.Is6():
		b := ip.As16()
		var sb strings.Builder
		const hex = "0123456789abcdef"
		for i := len(b) - 1; i >= 0; i-- {
			if i != len(b)-1 {
				sb.WriteByte('.')
			}
			sb.WriteByte(hex[b[i]&0xf])
			sb.WriteByte('.')
			sb.WriteByte(hex[b[i]>>4])
		}
		return sb.String()
	}
	return ""
}

// startDNSBL begins the connection's blocklist lookups (MX with
// Config.DNSBL only), kept with the connection when it came through Serve
// so that a session after STARTTLS reuses them.
func (s *session) startDNSBL() {
	cfg := s.srv.cfg
	if s.srv.submission || len(cfg.DNSBL) == 0 || !s.ip.IsValid() {
		return
	}
	r := cfg.DNSBLResolver
	if r == nil {
		r = net.DefaultResolver
	}
	if s.tracked != nil {
		s.dnsbl = &s.tracked.dnsbl
	} else {
		s.dnsbl = &dnsblCheck{}
	}
	s.dnsbl.start(r, cfg.DNSBL, s.ip, func(msg string, args ...any) { s.log.Warn(msg, args...) })
}

// checkDNSBL refuses a recipient when the client is listed, except the
// role addresses (policy.RoleAddress: the domainless postmaster, and
// postmaster@ and abuse@ any domain), where a listed sender asks why.
func (s *session) checkDNSBL(addr string) error {
	if s.dnsbl == nil || policy.RoleAddress(addr) {
		return nil
	}
	l, err := s.dnsbl.wait(s.ctx)
	if err != nil {
		return fmt.Errorf("DNS blocklist lookup: %w", err)
	}
	if l != nil {
		return l
	}
	return nil
}
