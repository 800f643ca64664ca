// Package imapd is mailhost's IMAP server (IMAP4rev1 and IMAP4rev2) over
// go-imap v2's imapserver: users log in with their full address and
// mailbox password and reach the folders and messages of mailstore.
//
// Each connection keeps its own view of the selected folder (the message
// list the client has been told about, so sequence numbers stay stable) and
// brings it up to date when the account's Watch signals a change, from the
// folder's change log (mailstore.Mail.Changes: what changed since the
// view's HighestModSeq, never the whole folder; only a session further
// behind than the log reaches re-reads it): new messages become EXISTS,
// removed ones EXPUNGE, changed flags FETCH FLAGS (RFC 9051 section 7.5). Because every change, whoever makes
// it (SMTP delivery, another session, retention), goes through the store
// and its Watch, no state is shared between connections (imapserver's
// MailboxTracker, made for backends that learn of changes themselves, is
// not needed). An idling client hears of new mail as soon as the store has
// committed it; Config.PollInterval is only a fallback.
//
// Logins go through credential.Logins, so throttling, suspension and
// deleted mailboxes are decided in one place for IMAP and submission. A
// session already logged in when its domain is suspended or its mailbox
// deleted is refused its next SELECT, EXAMINE and APPEND (NO
// [UNAVAILABLE]), and ended with BYE after any other command or during
// IDLE once it finds out, which it looks up every AccountRecheck.
//
// QUOTA (RFC 9208) and ID (RFC 2971) are commands of the session
// (commands.go), through the SessionCommands hook of mailhost's copy of
// go-imap (third_party/go-imap/PATCHES.md); so are STARTTLS and
// COMPRESS=DEFLATE (starttls.go, compress.go), which have imapserver
// replace the transport under its own reader and writer once their OK is
// written (Conn.Upgrade). imapserver runs without TLSConfig and with
// InsecureAuth: the session refuses a login in the clear, and lists
// STARTTLS, LOGINDISABLED and AUTH= for the connection's TLS, and ID,
// QUOTA and COMPRESS=DEFLATE, itself (SessionCaps). imapserver checks each
// command against its limits before it buffers any of it, and answers
// what it cannot parse BAD rather than NO [SERVERBUG]
// (Options.CommandLimits), so that a NO [SERVERBUG] is a bug of this
// server, counted and logged with its command (errors.go). List tells
// LSUB from LIST (SUBSCRIBED), which imapserver hands it alike, by
// Conn.CommandName (list.go). Nothing sits between the client's
// connection and imapserver.
//
// Where servers and clients have read mail differently, imapd answers
// as RFC 3501 and Dovecot do: IMAP4rev1 sessions get \Recent, with a
// folder first seen by the process counting mail received since it
// started (recent.go); MIME parameters are unfolded as RFC 5322 section
// 2.2.3 says, so a folded boundary still finds its parts (mimetree.go);
// an address without a display name is named by its comment (address.go).
//
// CONDSTORE and QRESYNC (RFC 7162) are served on the change log and the
// messages' ModSeqs (condstore.go), through hooks of mailhost's copy of
// go-imap (third_party/go-imap/PATCHES.md); so are MULTIAPPEND
// (multiappend.go), BINARY (binary.go), WITHIN, OBJECTID (objectid.go)
// and PREVIEW (preview.go). EXAMINE is enforced here
// (STORE and MOVE are refused, FETCH sets no \Seen, EXPUNGE and CLOSE
// remove nothing), as imapserver leaves it to the backend.
package imapd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"

	"github.com/mailhost/mailhost/credential"
	"github.com/mailhost/mailhost/policy"
	"github.com/mailhost/mailhost/tlsaccept"
)

// Config configures a Server. Store and Logins are required.
type Config struct {
	Store  Store
	Logins *credential.Logins
	// TLS enables STARTTLS, and is what ServeTLS uses for implicit TLS.
	TLS *tls.Config
	// AllowInsecureAuth allows LOGIN and AUTHENTICATE without TLS; without
	// it a plain connection offers LOGINDISABLED until STARTTLS.
	AllowInsecureAuth bool
	// Logger receives the server's log; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// MaxConns bounds the connections served at once; more are greeted
	// with BYE. 0 means 1000.
	MaxConns int
	// MaxConnsPerIP bounds the connections at once from one client
	// address (an IPv6 /64 counts as one), on all of the Server's
	// listeners together; more are greeted with BYE (closed without a
	// reply on the implicit-TLS port). It is counted from accept, before
	// the TLS handshake and the greeting, so that one address cannot
	// take all of MaxConns. 0 means policy.DefaultConnsPerAddress.
	MaxConnsPerIP int
	// MaxConnsPerUserIP bounds the logged-in connections at once of one
	// mailbox from one client address; a login beyond it is answered NO
	// [UNAVAILABLE]. 0 means policy.DefaultConnsPerUserAddress; -1 no
	// limit.
	MaxConnsPerUserIP int
	// OnJunkMove, when set, is called after a MOVE (or UID MOVE) between
	// two folders of which one has the special use \Junk (RFC 6154): the
	// messages are now at uids of folderID in the account mailboxID, spam
	// true when moved into Junk, false when moved out of it. The wiring
	// has the spam filter learn them. It runs on the session's goroutine
	// before the reply, so it must not block.
	OnJunkMove func(mailboxID, folderID int64, uids []uint32, spam bool)
	// MaxConnRatePerIP bounds the connections one client address opens a
	// minute, after a burst of MaxConnsPerIP; more are refused as over
	// MaxConnsPerIP. 0 means policy.DefaultConnRatePerMinute; -1 no limit.
	MaxConnRatePerIP int
	// HandshakeTimeout bounds the TLS handshake of an implicit-TLS
	// connection (ServeTLS) and the one after STARTTLS. 0 means 30
	// seconds.
	HandshakeTimeout time.Duration
	// MaxMessageBytes bounds an APPEND (advertised as APPENDLIMIT). 0
	// means 64 MiB.
	MaxMessageBytes int64
	// Reserve, when set, takes room for an APPEND's message, a step at a
	// time as it arrives, in the memory budget the SMTP servers share
	// (smtpd.MemoryBudget.Reserve), so that many large APPENDs at once
	// wait rather than run the machine out of memory; it answers an
	// error when there is no room in time, and the APPEND is answered NO
	// [UNAVAILABLE]. nil: no bound.
	Reserve func(ctx context.Context, bytes int64) (release func(), err error)
	// PollInterval is how often an idling session looks at its folder's
	// change log even without a Watch signal (a lost notification from
	// another node), one row when nothing changed, and, every
	// AccountRecheck, at its account. 0 means 5 seconds.
	PollInterval time.Duration
	// AccountRecheck is how often, at most, a logged-in session checks
	// that its account may still be used (domain not suspended, mailbox
	// not deleted); one that may not is ended with BYE. 0 means 5 s:
	// a suspension made on another node reaches a session within
	// seconds, for one account lookup per session every 5 s at most.
	AccountRecheck time.Duration
	// Metrics, when set, is told of sessions and logins. nil: none.
	Metrics Metrics
}

// Server serves IMAP on any number of listeners.
type Server struct {
	cfg  Config
	log  *slog.Logger
	now  func() time.Time
	imap *imapserver.Server
	// limits counts connections per IP address across all listeners.
	limits *connLimiter
	// metrics is Config.Metrics, or noMetrics.
	metrics Metrics
	// recent is the \Recent bookkeeping of every folder (recent.go).
	recent *recentFloors
	// sortKeys is the decoded SORT and THREAD keys (sortkeys.go).
	sortKeys *sortKeyCache

	// ctx is the parent of every connection's context; Shutdown cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	// conns counts the sessions alive, for Shutdown to wait on.
	conns sync.WaitGroup
	// serverBugs counts the NO [SERVERBUG] answers (ServerBugs).
	serverBugs atomic.Int64

	// mu guards sessions, listeners and closed.
	mu        sync.Mutex
	sessions  map[*session]struct{}
	listeners map[net.Listener]struct{}
	closed    bool
}

// delim is the hierarchy delimiter of folder names.
const delim = '/'

// New returns a Server for cfg, with cfg's defaults applied.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 1000
	}
	if cfg.MaxMessageBytes <= 0 || cfg.MaxMessageBytes > 1<<32-1 {
		cfg.MaxMessageBytes = 64 << 20
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 5 * time.Second
	}
	if cfg.AccountRecheck <= 0 {
		cfg.AccountRecheck = 5 * time.Second
	}
	if cfg.MaxConnsPerIP <= 0 {
		cfg.MaxConnsPerIP = policy.DefaultConnsPerAddress
	}
	if cfg.MaxConnsPerUserIP == 0 {
		cfg.MaxConnsPerUserIP = policy.DefaultConnsPerUserAddress
	}
	if cfg.MaxConnRatePerIP == 0 {
		cfg.MaxConnRatePerIP = policy.DefaultConnRatePerMinute
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = 30 * time.Second
	}
	s := &Server{
		cfg:       cfg,
		log:       cfg.Logger.With("service", "imap"),
		now:       cfg.Now,
		sessions:  make(map[*session]struct{}),
		listeners: make(map[net.Listener]struct{}),
		metrics:   cfg.Metrics,
	}
	if s.metrics == nil {
		s.metrics = noMetrics{}
	}
	s.limits = newConnLimiter(policy.ConnLimits{
		PerAddress: cfg.MaxConnsPerIP, PerUserAddress: max(cfg.MaxConnsPerUserIP, 0), RatePerMinute: max(cfg.MaxConnRatePerIP, 0),
	}, s.log)
	s.limits.metrics = s.metrics
	s.recent = newRecentFloors(s.now())
	s.sortKeys = newSortKeyCache(defaultSortKeyMessages)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.imap = imapserver.New(&imapserver.Options{
		NewSession: s.newSession,
		Caps: imap.CapSet{
			imap.CapIMAP4rev1: {},
			imap.CapIMAP4rev2: {},
			// IMAP4rev1 extensions that IMAP4rev2 includes.
			imap.CapNamespace:      {},
			imap.CapUIDPlus:        {},
			imap.CapESearch:        {},
			imap.CapSearchRes:      {},
			imap.CapListExtended:   {},
			imap.CapListStatus:     {},
			imap.CapMove:           {},
			imap.CapStatusSize:     {},
			imap.CapChildren:       {},
			imap.CapSpecialUse:     {},
			imap.CapLiteralPlus:    {},
			imap.CapUnauthenticate: {},
			imap.CapCondStore:      {},
			imap.CapQResync:        {},
			imap.CapMultiAppend:    {},
			imap.CapBinary:         {},
			imap.CapWithin:         {},
			imap.CapObjectID:       {},
			imap.CapPreview:        {},
			// sortcmd.go: RFC 5256, RFC 5957, RFC 5267.
			imap.CapSort:        {},
			imap.CapSortDisplay: {},
			imap.CapESort:       {},
			"THREAD=" + imap.Cap(imap.ThreadOrderedSubject): {},
			"THREAD=" + imap.Cap(imap.ThreadReferences):     {},
			"THREAD=" + imap.Cap(threadAlgRefs):             {},
		},
		Logger: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		// The session does STARTTLS (starttls.go) and says which
		// logins TLS must protect; Login refuses them.
		TLSConfig:    nil,
		InsecureAuth: true,
		// Commands over imapserver's limits, and arguments it cannot
		// parse, are answered as the client's errors (BAD), not NO
		// [SERVERBUG].
		CommandLimits: &imapserver.CommandLimits{
			// The client may hold the line's end back until the
			// literal is acknowledged (quickack_linux.go).
			LiteralRead: quickAck,
		},
	})
	return s
}

// Serve accepts connections on ln, plain with STARTTLS when Config.TLS is
// set, until Shutdown. It returns nil after Shutdown. ln must be a plain
// listener (use ServeTLS for implicit TLS): a session recognises TLS
// only on a *tls.Conn, which the per-IP limit would hide.
func (s *Server) Serve(ln net.Listener) error {
	return s.serve(s.limits.listener(ln, false))
}

// ServeTLS accepts implicit-TLS connections (IMAPS, RFC 8314) on ln with
// Config.TLS until Shutdown. Each connection is counted against
// MaxConnsPerIP as soon as it is accepted and must complete its handshake
// within HandshakeTimeout before imapserver greets it.
func (s *Server) ServeTLS(ln net.Listener) error {
	if s.cfg.TLS == nil {
		return errors.New("imapd: ServeTLS needs Config.TLS")
	}
	return s.serve(tlsaccept.NewListener(s.limits.listener(ln, true), s.cfg.TLS, s.cfg.HandshakeTimeout, s.log))
}

func (s *Server) serve(ln net.Listener) error {
	if !s.track(ln) {
		ln.Close()
		return fmt.Errorf("imapd: %w", net.ErrClosed)
	}
	defer s.untrack(ln)
	return s.imap.Serve(ln)
}

func (s *Server) track(ln net.Listener) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.listeners[ln] = struct{}{}
	return true
}

func (s *Server) untrack(ln net.Listener) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.listeners, ln)
}

// Shutdown stops accepting connections, tells every client BYE and closes
// its connection, and waits until the sessions have ended or ctx is done.
// IMAP connections live for hours, so it does not wait for clients to log
// out: they reconnect to the next server.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for ln := range s.listeners {
		ln.Close()
	}
	sessions := make([]*session, 0, len(s.sessions))
	for sess := range s.sessions {
		sessions = append(sessions, sess)
	}
	s.mu.Unlock()

	s.cancel()
	for _, sess := range sessions {
		// Bye waits for a response being written; do not let one slow
		// client hold up the others.
		go sess.conn.Bye("Server shutting down")
	}
	done := make(chan struct{})
	go func() {
		s.conns.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.imap.Close() // closes whatever is left; its error is only "already closed"
	return err
}

// ServerBugs is how many commands were answered NO [SERVERBUG] since New:
// each a bug of this server (or of imapserver), logged as "server bug"
// with its command.
func (s *Server) ServerBugs() int64 { return s.serverBugs.Load() }

// newSession is imapserver's NewSession: it admits the connection or
// greets it with BYE.
func (s *Server) newSession(c *imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		s.metrics.Session(true)
		return nil, nil, &imap.Error{Type: imap.StatusResponseTypeBye, Text: "Server shutting down"}
	}
	if len(s.sessions) >= s.cfg.MaxConns {
		s.metrics.Session(true)
		s.log.Warn("connection refused", "reason", "too many connections", "remote", c.NetConn().RemoteAddr().String())
		return nil, nil, &imap.Error{Type: imap.StatusResponseTypeBye, Code: imap.ResponseCodeUnavailable, Text: "Too many connections, try again later"}
	}
	sess := newSession(s, c)
	s.sessions[sess] = struct{}{}
	s.conns.Add(1)
	s.metrics.Session(false)
	return sess, nil, nil
}

// ended is called once by a session's Close.
func (s *Server) ended(sess *session) {
	s.mu.Lock()
	delete(s.sessions, sess)
	s.mu.Unlock()
	s.metrics.SessionClosed()
	s.conns.Done()
}
