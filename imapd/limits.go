package imapd

import (
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/mailhost/mailhost/policy"
)

// This file bounds the connections of one client address (MaxConnsPerIP,
// MaxConnRatePerIP) and of one user from one address
// (MaxConnsPerUserIP, counted at login). The counting is policy.Conns, as
// in smtpd; the listener here answers a refusal as IMAP does. The
// implicit-TLS port's handshake deadline is tlsaccept's
// (HandshakeTimeout).

// connLimiter refuses connections over the per-address limits.
type connLimiter struct {
	log   *slog.Logger
	count *policy.Conns
	// metrics counts the refusals; set by New.
	metrics Metrics
}

func newConnLimiter(lim policy.ConnLimits, log *slog.Logger) *connLimiter {
	return &connLimiter{log: log, count: policy.NewConns(lim, nil)}
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
		tc, err := ll.l.acquire(c, policy.AddressKey(c.RemoteAddr()))
		if err == nil {
			return tc, nil
		}
		ll.l.log.Info("connection refused", "remote_ip", policy.RemoteIP(c.RemoteAddr()), "err", err)
		ll.l.metrics.Session(true)
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

func (l *connLimiter) acquire(c net.Conn, ip string) (*trackedConn, error) {
	if err := l.count.Acquire(ip); err != nil {
		return nil, err
	}
	return &trackedConn{Conn: c, ip: ip, l: l}, nil
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

// NetConn is the connection as accepted (quickAck needs its socket).
func (tc *trackedConn) NetConn() net.Conn { return tc.Conn }

func (tc *trackedConn) Close() error {
	err := tc.Conn.Close()
	tc.once.Do(func() { tc.l.release(tc.ip) })
	return err
}
