package outbound

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/emersion/go-smtp"

	"github.com/mailhost/mailhost/internal/publicip"
	"github.com/mailhost/mailhost/mailstore"
)

// maxAddrsPerHost bounds the addresses tried of one MX host, so that a
// host with many dead addresses does not use up the attempt.
const maxAddrsPerHost = 4

// host is one server to try: a name to look up, and its port.
type host struct {
	name string
	port int
}

// deliverRemote sends an entry over SMTP: to the relay when one is set,
// else to the destination domain's MX hosts in order of preference, each
// of a host's addresses in turn, until a server gives answers about the
// recipients (RFC 5321 section 5.1). A host that cannot be reached, or
// refuses the session, passes the attempt on to the next. Over MX, the
// domain's MTA-STS policy (mtasts.go) may narrow the hosts and require
// verified TLS to them.
func (s *Sender) deliverRemote(ctx context.Context, e mailstore.Outbound, body []byte, pending []string) outcome {
	var out outcome
	hosts, r := s.route(ctx, e.Destination)
	if r != nil {
		out.settle(pending, *r)
		return out
	}
	// need is why sessions must have TLS with a verified certificate,
	// and the error that says so; nil: opportunistic TLS.
	var need error
	switch {
	case s.cfg.Relay != "":
		// MTA-STS is about a domain's MX hosts, not our smarthost.
		if s.cfg.RelayVerifyTLS {
			need = errTLSRequired
		}
	case s.cfg.MTASTS:
		var enforce bool
		hosts, enforce, r = s.applySTS(s.stsPolicy(ctx, e.Destination), e.Destination, hosts)
		if r != nil {
			out.deferAll(pending, *r)
			return out
		}
		if enforce {
			need = errSTSRequired
		}
	}
	out.deferAll(pending, reply{Text: "no host to try", Enhanced: smtp.EnhancedCode{4, 4, 0}})
	// refused are the hosts that lead only to addresses not connected to
	// (Config.AllowPrivate), each with those addresses; tried: a host
	// was connected to, or could not be looked up, so the destination
	// may yet be reached.
	var refused []string
	tried := false
	for _, h := range hosts {
		addrs, private, err := s.addrs(ctx, h.name)
		if err != nil {
			tried = true
			out = outcome{}
			out.deferAll(pending, reply{Text: fmt.Sprintf("look up %s: %v", h.name, err), Enhanced: smtp.EnhancedCode{4, 4, 3}})
			continue
		}
		if len(addrs) == 0 {
			refused = append(refused, fmt.Sprintf("%s (%s)", h.name, strings.Join(private, ", ")))
			continue
		}
		tried = true
		for _, ip := range addrs {
			o, final := s.session(ctx, net.JoinHostPort(ip, strconv.Itoa(h.port)), h.name, need, e, body, pending)
			if final || ctx.Err() != nil {
				return o
			}
			out = o
		}
	}
	if !tried && len(refused) > 0 {
		out = outcome{}
		out.settle(pending, notPublic(refused))
	}
	return out
}

// notPublic is the answer for a destination whose every MX host (or its
// implicit MX) leads only to addresses this server does not connect to.
// It is permanent, 550 5.4.4 ("unable to route", RFC 3463): the
// destination's own DNS sends its mail where this server does not go,
// which retrying for days would not change, only hide from the sender
// (as a domain whose MX leads back to the server itself bounces at
// once in Postfix). X.7.1 would tell the sender that they may not send
// to the recipient, which is not the matter. The text names the hosts
// and their addresses, so that the sender, or the domain's owner, can
// see what is wrong.
func notPublic(hosts []string) reply {
	what := "MX host " + hosts[0] + " resolves"
	if len(hosts) > 1 {
		what = "MX hosts " + strings.Join(hosts, ", ") + " resolve"
	}
	return reply{Code: 550, Enhanced: smtp.EnhancedCode{5, 4, 4},
		Text: what + " only to loopback, private or other non-public addresses; this server does not deliver there"}
}

// guarded: the addresses connected to must be public (publicip.Is).
// The relay is the operator's and is trusted whatever its address.
func (s *Sender) guarded() bool { return s.cfg.Relay == "" && !s.cfg.AllowPrivate }

// dialer makes the connections to MX hosts, the relay and MTA-STS policy
// servers. When guarded, it refuses a non-public address at the socket,
// after name resolution: whatever reaches it, a name or an address that
// addrs let through, the address checked is the one connected to, so a
// name that resolves differently the second time (DNS rebinding) cannot
// slip past.
func (s *Sender) dialer() *net.Dialer {
	d := &net.Dialer{Timeout: s.cfg.DialTimeout}
	if s.guarded() {
		d.Control = publicip.Control
	}
	return d
}

// route finds the hosts to try for a destination domain, best first, or
// the answer for all its recipients when there is none.
func (s *Sender) route(ctx context.Context, domain string) ([]host, *reply) {
	if s.cfg.Relay != "" {
		name, port, err := net.SplitHostPort(s.cfg.Relay)
		p, perr := strconv.Atoi(port)
		if err != nil || perr != nil {
			return nil, &reply{Text: fmt.Sprintf("relay %q is not host:port", s.cfg.Relay), Enhanced: smtp.EnhancedCode{4, 3, 5}, local: true}
		}
		return []host{{name, p}}, nil
	}
	mxs, err := s.resolver.LookupMX(ctx, domain)
	var dnsErr *net.DNSError
	switch {
	case err == nil:
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		mxs = nil
	default:
		return nil, &reply{Text: fmt.Sprintf("look up MX of %s: %v", domain, err), Enhanced: smtp.EnhancedCode{4, 4, 3}}
	}
	if len(mxs) == 1 && isRoot(mxs[0].Host) {
		// RFC 7505 section 3: a null MX says the domain takes no mail;
		// section 4.3 asks for an immediate permanent failure.
		return nil, &reply{Code: 556, Enhanced: smtp.EnhancedCode{5, 1, 10}, Text: domain + " accepts no mail (null MX)"}
	}
	mxs = slices.DeleteFunc(slices.Clone(mxs), func(mx *net.MX) bool { return isRoot(mx.Host) })
	if len(mxs) == 0 {
		// RFC 5321 section 5.1: with no MX records the domain itself is
		// the host (the "implicit MX"), if it has an address.
		if _, err := s.resolver.LookupIPAddr(ctx, domain); err != nil {
			if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
				// RFC 3463 X.1.2: bad destination system address.
				return nil, &reply{Code: 550, Enhanced: smtp.EnhancedCode{5, 1, 2}, Text: fmt.Sprintf("domain %s has no MX and no address", domain)}
			}
			return nil, &reply{Text: fmt.Sprintf("look up %s: %v", domain, err), Enhanced: smtp.EnhancedCode{4, 4, 3}}
		}
		return []host{{domain, s.cfg.Port}}, nil
	}
	// Equal preferences are tried in random order, to spread the load
	// (RFC 5321 section 5.1).
	rand.Shuffle(len(mxs), func(i, j int) { mxs[i], mxs[j] = mxs[j], mxs[i] })
	slices.SortStableFunc(mxs, func(a, b *net.MX) int { return cmp.Compare(a.Pref, b.Pref) })
	hosts := make([]host, 0, len(mxs))
	for _, mx := range mxs {
		hosts = append(hosts, host{strings.TrimSuffix(mx.Host, "."), s.cfg.Port})
	}
	return hosts, nil
}

func isRoot(name string) bool { return name == "." || name == "" }

// addrs looks up a host's addresses, IPv4 and IPv6; a literal IP
// address is its own. It answers at most maxAddrsPerHost of those the
// server may connect to (when guarded, the public ones; see dialer), and
// the others in refused, so that they do not use up the tries.
func (s *Sender) addrs(ctx context.Context, name string) (ok, refused []string, err error) {
	var ips []net.IPAddr
	if ip := net.ParseIP(name); ip != nil {
		ips = []net.IPAddr{{IP: ip}}
	} else if ips, err = s.resolver.LookupIPAddr(ctx, name); err != nil {
		return nil, nil, err
	}
	if len(ips) == 0 {
		return nil, nil, errors.New("no address")
	}
	guarded := s.guarded()
	for _, ip := range ips {
		a, valid := netip.AddrFromSlice(ip.IP)
		if guarded && (!valid || !publicip.Is(a)) {
			refused = append(refused, ip.String())
			continue
		}
		if len(ok) < maxAddrsPerHost {
			ok = append(ok, ip.String())
		}
	}
	return ok, refused, nil
}
