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

	"github.com/mailhost/mailhost/mailstore"
)

// session delivers an entry to one server: one SMTP session at addr
// ("ip:port"), host being the server's name. final is false when the
// session ended before the server said anything about the recipients (it
// could not be reached, refused the session, or answered MAIL with a
// temporary error): the caller tries the next server.
func (s *Sender) session(ctx context.Context, addr, host string, e mailstore.Outbound, body []byte, pending []string) (out outcome, final bool) {
	out.host = host
	c, conn, isTLS, err := s.connect(ctx, addr, host)
	if err != nil {
		out.deferAll(pending, classify(ctxErr(ctx, err), host))
		return out, false
	}
	out.tls = isTLS
	// Closing the connection is how ctx (the lease, or Run stopping) cuts
	// off a command under way.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	defer c.Close()

	needUTF8 := !isASCII(e.From) || !allASCII(pending)
	if ok, _ := c.Extension("SMTPUTF8"); needUTF8 && !ok {
		// RFC 6531 section 3.2: without SMTPUTF8 the server cannot take
		// these addresses; downgrading them is not possible.
		out.settle(pending, reply{Code: 553, Enhanced: smtp.EnhancedCode{5, 6, 7}, Host: host,
			Text: "non-ASCII address and the server does not support SMTPUTF8"})
		quit(c)
		return out, true
	}
	if err := c.Mail(e.From, &smtp.MailOptions{Size: int64(len(body)), UTF8: needUTF8}); err != nil {
		r := classify(ctxErr(ctx, err), host)
		out.settle(pending, r)
		quit(c)
		return out, r.permanent()
	}

	var accepted []string
	for i, rcpt := range pending {
		err := c.Rcpt(rcpt, nil)
		if err == nil {
			accepted = append(accepted, rcpt)
			continue
		}
		r := classify(ctxErr(ctx, err), host)
		var se *smtp.SMTPError
		if !errors.As(err, &se) {
			// The connection broke: what is not known yet is deferred.
			out.deferAll(append(accepted, pending[i:]...), r)
			return out, true
		}
		out.settle([]string{rcpt}, r)
	}
	if len(accepted) == 0 {
		quit(c)
		return out, true
	}

	if err := s.data(c, conn, body); err != nil {
		// After the final dot a lost connection leaves it unknown whether
		// the server took the message; it is sent again, at the risk of a
		// duplicate (RFC 5321 section 6.1: never lose it).
		out.settle(accepted, classify(ctxErr(ctx, err), host))
		return out, true
	}
	out.delivered = accepted
	quit(c)
	return out, true
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
func (s *Sender) data(c *smtp.Client, conn net.Conn, body []byte) error {
	w, err := c.Data()
	if err != nil {
		return err
	}
	// go-smtp bounds each command, but not the writing of the data.
	conn.SetWriteDeadline(time.Now().Add(s.cfg.CommandTimeout))
	if _, err := w.Write(body); err != nil {
		return err
	}
	if len(body) > 0 && body[len(body)-1] != '\n' {
		// The end of data is CRLF.CRLF: a last line without its line
		// end would swallow the dot.
		if _, err := io.WriteString(w, "\r\n"); err != nil {
			return err
		}
	}
	return w.Close()
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
func (s *Sender) connect(ctx context.Context, addr, host string) (*smtp.Client, net.Conn, bool, error) {
	c, conn, err := s.dial(ctx, addr)
	if err != nil {
		return nil, nil, false, err
	}
	if ok, _ := c.Extension("STARTTLS"); !ok {
		return c, conn, false, nil
	}
	tc, refused, err := s.startTLS(ctx, conn, host)
	if refused {
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
		tlsC := smtp.NewClient(&greetedConn{Conn: tc, r: io.MultiReader(strings.NewReader("220 "+host+"\r\n"), tc)})
		s.timeouts(tlsC)
		if err = tlsC.Hello(s.hostname); err == nil {
			return tlsC, tc, true, nil
		}
		tlsC.Close()
	}
	conn.Close()
	if ctx.Err() != nil {
		return nil, nil, false, ctx.Err()
	}
	s.log.Info("TLS failed, trying without", "host", host, "addr", addr, "err", err)
	c, conn, err = s.dial(ctx, addr)
	return c, conn, false, err
}

// dial connects to addr, reads the greeting and says EHLO (HELO if the
// server does not know EHLO).
func (s *Sender) dial(ctx context.Context, addr string) (*smtp.Client, net.Conn, error) {
	d := net.Dialer{Timeout: s.cfg.DialTimeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, err
	}
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
func (s *Sender) startTLS(ctx context.Context, conn net.Conn, host string) (*tls.Conn, bool, error) {
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	conn.SetDeadline(time.Now().Add(s.cfg.CommandTimeout))
	defer conn.SetDeadline(time.Time{})
	if _, err := io.WriteString(conn, "STARTTLS\r\n"); err != nil {
		return nil, false, err
	}
	// A reader of one byte at a time: whatever follows the reply belongs
	// to the TLS handshake.
	r := textproto.NewReader(bufio.NewReaderSize(byteReader{conn}, 16))
	if _, _, err := r.ReadResponse(220); err != nil {
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
	if cfg.ServerName == "" && net.ParseIP(host) == nil {
		cfg.ServerName = host
	}
	tc := tls.Client(conn, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, false, fmt.Errorf("TLS handshake: %w", err)
	}
	return tc, false, nil
}

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
