package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/textproto"
	"time"
)

// smtpConn is the little of an SMTP client (RFC 5321) the load needs:
// EHLO, then MAIL, RCPT, DATA per message, one command at a time (no
// PIPELINING, like go-smtp's client and smtp-source), or with pipe set
// as one group (RFC 2920, as Postfix's SMTP client sends when the server
// offers PIPELINING): MAIL, RCPT and DATA in one write, then their three
// replies. It writes the
// message as it is, without dot-stuffing it: go-smtp's client stuffs
// byte by byte and costs about 2 ms of CPU per 100 KB message, CPU the
// server under test shares on a small machine. The messages this tool
// makes have no line that starts with a dot (checked by dotSafe).
type smtpConn struct {
	// bdat sends messages with BDAT (RFC 3030 CHUNKING), one LAST chunk
	// each, instead of DATA.
	bdat bool
	// pipe sends MAIL, RCPT and DATA (or BDAT and its chunk) together.
	pipe bool
	conn net.Conn
	r    *textproto.Reader
	w    *bufio.Writer
}

// dialSMTP connects, reads the greeting and says EHLO.
func dialSMTP(addr, helo string, timeout time.Duration) (*smtpConn, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	c := &smtpConn{conn: conn, r: textproto.NewReader(bufio.NewReader(conn)), w: bufio.NewWriterSize(conn, 64<<10)}
	if _, _, err := c.r.ReadResponse(220); err != nil {
		conn.Close()
		return nil, fmt.Errorf("greeting: %w", err)
	}
	if err := c.cmd(250, "EHLO %s", helo); err != nil {
		conn.Close()
		return nil, fmt.Errorf("EHLO: %w", err)
	}
	return c, nil
}

// cmd sends one command line and reads its reply, which must have code
// expect (textproto: a three-digit code, or its first digit).
func (c *smtpConn) cmd(expect int, format string, args ...any) error {
	fmt.Fprintf(c.w, format+"\r\n", args...)
	if err := c.w.Flush(); err != nil {
		return err
	}
	_, _, err := c.r.ReadResponse(expect)
	return err
}

// send delivers one message (head then body, together CRLF-terminated
// and dot-safe) and answers the time from the client's end of DATA (the
// final ".", or the BDAT chunk's last byte, flushed) to the 250. Without
// pipe each command's reply is read before the next command; with it
// (RFC 2920) MAIL, RCPT and DATA go in one write and their replies are
// read after, and with BDAT the message goes in that write too (DATA ends
// a group: its body waits for the 354).
func (c *smtpConn) send(from, to string, head, body []byte) (time.Duration, error) {
	size := len(head) + len(body)
	type command struct {
		line, name string
		expect     int
	}
	cmds := []command{{fmt.Sprintf("MAIL FROM:<%s> SIZE=%d", from, size), "MAIL", 250}, {fmt.Sprintf("RCPT TO:<%s>", to), "RCPT " + to, 250}}
	if !c.bdat {
		cmds = append(cmds, command{"DATA", "DATA", 354})
	}
	var sent time.Time // the message's last byte flushed
	message := func() error {
		if c.bdat {
			fmt.Fprintf(c.w, "BDAT %d LAST\r\n", size)
		}
		c.w.Write(head)
		c.w.Write(body)
		if !c.bdat {
			c.w.WriteString(".\r\n")
		}
		err := c.w.Flush()
		sent = time.Now()
		return err
	}
	for i, cmd := range cmds {
		c.w.WriteString(cmd.line + "\r\n")
		if c.pipe && i < len(cmds)-1 {
			continue
		}
		if c.pipe && c.bdat {
			if err := message(); err != nil {
				return 0, fmt.Errorf("BDAT: %w", err)
			}
		} else if err := c.w.Flush(); err != nil {
			return 0, fmt.Errorf("%s: %w", cmd.name, err)
		}
		first := i
		if c.pipe {
			first = 0
		}
		for _, r := range cmds[first : i+1] {
			if _, _, err := c.r.ReadResponse(r.expect); err != nil {
				return 0, fmt.Errorf("%s: %w", r.name, err)
			}
		}
	}
	if !c.pipe || !c.bdat {
		if err := message(); err != nil {
			return 0, fmt.Errorf("DATA: %w", err)
		}
	}
	if _, _, err := c.r.ReadResponse(250); err != nil {
		return 0, fmt.Errorf("end of DATA for %s: %w", to, err)
	}
	return time.Since(sent), nil
}

// startTLS sends STARTTLS (RFC 3207), makes the handshake accepting any
// certificate (mailhost's own is self-signed) and says EHLO again, as
// section 4.2 requires.
func (c *smtpConn) startTLS(helo string) error {
	if err := c.cmd(220, "STARTTLS"); err != nil {
		return fmt.Errorf("STARTTLS: %w", err)
	}
	tc := tls.Client(c.conn, &tls.Config{InsecureSkipVerify: true})
	if err := tc.Handshake(); err != nil {
		return fmt.Errorf("TLS handshake: %w", err)
	}
	c.conn = tc
	c.r = textproto.NewReader(bufio.NewReader(tc))
	c.w = bufio.NewWriterSize(tc, 64<<10)
	if err := c.cmd(250, "EHLO %s", helo); err != nil {
		return fmt.Errorf("EHLO after STARTTLS: %w", err)
	}
	return nil
}

// authPlain logs in with AUTH PLAIN (RFC 4954, RFC 4616), the initial
// response on the command line.
func (c *smtpConn) authPlain(user, password string) error {
	resp := base64.StdEncoding.EncodeToString([]byte("\x00" + user + "\x00" + password))
	if err := c.cmd(235, "AUTH PLAIN %s", resp); err != nil {
		return fmt.Errorf("AUTH PLAIN as %s: %w", user, err)
	}
	return nil
}

func (c *smtpConn) quit() error {
	err := c.cmd(221, "QUIT")
	if cerr := c.conn.Close(); err == nil {
		err = cerr
	}
	return err
}

// dotSafe checks that b can be sent after DATA as it is: CRLF line ends,
// no line that starts with "." (RFC 5321 section 4.5.2), a final CRLF.
func dotSafe(b []byte) error {
	if !bytes.HasSuffix(b, []byte("\r\n")) {
		return errors.New("message does not end in CRLF")
	}
	if b[0] == '.' || bytes.Contains(b, []byte("\n.")) {
		return errors.New("message has a line starting with a dot")
	}
	if bytes.Count(b, []byte("\n")) != bytes.Count(b, []byte("\r\n")) {
		return errors.New("message has a bare LF")
	}
	return nil
}
