package service

import (
	"net"
	"sync"
	"testing"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/mailhost/mailhost/internal/dnstest"
)

// loginSink is a sink that takes mail only after AUTH PLAIN, in clear
// text (it is on loopback), and keeps who logged in.
type loginSink struct {
	*sink
	user, pass string
	// mu guards logins.
	mu     sync.Mutex
	logins []string
}

type loginSinkSession struct {
	*sinkSession
	ls     *loginSink
	authed bool
}

func (s *loginSinkSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *loginSinkSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != s.ls.user || pass != s.ls.pass {
			return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "bad credentials"}
		}
		s.ls.mu.Lock()
		s.ls.logins = append(s.ls.logins, user)
		s.ls.mu.Unlock()
		s.authed = true
		return nil
	}), nil
}

func (s *loginSinkSession) Mail(from string, o *smtp.MailOptions) error {
	if !s.authed {
		return &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0}, Message: "authentication required"}
	}
	return s.sinkSession.Mail(from, o)
}

func startLoginSink(t *testing.T, user, pass string) *loginSink {
	t.Helper()
	ls := &loginSink{sink: &sink{}, user: user, pass: pass}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &loginSinkSession{sinkSession: &sinkSession{s: ls.sink, conn: c}, ls: ls}, nil
	}))
	srv.Domain = "relay.test"
	srv.AllowInsecureAuth = true
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ls.addr = ln.Addr().String()
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ls
}

// relay_username and relay_password reach the outbound queue: submitted
// mail goes out through a relay that wants a login.
func TestRelayLogin(t *testing.T) {
	relay := startLoginSink(t, "queue@relay.test", "relay pass 1")
	dns := dnstest.Start(t)
	addrs, out, _ := startServer(t, t.TempDir(), "MAILHOST_SUBMISSION", "127.0.0.1:0",
		"MAILHOST_RELAY", relay.addr, "MAILHOST_RELAY_USERNAME", "queue@relay.test", "MAILHOST_RELAY_PASSWORD", "relay pass 1",
		"MAILHOST_DNS", dns.Addr)
	key := keyRE.FindString(out.String())
	api := "http://" + addrs.HTTP
	for _, c := range []struct{ path, body string }{
		{"/domains/", `{"name":"example.com"}`},
		{"/users/", `{"domain_name":"example.com","email":"alice@example.com","password":"password123"}`},
	} {
		if code, body := call(t, "POST", api+c.path, key, c.body); code != 201 {
			t.Fatalf("POST %s = %d %s", c.path, code, body)
		}
	}
	verifyDomain(t, dns, api, key, "example.com", "mx.test")
	msg := "From: alice@example.com\r\nTo: bob@remote.test\r\nSubject: via login\r\n\r\nHi Bob!\r\n"
	if err := submit(addrs.Submission, "alice@example.com", "password123", "alice@example.com", []string{"bob@remote.test"}, msg); err != nil {
		t.Fatalf("submit: %v", err)
	}
	relay.wait(t, "bob@remote.test")
	relay.mu.Lock()
	defer relay.mu.Unlock()
	if len(relay.logins) != 1 || relay.logins[0] != "queue@relay.test" {
		t.Errorf("relay logins %q, want one as queue@relay.test", relay.logins)
	}
}
