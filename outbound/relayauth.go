package outbound

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// login logs in to the relay on a new session with Config.RelayUsername
// and RelayPassword (RFC 4954): AUTH PLAIN, or LOGIN when the relay
// offers only that. It answers the reply that defers the attempt when it
// cannot, and sane when the session is still in a known state (the
// failure was a reply, or a refusal to send the password), so that it may
// say QUIT.
//
// Every failure defers, even 535 (bad credentials, RFC 4954 section 6):
// the credentials are this server's configuration, the same for every
// message, and a typo in them must not bounce every customer's mail; the
// queue retries until the operator fixes it, and the attempt's log line
// (a warning, as the reply is marked local) says what to fix. The
// password appears in no reply and no log.
func (s *Sender) login(ctx context.Context, cs *clientSession, addr, host string) (r *reply, sane bool) {
	fail := func(enh smtp.EnhancedCode, format string, args ...any) *reply {
		return &reply{Text: fmt.Sprintf(format, args...), Enhanced: enh, Host: host, local: true}
	}
	if !cs.isTLS && !clearTextLoginAllowed(addr) {
		// RFC 4954 section 4: PLAIN and LOGIN reveal the password to
		// whoever reads the connection. An attacker who strips the
		// STARTTLS offer gets nothing but a deferral.
		return fail(smtp.EnhancedCode{4, 7, 10}, "relay %s offers no STARTTLS or its TLS failed: not sending the password in clear text", addr), true
	}
	c := cs.c
	user, pass := s.cfg.RelayUsername, s.cfg.RelayPassword
	var a sasl.Client
	mech := sasl.Plain
	switch {
	case c.SupportsAuth(sasl.Plain):
		a = sasl.NewPlainClient("", user, pass)
	case c.SupportsAuth(sasl.Login):
		a, mech = &loginClient{username: user, password: pass}, sasl.Login
	default:
		if ok, mechs := c.Extension("AUTH"); ok {
			return fail(smtp.EnhancedCode{4, 7, 0}, "relay offers AUTH %s, neither PLAIN nor LOGIN: cannot log in as %q", mechs, user), true
		}
		return fail(smtp.EnhancedCode{4, 7, 0}, "relay offers no AUTH: cannot log in as %q", user), true
	}
	stop := context.AfterFunc(ctx, func() { cs.nc.Close() })
	defer stop()
	err := c.Auth(a)
	if err == nil {
		return nil, false
	}
	var se *smtp.SMTPError
	if !errors.As(err, &se) {
		r := classify(ctxErr(ctx, err), host)
		return &r, false
	}
	got := classify(err, host)
	enh := smtp.EnhancedCode{4, 7, 8}
	if got.hasEnhanced() {
		enh = smtp.EnhancedCode{4, got.Enhanced[1], got.Enhanced[2]}
	}
	// The same login would be refused at the relay's other addresses,
	// and relays often lock out an account, or ban an address, after a
	// few failures: this attempt ends here.
	r = fail(enh, "relay refused the login as %q (AUTH %s): %s; check relay_username and relay_password", user, mech, got.String())
	r.everywhere = true
	return r, !closing(err)
}

// clearTextLoginAllowed says whether a password may go in clear text to a
// relay at addr ("ip:port"): only over loopback, which no one else reads
// (a relay on the same machine, or a tunnel's end). A host name does not
// count: what it resolves to can change.
func clearTextLoginAllowed(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loginClient is the client side of the obsolete LOGIN mechanism
// (draft-murchison-sasl-login), for relays that offer nothing else. It
// answers the server's two prompts in order, user name then password,
// whatever their wording, and sends no initial response: servers word the
// prompts differently and not all take an initial response, while
// go-sasl's client sends the user name as one and accepts only
// "Password:".
type loginClient struct {
	username, password string
	// step counts the prompts answered.
	step int
}

func (a *loginClient) Start() (string, []byte, error) { return sasl.Login, nil, nil }

func (a *loginClient) Next([]byte) ([]byte, error) {
	a.step++
	switch a.step {
	case 1:
		return []byte(a.username), nil
	case 2:
		return []byte(a.password), nil
	}
	return nil, errors.New("LOGIN: a third prompt")
}
