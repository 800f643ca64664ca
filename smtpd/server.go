// Package smtpd is mailhost's inbound SMTP server (the MX), over
// github.com/emersion/go-smtp. It accepts mail for hosted addresses only
// (never an open relay), resolves recipients with package policy at RCPT,
// refuses full mailboxes there, and answers 250 to DATA only once the
// message is stored durably (decisions.md, "The mail plane").
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

	"github.com/mailhost/mailhost/mailstore"
)

// Config configures a Server. Zero values are replaced by the defaults
// stated on each field.
type Config struct {
	// Store is where mail is delivered and addresses are looked up.
	// Required.
	Store mailstore.Store
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
	// MaxRecipients is the most recipients of one message; more are
	// answered 452 4.5.3 (RFC 5321 section 4.5.3.1.8). 0 means 100.
	MaxRecipients int
	// ReadTimeout bounds the wait for each command and, during DATA or
	// BDAT, for each read of message data; WriteTimeout bounds each
	// reply. 0 means 5 minutes and 1 minute (RFC 5321 section 4.5.3.2).
	ReadTimeout, WriteTimeout time.Duration
	// MaxConnsPerIP is the most connections at once from one IP address;
	// more are answered 421 4.7.0 and closed. 0 means 20.
	MaxConnsPerIP int
}

// Defaults of Config.
const (
	DefaultMaxMessageBytes = 50 << 20
	DefaultMaxRecipients   = 100
	DefaultReadTimeout     = 5 * time.Minute
	DefaultWriteTimeout    = time.Minute
	DefaultMaxConnsPerIP   = 20
	// maxLineLength bounds command and DATA lines: RFC 5321 section
	// 4.5.3.1.6 allows 1000 octets; go-smtp's default doubles that to be
	// lenient with careless senders. Longer lines end the connection.
	maxLineLength = 2000
)

// Server is an inbound SMTP server. Its methods may be called from any
// goroutine.
type Server struct {
	cfg      Config
	log      *slog.Logger
	now      func() time.Time
	hostname string
	smtp     *smtp.Server
	conns    *connLimiter

	// mu guards closing.
	mu      sync.Mutex
	closing bool
}

// New makes a Server from cfg; nothing can fail until Serve.
func New(cfg Config) *Server {
	s := &Server{cfg: cfg, log: cfg.Logger, now: cfg.Now, hostname: cfg.Hostname}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.log = s.log.With("service", "smtp")
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
	if s.cfg.MaxMessageBytes <= 0 {
		s.cfg.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if s.cfg.MaxRecipients <= 0 {
		s.cfg.MaxRecipients = DefaultMaxRecipients
	}
	if s.cfg.ReadTimeout <= 0 {
		s.cfg.ReadTimeout = DefaultReadTimeout
	}
	if s.cfg.WriteTimeout <= 0 {
		s.cfg.WriteTimeout = DefaultWriteTimeout
	}
	if s.cfg.MaxConnsPerIP <= 0 {
		s.cfg.MaxConnsPerIP = DefaultMaxConnsPerIP
	}
	s.conns = newConnLimiter(s.cfg.MaxConnsPerIP, s.log)

	srv := smtp.NewServer(smtp.BackendFunc(s.newSession))
	srv.Domain = s.hostname
	srv.TLSConfig = cfg.TLS
	srv.MaxMessageBytes = s.cfg.MaxMessageBytes
	srv.MaxRecipients = s.cfg.MaxRecipients
	srv.MaxLineLength = maxLineLength
	srv.ReadTimeout = s.cfg.ReadTimeout
	srv.WriteTimeout = s.cfg.WriteTimeout
	// go-smtp always offers PIPELINING, 8BITMIME, ENHANCEDSTATUSCODES and
	// CHUNKING (BDAT, RFC 3030). SMTPUTF8 (RFC 6531): addresses are
	// normalised as UTF-8 by policy and messages stored as they come.
	// BINARYMIME stays off: stored messages are served over IMAP and
	// will be forwarded over SMTP, neither of which may carry raw binary.
	srv.EnableSMTPUTF8 = true
	// AUTH is for submission, not the MX; there is no AuthSession here.
	srv.ErrorLog = slogPrinter{s.log}
	s.smtp = srv
	return s
}

// Serve accepts connections on ln until Shutdown; it then returns nil.
// Connections beyond MaxConnsPerIP from one address are refused.
func (s *Server) Serve(ln net.Listener) error {
	return s.smtp.Serve(s.conns.listener(ln))
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
