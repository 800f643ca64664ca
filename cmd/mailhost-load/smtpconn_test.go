package main

import (
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

// recBackend keeps what a go-smtp server was sent.
type recBackend struct {
	mu   sync.Mutex
	msgs []string
}

func (b *recBackend) NewSession(*smtp.Conn) (smtp.Session, error) { return &recSession{b: b}, nil }

type recSession struct {
	b        *recBackend
	from, to string
}

func (s *recSession) AuthPlain(string, string) error { return errors.New("no auth") }
func (s *recSession) Mail(from string, _ *smtp.MailOptions) error {
	s.from = from
	return nil
}
func (s *recSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.to = to
	return nil
}
func (s *recSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.b.mu.Lock()
	s.b.msgs = append(s.b.msgs, s.from+">"+s.to+":"+string(b))
	s.b.mu.Unlock()
	return nil
}
func (s *recSession) Reset()        {}
func (s *recSession) Logout() error { return nil }

// TestSend: the load's SMTP client delivers through a real SMTP server
// one command at a time, pipelined (RFC 2920), and with BDAT, each
// pipelined or not.
func TestSend(t *testing.T) {
	for _, c := range []struct {
		name       string
		pipe, bdat bool
	}{{"lockstep", false, false}, {"pipelining", true, false}, {"bdat", false, true}, {"bdat pipelined", true, true}} {
		t.Run(c.name, func(t *testing.T) {
			be := &recBackend{}
			srv := smtp.NewServer(be)
			srv.Domain = "sink.test"
			srv.EnableBINARYMIME = true
			srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go srv.Serve(l)
			defer srv.Close()
			conn, err := dialSMTP(l.Addr().String(), "load.test", 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			conn.pipe, conn.bdat = c.pipe, c.bdat
			var want []string
			for i, to := range []string{"a@x.test", "b@x.test"} {
				head := []byte("Subject: " + strings.Repeat("s", i+1) + "\r\n\r\n")
				body := []byte("hello\r\n")
				if _, err := conn.send("from@y.test", to, head, body); err != nil {
					t.Fatalf("send %d: %v", i, err)
				}
				want = append(want, "from@y.test>"+to+":"+string(head)+string(body))
			}
			if err := conn.quit(); err != nil {
				t.Errorf("quit: %v", err)
			}
			be.mu.Lock()
			defer be.mu.Unlock()
			if strings.Join(be.msgs, "|") != strings.Join(want, "|") {
				t.Errorf("server got %q, want %q", be.msgs, want)
			}
		})
	}
}
