package imapd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/policy"
)

// lastLoginResolution is how stale a mailbox's recorded last login may be.
const lastLoginResolution = time.Minute

// session is one IMAP connection. imapserver calls its methods from the
// connection's goroutine one at a time; Idle runs on another goroutine
// while that one only waits for DONE, so the fields need no lock, with
// one exception: when the client hangs up during IDLE, imapserver calls
// Close without waiting for Idle to return, and idling keeps the two apart.
type session struct {
	srv  *Server
	st   Store
	conn *imapserver.Conn
	ip   netip.Addr
	log  *slog.Logger
	// ctx ends when the connection closes or the server shuts down.
	ctx    context.Context
	cancel context.CancelFunc
	// idling is held by Idle while it runs; Close takes it, after
	// cancelling ctx (which ends Idle), before it touches the fields.
	idling sync.Mutex

	// addrKey is the client address the connection limits count.
	addrKey string
	// counted is the mailbox whose per-user-and-address count this
	// session holds, nil if none.
	counted *int64

	// Set by Login.
	user    *mailstore.Mailbox
	watch   <-chan struct{}
	unwatch func()
	// changed is set when watch has signalled since the view was loaded.
	changed bool
	// checked is when the account was last found usable (stillOpen).
	checked time.Time

	sel *view // the selected folder, nil if none

	// idLogged is how many ID commands of the connection were logged.
	idLogged int

	// secure: the connection is under TLS (implicit, or after STARTTLS);
	// compressed: COMPRESS DEFLATE is active (upgrade.go).
	secure, compressed bool
}

var (
	_ imapserver.SessionIMAP4rev2      = (*session)(nil)
	_ imapserver.SessionAppendLimit    = (*session)(nil)
	_ imapserver.SessionUnauthenticate = (*session)(nil)
	_ imapserver.SessionCommands       = (*session)(nil)
	_ imapserver.SessionCaps           = (*session)(nil)
)

func newSession(s *Server, c *imapserver.Conn) *session {
	remote := c.NetConn().RemoteAddr()
	var ip netip.Addr
	if ta, ok := remote.(*net.TCPAddr); ok {
		ip = ta.AddrPort().Addr().Unmap()
	}
	ctx, cancel := context.WithCancel(s.ctx)
	_, secure := c.NetConn().(*tls.Conn)
	return &session{
		secure:  secure,
		srv:     s,
		st:      s.cfg.Store,
		conn:    c,
		ip:      ip,
		addrKey: policy.AddressKey(remote),
		log:     s.log.With("remote", remote.String()),
		ctx:     ctx,
		cancel:  cancel,
	}
}

// Close ends the session: imapserver calls it once when the connection
// closes.
func (s *session) Close() error {
	s.cancel()
	s.idling.Lock()
	defer s.idling.Unlock()
	s.logout()
	s.srv.ended(s)
	return nil
}

// Login authenticates with the full address and the mailbox password
// (LOGIN, and AUTHENTICATE PLAIN through imapserver). Throttling,
// suspension and deleted mailboxes are the business of credential.Logins.
func (s *session) Login(username, password string) error {
	if err := s.requireTLS(); err != nil {
		s.srv.metrics.Login("refused")
		return err
	}
	mb, err := s.srv.cfg.Logins.Authenticate(s.ctx, username, password, s.ip)
	if err != nil {
		s.log.Info("login failed", "user", username, "err", err)
		s.srv.metrics.Login(loginOutcome(err))
		return s.fail("login", err)
	}
	// Counted once the user is known (Dovecot's
	// mail_max_userip_connections); given back by logout.
	if err := s.srv.limits.count.AcquireUser(mb.ID, s.addrKey); err != nil {
		s.log.Info("login refused", "user", mb.Email, "err", err)
		s.srv.metrics.Login("refused")
		return no(imap.ResponseCodeUnavailable, "Too many connections of this user from your address, try again later")
	}
	s.counted = &mb.ID
	// Last login is kept to the minute: a client that reconnects often
	// does not cost a synced write each time.
	if now := s.srv.now(); now.Sub(mb.LastLogin) >= lastLoginResolution {
		if err := s.st.RecordLogin(s.ctx, mb.ID, now); err != nil {
			s.log.Warn("record last login", "user", mb.Email, "err", err)
		}
	}
	s.user = &mb
	s.checked = s.srv.now()
	s.watch, s.unwatch = s.st.Watch(mb.ID)
	s.changed = false
	s.log = s.log.With("user", mb.Email)
	s.log.Info("login")
	s.srv.metrics.Login("success")
	return nil
}

// Unauthenticate returns to the not-authenticated state (RFC 8437).
func (s *session) Unauthenticate() error {
	s.logout()
	return nil
}

func (s *session) logout() {
	s.sel = nil
	if s.unwatch != nil {
		s.unwatch()
	}
	if s.counted != nil {
		s.srv.limits.count.ReleaseUser(*s.counted, s.addrKey)
		s.counted = nil
	}
	s.user, s.watch, s.unwatch = nil, nil, nil
}

// Namespace: one personal namespace, no others (RFC 2342).
func (s *session) Namespace() (*imap.NamespaceData, error) {
	return &imap.NamespaceData{Personal: []imap.NamespaceDescriptor{{Prefix: "", Delim: delim}}}, nil
}

// AppendLimit is the largest message APPEND takes (RFC 7889).
func (s *session) AppendLimit() uint32 { return uint32(s.srv.cfg.MaxMessageBytes) }

// noteChanges records a pending Watch signal without blocking.
func (s *session) noteChanges() {
	select {
	case <-s.watch:
		s.changed = true
	default:
	}
}

// stillOpen ends the session with BYE once its account may no longer be
// used: a domain suspended or a mailbox deleted after the login. Mail
// clients keep a connection, often IDLE, for days; without this, a
// customer suspended for not paying would go on reading new mail on it.
// It looks at most once per Config.AccountRecheck, after every command
// (Poll) and on IDLE's ticks; a failing store does not end the session.
func (s *session) stillOpen() error {
	now := s.srv.now()
	// Less a tenth: IDLE's ticks come every PollInterval, as often as
	// this by default, and their jitter must not skip every other one.
	if now.Sub(s.checked) < s.srv.cfg.AccountRecheck*9/10 {
		return nil
	}
	_, err := s.account()
	switch {
	case err == nil:
		s.checked = now
		return nil
	case errors.Is(err, errSuspended) || errors.Is(err, mailstore.ErrNotFound):
		err = fmt.Errorf("%s: %w", s.user.Email, err)
		s.log.Info("session ended", "reason", err.Error())
		// Nothing of the session may be touched after Bye: closing the
		// connection lets imapserver call Close, from another goroutine
		// when this is IDLE's.
		s.conn.Bye("Account no longer available")
		return err
	default:
		s.log.Warn("check account", "err", err)
		return nil
	}
}

// account re-reads the logged-in account, for SELECT and APPEND: a session
// outlives its login, and suspending the domain or deleting the mailbox
// should stop it from opening folders and adding mail, not only refuse the
// next login. It is one address lookup. A mailbox deleted and made again
// under the same address is another account (ErrMailboxNotFound).
func (s *session) account() (mailstore.Mailbox, error) {
	mb, dom, err := s.st.MailboxByEmail(s.ctx, s.user.Email)
	if err != nil {
		return mailstore.Mailbox{}, err
	}
	if mb.ID != s.user.ID {
		return mailstore.Mailbox{}, mailstore.ErrMailboxNotFound
	}
	if dom.Suspended {
		return mailstore.Mailbox{}, errSuspended
	}
	return mb, nil
}
