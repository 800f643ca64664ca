package smtp_test

import (
	"bufio"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/emersion/go-smtp"
)

// countingListener counts the writes of the connections it accepts.
type countingListener struct {
	net.Listener
	writes atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, writes: &l.writes}, nil
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c *countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// mailhost patch: a pipelined MAIL, RCPT and DATA (RFC 2920) are answered
// in one write; the same commands one at a time, in one write each; an
// EHLO reply of many lines, in one.
func TestPipelinedRepliesOneWrite(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: l}
	be := new(backend)
	s := smtp.NewServer(be)
	s.Domain = "localhost"
	go s.Serve(cl)
	defer s.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	// reply reads one reply (its lines) and answers its last line.
	reply := func() string {
		t.Helper()
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if len(line) < 4 || line[3] != '-' {
				return strings.TrimSpace(line)
			}
		}
	}
	send := func(s string) {
		t.Helper()
		if _, err := c.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(code string) {
		t.Helper()
		if got := reply(); !strings.HasPrefix(got, code) {
			t.Fatalf("reply %q, want %s", got, code)
		}
	}
	expect("220")
	w0 := cl.writes.Load()
	send("EHLO client.test\r\n")
	expect("250")
	if n := cl.writes.Load() - w0; n != 1 {
		t.Errorf("EHLO answered in %d writes, want 1", n)
	}

	w0 = cl.writes.Load()
	send("MAIL FROM:<a@client.test>\r\nRCPT TO:<b@server.test>\r\nDATA\r\n")
	expect("250")
	expect("250")
	expect("354")
	if n := cl.writes.Load() - w0; n != 1 {
		t.Errorf("pipelined MAIL, RCPT, DATA answered in %d writes, want 1", n)
	}
	send("Subject: x\r\n\r\nhi\r\n.\r\n")
	expect("250")

	w0 = cl.writes.Load()
	for _, cmd := range []string{"MAIL FROM:<a@client.test>", "RCPT TO:<b@server.test>", "RSET"} {
		send(cmd + "\r\n")
		expect("250")
	}
	if n := cl.writes.Load() - w0; n != 3 {
		t.Errorf("MAIL, RCPT, RSET one at a time answered in %d writes, want 3", n)
	}
	send("QUIT\r\n")
	expect("221")
	if len(be.anonmsgs) != 1 || string(be.anonmsgs[0].Data) != "Subject: x\r\n\r\nhi\r\n" {
		t.Errorf("messages %v, want the one sent", be.anonmsgs)
	}
}
