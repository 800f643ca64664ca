package smtpd

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/mailhost/mailhost/credential"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
)

// testNow is the clock of every test server.
var testNow = time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)

var (
	hashOnce sync.Once
	hash     string
)

// passwordHash is one real argon2id hash shared by the tests' mailboxes;
// the MX never checks it.
func passwordHash(t *testing.T) string {
	t.Helper()
	hashOnce.Do(func() {
		var err error
		if hash, err = credential.HashPassword("correct horse battery"); err != nil {
			panic(err)
		}
	})
	return hash
}

// fixture is the directory every test server starts with.
//
//	a.test: bob, carol, jösé; aliases info -> bob, fwd -> someone@remote.test,
//	        loop1 <-> loop2, c1 -> ... -> c8 -> bob (8 hops, allowed),
//	        d1 -> ... -> d9 -> bob (9 hops, too deep), x -> nobody@b.test
//	b.test: dave, erin; catch-all @b.test -> dave
//
// Both are the partner acme's, verified.
type fixture struct {
	t       *testing.T
	st      *boltstore.Store
	dir     string
	partner mailstore.Partner
}

func newFixture(t *testing.T, dir string) *fixture {
	t.Helper()
	ctx := context.Background()
	st, err := boltstore.Open(ctx, dir, boltstore.Options{})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	f := &fixture{t: t, st: st, dir: dir}
	if f.partner, err = st.CreatePartner(ctx, "acme", testNow); err != nil {
		t.Fatalf("create partner: %v", err)
	}
	plan := mailstore.Plan{Name: "starter", QuotaMB: 1024, RetentionDays: 30, TransferMonthlyMB: 5120}
	for _, d := range []string{"a.test", "b.test"} {
		if _, err := st.CreateDomain(ctx, f.partner.ID, mailstore.NewDomain{Name: d, Plan: plan, MaxMailboxes: 100, MaxAliases: 100}, testNow); err != nil {
			t.Fatalf("create domain %s: %v", d, err)
		}
		// Verified, so that their users send anywhere (policy.MayReach).
		if _, err := st.SetVerified(ctx, f.partner.ID, d, true, testNow); err != nil {
			t.Fatalf("verify domain %s: %v", d, err)
		}
	}
	for _, m := range []string{"bob@a.test", "carol@a.test", "jösé@a.test", "dave@b.test", "erin@b.test"} {
		f.mailbox(m)
	}
	aliases := [][2]string{
		{"info@a.test", "bob@a.test"},
		{"fwd@a.test", "someone@remote.test"},
		{"loop1@a.test", "loop2@a.test"},
		{"loop2@a.test", "loop1@a.test"},
		{"x@a.test", "nobody@b.test"},
		{"@b.test", "dave@b.test"},
	}
	for i := 1; i < 8; i++ {
		aliases = append(aliases, [2]string{fmt.Sprintf("c%d@a.test", i), fmt.Sprintf("c%d@a.test", i+1)})
	}
	aliases = append(aliases, [2]string{"c8@a.test", "bob@a.test"})
	for i := 1; i < 9; i++ {
		aliases = append(aliases, [2]string{fmt.Sprintf("d%d@a.test", i), fmt.Sprintf("d%d@a.test", i+1)})
	}
	aliases = append(aliases, [2]string{"d9@a.test", "bob@a.test"})
	for _, a := range aliases {
		if _, err := st.CreateAlias(ctx, f.partner.ID, a[0][strings.LastIndexByte(a[0], '@')+1:], a[0], a[1], testNow); err != nil {
			t.Fatalf("create alias %s: %v", a[0], err)
		}
	}
	return f
}

func (f *fixture) mailbox(email string) mailstore.Mailbox {
	f.t.Helper()
	m, err := f.st.CreateMailbox(context.Background(), f.partner.ID, email[strings.LastIndexByte(email, '@')+1:], email, passwordHash(f.t), testNow)
	if err != nil {
		f.t.Fatalf("create mailbox %s: %v", email, err)
	}
	return m
}

// env is a running server over a fixture's store.
type env struct {
	*fixture
	srv  *Server
	addr string
	logs *syncBuffer
}

// newEnv starts a server on 127.0.0.1:0; cfg may change its Config.
func newEnv(t *testing.T, cfg func(*Config)) *env {
	t.Helper()
	f := newFixture(t, t.TempDir())
	logs := &syncBuffer{}
	c := Config{
		Store:    f.st,
		Hostname: "mx.test",
		Logger:   slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:      func() time.Time { return testNow },
	}
	if cfg != nil {
		cfg(&c)
	}
	srv := New(c)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown = %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("Serve = %v, want nil after Shutdown", err)
		}
		if err := f.st.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	return &env{fixture: f, srv: srv, addr: ln.Addr().String(), logs: logs}
}

// client dials the server with go-smtp's client and says EHLO.
func (e *env) client(t *testing.T) *smtp.Client {
	t.Helper()
	c, err := smtp.Dial(e.addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Hello("client.test"); err != nil {
		t.Fatalf("EHLO: %v", err)
	}
	return c
}

// send delivers one message with go-smtp's client on a new connection.
func (e *env) send(t *testing.T, from string, to []string, msg string) error {
	t.Helper()
	c := e.client(t)
	err := c.SendMail(from, to, strings.NewReader(msg))
	c.Quit()
	return err
}

// inbox returns the bodies in a mailbox's INBOX, in UID order.
func (f *fixture) inbox(t *testing.T, email string) [][]byte {
	t.Helper()
	return f.folder(t, email, "INBOX")
}

// folder returns the bodies in one of a mailbox's folders, in UID order.
func (f *fixture) folder(t *testing.T, email, name string) [][]byte {
	t.Helper()
	ctx := context.Background()
	m, _, err := f.st.MailboxByEmail(ctx, email)
	if err != nil {
		t.Fatalf("mailbox %s: %v", email, err)
	}
	fo, err := f.st.Folder(ctx, m.ID, name)
	if err != nil {
		t.Fatalf("%s of %s: %v", name, email, err)
	}
	msgs, err := f.st.Messages(ctx, m.ID, fo.ID)
	if err != nil {
		t.Fatalf("messages of %s: %v", email, err)
	}
	var out [][]byte
	for _, msg := range msgs {
		b, err := f.st.Body(ctx, m.ID, fo.ID, msg.UID)
		if err != nil {
			t.Fatalf("body of %s/%d: %v", email, msg.UID, err)
		}
		if int64(len(b)) != msg.Size {
			t.Errorf("%s/%d: body of %d bytes, Size %d", email, msg.UID, len(b), msg.Size)
		}
		out = append(out, b)
	}
	return out
}

// raw is a client speaking the protocol line by line, for what go-smtp's
// client will not send.
type raw struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

// dialRaw connects and reads the greeting.
func (e *env) dialRaw(t *testing.T) *raw {
	t.Helper()
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	r := &raw{t: t, c: c, r: bufio.NewReader(c)}
	r.expect("220 ")
	return r
}

// send writes lines, each ended by CRLF, in one write.
func (r *raw) send(lines ...string) {
	r.t.Helper()
	r.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.c.Write([]byte(strings.Join(lines, "\r\n") + "\r\n")); err != nil {
		r.t.Fatalf("write %q: %v", lines, err)
	}
}

// write writes s as it is.
func (r *raw) write(s string) {
	r.t.Helper()
	r.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(r.c, s); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

func newReader(c net.Conn) *bufio.Reader { return bufio.NewReader(c) }

// reply reads one reply, all its lines joined by "\n"; "" at EOF.
func (r *raw) reply() string {
	r.t.Helper()
	r.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var lines []string
	for {
		l, err := r.r.ReadString('\n')
		if err != nil {
			if len(lines) == 0 && l == "" {
				return ""
			}
			r.t.Fatalf("read reply after %q: %v", lines, err)
		}
		l = strings.TrimRight(l, "\r\n")
		lines = append(lines, l)
		if len(l) < 4 || l[3] != '-' {
			return strings.Join(lines, "\n")
		}
	}
}

// expect reads a reply and checks that its last line starts with prefix.
func (r *raw) expect(prefix string) string {
	r.t.Helper()
	got := r.reply()
	last := got[strings.LastIndexByte(got, '\n')+1:]
	if !strings.HasPrefix(last, prefix) {
		r.t.Fatalf("reply = %q, want %q...", got, prefix)
	}
	return got
}

// cmd sends one command and checks its reply.
func (r *raw) cmd(line, prefix string) string {
	r.t.Helper()
	r.send(line)
	return r.expect(prefix)
}

// syncBuffer is a bytes.Buffer safe for the server's log writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// smtpCode returns the code and enhanced code of a go-smtp client error,
// as "550 5.1.1".
func smtpCode(err error) string {
	var se *smtp.SMTPError
	if !errors.As(err, &se) {
		return fmt.Sprintf("not an SMTP error: %v", err)
	}
	return fmt.Sprintf("%d %d.%d.%d", se.Code, se.EnhancedCode[0], se.EnhancedCode[1], se.EnhancedCode[2])
}

// message is a small message with a Subject that tells it apart.
func message(subject, body string) string {
	return "From: sender@remote.test\r\nTo: someone\r\nSubject: " + subject + "\r\n\r\n" + body + "\r\n"
}
