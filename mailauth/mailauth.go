// Package mailauth is mailhost's message authentication: DKIM keys and
// signing of outgoing mail (RFC 6376, RFC 8463), the DNS records a hosted
// domain publishes (MX, SPF, DKIM, DMARC, client configuration), the Sender
// Rewriting Scheme for forwarded mail, and the SPF, DKIM and DMARC checks
// of inbound mail that end in an Authentication-Results header (RFC 8601).
//
// It knows no protocol server and no store: smtpd, the outbound queue and
// adminapi call it with what they have. DKIM, DMARC and the header format
// come from github.com/emersion/go-msgauth, SPF evaluation from
// blitiri.com.ar/go/spf.
//
// CachingResolver keeps DNS answers for the checks and the outbound queue:
// mail from one sender domain comes in bursts, and without a cache every
// message paid two or more queries (40% of the CPU of a delivery with the
// checks on, see bench/README.md). Go's net.Resolver does not give the
// records' TTLs, so the cache keeps answers for a fixed time: 5 minutes
// by default, shorter than most published TTLs (an hour is common), so a
// changed SPF, DKIM or DMARC record or MX is seen within minutes, and
// long enough for a burst. "Not found" is kept for 1 minute (RFC 2308
// negative caching, with the SOA minimum unknown): senders without SPF or
// DMARC are common and would otherwise cost queries on every message,
// while a record just published shows up soon. Temporary failures are
// never kept, so a failed query is asked again by the next message.
package mailauth

import (
	"context"
	"net"
)

// Resolver is the DNS the checks use; *net.Resolver satisfies it, and tests
// answer from a table. A resolver that also has
// LookupAddr(ctx, addr) ([]string, error), as *net.Resolver does, lets SPF
// evaluate the "ptr" mechanism; without it "ptr" matches nothing.
//
// A name that does not exist must be answered with a *net.DNSError whose
// IsNotFound is true, and a transient failure with one whose IsTemporary or
// IsTimeout is true: SPF, DKIM and DMARC tell "none" from "temperror" that
// way.
type Resolver interface {
	LookupTXT(ctx context.Context, name string) ([]string, error)
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
	LookupMX(ctx context.Context, name string) ([]*net.MX, error)
}

// addrResolver is the optional capability of a Resolver that does reverse
// lookups.
type addrResolver interface {
	LookupAddr(ctx context.Context, addr string) ([]string, error)
}

// ctxResolver binds a Resolver to one check's context. It answers a done
// context as a temporary DNS error, never a bare context error: the
// libraries recognise only *net.DNSError (by type assertion, not errors.As),
// and an unanswered query is a temperror, not a missing record.
type ctxResolver struct {
	r Resolver
}

func (c ctxResolver) done(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return &net.DNSError{Err: err.Error(), Name: name, IsTimeout: true, IsTemporary: true}
	}
	return nil
}

func (c ctxResolver) LookupTXT(ctx context.Context, name string) ([]string, error) {
	if err := c.done(ctx, name); err != nil {
		return nil, err
	}
	txt, err := c.r.LookupTXT(ctx, name)
	return txt, c.fix(name, err)
}

func (c ctxResolver) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	if err := c.done(ctx, host); err != nil {
		return nil, err
	}
	ips, err := c.r.LookupIPAddr(ctx, host)
	return ips, c.fix(host, err)
}

func (c ctxResolver) LookupMX(ctx context.Context, name string) ([]*net.MX, error) {
	if err := c.done(ctx, name); err != nil {
		return nil, err
	}
	mx, err := c.r.LookupMX(ctx, name)
	return mx, c.fix(name, err)
}

func (c ctxResolver) LookupAddr(ctx context.Context, addr string) ([]string, error) {
	if err := c.done(ctx, addr); err != nil {
		return nil, err
	}
	ar, ok := c.r.(addrResolver)
	if !ok {
		return nil, &net.DNSError{Err: "no reverse lookups", Name: addr, IsNotFound: true}
	}
	names, err := ar.LookupAddr(ctx, addr)
	return names, c.fix(addr, err)
}

// fix turns an error that is not a *net.DNSError into a temporary one:
// whatever failed, the record was not shown to be absent.
func (c ctxResolver) fix(name string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(*net.DNSError); ok {
		return err
	}
	return &net.DNSError{Err: err.Error(), Name: name, IsTemporary: true}
}
