// Package smtpd is mailhost's SMTP server over github.com/emersion/go-smtp,
// in two modes that share connection handling, limits and Shutdown.
//
// Which senders and recipients are taken, and the delivery itself, are
// package delivery's (its comment states how the modes differ); smtpd
// speaks SMTP around it and maps its outcomes to replies.
//
// The MX (New) takes mail from the Internet for hosted addresses only
// (never an open relay): recipients are resolved at RCPT (mailbox,
// alias, catch-all), full mailboxes are refused there
// (452 4.2.2), and DATA is answered 250 only once the message is stored
// durably (docs/mail.md). Aliases with remote
// destinations are queued for the outbound workers with an SRS-rewritten
// envelope sender (Config.SRS); bounces to SRS addresses are sent back to
// the original sender; an Authentication-Results field from
// Config.Authenticator is prepended, and incoming ones that claim this
// server's authserv-id are removed (RFC 8601 section 5).
//
// Submission (NewSubmission) is for the hosted users' mail clients (RFC
// 6409), on a STARTTLS port (Serve, 587) and an implicit TLS port
// (ServeTLS, 465, RFC 8314). It requires AUTH PLAIN or LOGIN with the full
// address and the mailbox password (Config.Logins), offered only over TLS
// unless Config.AllowInsecureAuth. A user may send only as its own
// address or as an alias that delivers to it, in MAIL FROM and in the
// From: header (policy.MaySendAs); any recipient is accepted, hosted ones
// are delivered at once and remote ones queued, in the same store
// transaction (Store.Deliver), DKIM-signed by Config.Signer, and refused
// with 451 4.7.1 once the user's domain has used its monthly transfer cap.
//
// Every reply code is decided in one function, reply (errors.go).
package smtpd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/mailhost/mailhost/credential"
	"github.com/mailhost/mailhost/delivery"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/policy"
	"github.com/mailhost/mailhost/tlsaccept"
)

// Config configures a Server. Zero values are replaced by the defaults
// stated on each field.
type Config struct {
	// Store is where mail is delivered and addresses are looked up.
	// Required.
	Store Store
	// Hostname is the name in the greeting, the EHLO reply and Received
	// headers. "" means os.Hostname.
	Hostname string
	// TLS enables STARTTLS (RFC 3207). nil: no STARTTLS.
	TLS *tls.Config
	// Logger receives one line per delivery and per refusal. nil: discard.
	Logger *slog.Logger
	// Now is the clock of Received headers and received times. nil:
	// time.Now. Connection deadlines always use the real clock.
	Now func() time.Time
	// MaxMessageBytes is the largest message accepted, advertised with
	// SIZE (RFC 1870); a larger one is refused with 552 5.3.4. 0 means
	// 50 MiB.
	MaxMessageBytes int64
	// Memory bounds the message data held in memory at once, by this
	// server and the others given the same budget; a message that finds
	// no room within 30 s is answered 452 4.3.1. nil: no bound.
	Memory *MemoryBudget
	// MaxRecipients is the most recipients of one message; more are
	// answered 452 4.5.3 (RFC 5321 section 4.5.3.1.8). 0 means 100.
	MaxRecipients int
	// HandshakeTimeout bounds the TLS handshake of an implicit-TLS
	// connection (ServeTLS), which go-smtp would otherwise give all of
	// ReadTimeout. 0 means 30 seconds.
	HandshakeTimeout time.Duration
	// ReadTimeout bounds the wait for each command and, during DATA or
	// BDAT, for each read of message data; WriteTimeout bounds each
	// reply. 0 means 5 minutes and 1 minute (RFC 5321 section 4.5.3.2).
	ReadTimeout, WriteTimeout time.Duration
	// MaxConnsPerIP is the most connections at once from one client
	// address (an IPv6 /64 counts as one); more are answered 421 4.7.0
	// and closed. 0 means policy.DefaultMXConnsPerAddress for the MX,
	// policy.DefaultConnsPerAddress for submission.
	MaxConnsPerIP int
	// MaxConnRatePerIP bounds the connections one client address opens a
	// minute, after a burst of MaxConnsPerIP; more are refused as over
	// MaxConnsPerIP. 0 means policy.DefaultConnRatePerMinute; -1 no limit.
	MaxConnRatePerIP int
	// MaxConnsPerUserIP (submission) bounds the authenticated connections
	// at once of one mailbox from one client address; an AUTH beyond it
	// is answered 454 4.7.0. 0 means policy.DefaultConnsPerUserAddress;
	// -1 no limit.
	MaxConnsPerUserIP int

	// Spam is the spam filter (rspamd) every message is checked with
	// after DATA, before the 250 (delivery.Transaction.Filter): on the
	// MX its verdict refuses (550 5.7.1), defers (451 4.7.1) or puts the
	// message in the recipients' Junk folder as their domain's setting
	// says; on submission, with the user, a "reject" is refused (550
	// 5.7.1), logged and counted (SpamStats). nil: no filter.
	Spam delivery.Scanner
	// SpamDefault is the filter setting of domains without their own
	// (delivery.Config.SpamDefault). "" means "junk".
	SpamDefault string
	// SpamFailClosed answers 451 4.3.0 when the filter cannot be asked.
	// Default false: the message is delivered unscanned, with a header
	// that says so.
	SpamFailClosed bool

	// OnQueued, when not nil, is called after a message was committed
	// with remote recipients queued (Store.Deliver's Relay), to wake the
	// outbound workers. It runs on the session's goroutine before the 250
	// is sent, so it must not block. Both modes.
	OnQueued func()

	// Submission only.

	// Logins authenticates users (AUTH PLAIN and LOGIN) with the full
	// address and the mailbox password; it throttles failures and refuses
	// suspended domains and deleted mailboxes. Required by NewSubmission:
	// without it every AUTH is answered 454 4.7.0.
	Logins *credential.Logins
	// AllowInsecureAuth offers and accepts AUTH on connections without
	// TLS. Default false: AUTH is offered only after STARTTLS or on
	// implicit TLS, and refused before with 538 5.7.11 (RFC 4954 section
	// 6). For tests only.
	AllowInsecureAuth bool
	// Signer DKIM-signs submitted messages. nil: they go unsigned.
	Signer Signer
	// MaxRecipientsPerHour is the most recipients one mailbox may submit
	// in an hour (a token bucket: a quiet mailbox may use it all at once);
	// more are answered 450 4.7.1 at RCPT. It bounds what a stolen
	// password can send. 0: no limit.
	MaxRecipientsPerHour int
	// Share, when set, is this node's part of the cluster's limits: with
	// n live nodes each allows MaxRecipientsPerHour/n.
	Share *policy.Share
	// Postmaster is where mail to RCPT TO:<postmaster> goes, and mail to
	// postmaster@ and abuse@ a hosted domain that has none
	// (delivery.Config's Postmaster). "": they are answered 550 5.1.1.
	Postmaster string
	// OnQuotaFull is delivery.Config's: told of each mailbox whose quota
	// refuses a recipient. nil: nothing.
	OnQuotaFull func(ctx context.Context, m mailstore.Mailbox)

	// MX only.

	// SRS rewrites the envelope sender of mail forwarded through an alias
	// to a remote address, and reverses the bounces that come back. nil:
	// recipients that resolve to a remote address are answered 451 4.3.0
	// (the sender keeps the message), and SRS addresses are not
	// recognised.
	SRS SRS
	// Authenticator checks SPF, DKIM and DMARC of inbound mail and
	// writes the Authentication-Results field prepended to it. nil: no
	// field is added (forged ones claiming Hostname are still removed).
	Authenticator Authenticator
	// Metrics, when set, is told of connections, recipients, messages
	// and logins. Both modes. nil: none.
	Metrics Metrics

	// RefuseInboundOverCap refuses a recipient with 451 4.7.1 at RCPT
	// when a domain its mail would be counted against (the domain of each
	// mailbox it reaches) has used its transfer cap for the month. Default
	// false: inbound mail is always received and counted (the partner contract,
	// "Transfer cap").
	RefuseInboundOverCap bool
	// DMARCEnforce applies the DMARC policy of a failing message's From
	// domain (dmarc.go): p=reject is refused after DATA with 550 5.7.1,
	// p=quarantine delivered with an X-Mailhost-Quarantine field. It needs
	// an Authenticator that is a DMARCAuthenticator. Default false.
	DMARCEnforce bool
	// DNSBL are DNS blocklist zones (RFC 5782), such as
	// "zen.spamhaus.org", in which the client's address is looked up once
	// per connection; a listed client is refused at RCPT with 554 5.7.1
	// naming the list, except for postmaster (dnsbl.go). Empty: none.
	DNSBL []string
	// AutoReply answers mail delivered to mailboxes with an auto-reply
	// (autoreply.go). nil: none.
	AutoReply AutoResponder
	// RecipientDelimiter and Sieve are delivery.Config's.
	RecipientDelimiter string
	Sieve              *delivery.Sieve
	// DNSBLResolver answers the blocklist lookups. nil:
	// net.DefaultResolver.
	DNSBLResolver IPResolver
}

// Signer DKIM-signs a message (RFC 6376) for a hosted domain. The wiring
// adapts mailauth.Signer, with the domain's keys from Store.DKIMKeys.
type Signer interface {
	// Sign returns msg with the signature field(s) prepended. domain is
	// the domain of the message's From: address (hosted, since the sender
	// must own it: the d= that aligns with From for DMARC). A domain with
	// no key should get msg back unchanged; an error refuses the message
	// with 451 4.3.0, so that a broken key never sends mail unsigned
	// without anyone noticing.
	Sign(ctx context.Context, domain mailstore.Domain, msg []byte) ([]byte, error)
}

// SRS is the Sender Rewriting Scheme; *mailauth.SRS satisfies it.
type SRS interface {
	// Forward rewrites sender (not empty) into an address at
	// forwardDomain that Reverse turns back into it.
	Forward(sender, forwardDomain string) (string, error)
	// Reverse returns the original sender of an SRS0= or SRS1= address,
	// or an error when addr is not one, is forged or has expired.
	Reverse(addr string) (string, error)
}

// Authenticator checks inbound mail. The wiring adapts
// mailauth.Checker.Check, whose Input has the same four values.
type Authenticator interface {
	// Check returns a whole Authentication-Results header field (RFC
	// 8601), "Authentication-Results: authserv-id; ...", folded or not,
	// for a message received from ip, which said helo and MAIL FROM
	// mailFrom ("" for the null sender); msg is the message as received.
	// "" adds nothing.
	Check(ctx context.Context, ip net.IP, helo, mailFrom string, msg []byte) string
}

// Defaults of Config.
const (
	DefaultMaxMessageBytes = 50 << 20
	DefaultMaxRecipients   = 100
	DefaultReadTimeout     = 5 * time.Minute
	DefaultWriteTimeout    = time.Minute
	// maxLineLength bounds command lines, held whole in memory while
	// parsed: RFC 5321 section 4.5.3.1.4 allows 512 octets, extensions
	// (SIZE, SMTPUTF8, AUTH with an initial response) add to that, and
	// go-smtp's default of 2000 leaves room for them. A longer command
	// line ends the connection (500 5.4.0).
	maxLineLength = 2000
	// maxDataLineLength bounds the lines of message data (DATA; BDAT
	// chunks have no lines). RFC 5321 section 4.5.3.1.6 says 1000 octets,
	// but unwrapped HTML lines of tens of kilobytes are ordinary mail,
	// and refusing them (500 5.5.2, permanent) bounces it. The
	// data is read a byte at a time into the message, never held as a
	// line, so the bound costs no memory: 1 MiB takes any real line and
	// still refuses a stream with no line ends at all.
	maxDataLineLength = 1 << 20
)

// Server is an SMTP server, MX or submission. Its methods may be called
// from any goroutine.
type Server struct {
	cfg        Config
	submission bool
	log        *slog.Logger
	now        func() time.Time
	hostname   string
	smtp       *smtp.Server
	conns      *connLimiter
	// sendLimit applies MaxRecipientsPerHour, by mailbox id; nil
	// without one.
	sendLimit *policy.Limiter
	// delivery decides which senders and recipients are taken, and
	// delivers.
	delivery *delivery.Agent
	// metrics is Config.Metrics, or noMetrics.
	metrics Metrics
	// spam counts the spam filter's outcomes.
	spam spamCounters

	// mu guards closing and listeners.
	mu      sync.Mutex
	closing bool
	// listeners are the listeners Serve and ServeTLS were given and have
	// not returned from: Shutdown closes them itself, since one whose
	// Serve started just before Shutdown may not be go-smtp's yet.
	listeners map[net.Listener]struct{}
}

// New makes an MX Server from cfg; nothing can fail until Serve.
func New(cfg Config) *Server { return newServer(cfg, false) }

// NewSubmission makes a submission Server from cfg (RFC 6409): AUTH
// required before MAIL (530 5.7.0), senders checked, any recipient
// accepted. cfg.Logins is required and cfg.TLS should be set (without it,
// and without AllowInsecureAuth, nobody can log in). Nothing can fail
// until Serve or ServeTLS.
func NewSubmission(cfg Config) *Server { return newServer(cfg, true) }

func newServer(cfg Config, submission bool) *Server {
	s := &Server{cfg: cfg, submission: submission, log: cfg.Logger, now: cfg.Now, hostname: cfg.Hostname}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if submission {
		s.log = s.log.With("service", "submission")
	} else {
		s.log = s.log.With("service", "smtp")
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.hostname == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			h = "localhost"
		}
		s.hostname = h
	}
	s.delivery = delivery.New(delivery.Config{
		Store: cfg.Store, SRS: cfg.SRS, RefuseInboundOverCap: cfg.RefuseInboundOverCap, Now: s.now,
		Postmaster: cfg.Postmaster, OnQuotaFull: cfg.OnQuotaFull,
		Spam: cfg.Spam, SpamDefault: cfg.SpamDefault, SpamFailClosed: cfg.SpamFailClosed,
		RecipientDelimiter: cfg.RecipientDelimiter, Sieve: cfg.Sieve,
	})
	if submission && cfg.MaxRecipientsPerHour > 0 {
		// A quiet mailbox may use the hour's allowance at once.
		s.sendLimit = policy.NewLimiter(float64(cfg.MaxRecipientsPerHour)/3600, cfg.MaxRecipientsPerHour).Shared(cfg.Share)
	}
	if s.cfg.MaxMessageBytes <= 0 {
		s.cfg.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if s.cfg.MaxRecipients <= 0 {
		s.cfg.MaxRecipients = DefaultMaxRecipients
	}
	if s.cfg.ReadTimeout <= 0 {
		s.cfg.ReadTimeout = DefaultReadTimeout
	}
	if s.cfg.HandshakeTimeout <= 0 {
		s.cfg.HandshakeTimeout = 30 * time.Second
	}
	if s.cfg.WriteTimeout <= 0 {
		s.cfg.WriteTimeout = DefaultWriteTimeout
	}
	if s.cfg.MaxConnsPerIP <= 0 {
		s.cfg.MaxConnsPerIP = policy.DefaultMXConnsPerAddress
		if submission {
			s.cfg.MaxConnsPerIP = policy.DefaultConnsPerAddress
		}
	}
	if s.cfg.MaxConnRatePerIP == 0 {
		s.cfg.MaxConnRatePerIP = policy.DefaultConnRatePerMinute
	}
	if s.cfg.MaxConnsPerUserIP == 0 {
		s.cfg.MaxConnsPerUserIP = policy.DefaultConnsPerUserAddress
	}
	s.metrics = cfg.Metrics
	if s.metrics == nil {
		s.metrics = noMetrics{}
	}
	s.conns = newConnLimiter(policy.ConnLimits{
		PerAddress: s.cfg.MaxConnsPerIP, PerUserAddress: max(s.cfg.MaxConnsPerUserIP, 0), RatePerMinute: max(s.cfg.MaxConnRatePerIP, 0),
	}, s.log)
	s.conns.metrics = s.metrics

	srv := smtp.NewServer(smtp.BackendFunc(s.newSession))
	srv.Domain = s.hostname
	srv.TLSConfig = cfg.TLS
	srv.MaxMessageBytes = s.cfg.MaxMessageBytes
	srv.MaxRecipients = s.cfg.MaxRecipients
	srv.MaxLineLength = maxLineLength
	srv.MaxDataLineLength = maxDataLineLength // third_party/go-smtp/PATCHES.md
	srv.ReadTimeout = s.cfg.ReadTimeout
	srv.WriteTimeout = s.cfg.WriteTimeout
	// go-smtp always offers PIPELINING, 8BITMIME, ENHANCEDSTATUSCODES and
	// CHUNKING (BDAT, RFC 3030). SMTPUTF8 (RFC 6531): addresses are
	// normalised as UTF-8 by policy and messages stored as they come.
	// BINARYMIME stays off: stored messages are served over IMAP and
	// will be forwarded over SMTP, neither of which may carry raw binary.
	srv.EnableSMTPUTF8 = true
	// AUTH is for submission only: the MX session has no AuthSession
	// methods. The submission session decides itself whether AUTH may be
	// used without TLS, so that it is refused with RFC 4954's 538 5.7.11
	// rather than go-smtp's own reply.
	srv.AllowInsecureAuth = submission
	srv.ErrorLog = slogPrinter{s.log}
	s.smtp = srv
	return s
}

// Serve accepts connections on ln until Shutdown; it then returns nil.
// Connections beyond MaxConnsPerIP from one address are refused. ln is a
// plain listener: STARTTLS is offered when Config.TLS is set. For
// implicit TLS use ServeTLS; a tls.NewListener given to Serve works, but
// its connections escape MaxConnsPerIP and the closing of idle ones at
// Shutdown, since they cannot be wrapped under TLS.
func (s *Server) Serve(ln net.Listener) error {
	if err := s.track(ln); err != nil {
		return err
	}
	defer s.untrack(ln)
	return s.smtp.Serve(s.conns.listener(ln, false, s.listenerName(false)))
}

// track registers a listener for Shutdown, or closes it and answers
// smtp.ErrServerClosed when Shutdown has begun: without it, a Serve
// started in a goroutine just before Shutdown could hand go-smtp its
// listener after go-smtp closed its own, and accept forever.
func (s *Server) track(ln net.Listener) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		ln.Close()
		return smtp.ErrServerClosed
	}
	if s.listeners == nil {
		s.listeners = map[net.Listener]struct{}{}
	}
	s.listeners[ln] = struct{}{}
	return nil
}

func (s *Server) untrack(ln net.Listener) {
	s.mu.Lock()
	delete(s.listeners, ln)
	s.mu.Unlock()
}

// ServeTLS is Serve for implicit TLS (RFC 8314 section 3.3, the
// submissions port 465): every connection on ln starts with a TLS
// handshake under Config.TLS, which must not be nil. A connection over
// MaxConnsPerIP is closed before the handshake, without a reply.
func (s *Server) ServeTLS(ln net.Listener) error {
	if s.cfg.TLS == nil {
		return errors.New("smtpd: ServeTLS without Config.TLS")
	}
	if err := s.track(ln); err != nil {
		return err
	}
	defer s.untrack(ln)
	return s.smtp.Serve(tlsaccept.NewListener(s.conns.listener(ln, true, s.listenerName(true)), s.cfg.TLS, s.cfg.HandshakeTimeout, s.log))
}

// Shutdown stops accepting connections, closes idle ones at once and
// those in the middle of a mail transaction as soon as it ends (after its
// reply), and returns when all are closed. If ctx ends first it closes the
// rest at once and returns ctx's error: a client cut off before its 250
// still has its message and will send it again.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	// After go-smtp's Shutdown, close the listeners it did not know: a
	// Serve that began just before may hand it one after it closed its
	// own. Those it closed are closed again, to no effect.
	defer func() {
		s.mu.Lock()
		for ln := range s.listeners {
			ln.Close()
		}
		s.mu.Unlock()
	}()

	done := make(chan error, 1)
	go func() { done <- s.smtp.Shutdown(context.Background()) }()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		s.conns.closeIdle()
		select {
		case err := <-done:
			if errors.Is(err, smtp.ErrServerClosed) {
				return nil
			}
			return err
		case <-ctx.Done():
			s.smtp.Close()
			s.conns.closeAll()
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func (s *Server) shuttingDown() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// slogPrinter adapts go-smtp's Logger (unexpected internal errors, such as
// a connection that failed mid-command) to slog.
type slogPrinter struct{ log *slog.Logger }

func (p slogPrinter) Printf(format string, v ...any) {
	p.log.Debug("connection error", "detail", fmt.Sprintf(format, v...))
}

func (p slogPrinter) Println(v ...any) {
	p.log.Debug("connection error", "detail", strings.TrimSuffix(fmt.Sprintln(v...), "\n"))
}
