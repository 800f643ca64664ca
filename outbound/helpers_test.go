package outbound

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/mailhost/mailhost/internal/testcert"
	"github.com/mailhost/mailhost/internal/testclock"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
)

// testNow is where every test clock starts.
var testNow = time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)

// clock is a test's queue clock; it moves only when told (Add).
type clock = testclock.Clock

func newClock() *clock { return testclock.New(testNow) }

// fixture is a store in a temporary directory with one partner and the
// hosted domain a.test: mailboxes bob and carol, alias info -> bob.
type fixture struct {
	t       *testing.T
	dir     string
	st      *boltstore.Store
	partner mailstore.Partner
	domain  mailstore.Domain
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{t: t, dir: t.TempDir()}
	f.open()
	ctx := context.Background()
	var err error
	if f.partner, err = f.st.CreatePartner(ctx, "acme", testNow); err != nil {
		t.Fatalf("create partner: %v", err)
	}
	plan := mailstore.Plan{Name: "starter", QuotaMB: 1024, RetentionDays: 30, TransferMonthlyMB: 5120}
	if f.domain, err = f.st.CreateDomain(ctx, f.partner.ID, mailstore.NewDomain{Name: "a.test", Plan: plan, MaxMailboxes: 100, MaxAliases: 100}, testNow); err != nil {
		t.Fatalf("create domain: %v", err)
	}
	for _, m := range []string{"bob@a.test", "carol@a.test"} {
		if _, err := f.st.CreateMailbox(ctx, f.partner.ID, "a.test", m, "unused-hash", testNow); err != nil {
			t.Fatalf("create mailbox %s: %v", m, err)
		}
	}
	if _, err := f.st.CreateAlias(ctx, f.partner.ID, "a.test", "info@a.test", "bob@a.test", testNow); err != nil {
		t.Fatalf("create alias: %v", err)
	}
	return f
}

// open opens the fixture's store, closed at the end of the test.
func (f *fixture) open() {
	f.t.Helper()
	st, err := boltstore.Open(context.Background(), f.dir, boltstore.Options{})
	if err != nil {
		f.t.Fatalf("open store: %v", err)
	}
	f.st = st
	f.t.Cleanup(func() { st.Close() })
}

// queue stores a message as smtpd's submission would: one Deliver with a
// relay part, received at now.
func (f *fixture) queue(now time.Time, r mailstore.Relay, body string) {
	f.t.Helper()
	if _, err := f.st.Deliver(context.Background(), mailstore.Delivery{Body: []byte(body), ReceivedAt: now, Relay: []mailstore.Relay{r}}); err != nil {
		f.t.Fatalf("queue: %v", err)
	}
}

// submission is a relay from bob@a.test, as a user's submission queues it.
func (f *fixture) submission(to ...string) mailstore.Relay {
	return mailstore.Relay{Kind: mailstore.KindSubmission, DomainID: f.domain.ID, From: "bob@a.test", To: to}
}

// entries is the whole queue.
func (f *fixture) entries() []mailstore.Outbound {
	f.t.Helper()
	es, _, err := f.st.OutboundEntries(context.Background(), mailstore.Page{})
	if err != nil {
		f.t.Fatalf("outbound entries: %v", err)
	}
	return es
}

// waitFor polls cond until it holds, or fails the test after 10 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s\n%s", what, senderGoroutines())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitEmpty waits for the queue to be empty.
func (f *fixture) waitEmpty() {
	f.t.Helper()
	waitFor(f.t, "an empty queue", func() bool { return len(f.entries()) == 0 })
}

// waitAttempts waits for the only entry of the queue to have n attempts,
// and answers it.
func (f *fixture) waitAttempts(n int) mailstore.Outbound {
	f.t.Helper()
	var e mailstore.Outbound
	waitFor(f.t, "attempt "+strconv.Itoa(n), func() bool {
		es := f.entries()
		if len(es) != 1 {
			return false
		}
		e = es[0]
		return e.Attempts >= n
	})
	if e.Attempts != n {
		f.t.Fatalf("entry has %d attempts, want %d", e.Attempts, n)
	}
	return e
}

// inbox returns the bodies in a mailbox's INBOX, in UID order.
func (f *fixture) inbox(email string) [][]byte {
	f.t.Helper()
	ctx := context.Background()
	m, _, err := f.st.MailboxByEmail(ctx, email)
	if err != nil {
		f.t.Fatalf("mailbox %s: %v", email, err)
	}
	fo, err := f.st.Folder(ctx, m.ID, "INBOX")
	if err != nil {
		f.t.Fatalf("INBOX of %s: %v", email, err)
	}
	msgs, err := f.st.Messages(ctx, m.ID, fo.ID)
	if err != nil {
		f.t.Fatalf("messages of %s: %v", email, err)
	}
	var out [][]byte
	for _, msg := range msgs {
		b, err := f.st.Body(ctx, m.ID, fo.ID, msg.UID)
		if err != nil {
			f.t.Fatalf("body of %s/%d: %v", email, msg.UID, err)
		}
		out = append(out, b)
	}
	return out
}

// waitInbox waits for a mailbox to hold n messages and answers them.
func (f *fixture) waitInbox(email string, n int) [][]byte {
	f.t.Helper()
	var got [][]byte
	waitFor(f.t, email+" to get mail", func() bool { got = f.inbox(email); return len(got) >= n })
	if len(got) != n {
		f.t.Fatalf("%s has %d messages, want %d", email, len(got), n)
	}
	return got
}

// resolver answers from maps: MX records by domain, addresses by host,
// TXT records by name. A name in none is not found.
type resolver struct {
	mx    map[string][]*net.MX
	addrs map[string][]net.IPAddr
	txt   map[string][]string
}

func (r resolver) LookupTXT(ctx context.Context, name string) ([]string, error) {
	if t, ok := r.txt[name]; ok {
		return t, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
}

func (r resolver) LookupMX(ctx context.Context, name string) ([]*net.MX, error) {
	if mx, ok := r.mx[name]; ok {
		return mx, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
}

func (r resolver) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	if a, ok := r.addrs[strings.TrimSuffix(host, ".")]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

var loopback = []net.IPAddr{{IP: net.IPv4(127, 0, 0, 1)}}

// mxFor is a resolver sending each domain to its own MX host name, all
// at 127.0.0.1.
func mxFor(domains ...string) resolver {
	r := resolver{mx: map[string][]*net.MX{}, addrs: map[string][]net.IPAddr{}}
	for _, d := range domains {
		r.mx[d] = []*net.MX{{Host: "mx." + d + ".", Pref: 10}}
		r.addrs["mx."+d] = loopback
	}
	return r
}

// received is one message a fake MX accepted.
type received struct {
	from string
	to   []string
	body string
	tls  bool
}

// fakeMX is an SMTP server on 127.0.0.1 that answers as told and keeps
// what it accepts. Its fields are set before the first connection.
type fakeMX struct {
	addr string
	port int
	// rcpt answers RCPT; nil accepts.
	rcpt func(to string) error
	// data answers the end of DATA, n counting from 1; nil accepts.
	data func(n int) error
	// hold keeps every DATA that long before it answers.
	hold time.Duration

	// mu guards the fields below.
	mu    sync.Mutex
	got   []received
	datas int
	// active counts the transactions between their first RCPT and the end
	// of DATA, by the domain of that RCPT.
	active      map[string]int
	maxByDomain map[string]int
}

// newMX starts a fake MX; tlsConfig enables STARTTLS.
func newMX(t *testing.T, tlsConfig *tls.Config) *fakeMX {
	t.Helper()
	m := &fakeMX{active: map[string]int{}, maxByDomain: map[string]int{}}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		_, isTLS := c.TLSConnectionState()
		return &mxSession{mx: m, tls: isTLS}, nil
	}))
	srv.Domain = "mx.fake"
	srv.TLSConfig = tlsConfig
	srv.ReadTimeout = 10 * time.Second
	srv.WriteTimeout = 10 * time.Second
	srv.ErrorLog = discardLog{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m.addr = ln.Addr().String()
	m.port = ln.Addr().(*net.TCPAddr).Port
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return m
}

func (m *fakeMX) messages() []received {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]received(nil), m.got...)
}

func (m *fakeMX) waitMessages(t *testing.T, n int) []received {
	t.Helper()
	var got []received
	waitFor(t, "the MX to get "+strconv.Itoa(n)+" messages", func() bool { got = m.messages(); return len(got) >= n })
	if len(got) != n {
		t.Fatalf("MX got %d messages, want %d", len(got), n)
	}
	return got
}

type mxSession struct {
	mx   *fakeMX
	tls  bool
	txOf string // the domain the transaction is counted for, "" if none
	from string
	to   []string
}

func (s *mxSession) Mail(from string, _ *smtp.MailOptions) error {
	s.from, s.to = from, nil
	return nil
}

func (s *mxSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.mx.mu.Lock()
	if s.txOf == "" {
		s.txOf = to[strings.LastIndexByte(to, '@')+1:]
		s.mx.active[s.txOf]++
		s.mx.maxByDomain[s.txOf] = max(s.mx.maxByDomain[s.txOf], s.mx.active[s.txOf])
	}
	s.mx.mu.Unlock()
	if s.mx.rcpt != nil {
		if err := s.mx.rcpt(to); err != nil {
			return err
		}
	}
	s.to = append(s.to, to)
	return nil
}

func (s *mxSession) Data(r io.Reader) error {
	var b bytes.Buffer
	if _, err := b.ReadFrom(r); err != nil {
		return err
	}
	time.Sleep(s.mx.hold)
	s.mx.mu.Lock()
	defer s.mx.mu.Unlock()
	s.endTx()
	s.mx.datas++
	if s.mx.data != nil {
		if err := s.mx.data(s.mx.datas); err != nil {
			return err
		}
	}
	s.mx.got = append(s.mx.got, received{from: s.from, to: s.to, body: b.String(), tls: s.tls})
	return nil
}

// endTx ends the counted transaction; mx.mu is held.
func (s *mxSession) endTx() {
	if s.txOf != "" {
		s.mx.active[s.txOf]--
		s.txOf = ""
	}
}

func (s *mxSession) Reset() {
	s.mx.mu.Lock()
	s.endTx()
	s.mx.mu.Unlock()
}

func (s *mxSession) Logout() error { s.Reset(); return nil }

type discardLog struct{}

func (discardLog) Printf(string, ...any) {}
func (discardLog) Println(...any)        {}

// smtpErr is an SMTP reply for a fake MX to give.
func smtpErr(code int, enh smtp.EnhancedCode, msg string) error {
	return &smtp.SMTPError{Code: code, EnhancedCode: enh, Message: msg}
}

// selfSigned is a TLS server configuration with a fresh self-signed
// certificate.
func selfSigned(t *testing.T) *tls.Config {
	cert, _ := testcert.New(t, "mx.fake")
	return &tls.Config{Certificates: []tls.Certificate{cert}}
}

// env is a fixture with a running Sender.
type env struct {
	*fixture
	clock  *clock
	sender *Sender
	logs   *syncBuffer
	stop   func()
}

// start runs a Sender over the fixture's store until the test ends (or
// stop is called); cfg may change its Config, whose defaults here are
// the test clock, a fast poll, and AllowPrivate: the fake MX hosts
// listen on loopback.
func (f *fixture) start(clk *clock, cfg func(*Config)) *env {
	f.t.Helper()
	logs := &syncBuffer{}
	c := Config{
		AllowPrivate: true,
		Store:        f.st,
		Hostname:     "out.a.test",
		Now:          clk.Now,
		PollInterval: 20 * time.Millisecond,
		DialTimeout:  5 * time.Second,
		Logger:       slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if cfg != nil {
		cfg(&c)
	}
	s := New(c)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					f.t.Errorf("Run = %v, want nil", err)
				}
			case <-time.After(10 * time.Second):
				f.t.Errorf("Run did not return after its context was cancelled")
			}
		})
	}
	f.t.Cleanup(func() {
		stop()
		if f.t.Failed() {
			f.t.Logf("sender log:\n%s", logs.String())
		}
	})
	s.Wake()
	return &env{fixture: f, clock: clk, sender: s, logs: logs, stop: stop}
}

// syncBuffer is a bytes.Buffer safe for concurrent log writes.
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

// message is a small message with a Subject that tells it apart.
func message(subject string) string {
	return "From: Bob <bob@a.test>\r\nTo: someone\r\nSubject: " + subject + "\r\nMessage-ID: <" + subject + "@a.test>\r\n\r\nHello.\r\n"
}

var errNoSuchUser = smtpErr(550, smtp.EnhancedCode{5, 1, 1}, "no such user")
