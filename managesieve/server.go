// Package managesieve is the server side of ManageSieve (RFC 5804): users
// upload, list, fetch, rename, delete and activate their Sieve scripts.
// Scripts are checked with package sieve before they are stored; where
// they are stored, and who may log in, are the ScriptStore's and the
// Authenticator's business.
//
// Only SASL PLAIN is offered, and only over TLS (STARTTLS) unless
// Config.AllowInsecureAuth is set. Each command must arrive within
// Config.IdleTimeout; lines are at most 8 KiB outside literals, and a
// literal at most Config.MaxScriptSize (a larger one, up to 1 MiB, is
// read and refused; beyond that the connection closes). Three failed
// logins close the connection. Connections are bounded in all and per
// client address (Config.MaxConns, MaxConnsPerIP).
package managesieve

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/mailhost/mailhost/sieve"
)

// Config configures a Server.
type Config struct {
	// Store keeps the scripts; required.
	Store ScriptStore
	// Auth checks logins; required.
	Auth Authenticator
	// TLS enables STARTTLS when set.
	TLS *tls.Config
	// AllowInsecureAuth lets AUTHENTICATE run without TLS (tests,
	// loopback listeners behind a TLS proxy).
	AllowInsecureAuth bool
	// Parse are the options scripts are checked with: the extensions
	// offered (announced in the SIEVE capability) and the size limit.
	Parse sieve.ParseOptions
	// MaxRedirects is announced in the MAXREDIRECTS capability; 0
	// means sieve.DefaultMaxRedirects.
	MaxRedirects int
	// Implementation is the IMPLEMENTATION capability; "" means
	// "mailhost".
	Implementation string
	// IdleTimeout bounds the wait for each command; 0 means 10
	// minutes (5 minutes before login).
	IdleTimeout time.Duration
	// WriteTimeout bounds each reply's write; 0 means 1 minute.
	WriteTimeout time.Duration
	// MaxConns bounds the connections at once; 0 means 1,000. Beyond
	// it, and beyond MaxConnsPerIP from one client address (an IPv6
	// /64 counts as one; 0 means 50), a connection is answered BYE and
	// closed.
	MaxConns, MaxConnsPerIP int
	// Logger gets a line per connection error; nil means slog.Default.
	Logger *slog.Logger
	// Metrics observes connections, commands and logins; nil: none.
	Metrics Metrics
}

// Metrics is what the server reports; *metrics.ManageSieve is one.
type Metrics interface {
	// Session counts a connection, refused over the limits or accepted;
	// an accepted one is open until SessionClosed.
	Session(refused bool)
	SessionClosed()
	// Command counts a command by its name in upper case and result:
	// "ok", "no" or "bye".
	Command(name, result string)
	// Login counts an AUTHENTICATE: "success", "invalid", "throttled",
	// "refused" (no TLS) or "error".
	Login(outcome string)
}

// noMetrics is Config.Metrics when none is given.
type noMetrics struct{}

func (noMetrics) Session(bool)           {}
func (noMetrics) SessionClosed()         {}
func (noMetrics) Command(string, string) {}
func (noMetrics) Login(string)           {}

// Server is a ManageSieve server.
type Server struct {
	cfg Config
	log *slog.Logger

	// mu guards the fields below.
	mu        sync.Mutex
	listeners map[net.Listener]bool
	conns     map[net.Conn]bool
	perIP     map[netip.Prefix]int
	closing   bool
	wg        sync.WaitGroup
}

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = errors.New("managesieve: server closed")

// New returns a server; Serve starts it.
func New(cfg Config) *Server {
	if cfg.Implementation == "" {
		cfg.Implementation = "mailhost"
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 10 * time.Minute
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = time.Minute
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 1000
	}
	if cfg.MaxConnsPerIP <= 0 {
		cfg.MaxConnsPerIP = 50
	}
	if cfg.MaxRedirects <= 0 {
		cfg.MaxRedirects = sieve.DefaultMaxRedirects
	}
	if cfg.Parse.MaxSize <= 0 {
		cfg.Parse.MaxSize = sieve.DefaultMaxScriptSize
	}
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Server{cfg: cfg, log: log, listeners: map[net.Listener]bool{}, conns: map[net.Conn]bool{}, perIP: map[netip.Prefix]int{}}
}

// Serve accepts connections on ln until Shutdown, and returns
// ErrServerClosed then.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.listeners[ln] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
	}()
	var delay time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closing := s.closing
			s.mu.Unlock()
			if closing {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			c.Close()
			return ErrServerClosed
		}
		key := clientKey(c)
		if len(s.conns) >= s.cfg.MaxConns || s.perIP[key] >= s.cfg.MaxConnsPerIP {
			s.mu.Unlock()
			s.cfg.Metrics.Session(true)
			s.log.Info("managesieve connection refused: too many", "remote", c.RemoteAddr().String())
			// The answer is a few octets into an empty socket buffer: the
			// short deadline only guards against a peer that reads nothing.
			c.SetWriteDeadline(time.Now().Add(time.Second))
			c.Write([]byte("BYE \"too many connections, try again later\"\r\n"))
			c.Close()
			continue
		}
		s.conns[c] = true
		s.perIP[key]++
		s.wg.Add(1)
		s.mu.Unlock()
		s.cfg.Metrics.Session(false)
		go func() {
			defer s.wg.Done()
			defer s.cfg.Metrics.SessionClosed()
			defer func() {
				s.mu.Lock()
				delete(s.conns, c)
				if s.perIP[key]--; s.perIP[key] <= 0 {
					delete(s.perIP, key)
				}
				s.mu.Unlock()
			}()
			newSession(s, c).serve()
		}()
	}
}

// clientKey is what connections are counted by: the client's address, an
// IPv6 address by its /64 (what one customer line gets).
func clientKey(c net.Conn) netip.Prefix {
	ta, ok := c.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return netip.Prefix{}
	}
	ip := ta.AddrPort().Addr().Unmap()
	bits := 32
	if ip.Is6() {
		bits = 64
	}
	p, _ := ip.Prefix(bits)
	return p
}

// Shutdown stops accepting, closes every connection (a command under way
// has its store call finish first only if it is faster than the close)
// and waits for the sessions to end or ctx to be done.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	for ln := range s.listeners {
		ln.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
