package mailauth

import (
	"container/list"
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"time"
)

// Defaults of CacheOptions.
const (
	DefaultCacheTTL         = 5 * time.Minute
	DefaultCacheNegativeTTL = time.Minute
	DefaultCacheMaxEntries  = 10000
	DefaultCacheTimeout     = 20 * time.Second
)

// CacheOptions configure a CachingResolver. The zero value is usable.
type CacheOptions struct {
	// TTL is how long an answer is kept. Zero: DefaultCacheTTL (5 minutes).
	TTL time.Duration
	// NegativeTTL is how long a "not found" answer (a *net.DNSError with
	// IsNotFound: NXDOMAIN or no record of the type) is kept. Zero:
	// DefaultCacheNegativeTTL (1 minute).
	NegativeTTL time.Duration
	// MaxEntries bounds the answers kept, all record types together; the
	// least recently used goes first. Zero: DefaultCacheMaxEntries (10,000).
	MaxEntries int
	// Timeout bounds one query to the wrapped resolver. A query runs apart
	// from the context of the caller that started it, so that callers
	// waiting for the same answer are not failed by the first one giving
	// up; this bound stops it. Zero: DefaultCacheTimeout (20 seconds).
	Timeout time.Duration
	// Now is the clock. Nil: time.Now.
	Now func() time.Time
}

// CachingResolver is a Resolver that keeps the answers of another one for
// a fixed time (see the package documentation for why fixed) and asks it
// once for concurrent identical queries. It also has the method set of
// outbound.Resolver and LookupAddr, so SPF's "ptr" keeps working behind it.
//
// Answers are copies: a caller may modify what it gets. Temporary failures
// (timeouts, SERVFAIL, anything that is not a *net.DNSError with
// IsNotFound) are never kept. Names are compared without case and without a
// trailing dot. Its methods may be called from any goroutine.
type CachingResolver struct {
	r       Resolver
	ttl     time.Duration
	neg     time.Duration
	max     int
	timeout time.Duration
	now     func() time.Time

	// mu guards the fields below it.
	mu sync.Mutex
	// entries maps a key to its element in lru, whose Value is a *cacheEntry.
	entries map[cacheKey]*list.Element
	// lru orders the entries, most recently used first.
	lru *list.List
	// flight holds the queries under way, for callers of the same key to
	// wait on.
	flight map[cacheKey]*flightCall
}

// cacheKey is a query: the record type and the normalized name.
type cacheKey struct {
	kind string
	name string
}

type cacheEntry struct {
	key     cacheKey
	val     any   // the answer, never given out: callers get clones
	err     error // a *net.DNSError with IsNotFound, or nil
	expires time.Time
}

// flightCall is one query under way; done is closed when val and err are
// set.
type flightCall struct {
	done chan struct{}
	val  any
	err  error
	// waiters counts the callers that joined the first; c.mu guards it.
	waiters int
}

// NewCachingResolver returns a CachingResolver in front of r.
func NewCachingResolver(r Resolver, opts CacheOptions) *CachingResolver {
	c := &CachingResolver{
		r: r, ttl: opts.TTL, neg: opts.NegativeTTL, max: opts.MaxEntries, timeout: opts.Timeout, now: opts.Now,
		entries: make(map[cacheKey]*list.Element),
		lru:     list.New(),
		flight:  make(map[cacheKey]*flightCall),
	}
	if c.ttl <= 0 {
		c.ttl = DefaultCacheTTL
	}
	if c.neg <= 0 {
		c.neg = DefaultCacheNegativeTTL
	}
	if c.max <= 0 {
		c.max = DefaultCacheMaxEntries
	}
	if c.timeout <= 0 {
		c.timeout = DefaultCacheTimeout
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c
}

// LookupTXT answers name's TXT records.
func (c *CachingResolver) LookupTXT(ctx context.Context, name string) ([]string, error) {
	v, err := c.lookup(ctx, "TXT", name, func(ctx context.Context) (any, error) {
		return c.r.LookupTXT(ctx, name)
	}, cloneStrings)
	txt, _ := v.([]string)
	return txt, err
}

// LookupIPAddr answers host's addresses.
func (c *CachingResolver) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	v, err := c.lookup(ctx, "IP", host, func(ctx context.Context) (any, error) {
		return c.r.LookupIPAddr(ctx, host)
	}, cloneIPs)
	ips, _ := v.([]net.IPAddr)
	return ips, err
}

// LookupMX answers name's MX records.
func (c *CachingResolver) LookupMX(ctx context.Context, name string) ([]*net.MX, error) {
	v, err := c.lookup(ctx, "MX", name, func(ctx context.Context) (any, error) {
		return c.r.LookupMX(ctx, name)
	}, cloneMX)
	mx, _ := v.([]*net.MX)
	return mx, err
}

// LookupAddr answers the names of addr (a reverse lookup) when the wrapped
// resolver does reverse lookups, and "not found" otherwise, as the checks
// treat a resolver without LookupAddr.
func (c *CachingResolver) LookupAddr(ctx context.Context, addr string) ([]string, error) {
	ar, ok := c.r.(addrResolver)
	if !ok {
		return nil, &net.DNSError{Err: "no reverse lookups", Name: addr, IsNotFound: true}
	}
	v, err := c.lookup(ctx, "PTR", addr, func(ctx context.Context) (any, error) {
		return ar.LookupAddr(ctx, addr)
	}, cloneStrings)
	names, _ := v.([]string)
	return names, err
}

// Len is the number of answers kept, expired ones not yet dropped
// included.
func (c *CachingResolver) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// normalize is the cache's form of a DNS name: lower case (RFC 4343), no
// trailing dot.
func normalize(name string) string {
	return strings.ToLower(strings.TrimSuffix(name, "."))
}

// lookup answers a query from the cache, from the same query under way, or
// by starting query. Every caller gets its own clone of the answer, and the
// cache keeps one more, so that neither callers nor the wrapped resolver
// share a slice with the cache.
func (c *CachingResolver) lookup(ctx context.Context, kind, name string, query func(context.Context) (any, error), clone func(any) any) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, &net.DNSError{Err: err.Error(), Name: name, IsTimeout: true, IsTemporary: true}
	}
	key := cacheKey{kind, normalize(name)}
	c.mu.Lock()
	if el, ok := c.entries[key]; ok {
		e := el.Value.(*cacheEntry)
		if c.now().Before(e.expires) {
			c.lru.MoveToFront(el)
			c.mu.Unlock()
			return clone(e.val), copyErr(e.err, name)
		}
		c.remove(el)
	}
	call, ok := c.flight[key]
	if !ok {
		call = &flightCall{done: make(chan struct{})}
		c.flight[key] = call
		go c.run(ctx, key, call, query, clone)
	} else {
		call.waiters++
	}
	c.mu.Unlock()

	select {
	case <-call.done:
		return clone(call.val), copyErr(call.err, name)
	case <-ctx.Done():
		return nil, &net.DNSError{Err: ctx.Err().Error(), Name: name, IsTimeout: true, IsTemporary: true}
	}
}

// run makes one query for the callers of key and keeps its answer when it
// is one to keep. The query's context keeps the values of the first
// caller's but not its cancellation (see CacheOptions.Timeout).
func (c *CachingResolver) run(ctx context.Context, key cacheKey, call *flightCall, query func(context.Context) (any, error), clone func(any) any) {
	qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
	defer cancel()
	val, err := query(qctx)
	// The answer's age counts from now, not from when the cache is
	// written: the callers, woken below, may move on (and a test's clock
	// with them) before that.
	at := c.now()
	val = clone(val)

	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.flight, key)
	call.val, call.err = val, err
	close(call.done)

	var ttl time.Duration
	var dnsErr *net.DNSError
	switch {
	case err == nil:
		ttl = c.ttl
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound && !dnsErr.IsTemporary && !dnsErr.IsTimeout:
		ttl = c.neg
		val = nil
	default:
		return
	}
	if el, ok := c.entries[key]; ok {
		c.remove(el)
	}
	c.entries[key] = c.lru.PushFront(&cacheEntry{key: key, val: val, err: err, expires: at.Add(ttl)})
	for c.lru.Len() > c.max {
		c.remove(c.lru.Back())
	}
}

// remove drops an entry; c.mu is held.
func (c *CachingResolver) remove(el *list.Element) {
	c.lru.Remove(el)
	delete(c.entries, el.Value.(*cacheEntry).key)
}

// copyErr is a kept error as one caller gets it: a *net.DNSError is
// copied, with the name that caller asked for, so that no caller can
// change the kept one.
func copyErr(err error, name string) error {
	if err == nil {
		return nil
	}
	if d, ok := err.(*net.DNSError); ok {
		cp := *d
		cp.Name = name
		return &cp
	}
	return err
}

// cloneStrings, cloneIPs and cloneMX copy an answer deeply; a nil or
// absent answer stays nil.
func cloneStrings(v any) any {
	s, _ := v.([]string)
	if s == nil {
		return nil
	}
	return append([]string(nil), s...)
}

func cloneIPs(v any) any {
	ips, _ := v.([]net.IPAddr)
	if ips == nil {
		return nil
	}
	out := make([]net.IPAddr, len(ips))
	for i, a := range ips {
		out[i] = net.IPAddr{IP: append(net.IP(nil), a.IP...), Zone: a.Zone}
	}
	return out
}

func cloneMX(v any) any {
	mx, _ := v.([]*net.MX)
	if mx == nil {
		return nil
	}
	out := make([]*net.MX, len(mx))
	for i, m := range mx {
		if m != nil {
			cp := *m
			out[i] = &cp
		}
	}
	return out
}
