package outbound

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// tcpPair is both ends of a connection on 127.0.0.1.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

func TestReplyLimitConn(t *testing.T) {
	client, server := tcpPair(t)
	c := &replyLimitConn{Conn: client, max: 10}
	client.SetDeadline(time.Now().Add(5 * time.Second))

	// readN reads n bytes the server sent.
	readN := func(n int) error {
		t.Helper()
		_, err := io.ReadFull(c, make([]byte, n))
		return err
	}
	server.Write([]byte("0123456789"))
	if err := readN(10); err != nil {
		t.Fatalf("reading 10 bytes under a bound of 10: %v", err)
	}
	// A write starts a new reply.
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	server.Write([]byte("0123456789abc"))
	if err := readN(10); err != nil {
		t.Fatalf("reading 10 bytes after a write: %v", err)
	}
	if err := readN(1); !errors.Is(err, errReplyTooLong) {
		t.Fatalf("reading byte 11 = %v, want %v", err, errReplyTooLong)
	}
	// The failure sticks, even after a write.
	c.Write([]byte("x"))
	if err := readN(1); !errors.Is(err, errReplyTooLong) {
		t.Errorf("reading after the failure and a write = %v, want %v", err, errReplyTooLong)
	}
	if got, want := errReplyTooLong.Error(), "reply longer than 64 KiB"; got != want {
		t.Errorf("errReplyTooLong = %q, want %q", got, want)
	}
}

// hostileMX is a TCP server on 127.0.0.1 that greets, answers EHLO
// (offering STARTTLS on its first connection when tlsConfig is set), and
// answers the command attack with an endless reply: write is called with
// the connection until it fails. The sessions that follow the first, as
// the client falls back from a failed TLS session to plain text, get an
// endless reply to EHLO too. Other commands get 250 (MAIL), 550 (RCPT)
// or 221. closed is told when a write fails, the client having closed
// the connection.
type hostileMX struct {
	port   int
	closed chan struct{}
}

func newHostileMX(t *testing.T, tlsConfig *tls.Config, attack string, write func(io.Writer) error) *hostileMX {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &hostileMX{port: ln.Addr().(*net.TCPAddr).Port, closed: make(chan struct{}, 16)}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for n := 1; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if n > 1 {
				wg.Go(func() { m.serve(c, nil, "EHLO", endlessLines) })
				continue
			}
			wg.Go(func() { m.serve(c, tlsConfig, attack, write) })
		}
	})
	return m
}

func (m *hostileMX) serve(c net.Conn, tlsConfig *tls.Config, attack string, write func(io.Writer) error) {
	defer c.Close()
	// A client that never stops reading would keep the test waiting.
	c.SetDeadline(time.Now().Add(20 * time.Second))
	var conn net.Conn = c
	r := bufio.NewReader(conn)
	io.WriteString(conn, "220 hostile.test ESMTP\r\n")
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		verb := strings.ToUpper(strings.Fields(line + " x")[0])
		switch {
		case verb == "EHLO" && tlsConfig != nil && conn == c:
			// The attack comes inside TLS.
			io.WriteString(conn, "250-hostile.test\r\n250 STARTTLS\r\n")
		case verb == attack:
			if err := write(conn); err != nil {
				m.closed <- struct{}{}
			}
			return
		case verb == "EHLO":
			io.WriteString(conn, "250 hostile.test\r\n")
		case verb == "STARTTLS":
			io.WriteString(conn, "220 go ahead\r\n")
			conn = tls.Server(c, tlsConfig)
			r = bufio.NewReader(conn)
		case verb == "MAIL":
			io.WriteString(conn, "250 ok\r\n")
		case verb == "RCPT":
			io.WriteString(conn, "550 5.1.1 no such user\r\n")
		default:
			io.WriteString(conn, "221 bye\r\n")
			return
		}
	}
}

// endlessLines writes "250-AAA…" lines until the write fails.
func endlessLines(w io.Writer) error {
	line := []byte("250-" + strings.Repeat("A", 990) + "\r\n")
	for {
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
}

// endlessLine writes one "220 AAA…" line that never ends.
func endlessLine(w io.Writer) error {
	if _, err := io.WriteString(w, "220 "); err != nil {
		return err
	}
	chunk := []byte(strings.Repeat("A", 4096))
	for {
		if _, err := w.Write(chunk); err != nil {
			return err
		}
	}
}

// A server that does not stop replying defers the message when the reply
// passes maxReplyBytes, at once rather than after CommandTimeout: in the
// plain session and inside TLS, to go-smtp's client and to command alike.
// A TLS session that fails so falls back to plain text, as any failed TLS
// session does, and the plain session fails the same way.
func TestEndlessReplyDefers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tls    bool
		attack string
		write  func(io.Writer) error
	}{
		{"EHLO lines", false, "EHLO", endlessLines},
		{"EHLO lines in TLS", true, "EHLO", endlessLines},
		{"STARTTLS line", true, "STARTTLS", endlessLine},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			var tlsConfig *tls.Config
			if tc.tls {
				tlsConfig = selfSigned(t)
			}
			mx := newHostileMX(t, tlsConfig, tc.attack, tc.write)
			clk := newClock()
			f.queue(clk.Now(), f.submission("x@remote.test"), message("hostile"))
			start := time.Now()
			e := f.start(clk, func(c *Config) {
				c.Resolver = mxFor("remote.test")
				c.Port = mx.port
				// Without the bound the attempt would last this long.
				c.CommandTimeout = time.Minute
			})
			got := f.waitAttempts(1)
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("attempt took %v, want a few seconds at most", d)
			}
			if r := got.Recipients[0]; r.State != mailstore.RecipientPending || !got.NextAttempt.After(clk.Now()) {
				t.Errorf("entry %+v, want its recipient pending and a retry later", got)
			}
			if !strings.Contains(got.LastError, "reply longer than 64 KiB") {
				t.Errorf("recorded error %q, want it to say the reply was too long", got.LastError)
			}
			if tc.tls && !strings.Contains(e.logs.String(), "reply longer than 64 KiB") {
				t.Errorf("TLS session's failure not logged with the reason:\n%s", e.logs.String())
			}
			if n := e.sender.sessions.idleCount(); n != 0 {
				t.Errorf("%d idle sessions, want 0", n)
			}
		})
	}
}

// A server whose reply to RSET never ends: the session is closed, not
// kept for the next message, and the attempt ends at once.
func TestEndlessRSETReply(t *testing.T) {
	f := newFixture(t)
	mx := newHostileMX(t, nil, "RSET", endlessLine)
	clk := newClock()
	f.queue(clk.Now(), f.submission("x@remote.test"), message("hostile"))
	start := time.Now()
	e := f.start(clk, func(c *Config) {
		c.Resolver = mxFor("remote.test")
		c.Port = mx.port
		c.CommandTimeout = time.Minute
	})
	select {
	case <-mx.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the client did not close the session after an endless reply to RSET")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("attempt took %v, want a few seconds at most", d)
	}
	f.waitEmpty() // the 550 bounced the recipient
	if n := e.sender.sessions.idleCount(); n != 0 {
		t.Errorf("%d idle sessions, want 0", n)
	}
}
