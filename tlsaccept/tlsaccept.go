// Package tlsaccept is a listener for implicit TLS (IMAPS, SMTPS) that
// completes each connection's TLS handshake itself, in its own goroutine
// and within a deadline, before the server sees the connection. The
// servers mailhost builds on start the handshake with their greeting
// under their own, long, command deadlines (go-smtp's is read_timeout,
// imapserver's none): a client that connects and never sends its
// ClientHello would otherwise hold the connection, and a per-address
// slot, for minutes or for ever.
package tlsaccept

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"sync"
	"time"
)

// Listener performs the server side of the TLS handshake on each
// connection of an inner listener, each in its own goroutine and within a
// deadline, and returns from Accept only connections whose handshake has
// completed, as *tls.Conn (go-smtp and imapserver recognise TLS by that
// type; their own Handshake calls then do nothing).
type Listener struct {
	inner   net.Listener
	config  *tls.Config
	timeout time.Duration
	log     *slog.Logger

	conns chan *tls.Conn
	errc  chan error
	// ctx is cancelled by Close, ending handshakes under way.
	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once
}

// NewListener accepts from inner and hands on the connections whose
// handshake under config completed within timeout; log (nil: discard)
// gets failed handshakes at debug level and accept errors.
func NewListener(inner net.Listener, config *tls.Config, timeout time.Duration, log *slog.Logger) *Listener {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	hl := &Listener{
		inner: inner, config: config, timeout: timeout, log: log,
		conns: make(chan *tls.Conn),
		errc:  make(chan error, 1),
	}
	hl.ctx, hl.cancel = context.WithCancel(context.Background())
	go hl.acceptLoop()
	return hl
}

func (hl *Listener) acceptLoop() {
	var delay time.Duration
	for {
		c, err := hl.inner.Accept()
		if ne, ok := err.(net.Error); ok && ne.Temporary() {
			// Out of file descriptors, say: wait as net/http's and
			// imapserver's Serve would, rather than stop for good.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			hl.log.Warn("accept", "err", err, "retry_in", delay)
			time.Sleep(delay)
			continue
		}
		if err != nil {
			// The listener is closed or broken: Accept passes the error
			// on to the server's Serve.
			hl.errc <- err
			return
		}
		delay = 0
		go hl.handshake(c)
	}
}

func (hl *Listener) handshake(c net.Conn) {
	ctx, cancel := context.WithTimeout(hl.ctx, hl.timeout)
	defer cancel()
	tc := tls.Server(c, hl.config)
	// HandshakeContext only interrupts on ctx; a deadline on the conn also
	// covers a client that stops reading our ServerHello.
	c.SetDeadline(time.Now().Add(hl.timeout))
	if err := tc.HandshakeContext(ctx); err != nil {
		hl.log.Debug("tls handshake", "remote_ip", c.RemoteAddr().String(), "err", err)
		c.Close()
		return
	}
	// The server sets its own deadlines from here on.
	c.SetDeadline(time.Time{})
	select {
	case hl.conns <- tc:
	case <-hl.ctx.Done():
		c.Close()
	}
}

// Accept returns the next connection whose handshake has completed.
func (hl *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-hl.conns:
		return c, nil
	case err := <-hl.errc:
		hl.errc <- err // for the next caller
		return nil, err
	case <-hl.ctx.Done():
		return nil, net.ErrClosed
	}
}

func (hl *Listener) Close() error {
	var err error
	hl.once.Do(func() {
		hl.cancel()
		err = hl.inner.Close()
	})
	return err
}

func (hl *Listener) Addr() net.Addr { return hl.inner.Addr() }
