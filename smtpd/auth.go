package smtpd

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/mailhost/mailhost/credential"
	"github.com/mailhost/mailhost/policy"
)

// lastLoginResolution is how stale a mailbox's recorded last login may
// be: a client that sends often does not cost a synced write each time.
const lastLoginResolution = time.Minute

// authAllowed reports whether AUTH may be used on this connection:
// over TLS, or when the operator allows it without (the partner contract: "Plain
// authentication without TLS is refused unless the operator allows it").
func (s *submission) authAllowed() bool { return s.tls || s.srv.cfg.AllowInsecureAuth }

// AuthMechanisms lists the mechanisms offered in EHLO: none before TLS,
// so that no client sends its password in the clear.
func (s *submission) AuthMechanisms() []string {
	if !s.authAllowed() {
		return nil
	}
	return []string{sasl.Plain, sasl.Login}
}

// Auth starts an AUTH exchange (RFC 4954). PLAIN (RFC 4616) takes no
// authorization identity other than the user's own: there are no proxy
// logins. LOGIN is the obsolete mechanism some clients still insist on.
func (s *submission) Auth(mech string) (sasl.Server, error) {
	if !s.authAllowed() {
		s.log.Info("auth refused", "mechanism", mech, "err", errEncryptionRequired)
		return nil, reply(errEncryptionRequired)
	}
	switch mech {
	case sasl.Plain:
		return sasl.NewPlainServer(func(identity, username, password string) error {
			if identity != "" && !sameUser(identity, username) {
				err := fmt.Errorf("authorization identity %q for %q: %w", clean(identity), clean(username), credential.ErrInvalidCredentials)
				s.log.Info("auth failed", "mechanism", mech, "user", clean(username), "code", code(reply(err)), "err", err)
				return reply(err)
			}
			return s.login(mech, username, password)
		}), nil
	case sasl.Login:
		return &loginServer{auth: func(username, password string) error {
			return s.login(mech, username, password)
		}}, nil
	}
	return nil, smtp.ErrAuthUnknownMechanism // 504 5.7.4
}

// sameUser compares two login names as addresses.
func sameUser(a, b string) bool {
	na, errA := policy.NormalizeAddress(strings.TrimSpace(a))
	nb, errB := policy.NormalizeAddress(strings.TrimSpace(b))
	return errA == nil && errB == nil && na == nb
}

// login checks a user's address and password with credential.Logins and
// makes the session the user's. The password is never logged.
func (s *submission) login(mech, username, password string) error {
	if s.srv.shuttingDown() {
		return reply(errShuttingDown)
	}
	if s.srv.cfg.Logins == nil {
		s.log.Error("auth failed", "mechanism", mech, "user", clean(username), "err", "no Logins configured")
		return reply(errAuthUnavailable)
	}
	mb, err := s.srv.cfg.Logins.Authenticate(s.ctx, username, password, s.ip)
	if err != nil {
		level := slog.LevelInfo
		if !errors.Is(err, credential.ErrInvalidCredentials) && !errors.Is(err, credential.ErrThrottled) {
			err = fmt.Errorf("%w: %w", errAuthUnavailable, err)
			level = slog.LevelError
		}
		s.log.Log(s.ctx, level, "auth failed", "mechanism", mech, "user", clean(username), "code", code(reply(err)), "err", err)
		s.srv.metrics.Login(loginOutcome(err))
		return reply(err)
	}
	// Counted once the user is known (as IMAP's); given back by Logout.
	if err := s.srv.conns.count.AcquireUser(mb.ID, policy.AddrKey(s.ip)); err != nil {
		s.log.Info("auth refused", "mechanism", mech, "user", mb.Email, "err", err)
		s.srv.metrics.Login(loginOutcome(err))
		return reply(err)
	}
	s.counted = &mb.ID
	if now := s.srv.now(); now.Sub(mb.LastLogin) >= lastLoginResolution {
		if err := s.srv.cfg.Store.RecordLogin(s.ctx, mb.ID, now); err != nil {
			s.log.Warn("record last login", "user", mb.Email, "err", err)
		}
	}
	s.user = &mb
	s.log = s.log.With("user", mb.Email)
	s.log.Info("auth", "mechanism", mech, "tls", s.tls)
	s.srv.metrics.Login(loginOutcome(nil))
	return nil
}

// loginServer is the server side of the LOGIN mechanism
// (draft-murchison-sasl-login), which go-sasl has only as a client: the
// challenges "Username:" and "Password:", each skipped when the client
// sent the value already (an initial response carries the user name).
type loginServer struct {
	auth     func(username, password string) error
	username string
	step     int // 0: nothing received, 1: waiting for the user name, 2: for the password
}

func (l *loginServer) Next(response []byte) (challenge []byte, done bool, err error) {
	switch l.step {
	case 0:
		if response == nil {
			l.step = 1
			return []byte("Username:"), false, nil
		}
		fallthrough
	case 1:
		l.username = string(response)
		l.step = 2
		return []byte("Password:"), false, nil
	case 2:
		l.step = 3
		return nil, true, l.auth(l.username, string(response))
	}
	return nil, true, sasl.ErrUnexpectedClientResponse
}
