// Package publicip is the one rule of which IP addresses the server
// connects to on its users' behalf: the URL of a partner's webhook, the
// MX hosts of a domain a mailbox sends to. Only public unicast addresses
// pass, so that a partner or a user cannot make the server reach the
// operator's own network (SSRF): a loopback service, an internal relay
// that trusts the server, a cloud metadata endpoint.
//
// The rule is applied to the address about to be connected to, after
// name resolution (Control), so that a name that resolves to a public
// address when checked and to a private one when dialled (DNS rebinding)
// cannot slip past.
package publicip

import (
	"errors"
	"fmt"
	"net/netip"
	"syscall"
)

// Is reports whether ip is a public unicast address: not loopback,
// private (RFC 1918, RFC 4193 unique local fc00::/7), link-local,
// unspecified, multicast, shared (RFC 6598, carrier-grade NAT
// 100.64.0.0/10), "this network" (0.0.0.0/8), IETF protocol assignments
// (192.0.0.0/24), benchmarking (198.18.0.0/15), reserved (240.0.0.0/4,
// with the broadcast address), NAT64 (64:ff9b::/96, which can embed any
// of those), nor an IPv4-mapped form of those.
func Is(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsUnspecified() || ip.IsMulticast() || ip.IsInterfaceLocalMulticast() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
}

// ErrNotPublic is the error of Control for an address that Is refuses.
var ErrNotPublic = errors.New("address is loopback, private, link-local or otherwise not public")

// Control is a net.Dialer Control function: it refuses to connect to an
// address that is not public. The dialer calls it with the address it is
// about to connect to, once the name is resolved.
func Control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", address, err)
	}
	if !Is(ap.Addr()) {
		return fmt.Errorf("connect to %s: %w", address, ErrNotPublic)
	}
	return nil
}
