package outbound

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// relayServer is a fake MX or relay: fakeMX's recording, plus what the
// tests of sessions look at: the connections it accepted, the commands
// each one carried (those sent in plain text), and the logins. Its
// options are fixed when it starts.
type relayServer struct {
	*fakeMX
	opts relayOptions

	// mu guards the fields below.
	mu     sync.Mutex
	conns  []*sniffConn
	logins []string // "MECH user" of each login that succeeded
	failed []string // the same of each that did not
}

type relayOptions struct {
	// tls enables STARTTLS; AUTH is then offered only after it, unless
	// insecureAuth.
	tls          *tls.Config
	insecureAuth bool
	// mechs are the AUTH mechanisms offered (PLAIN, LOGIN); none: no
	// AUTH, and MAIL needs no login. With mechs, user and pass are the
	// login accepted.
	mechs      []string
	user, pass string
	// readTimeout is how long the server waits for a command before it
	// answers 421 and closes the session. 0 means 10 seconds.
	readTimeout time.Duration
}

func newRelay(t *testing.T, o relayOptions) *relayServer {
	t.Helper()
	r := &relayServer{fakeMX: &fakeMX{active: map[string]int{}, maxByDomain: map[string]int{}}, opts: o}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		_, isTLS := c.TLSConnectionState()
		return &relaySession{mxSession: &mxSession{mx: r.fakeMX, tls: isTLS}, r: r}, nil
	}))
	srv.Domain = "relay.fake"
	srv.TLSConfig = o.tls
	srv.AllowInsecureAuth = o.insecureAuth
	srv.ReadTimeout = orDefault(o.readTimeout, 10*time.Second)
	srv.WriteTimeout = 10 * time.Second
	srv.ErrorLog = discardLog{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.addr = ln.Addr().String()
	r.port = ln.Addr().(*net.TCPAddr).Port
	go srv.Serve(sniffListener{Listener: ln, r: r})
	t.Cleanup(func() { srv.Close() })
	return r
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// accepted is the number of connections accepted so far.
func (r *relayServer) accepted() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.conns)
}

// open is the number of connections not closed yet.
func (r *relayServer) open() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.conns {
		if !c.closed {
			n++
		}
	}
	return n
}

// commands are the plain-text commands of each connection, by verb.
func (r *relayServer) commands() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out [][]string
	for _, c := range r.conns {
		out = append(out, slices.Clone(c.cmds))
	}
	return out
}

// count is how many of the commands, on all connections, are verb.
func (r *relayServer) count(verb string) int {
	n := 0
	for _, cmds := range r.commands() {
		for _, c := range cmds {
			if c == verb {
				n++
			}
		}
	}
	return n
}

// hangUp closes every connection from the server's side, as a server
// does to an idle session (some say 421 first; see readTimeout).
func (r *relayServer) hangUp() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.conns {
		c.Conn.Close()
	}
}

// sniffListener hands the server connections that note the commands
// they carry.
type sniffListener struct {
	net.Listener
	r *relayServer
}

func (l sniffListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	sc := &sniffConn{Conn: c, r: l.r}
	l.r.mu.Lock()
	l.r.conns = append(l.r.conns, sc)
	l.r.mu.Unlock()
	return sc, nil
}

// sniffConn is the server's side of a connection. Its commands are what
// it read in plain text, by verb: after STARTTLS it reads only ciphertext.
type sniffConn struct {
	net.Conn
	r *relayServer
	// line is the partial line read; only the server's goroutine reads.
	line []byte
	// cmds and closed are guarded by r.mu.
	cmds   []string
	closed bool
}

var verbs = []string{"EHLO", "HELO", "STARTTLS", "AUTH", "MAIL", "RCPT", "DATA", "RSET", "NOOP", "QUIT"}

func (c *sniffConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.line = append(c.line, p[:n]...)
	for {
		i := bytes.IndexByte(c.line, '\n')
		if i < 0 {
			break
		}
		verb, _, _ := strings.Cut(strings.TrimSpace(string(c.line[:i])), " ")
		c.line = c.line[i+1:]
		if slices.Contains(verbs, strings.ToUpper(verb)) {
			c.r.mu.Lock()
			c.cmds = append(c.cmds, strings.ToUpper(verb))
			c.r.mu.Unlock()
		}
	}
	return n, err
}

func (c *sniffConn) Close() error {
	c.r.mu.Lock()
	c.closed = true
	c.r.mu.Unlock()
	return c.Conn.Close()
}

// relaySession is an mxSession that can require a login.
type relaySession struct {
	*mxSession
	r      *relayServer
	authed bool
}

func (s *relaySession) AuthMechanisms() []string { return s.r.opts.mechs }

func (s *relaySession) Auth(mech string) (sasl.Server, error) {
	if !slices.Contains(s.r.opts.mechs, mech) {
		return nil, smtp.ErrAuthUnknownMechanism
	}
	check := func(user, pass string) error {
		ok := user == s.r.opts.user && pass == s.r.opts.pass
		s.r.mu.Lock()
		if ok {
			s.r.logins = append(s.r.logins, mech+" "+user)
		} else {
			s.r.failed = append(s.r.failed, mech+" "+user)
		}
		s.r.mu.Unlock()
		if !ok {
			return smtpErr(535, smtp.EnhancedCode{5, 7, 8}, "authentication credentials invalid")
		}
		s.authed = true
		return nil
	}
	if mech == sasl.Login {
		return &loginServer{check: check}, nil
	}
	return sasl.NewPlainServer(func(_, user, pass string) error { return check(user, pass) }), nil
}

func (s *relaySession) Mail(from string, o *smtp.MailOptions) error {
	if len(s.r.opts.mechs) > 0 && !s.authed {
		return smtpErr(530, smtp.EnhancedCode{5, 7, 0}, "authentication required")
	}
	return s.mxSession.Mail(from, o)
}

// loginServer is the server side of LOGIN, with the prompts most servers
// send.
type loginServer struct {
	check func(user, pass string) error
	user  string
	step  int
}

func (l *loginServer) Next(resp []byte) ([]byte, bool, error) {
	l.step++
	switch l.step {
	case 1:
		if resp != nil {
			return nil, false, fmt.Errorf("unexpected initial response")
		}
		return []byte("Username:"), false, nil
	case 2:
		l.user = string(resp)
		return []byte("Password:"), false, nil
	}
	return nil, true, l.check(l.user, string(resp))
}

// subjects are the subjects of what the server got, sorted.
func subjects(got []received) []string {
	var out []string
	for _, g := range got {
		_, rest, _ := strings.Cut(g.body, "Subject: ")
		s, _, _ := strings.Cut(rest, "\r\n")
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// stopClean stops the Sender and checks that it left no goroutine and
// no connection behind.
func stopClean(t *testing.T, e *env, servers ...*relayServer) {
	t.Helper()
	start := time.Now()
	e.stop()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Run took %v to stop", d)
	}
	// Sessions are done with when Run returns: nothing may still talk to
	// a server. An attempt's goroutine may still be on its way out of the
	// loop's code, and an idle session's expiry out of the cache's (Run
	// waited for its QUIT, not for its return): given a moment.
	inUse := func(g string) bool {
		return strings.Contains(g, "outbound.hangUp") || strings.Contains(g, "/outbound/session.go") || strings.Contains(g, "/outbound/relayauth.go")
	}
	if g := senderGoroutines(); inUse(g) {
		t.Errorf("sessions in use after Run returned:\n%s", g)
	}
	for wait := time.Now().Add(200 * time.Millisecond); strings.Contains(senderGoroutines(), "/outbound/cache.go") && time.Now().Before(wait); {
		time.Sleep(2 * time.Millisecond)
	}
	if g := senderGoroutines(); strings.Contains(g, "/outbound/cache.go") {
		t.Errorf("the session cache still running after Run returned:\n%s", g)
	}
	deadline := time.Now().Add(time.Second)
	for senderGoroutines() != "" && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if g := senderGoroutines(); g != "" {
		t.Errorf("goroutines left after Run:\n%s", g)
	}
	for _, r := range servers {
		waitFor(t, "the server's connections to close", func() bool { return r.open() == 0 })
	}
}

// N messages to one relay go over fewer than N connections, each exactly
// once.
func TestSessionReuse(t *testing.T) {
	f := newFixture(t)
	relay := newRelay(t, relayOptions{})
	clk := newClock()
	const n = 60
	var want []string
	for i := range n {
		subject := fmt.Sprintf("m%02d", i)
		want = append(want, subject)
		f.queue(clk.Now(), f.submission(fmt.Sprintf("u%d@remote.test", i)), message(subject))
	}
	e := f.start(clk, func(c *Config) { c.Relay = relay.addr; c.Workers = 4 })
	got := relay.waitMessages(t, n)
	f.waitEmpty()
	if s := subjects(got); !slices.Equal(s, want) {
		t.Errorf("relay got %q, want each of %q once", s, want)
	}
	// At most Workers sessions at once, each reused.
	if a := relay.accepted(); a > 4 {
		t.Errorf("%d connections for %d messages, want at most 4 (Workers)", a, n)
	}
	if q := relay.count("QUIT"); q != 0 {
		t.Errorf("%d QUITs while sessions are idle, want none", q)
	}
	stopClean(t, e, relay)
	if q, a := relay.count("QUIT"), relay.accepted(); q != a {
		t.Errorf("%d QUITs for %d connections once Run stopped, want one each", q, a)
	}
}

// A session carries at most SessionMessages messages, then says QUIT; the
// MX route reuses sessions too.
func TestSessionMessages(t *testing.T) {
	f := newFixture(t)
	mx := newRelay(t, relayOptions{})
	clk := newClock()
	for i := range 7 {
		f.queue(clk.Now(), f.submission("x@remote.test"), message(fmt.Sprintf("m%d", i)))
	}
	e := f.start(clk, func(c *Config) {
		c.Resolver = mxFor("remote.test")
		c.Port = mx.port
		c.Workers = 1
		c.SessionMessages = 3
	})
	mx.waitMessages(t, 7)
	f.waitEmpty()
	stopClean(t, e, mx)
	cmds := mx.commands()
	if len(cmds) != 3 {
		t.Fatalf("%d connections for 7 messages of 3 a session, want 3", len(cmds))
	}
	for i, want := range []int{3, 3, 1} {
		if got := strings.Count(strings.Join(cmds[i], " "), "MAIL"); got != want || cmds[i][len(cmds[i])-1] != "QUIT" {
			t.Errorf("session %d: %v, want %d MAILs and QUIT", i+1, cmds[i], want)
		}
	}
}

// A session whose transaction was refused is reused: RSET after the
// refused recipients, nothing after a refused DATA; and the refusals
// still count.
func TestSessionReuseAfterRefusal(t *testing.T) {
	f := newFixture(t)
	relay := newRelay(t, relayOptions{})
	relay.rcpt = func(to string) error {
		if strings.HasPrefix(to, "bad") {
			return errNoSuchUser
		}
		return nil
	}
	relay.data = func(n int) error {
		if n == 1 {
			return smtpErr(554, smtp.EnhancedCode{5, 7, 1}, "spam")
		}
		return nil
	}
	clk := newClock()
	f.queue(clk.Now(), f.submission("bad@remote.test"), message("refused-rcpt"))
	f.queue(clk.Now(), f.submission("x@remote.test"), message("data-1"))
	f.queue(clk.Now(), f.submission("y@remote.test"), message("data-2"))
	e := f.start(clk, func(c *Config) { c.Relay = relay.addr; c.Workers = 1 })
	relay.waitMessages(t, 1)
	f.waitEmpty()
	f.waitInbox("bob@a.test", 2) // the two bounces
	stopClean(t, e, relay)
	cmds := relay.commands()
	if len(cmds) != 1 {
		t.Fatalf("%d connections, want 1: %v", len(cmds), cmds)
	}
	got := map[string]int{}
	for _, c := range cmds[0] {
		got[c]++
	}
	want := map[string]int{"EHLO": 1, "MAIL": 3, "RCPT": 3, "RSET": 1, "DATA": 2, "QUIT": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("commands %v, want %v", cmds[0], want)
	}
	if i := slices.Index(cmds[0], "RSET"); i < 1 || cmds[0][i-1] != "RCPT" {
		t.Errorf("commands %v, want RSET right after the refused RCPT", cmds[0])
	}
}

// A server that closed an idle session: the next message goes over a new
// one, delivered at the first attempt.
func TestSessionClosedByServer(t *testing.T) {
	for _, tc := range []struct {
		name string
		// readTimeout: the server says 421 and closes after it; else
		// the test closes the server's side of the connection.
		readTimeout time.Duration
	}{
		{"closed", 0},
		{"421 idle timeout", 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			relay := newRelay(t, relayOptions{readTimeout: tc.readTimeout})
			clk := newClock()
			f.queue(clk.Now(), f.submission("x@remote.test"), message("first"))
			e := f.start(clk, func(c *Config) { c.Relay = relay.addr; c.Workers = 1; c.SessionIdle = time.Minute })
			relay.waitMessages(t, 1)
			f.waitEmpty()
			waitFor(t, "the session to be idle", func() bool { return e.sender.sessions.idleCount() == 1 })
			if tc.readTimeout == 0 {
				relay.hangUp()
			}
			waitFor(t, "the server to close the session", func() bool { return relay.open() == 0 })

			f.queue(clk.Now(), f.submission("y@remote.test"), message("second"))
			e.sender.Wake()
			relay.waitMessages(t, 2)
			// The test clock stands still: a deferred entry would stay.
			f.waitEmpty()
			if a := relay.accepted(); a != 2 {
				t.Errorf("%d connections, want 2", a)
			}
			if !strings.Contains(e.logs.String(), "idle session was closed by the server") {
				t.Errorf("the stale session is not logged")
			}
			if strings.Contains(e.logs.String(), "result=deferred") {
				t.Errorf("an attempt was deferred:\n%s", e.logs.String())
			}
			stopClean(t, e, relay)
		})
	}
}

// Idle sessions say QUIT once SessionIdle has passed.
func TestIdleSessionExpires(t *testing.T) {
	f := newFixture(t)
	relay := newRelay(t, relayOptions{})
	clk := newClock()
	f.queue(clk.Now(), f.submission("x@remote.test"), message("one"))
	e := f.start(clk, func(c *Config) { c.Relay = relay.addr; c.SessionIdle = 100 * time.Millisecond })
	relay.waitMessages(t, 1)
	f.waitEmpty()
	start := time.Now()
	waitFor(t, "the idle session to close", func() bool { return relay.open() == 0 })
	if d := time.Since(start); d > time.Second {
		t.Errorf("idle session closed after %v, want about 100ms", d)
	}
	if n := e.sender.sessions.idleCount(); n != 0 {
		t.Errorf("%d idle sessions left in the cache, want 0", n)
	}
	if q := relay.count("QUIT"); q != 1 {
		t.Errorf("%d QUITs, want 1", q)
	}
	stopClean(t, e, relay)
}

// Run's end says QUIT to the idle sessions before Run returns, and a new
// Run starts with an empty cache.
func TestIdleSessionsClosedByStop(t *testing.T) {
	f := newFixture(t)
	relay := newRelay(t, relayOptions{})
	clk := newClock()
	for i := range 4 {
		f.queue(clk.Now(), f.submission("x@remote.test"), message(fmt.Sprintf("m%d", i)))
	}
	e := f.start(clk, func(c *Config) { c.Relay = relay.addr; c.Workers = 2; c.SessionIdle = time.Hour })
	relay.waitMessages(t, 4)
	f.waitEmpty()
	idle := relay.open()
	if idle == 0 {
		t.Fatalf("no session kept idle")
	}
	stopClean(t, e, relay)
	if q := relay.count("QUIT"); q != idle {
		t.Errorf("%d QUITs, want %d (one per idle session)", q, idle)
	}
	if n := e.sender.sessions.idleCount(); n != 0 {
		t.Errorf("%d idle sessions after Run, want 0", n)
	}

	// Run again: the cache works as before.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.sender.Run(ctx) }()
	f.queue(clk.Now(), f.submission("y@remote.test"), message("again"))
	e.sender.Wake()
	relay.waitMessages(t, 5)
	f.waitEmpty()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
	if n := e.sender.sessions.idleCount(); n != 0 {
		t.Errorf("%d idle sessions after the second Run, want 0", n)
	}
}

// The rule that decides which errors on a cached session's first
// command mean the server closed it.
func TestLostConnection(t *testing.T) {
	timeout := &net.OpError{Op: "read", Err: timeoutErr{}}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"EOF", fmt.Errorf("read: %w", io.EOF), true},
		{"reset", &net.OpError{Op: "write", Err: fmt.Errorf("connection reset by peer")}, true},
		{"closed", net.ErrClosed, true},
		{"timeout", timeout, false},
		{"reply", smtpErr(451, smtp.EnhancedCode{4, 3, 0}, "later"), false},
		{"protocol", fmt.Errorf("short response"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := lostConnection(tc.err); got != tc.want {
				t.Errorf("lostConnection(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// idleCount is the number of idle sessions in the cache.
func (sc *sessionCache) idleCount() int {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	n := 0
	for _, l := range sc.byKey {
		n += len(l)
	}
	return n
}
