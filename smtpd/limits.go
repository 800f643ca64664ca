package smtpd

import (
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailhost/mailhost/policy"
)

// connLimiter counts connections per client address (policy.Conns),
// refusing those over the limits, and keeps every open connection so that
// Shutdown can close the idle ones.
type connLimiter struct {
	log *slog.Logger

	count *policy.Conns

	// mu guards open.
	mu   sync.Mutex
	open map[*trackedConn]struct{}
}

func newConnLimiter(lim policy.ConnLimits, log *slog.Logger) *connLimiter {
	return &connLimiter{log: log, count: policy.NewConns(lim, nil), open: map[*trackedConn]struct{}{}}
}

// listener wraps ln. silent is for a listener under TLS: a connection
// over the limit is closed without a reply, which the client could not
// read before its handshake.
func (l *connLimiter) listener(ln net.Listener, silent bool) net.Listener {
	return &limitListener{Listener: ln, l: l, silent: silent}
}

type limitListener struct {
	net.Listener
	l      *connLimiter
	silent bool
	warned sync.Once
}

// Accept returns the next connection within the limit. One over the limit
// is answered 421 and closed in its own goroutine, so that a flood from one
// address does not hold up the others.
func (ll *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := ll.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if _, ok := c.(*tls.Conn); ok {
			// A TLS listener was given to Serve: go-smtp recognises TLS
			// only on a *tls.Conn, so this one cannot be wrapped.
			ll.warned.Do(func() {
				ll.l.log.Warn("TLS listener given to Serve: per-IP limits do not apply, use ServeTLS")
			})
			return c, nil
		}
		tc, err := ll.l.acquire(c, policy.AddressKey(c.RemoteAddr()))
		if err == nil {
			return tc, nil
		}
		ll.l.log.Info("connection refused", "remote_ip", policy.RemoteIP(c.RemoteAddr()), "err", err)
		if ll.silent {
			c.Close()
			continue
		}
		go refuse(c)
	}
}

// refuse tells a client it is over the connection limit (RFC 5321 section
// 3.8: 421 then close) without waiting for it long.
func refuse(c net.Conn) {
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "421 4.7.0 Too many connections from your address, try again later\r\n")
	c.Close()
}

func (l *connLimiter) acquire(c net.Conn, ip string) (*trackedConn, error) {
	if err := l.count.Acquire(ip); err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, ip: ip, l: l}
	l.mu.Lock()
	l.open[tc] = struct{}{}
	l.mu.Unlock()
	return tc, nil
}

func (l *connLimiter) release(tc *trackedConn) {
	l.mu.Lock()
	delete(l.open, tc)
	l.mu.Unlock()
	l.count.Release(tc.ip)
}

// closeIdle closes every connection not in a mail transaction.
func (l *connLimiter) closeIdle() {
	for _, tc := range l.snapshot() {
		if !tc.busy.Load() {
			tc.Close()
		}
	}
}

func (l *connLimiter) closeAll() {
	for _, tc := range l.snapshot() {
		tc.Close()
	}
}

func (l *connLimiter) snapshot() []*trackedConn {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*trackedConn, 0, len(l.open))
	for tc := range l.open {
		out = append(out, tc)
	}
	return out
}

// trackedConn is one accepted connection. It gives its slot back on the
// first Close (go-smtp may close it twice, and after STARTTLS it closes the
// tls.Conn, which closes this one).
type trackedConn struct {
	net.Conn
	ip   string
	l    *connLimiter
	once sync.Once
	// dnsbl is the connection's blocklist answer (dnsbl.go), kept
	// across STARTTLS.
	dnsbl dnsblCheck
	// busy is set from MAIL until the transaction's reply has been
	// written (go-smtp calls Session.Reset after it), so that Shutdown
	// does not cut a delivery short.
	busy atomic.Bool
}

func (tc *trackedConn) Close() error {
	err := tc.Conn.Close()
	tc.once.Do(func() { tc.l.release(tc) })
	return err
}

// trackedOf finds the trackedConn under a session's connection, which is
// a tls.Conn after STARTTLS. It returns nil for a connection that did not
// come through a limitListener.
func trackedOf(c net.Conn) *trackedConn {
	if t, ok := c.(*tls.Conn); ok {
		c = t.NetConn()
	}
	tc, _ := c.(*trackedConn)
	return tc
}

// deadlineReader extends the connection's read deadline before each read
// of message data: RFC 5321 section 4.5.3.2.5 times each data block (3
// minutes there), not the whole message, which go-smtp would otherwise
// bound by the deadline of the DATA command line.
type deadlineReader struct {
	r       io.Reader
	conn    net.Conn
	timeout time.Duration
}

func (d *deadlineReader) Read(p []byte) (int, error) {
	if d.conn != nil {
		d.conn.SetReadDeadline(time.Now().Add(d.timeout))
	}
	return d.r.Read(p)
}
