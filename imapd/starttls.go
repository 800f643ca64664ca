package imapd

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/emersion/go-imap/v2"
)

// imapserver runs without TLSConfig and with InsecureAuth: the session
// serves STARTTLS itself (through SessionCommands and Conn.Upgrade, hooks
// of mailhost's copy of go-imap), so that the handshake has
// Config.HandshakeTimeout and the bytes a client sent before the OK are
// dropped; it decides which logins need TLS (requireTLS) and lists
// STARTTLS, LOGINDISABLED and AUTH= to match (Caps).

// startTLS serves STARTTLS (RFC 9051 section 6.2.1).
func (s *session) startTLS(p *argParser) error {
	if !p.end() {
		return &imap.Error{Type: imap.StatusResponseTypeBad, Code: imap.ResponseCodeClientBug, Text: "Syntax error"}
	}
	if s.secure || s.user != nil {
		return &imap.Error{Type: imap.StatusResponseTypeBad, Text: "STARTTLS not available"}
	}
	s.conn.Upgrade(s.handshake)
	return &imap.Error{Type: imap.StatusResponseTypeOK, Text: "Begin TLS negotiation now"}
}

// handshake is STARTTLS's transport change, after the OK. Whatever the
// client sent after STARTTLS and before this answer (buffered) is clear
// text that a man in the middle may have added; it must not run as
// commands under TLS (CVE-2011-0411 in SMTP servers, RFC 3207 section
// 4.2's rule for the same case), so it is dropped.
func (s *session) handshake(conn net.Conn, buffered []byte) (net.Conn, error) {
	tc := tls.Server(conn, s.srv.cfg.TLS)
	ctx, cancel := context.WithTimeout(s.ctx, s.srv.cfg.HandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, fmt.Errorf("starttls: %w", err)
	}
	s.secure = true
	return tc, nil
}

// errPrivacyRequired refuses a login in the clear, as imapserver would.
var errPrivacyRequired = no(imap.ResponseCodePrivacyRequired, "TLS is required to authenticate")

// requireTLS refuses LOGIN and AUTHENTICATE without TLS unless
// Config.AllowInsecureAuth (RFC 9051 section 11.1).
func (s *session) requireTLS() error {
	if s.srv.cfg.AllowInsecureAuth || s.secure {
		return nil
	}
	return errPrivacyRequired
}

// Caps changes the capabilities imapserver lists (imapserver.SessionCaps,
// a hook of mailhost's copy of go-imap). imapserver, with InsecureAuth
// and without TLSConfig, lists AUTH=PLAIN exactly before login and never
// STARTTLS or LOGINDISABLED: Caps puts those right for the connection's
// TLS (RFC 9051 sections 6.2.1 and 7.2.2), and adds ID and, once logged
// in, QUOTA and COMPRESS=DEFLATE, commands of the session that imapserver
// does not know.
func (s *session) Caps(caps []imap.Cap) []imap.Cap {
	canAuth := s.secure || s.srv.cfg.AllowInsecureAuth
	// LITERAL+ includes LITERAL- (RFC 7888 section 4): once imapserver
	// lists both, after login, only LITERAL+ is said.
	literalPlus := slices.Contains(caps, imap.CapLiteralPlus)
	loggedIn := true
	out := make([]imap.Cap, 0, len(caps)+6)
	for _, c := range caps {
		upper := imap.Cap(strings.ToUpper(string(c)))
		if strings.HasPrefix(string(upper), "AUTH=") {
			loggedIn = false
			if !canAuth {
				continue
			}
		}
		if upper == imap.CapStartTLS || upper == imap.CapLoginDisabled || upper == imap.CapLiteralMinus && literalPlus {
			continue
		}
		out = append(out, c)
	}
	if !loggedIn {
		if !s.secure && s.srv.cfg.TLS != nil {
			out = append(out, imap.CapStartTLS)
		}
		if !canAuth {
			out = append(out, imap.CapLoginDisabled)
		}
	}
	out = append(out, capID)
	if loggedIn {
		out = append(out, capQuota, capQuotaStorage, capCompress)
	}
	return out
}
