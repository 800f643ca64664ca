package smtpd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
)

// DMARC policy (RFC 7489 section 6.7), MX only.
//
// The verdict comes with the Authentication-Results field, from the one
// check of the message (an Authenticator that is also a
// DMARCAuthenticator). With Config.DMARCEnforce a message whose DMARC
// result is fail is refused after DATA with 550 5.7.1 when its From
// domain publishes p=reject, and delivered to the Junk folder with an
// X-Mailhost-Quarantine field when it publishes p=quarantine; nothing is done for p=none, for
// a temporary or permanent error (a DNS failure must not refuse mail) or
// without a policy.
//
// ARC (RFC 8617) is not evaluated: go-msgauth has no ARC verifier. Mail
// of a p=reject domain forwarded by a list or a forwarder that breaks its
// DKIM signature is refused; an operator whose users depend on such
// forwarders turns dmarc_enforce off.

// DMARCPolicy is the p= (or sp=) a failing domain asks for.
type DMARCPolicy string

// DMARC policies (RFC 7489 section 6.3).
const (
	DMARCNone       DMARCPolicy = "none"
	DMARCQuarantine DMARCPolicy = "quarantine"
	DMARCReject     DMARCPolicy = "reject"
)

// DMARCVerdict is the DMARC outcome of one message.
type DMARCVerdict struct {
	// Fail: the DMARC result is fail (not pass, none, or an error).
	Fail bool
	// Domain is the From domain the result is for.
	Domain string
	// Policy is what Domain asks receivers to do with a failing message;
	// "" when it publishes no record.
	Policy DMARCPolicy
}

// DMARCAuthenticator is an Authenticator that also answers the DMARC
// verdict of the same check; the wiring's adapter of mailauth.Checker is
// one. Without it Config.DMARCEnforce has nothing to enforce.
type DMARCAuthenticator interface {
	Authenticator
	// CheckDMARC is Check with the message's DMARC verdict.
	CheckDMARC(ctx context.Context, ip net.IP, helo, mailFrom string, msg []byte) (string, DMARCVerdict)
}

// errDMARCReject refuses a message that fails DMARC for a domain
// publishing p=reject.
var errDMARCReject = errors.New("message fails DMARC and its domain publishes p=reject")

// dmarcRejected carries the domain, for the reply.
type dmarcRejected struct{ domain string }

func (e *dmarcRejected) Error() string { return "DMARC policy of " + e.domain + " is reject" }
func (e *dmarcRejected) Unwrap() error { return errDMARCReject }

// quarantineField is the field prepended to a message its domain asks to
// quarantine.
const quarantineField = "X-Mailhost-Quarantine"

// authenticate runs the Authenticator on msg, as sent by ip, which said
// helo, and returns the Authentication-Results field to prepend and,
// with Config.DMARCEnforce, the field marking a quarantined message (""
// for none), or an error that refuses the message.
func (s *session) authenticate(tx transaction, ip net.IP, helo string, msg []byte) (ar, quarantine string, err error) {
	a := s.srv.cfg.Authenticator
	if a == nil {
		return "", "", nil
	}
	da, ok := a.(DMARCAuthenticator)
	if !ok || !s.srv.cfg.DMARCEnforce {
		return headerLine(a.Check(s.ctx, ip, helo, tx.from, msg)), "", nil
	}
	h, v := da.CheckDMARC(s.ctx, ip, helo, tx.from, msg)
	ar = headerLine(h)
	if !v.Fail {
		return ar, "", nil
	}
	switch v.Policy {
	case DMARCReject:
		return ar, "", &dmarcRejected{domain: v.Domain}
	case DMARCQuarantine:
		return ar, fmt.Sprintf("%s: dmarc; policy of %s is quarantine\r\n", quarantineField, sanitizeDomain(v.Domain)), nil
	}
	return ar, "", nil
}

// sanitizeDomain keeps a header field to one line whatever the verdict's
// domain holds (it came from the message).
func sanitizeDomain(d string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x21 || r == 0x7f {
			return -1
		}
		return r
	}, d)
}
