package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Postmaster is the domainless recipient RFC 5321 section 4.5.1 has
// every SMTP server accept ("RCPT TO:<Postmaster>", in any case), in the
// lower case the protocols give it in.
const Postmaster = "postmaster"

// roleLocalParts are the local parts every domain that takes mail must
// take: postmaster (RFC 5321 section 4.5.1, a MUST) and abuse (RFC 2142
// section 2).
var roleLocalParts = []string{"postmaster", "abuse"}

// OperatorMailbox is the operator's own mailbox, where role mail goes by
// default: postmaster@ the server's host name (the hostname setting),
// normalised. A host name that is not a domain name (a short system name
// such as "vm", or "localhost") still gets one, so that postmaster is
// accepted on any machine (RFC 5321 section 4.5.1 is a MUST): at
// <name>.localhost, a name RFC 6761 reserves for this machine, which no
// one else can be sent mail at ("vm" gives postmaster@vm.localhost,
// "localhost" postmaster@mailhost.localhost). Only a host name with
// nothing usable in it is ErrBadDomain.
func OperatorMailbox(hostname string) (string, error) {
	if d, err := NormalizeDomain(hostname); err == nil {
		return Postmaster + "@" + d, nil
	}
	label, _, _ := strings.Cut(strings.ToLower(strings.TrimSuffix(hostname, ".")), ".")
	label = strings.Trim(strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return -1
	}, label), "-")
	if len(label) > 63 {
		label = strings.Trim(label[:63], "-")
	}
	if label == "localhost" {
		label = "mailhost"
	}
	d, err := NormalizeDomain(label + ".localhost")
	if label == "" || err != nil {
		return "", fmt.Errorf("operator mailbox at host name %q: %w", hostname, ErrBadDomain)
	}
	return Postmaster + "@" + d, nil
}

// RoleAddress reports whether addr is a role address: the domainless
// "postmaster", or postmaster@ or abuse@ any domain. addr must be
// normalised (NormalizeAddress), or be Postmaster.
func RoleAddress(addr string) bool {
	if addr == Postmaster {
		return true
	}
	at := strings.LastIndexByte(addr, '@')
	return at >= 0 && slices.Contains(roleLocalParts, addr[:at])
}

// RoleFallback decides where mail for addr goes that nothing of its own
// takes: it answers operator and true when addr is the domainless
// "postmaster", or postmaster@ or abuse@ a hosted domain that has no
// mailbox, alias or catch-all for it (resolved, Resolve's answer for
// addr, matches ErrUnknownUser). The domain's own mailbox, alias and
// catch-all come first, so a partner that wants its abuse reports keeps
// them; the operator gets the rest, since RFC 5321 and RFC 2142 want
// these addresses to reach someone. Anything else, an empty operator
// (none), and the operator's own address (which would loop), answer
// false: resolved stands.
//
// addr must be normalised (NormalizeAddress), or be Postmaster.
func RoleFallback(addr string, resolved error, operator string) (string, bool) {
	if operator == "" || addr == operator {
		return "", false
	}
	if addr == Postmaster || RoleAddress(addr) && errors.Is(resolved, ErrUnknownUser) {
		return operator, true
	}
	return "", false
}
