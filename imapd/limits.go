package imapd

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/mailhost/mailhost/policy"
)

// This file bounds what one client address can hold before it has logged
// in: its number of connections (MaxConnsPerIP) and, on the implicit-TLS
// port, the time its TLS handshake may take (HandshakeTimeout). The
// counting is policy.ConnsPerAddress, as in smtpd; the listener here
// answers a refusal as IMAP does.

// connLimiter refuses connections over the per-address limit.
type connLimiter struct {
	log   *slog.Logger
	count *policy.ConnsPerAddress
}

func newConnLimiter(max int, log *slog.Logger) *connLimiter {
	return &connLimiter{log: log, count: policy.NewConnsPerAddress(max)}
}

// listener wraps ln. silent is for a listener under TLS: a connection over
// the limit is closed without a reply, which the client could not read
// before its handshake (and making one would cost the handshake the limit
// is there to spare).
func (l *connLimiter) listener(ln net.Listener, silent bool) net.Listener {
	return &limitListener{Listener: ln, l: l, silent: silent}
}

type limitListener struct {
	net.Listener
	l      *connLimiter
	silent bool
}

// Accept returns the next connection within the limit. One over the limit
// is told BYE and closed in its own goroutine, so that a flood from one
// address does not hold up the others. Refusing here, before imapserver
// greets the connection, keeps it from taking one of the MaxConns slots.
func (ll *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := ll.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := policy.RemoteIP(c.RemoteAddr())
		if tc := ll.l.acquire(c, ip); tc != nil {
			return tc, nil
		}
		ll.l.log.Info("connection refused", "remote_ip", ip, "reason", "too many connections from address")
		if ll.silent {
			c.Close()
			continue
		}
		go refuse(c)
	}
}

// refuse greets a connection over the limit with BYE (RFC 9051 section
// 7.1.5: a server may answer a connection it will not serve with BYE
// instead of a greeting) without waiting for the client long.
func refuse(c net.Conn) {
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "* BYE [UNAVAILABLE] Too many connections from your address, try again later\r\n")
	c.Close()
}

func (l *connLimiter) acquire(c net.Conn, ip string) *trackedConn {
	if !l.count.Acquire(ip) {
		return nil
	}
	return &trackedConn{Conn: c, ip: ip, l: l}
}

func (l *connLimiter) release(ip string) { l.count.Release(ip) }

// trackedConn is one admitted connection. It gives its slot back on the
// first Close: imapserver closes it more than once, and after STARTTLS it
// closes the tls.Conn, which closes this one.
type trackedConn struct {
	net.Conn
	ip   string
	l    *connLimiter
	once sync.Once
}

func (tc *trackedConn) Close() error {
	err := tc.Conn.Close()
	tc.once.Do(func() { tc.l.release(tc.ip) })
	return err
}

// handshakeListener performs the server side of the TLS handshake on each
// connection of an inner listener, each in its own goroutine and within a
// deadline, and returns from Accept only connections whose handshake has
// completed. imapserver would otherwise start the handshake with its
// greeting, with no read deadline: a client that connects and never sends
// its ClientHello would hold the connection (and a MaxConns slot) forever.
type handshakeListener struct {
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

func newHandshakeListener(inner net.Listener, config *tls.Config, timeout time.Duration, log *slog.Logger) *handshakeListener {
	hl := &handshakeListener{
		inner: inner, config: config, timeout: timeout, log: log,
		conns: make(chan *tls.Conn),
		errc:  make(chan error, 1),
	}
	hl.ctx, hl.cancel = context.WithCancel(context.Background())
	go hl.acceptLoop()
	return hl
}

func (hl *handshakeListener) acceptLoop() {
	var delay time.Duration
	for {
		c, err := hl.inner.Accept()
		if ne, ok := err.(net.Error); ok && ne.Temporary() {
			// Out of file descriptors, say: wait as imapserver.Serve
			// would, rather than stop accepting for good.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			hl.log.Warn("accept", "err", err, "retry_in", delay)
			time.Sleep(delay)
			continue
		}
		if err != nil {
			// The listener is closed or broken: Accept passes the error
			// on to imapserver.Serve.
			hl.errc <- err
			return
		}
		delay = 0
		go hl.handshake(c)
	}
}

func (hl *handshakeListener) handshake(c net.Conn) {
	ctx, cancel := context.WithTimeout(hl.ctx, hl.timeout)
	defer cancel()
	tc := tls.Server(c, hl.config)
	// HandshakeContext only interrupts on ctx; a deadline on the conn also
	// covers a client that stops reading our ServerHello.
	c.SetDeadline(time.Now().Add(hl.timeout))
	if err := tc.HandshakeContext(ctx); err != nil {
		hl.log.Debug("tls handshake", "remote_ip", policy.RemoteIP(c.RemoteAddr()), "err", err)
		c.Close()
		return
	}
	// imapserver sets its own deadlines from here on.
	c.SetDeadline(time.Time{})
	select {
	case hl.conns <- tc:
	case <-hl.ctx.Done():
		c.Close()
	}
}

// Accept returns the next connection whose handshake has completed.
func (hl *handshakeListener) Accept() (net.Conn, error) {
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

func (hl *handshakeListener) Close() error {
	var err error
	hl.once.Do(func() {
		hl.cancel()
		err = hl.inner.Close()
	})
	return err
}

func (hl *handshakeListener) Addr() net.Addr { return hl.inner.Addr() }
