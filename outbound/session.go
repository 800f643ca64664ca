package outbound

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/emersion/go-smtp"

	"github.com/mailhost/mailhost/delivery"
	"github.com/mailhost/mailhost/mailstore"
)

// session delivers an entry to one server at addr ("ip:port"), host
// being the server's name: on an idle session to it from the cache when
// there is one, else on a new one. final is false when the session ended
// before the server said anything about the recipients (it could not be
// reached, refused the session, or answered MAIL with a temporary
// error): the caller tries the next server. A refused relay login is
// final: the relay's other addresses would refuse it too. need, when not
// nil, requires TLS with a certificate valid for host (see connect).
func (s *Sender) session(ctx context.Context, addr, host string, need error, e mailstore.Outbound, body []byte, pending []string) (out outcome, final bool) {
	key := sessionKey(addr, host, need != nil)
	if cs := s.sessions.get(key); cs != nil {
		out, final, stale := s.transaction(ctx, cs, host, e, body, pending)
		if !stale {
			return out, final
		}
		s.log.Debug("idle session was closed by the server, opening a new one", "host", host, "addr", addr, "uses", cs.uses)
	}
	cs, isTLS, r := s.open(ctx, addr, host, key, need)
	if r != nil {
		out.host, out.tls = host, isTLS
		out.deferAll(pending, *r)
		return out, r.everywhere
	}
	out, final, _ = s.transaction(ctx, cs, host, e, body, pending)
	return out, final
}

// open opens a new session: connects, says EHLO, starts TLS when offered,
// and logs in to the relay when Config.RelayUsername says so. It answers
// the reply that defers the attempt when it cannot, and whether the
// session had started TLS.
func (s *Sender) open(ctx context.Context, addr, host, key string, need error) (*clientSession, bool, *reply) {
	c, nc, isTLS, err := s.connect(ctx, addr, host, need)
	if err != nil {
		r := classify(ctxErr(ctx, err), host)
		return nil, false, &r
	}
	cs := &clientSession{c: c, nc: nc, isTLS: isTLS, key: key}
	if s.cfg.Relay != "" && s.cfg.RelayUsername != "" {
		if r, sane := s.login(ctx, cs, addr, host); r != nil {
			if sane {
				stop := context.AfterFunc(ctx, func() { nc.Close() })
				quit(c)
				stop()
			}
			c.Close()
			return nil, isTLS, r
		}
	}
	return cs, isTLS, nil
}

// ending is what becomes of a session after a transaction.
type ending int

const (
	// drop: close the connection without a word; it broke, the server
	// is closing it, or its state is not known.
	drop ending = iota
	// keep: the session is ready for MAIL; it goes back to the cache,
	// or says QUIT if the cache does not take it.
	keep
)

// transaction sends the entry on a session, and keeps the session or
// ends it. stale: the session came from the cache and its first command
// failed with a lost connection or 421 (RFC 5321 section 3.8: the server
// closes idle sessions); nothing was learnt about the entry, and the
// caller opens a new session rather than count that against it.
func (s *Sender) transaction(ctx context.Context, cs *clientSession, host string, e mailstore.Outbound, body []byte, pending []string) (out outcome, final, stale bool) {
	out.host, out.tls = host, cs.isTLS
	reused := cs.uses > 0
	cs.uses++
	c := cs.c
	// Closing the connection is how ctx (the lease, or Run stopping) cuts
	// off a command under way.
	stop := context.AfterFunc(ctx, func() { cs.nc.Close() })
	end := drop
	defer func() { s.finish(ctx, cs, stop, end) }()

	needUTF8 := !isASCII(e.From) || !allASCII(pending)
	if ok, _ := c.Extension("SMTPUTF8"); needUTF8 && !ok {
		// RFC 6531 section 3.2: without SMTPUTF8 the server cannot take
		// these addresses; downgrading them is not possible. Nothing was
		// said: the session is as it was.
		out.settle(pending, reply{Code: 553, Enhanced: smtp.EnhancedCode{5, 6, 7}, Host: host,
			Text: "non-ASCII address and the server does not support SMTPUTF8"})
		end = keep
		return out, true, false
	}
	if err := c.Mail(e.From, &smtp.MailOptions{Size: int64(len(body)), UTF8: needUTF8}); err != nil {
		if reused && ctx.Err() == nil && (lostConnection(err) || closing(err)) {
			return out, false, true
		}
		r := classify(ctxErr(ctx, err), host)
		out.settle(pending, r)
		if isReply(err) && !closing(err) {
			// A refused MAIL opens no transaction (RFC 5321 section
			// 4.1.1.2).
			end = keep
		}
		return out, r.permanent(), false
	}

	var accepted []string
	closed := false
	for i, rcpt := range pending {
		err := c.Rcpt(rcpt, nil)
		if err == nil {
			accepted = append(accepted, rcpt)
			continue
		}
		r := classify(ctxErr(ctx, err), host)
		if !isReply(err) {
			// The connection broke: what is not known yet is deferred.
			out.deferAll(append(accepted, pending[i:]...), r)
			return out, true, false
		}
		closed = closed || closing(err)
		out.settle([]string{rcpt}, r)
	}
	if len(accepted) == 0 {
		// MAIL opened a transaction that RSET ends (RFC 5321 section
		// 4.1.1.5).
		if !closed && s.rset(cs) == nil {
			end = keep
		}
		return out, true, false
	}

	started, err := s.data(c, cs.nc, body)
	if err != nil {
		// After the final dot a lost connection leaves it unknown whether
		// the server took the message; it is sent again, at the risk of a
		// duplicate (RFC 5321 section 6.1: never lose it).
		out.settle(accepted, classify(ctxErr(ctx, err), host))
		switch {
		case !isReply(err) || closed || closing(err):
		case started:
			// The reply to the final dot ends the transaction.
			end = keep
		case s.rset(cs) == nil:
			// DATA refused: the transaction may still be open.
			end = keep
		}
		return out, true, false
	}
	out.delivered = accepted
	if !closed {
		end = keep
	}
	return out, true, false
}

// finish ends a transaction's use of a session: back to the cache when it
// is ready for another and ctx has not cut it off, else QUIT and close.
// stop undoes the transaction's context.AfterFunc.
func (s *Sender) finish(ctx context.Context, cs *clientSession, stop func() bool, end ending) {
	if end == keep {
		// stop is false once ctx has closed the connection.
		if stop() && ctx.Err() == nil && s.sessions.put(cs) {
			return
		}
		stop = context.AfterFunc(ctx, func() { cs.nc.Close() })
		quit(cs.c)
	}
	stop()
	cs.c.Close()
}

// rset ends an open transaction on a session (RFC 5321 section 4.1.1.5).
// go-smtp's Client.Reset would also say EHLO again before the next
// command, which costs a round trip and, on a relay session, comes after
// AUTH, where not every server keeps the login; so RSET goes on the
// connection directly, as STARTTLS does.
func (s *Sender) rset(cs *clientSession) error {
	_, _, err := command(cs.nc, "RSET", 250, s.cfg.CommandTimeout)
	return err
}

// command sends cmd on a connection whose go-smtp client is between
// commands and has read nothing beyond the last reply (the server sends
// nothing unasked), and reads the reply one byte at a time, so that what
// follows it (a TLS handshake after STARTTLS, the next reply) is left
// unread. A reply other than expect is a *textproto.Error.
func command(nc net.Conn, cmd string, expect int, timeout time.Duration) (int, string, error) {
	nc.SetDeadline(time.Now().Add(timeout))
	defer nc.SetDeadline(time.Time{})
	if _, err := io.WriteString(nc, cmd+"\r\n"); err != nil {
		return 0, "", err
	}
	r := textproto.NewReader(bufio.NewReaderSize(byteReader{nc}, 16))
	return r.ReadResponse(expect)
}

// isReply: err is the server's SMTP reply, the session intact.
func isReply(err error) bool {
	var se *smtp.SMTPError
	return errors.As(err, &se)
}

// closing: err is a 421 reply, the server closing the session (RFC 5321
// section 3.8).
func closing(err error) bool {
	var se *smtp.SMTPError
	return errors.As(err, &se) && se.Code == 421
}

// lostConnection: err says the connection was closed or reset, not that
// it timed out (a server that stopped answering would make the caller
// wait twice) nor that a reply was malformed.
func lostConnection(err error) bool {
	if isReply(err) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	var oe *net.OpError
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || errors.As(err, &oe)
}

// quitTimeout bounds the wait for the reply to QUIT: the outcome is known
// by then, and a server slow to say goodbye should not hold a worker.
const quitTimeout = 10 * time.Second

// quit says QUIT; the caller closes the connection whatever the answer.
func quit(c *smtp.Client) {
	c.CommandTimeout = quitTimeout
	c.Quit()
}

// data sends DATA and the message, and reads the reply to its end.
// started: DATA was accepted (354), so an SMTP error is the reply to the
// final dot.
func (s *Sender) data(c *smtp.Client, nc net.Conn, body []byte) (started bool, err error) {
	w, err := c.Data()
	if err != nil {
		return false, err
	}
	// go-smtp bounds each command, but not the writing of the data.
	nc.SetWriteDeadline(time.Now().Add(s.cfg.CommandTimeout))
	// Every line leaves ended by CRLF and dot-stuffed (RFC 5321 sections
	// 2.3.8 and 4.5.2). go-smtp's writer (net/textproto's DotWriter)
	// makes a bare LF CRLF and stuffs the dots after it, but passes a
	// bare CR through, so "\r.\r" would leave as it came, an end of data
	// for a lenient next hop (SMTP smuggling). smtpd stores messages
	// normalised already; this covers entries queued before it did.
	body = delivery.NormalizeLineEnds(body)
	if _, err := w.Write(body); err != nil {
		return true, err
	}
	if len(body) > 0 && body[len(body)-1] != '\n' {
		// The end of data is CRLF.CRLF: a last line without its line
		// end would swallow the dot.
		if _, err := io.WriteString(w, "\r\n"); err != nil {
			return true, err
		}
	}
	return true, w.Close()
}

// connect dials addr, reads the greeting and says EHLO, then starts TLS
// when the server offers STARTTLS (RFC 3207) and says EHLO again.
//
// TLS is opportunistic (RFC 7435) unless Config.TLS says otherwise: the
// certificate is not verified, because without MTA-STS or DANE a sender
// cannot know which certificate an MX should have, and MX hosts with
// self-signed or mismatched certificates are common; refusing them would
// bounce mail without stopping an active attacker, who can strip the
// STARTTLS offer anyway. Encryption still defeats passive eavesdropping.
// For the same reason a failed TLS handshake (no common version or
// cipher, a broken server) falls back to a new plain-text session to the
// same address, as if STARTTLS had not been offered: delivering in the
// clear is what happens with every server that offers no TLS at all.
//
// need, when not nil, is the reason TLS must be verified instead
// (errTLSRequired: Config.RelayVerifyTLS; errSTSRequired: the MX
// domain's MTA-STS policy says enforce): no STARTTLS, a refused one or a
// certificate not valid for host fails the session with an error that
// wraps need, and nothing goes in plain text.
func (s *Sender) connect(ctx context.Context, addr, host string, need error) (*smtp.Client, net.Conn, bool, error) {
	c, conn, err := s.dial(ctx, addr)
	if err != nil {
		return nil, nil, false, err
	}
	verify := need != nil
	// Every remote session goes to the relay when there is one.
	server := "MX"
	if s.cfg.Relay != "" {
		server = "relay"
	}
	if ok, _ := c.Extension("STARTTLS"); !ok {
		if verify {
			quit(c)
			c.Close()
			return nil, nil, false, fmt.Errorf("%s %s offers no STARTTLS: %w", server, addr, need)
		}
		return c, conn, false, nil
	}
	tc, refused, err := s.startTLS(ctx, conn, host, verify)
	if refused {
		if verify {
			c.Close()
			return nil, nil, false, fmt.Errorf("%s %s refused STARTTLS: %w", server, addr, need)
		}
		// 454 and the like (RFC 3207 section 4): the session goes on in
		// plain text.
		return c, conn, false, nil
	}
	if err == nil {
		// go-smtp's client has no STARTTLS of its own on a session it
		// greeted, so a new client takes over the TLS connection; it
		// reads a greeting first, which the server does not send again
		// (RFC 3207 section 4.2: the client says EHLO next), so that
		// greeting is played to it from here.
		// The replies inside TLS are bounded too (see replyLimitConn).
		lc := limitReplies(tc)
		tlsC := smtp.NewClient(&greetedConn{Conn: lc, r: io.MultiReader(strings.NewReader("220 "+host+"\r\n"), lc)})
		s.timeouts(tlsC)
		stop := context.AfterFunc(ctx, func() { tc.Close() })
		err = tlsC.Hello(s.hostname)
		stop()
		if err == nil {
			return tlsC, lc, true, nil
		}
		tlsC.Close()
	}
	conn.Close()
	if ctx.Err() != nil {
		return nil, nil, false, ctx.Err()
	}
	if verify {
		return nil, nil, false, fmt.Errorf("%s %s: %w: %w", server, addr, need, err)
	}
	s.log.Info("TLS failed, trying without", "host", host, "addr", addr, "err", err)
	c, conn, err = s.dial(ctx, addr)
	return c, conn, false, err
}

// dial connects to addr, reads the greeting and says EHLO (HELO if the
// server does not know EHLO).
func (s *Sender) dial(ctx context.Context, addr string) (*smtp.Client, net.Conn, error) {
	raw, err := s.dialer().DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	// Bounded before anything reads it: the greeting, every reply, and
	// under STARTTLS the TLS records.
	conn := net.Conn(limitReplies(raw))
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	c := smtp.NewClient(conn)
	s.timeouts(c)
	if err := c.Hello(s.hostname); err != nil {
		c.Close()
		return nil, nil, err
	}
	return c, conn, nil
}

func (s *Sender) timeouts(c *smtp.Client) {
	c.CommandTimeout = s.cfg.CommandTimeout
	c.SubmissionTimeout = s.cfg.DataTimeout
}

// startTLS sends STARTTLS on a session that go-smtp's client has greeted
// and said EHLO on, and makes the TLS handshake. refused: the server
// answered something other than 220, and the plain session goes on.
// go-smtp's client has read nothing beyond the EHLO reply, since the
// server sends nothing unasked.
func (s *Sender) startTLS(ctx context.Context, conn net.Conn, host string, verify bool) (*tls.Conn, bool, error) {
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	// Whatever follows the reply belongs to the TLS handshake.
	if _, _, err := command(conn, "STARTTLS", 220, s.cfg.CommandTimeout); err != nil {
		var pe *textproto.Error
		if errors.As(err, &pe) {
			s.log.Info("STARTTLS refused", "host", host, "reply", fmt.Sprintf("%d %s", pe.Code, oneLine(pe.Msg)))
			return nil, true, nil
		}
		return nil, false, err
	}
	cfg := &tls.Config{InsecureSkipVerify: true}
	if s.cfg.TLS != nil {
		cfg = s.cfg.TLS.Clone()
	}
	switch {
	case verify:
		// An IP address as ServerName is checked against the
		// certificate's IP addresses.
		cfg.InsecureSkipVerify = false
		cfg.ServerName = host
	case cfg.ServerName == "" && net.ParseIP(host) == nil:
		cfg.ServerName = host
	}
	tc := tls.Client(conn, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, false, fmt.Errorf("TLS handshake: %w", err)
	}
	return tc, false, nil
}

// errTLSRequired: Config.RelayVerifyTLS, and the relay's session could not
// have TLS with a verified certificate.
var errTLSRequired = errors.New("TLS with a verified certificate is required (relay_verify_tls)")

// byteReader reads one byte at a time, so that a bufio.Reader over it
// never reads ahead of what it returns.
type byteReader struct{ r io.Reader }

func (b byteReader) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return b.r.Read(p)
}

// greetedConn is a connection whose first bytes read are a greeting
// already received.
type greetedConn struct {
	net.Conn
	r io.Reader
}

func (c *greetedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// ctxErr is err, or the reason ctx ended when it did: closing the
// connection to cut off a command shows as an I/O error.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%v)", context.Cause(ctx), err)
	}
	return err
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func allASCII(ss []string) bool {
	for _, s := range ss {
		if !isASCII(s) {
			return false
		}
	}
	return true
}
