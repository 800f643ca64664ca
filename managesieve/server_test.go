package managesieve

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailhost/mailhost/internal/testcert"
	"github.com/mailhost/mailhost/sieve"
)

// memStore is a ScriptStore in memory, as the contract says.
type memStore struct {
	mu         sync.Mutex
	scripts    map[string]map[string][]byte // user → name → content
	active     map[string]string
	maxScripts int
	fail       error
}

func newMemStore() *memStore {
	return &memStore{scripts: map[string]map[string][]byte{}, active: map[string]string{}, maxScripts: 3}
}

func (m *memStore) ListScripts(_ context.Context, user string) ([]Script, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return nil, m.fail
	}
	var out []Script
	for n := range m.scripts[user] {
		out = append(out, Script{Name: n, Active: m.active[user] == n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (m *memStore) GetScript(_ context.Context, user, name string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.scripts[user][name]
	if !ok {
		return nil, ErrNotFound
	}
	return c, nil
}

func (m *memStore) PutScript(_ context.Context, user, name string, content []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if strings.HasPrefix(name, " ") {
		return ErrBadName
	}
	if _, ok := m.scripts[user][name]; !ok && len(m.scripts[user]) >= m.maxScripts {
		return ErrQuotaScripts
	}
	if m.scripts[user] == nil {
		m.scripts[user] = map[string][]byte{}
	}
	m.scripts[user][name] = content
	return nil
}

func (m *memStore) DeleteScript(_ context.Context, user, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.scripts[user][name]; !ok {
		return ErrNotFound
	}
	if m.active[user] == name {
		return ErrActive
	}
	delete(m.scripts[user], name)
	return nil
}

func (m *memStore) RenameScript(_ context.Context, user, oldName, newName string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.scripts[user][oldName]
	if !ok {
		return ErrNotFound
	}
	if _, ok := m.scripts[user][newName]; ok {
		return ErrExists
	}
	delete(m.scripts[user], oldName)
	m.scripts[user][newName] = c
	if m.active[user] == oldName {
		m.active[user] = newName
	}
	return nil
}

func (m *memStore) SetActive(_ context.Context, user, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if name != "" {
		if _, ok := m.scripts[user][name]; !ok {
			return ErrNotFound
		}
	}
	m.active[user] = name
	return nil
}

func (m *memStore) HaveSpace(_ context.Context, user, name string, size int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if size > 10000 {
		return ErrQuotaSize
	}
	if _, ok := m.scripts[user][name]; !ok && len(m.scripts[user]) >= m.maxScripts {
		return ErrQuotaScripts
	}
	return nil
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type passwords map[string]string

func (p passwords) Authenticate(_ context.Context, username, password string, ip netip.Addr) (string, error) {
	if !ip.IsLoopback() {
		return "", errors.New("no client address")
	}
	if username == "throttled" {
		return "", ErrThrottled
	}
	if pw, ok := p[username]; ok && pw == password {
		return "user:" + username, nil
	}
	return "", ErrAuth
}

// client is a raw ManageSieve client over a real connection.
type client struct {
	t    *testing.T
	conn net.Conn
	br   *bufio.Reader
}

func (c *client) send(line string) {
	c.t.Helper()
	c.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c.conn, line+"\r\n"); err != nil {
		c.t.Fatalf("write %q: %v", line, err)
	}
}

// response reads lines up to and including the OK, NO or BYE line, with
// literals inline.
func (c *client) response() []string {
	c.t.Helper()
	var lines []string
	for {
		c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		l, err := c.br.ReadString('\n')
		if err != nil {
			c.t.Fatalf("read after %q: %v", lines, err)
		}
		l = strings.TrimRight(l, "\r\n")
		if strings.HasPrefix(l, "{") && strings.HasSuffix(l, "}") {
			n, _ := strconv.Atoi(l[1 : len(l)-1])
			buf := make([]byte, n)
			if _, err := io.ReadFull(c.br, buf); err != nil {
				c.t.Fatal(err)
			}
			l += string(buf)
			rest, _ := c.br.ReadString('\n')
			l += strings.TrimRight(rest, "\r\n")
		}
		lines = append(lines, l)
		if strings.HasPrefix(l, "OK") || strings.HasPrefix(l, "NO") || strings.HasPrefix(l, "BYE") {
			return lines
		}
	}
}

// do sends a command and returns the response's last line.
func (c *client) do(line string) string {
	c.t.Helper()
	c.send(line)
	r := c.response()
	return r[len(r)-1]
}

// lit is s as a non-synchronizing literal.
func lit(s string) string { return fmt.Sprintf("{%d+}\r\n%s", len(s), s) }

func plainResp(user, pass string) string {
	return base64.StdEncoding.EncodeToString([]byte("\x00" + user + "\x00" + pass))
}

func start(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := New(cfg)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-done; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve = %v, want ErrServerClosed", err)
		}
	})
	return srv, ln.Addr().String()
}

func dial(t *testing.T, addr string) (*client, []string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	c := &client{t: t, conn: conn, br: bufio.NewReader(conn)}
	return c, c.response()
}

func insecureConfig(st *memStore) Config {
	return Config{Store: st, Auth: passwords{"alice": "secret"}, AllowInsecureAuth: true, Logger: quiet}
}

func TestSession(t *testing.T) {
	st := newMemStore()
	_, addr := start(t, insecureConfig(st))
	c, greeting := dial(t, addr)
	want := []string{`"IMPLEMENTATION" "mailhost"`, `"SIEVE" "` + strings.Join(sieve.Extensions, " ") + `"`, `"SASL" "PLAIN"`, `"MAXREDIRECTS" "5"`, `"UNAUTHENTICATE"`, `"VERSION" "1.0"`, "OK"}
	if strings.Join(greeting, "\n") != strings.Join(want, "\n") {
		t.Errorf("greeting = %q, want %q", greeting, want)
	}

	steps := []struct{ send, want string }{
		{`LISTSCRIPTS`, `NO "log in first"`},
		{`AUTHENTICATE "PLAIN" "` + plainResp("alice", "wrong") + `"`, `NO "authentication failed"`},
		{`AUTHENTICATE "PLAIN" "` + plainResp("alice", "secret") + `"`, `OK "Logged in"`},
		{`AUTHENTICATE "PLAIN" "` + plainResp("alice", "secret") + `"`, `NO "already logged in"`},
		{`LISTSCRIPTS`, `OK "Listscripts completed"`},
		{"PUTSCRIPT \"vacation\" " + lit("require \"fileinto\"; keep;\r\n"), `OK "Putscript completed"`},
		{"PUTSCRIPT \"bad\" " + lit("require \"fileinto\";\r\n  filein \"x\";"), `NO "line 2, column 3: unknown command \"filein\""`},
		{"CHECKSCRIPT {5}\r\nkeep;", `OK "Script is valid"`},
		{"CHECKSCRIPT \"fileinto \\\"x\\\";\"", `NO "line 1, column 1: command \"fileinto\" needs require \"fileinto\""`},
		{`HAVESPACE "x" 500`, `OK "Putscript would succeed"`},
		{`HAVESPACE "x" 20000`, `NO (QUOTA/MAXSIZE) "the script is too large"`},
		{`HAVESPACE "x" 999999999`, `NO (QUOTA/MAXSIZE) "scripts are at most 65536 octets"`},
		{`SETACTIVE "nope"`, `NO (NONEXISTENT) "there is no script by that name"`},
		{`SETACTIVE "vacation"`, `OK "Setactive completed"`},
		{`DELETESCRIPT "vacation"`, `NO (ACTIVE) "the active script cannot be deleted"`},
		{`PUTSCRIPT "second" "keep;"`, `OK "Putscript completed"`},
		{`RENAMESCRIPT "second" "vacation"`, `NO (ALREADYEXISTS) "a script by that name exists"`},
		{`RENAMESCRIPT "second" "third"`, `OK "Renamescript completed"`},
		{`RENAMESCRIPT "second" "fourth"`, `NO (NONEXISTENT) "there is no script by that name"`},
		{`PUTSCRIPT "4" "keep;"`, `OK "Putscript completed"`},
		{`PUTSCRIPT "5" "keep;"`, `NO (QUOTA/MAXSCRIPTS) "too many scripts"`},
		{`DELETESCRIPT "4"`, `OK "Deletescript completed"`},
		{`GETSCRIPT "nope"`, `NO (NONEXISTENT) "there is no script by that name"`},
		{`PUTSCRIPT "" "keep;"`, `NO "bad script name"`},
		{"PUTSCRIPT \"a\x7fb\" \"keep;\"", `NO "bad script name"`},
		{`PUTSCRIPT " lead" "keep;"`, `NO "bad script name"`},
		{`NOOP "tag1"`, `OK (TAG "tag1") "Done"`},
		{`NOOP`, `OK "Done"`},
		{`FROB`, `NO "unknown command \"FROB\""`},
		{`PUTSCRIPT "x"`, `NO "PUTSCRIPT takes 2 arguments"`},
		{`"quoted"`, `NO "a command starts with its name"`},
	}
	for _, s := range steps {
		if got := c.do(s.send); got != s.want {
			t.Errorf("%q: got %q, want %q", s.send, got, s.want)
		}
	}

	c.send(`LISTSCRIPTS`)
	if got := strings.Join(c.response(), "|"); got != `"third"|"vacation" ACTIVE|OK "Listscripts completed"` {
		t.Errorf("LISTSCRIPTS = %s", got)
	}
	c.send(`GETSCRIPT "vacation"`)
	if got := strings.Join(c.response(), "|"); got != "{27}require \"fileinto\"; keep;\r\n|OK \"Getscript completed\"" {
		t.Errorf("GETSCRIPT = %q", got)
	}
	if got := string(st.scripts["user:alice"]["vacation"]); got != "require \"fileinto\"; keep;\r\n" {
		t.Errorf("stored %q", got)
	}
	if got := c.do(`SETACTIVE ""`); got != `OK "Setactive completed"` || st.active["user:alice"] != "" {
		t.Errorf(`SETACTIVE "": %q, active %q`, got, st.active["user:alice"])
	}
	if got := c.do(`UNAUTHENTICATE`); got != `OK "Unauthenticate completed"` {
		t.Errorf("UNAUTHENTICATE = %q", got)
	}
	if got := c.do(`LISTSCRIPTS`); got != `NO "log in first"` {
		t.Errorf("LISTSCRIPTS after UNAUTHENTICATE = %q", got)
	}
	if got := c.do(`UNAUTHENTICATE`); got != `NO "not logged in"` {
		t.Errorf("second UNAUTHENTICATE = %q", got)
	}
	if got := c.do(`AUTHENTICATE "PLAIN" "` + plainResp("alice", "secret") + `"`); got != `OK "Logged in"` {
		t.Errorf("login after UNAUTHENTICATE = %q", got)
	}
	if got := c.do(`CAPABILITY`); got != "OK" {
		t.Errorf("CAPABILITY = %q", got)
	}
	if got := c.do(`LOGOUT`); got != `OK "Logout completed"` {
		t.Errorf("LOGOUT = %q", got)
	}
	c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.br.ReadByte(); err != io.EOF {
		t.Errorf("after LOGOUT: %v, want EOF", err)
	}
}

// AUTHENTICATE without an initial response: the server asks with "".
func TestAuthenticateContinuation(t *testing.T) {
	_, addr := start(t, insecureConfig(newMemStore()))
	c, _ := dial(t, addr)
	c.send(`AUTHENTICATE "PLAIN"`)
	c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if l, _ := c.br.ReadString('\n'); l != "\"\"\r\n" {
		t.Fatalf("challenge %q", l)
	}
	resp := plainResp("alice", "secret")
	if got := c.do(fmt.Sprintf("{%d+}\r\n%s", len(resp), resp)); got != `OK "Logged in"` {
		t.Errorf("literal response: %q", got)
	}

	c2, _ := dial(t, addr)
	c2.send(`AUTHENTICATE "PLAIN"`)
	c2.br.ReadString('\n')
	if got := c2.do(`"*"`); got != `NO "authentication cancelled"` {
		t.Errorf("cancel: %q", got)
	}
	if got := c2.do(`AUTHENTICATE "LOGIN"`); got != `NO "unsupported mechanism"` {
		t.Errorf("LOGIN: %q", got)
	}
	// A throttled login is TRYLATER and counts as a failure.
	if got := c2.do(`AUTHENTICATE "PLAIN" "` + plainResp("throttled", "x") + `"`); got != `NO (TRYLATER) "too many failed logins, try again later"` {
		t.Errorf("throttled: %q", got)
	}
	// Three failures close the connection.
	for i := 0; i < 1; i++ {
		c2.do(`AUTHENTICATE "PLAIN" "` + plainResp("alice", "x") + `"`)
	}
	if got := c2.do(`AUTHENTICATE "PLAIN" "` + plainResp("alice", "x") + `"`); got != `BYE "too many failed logins"` {
		t.Errorf("third failure: %q", got)
	}
}

func TestStartTLS(t *testing.T) {
	cert, pool := testcert.New(t, "localhost")
	cfg := Config{Store: newMemStore(), Auth: passwords{"alice": "secret"}, TLS: &tls.Config{Certificates: []tls.Certificate{cert}}, Logger: quiet}
	_, addr := start(t, cfg)
	c, greeting := dial(t, addr)
	g := strings.Join(greeting, "\n")
	if !strings.Contains(g, `"STARTTLS"`) || !strings.Contains(g, `"SASL" ""`) {
		t.Errorf("greeting without TLS = %q, want STARTTLS and no SASL mechanism", g)
	}
	if got := c.do(`AUTHENTICATE "PLAIN" "` + plainResp("alice", "secret") + `"`); got != `NO (ENCRYPT-NEEDED) "use STARTTLS first"` {
		t.Errorf("AUTHENTICATE before TLS: %q", got)
	}
	if got := c.do(`STARTTLS`); got != `OK "Begin TLS negotiation now"` {
		t.Fatalf("STARTTLS: %q", got)
	}
	tc := tls.Client(c.conn, &tls.Config{ServerName: "localhost", RootCAs: pool})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	c.conn, c.br = tc, bufio.NewReader(tc)
	caps := strings.Join(c.response(), "\n")
	if strings.Contains(caps, "STARTTLS") || !strings.Contains(caps, `"SASL" "PLAIN"`) {
		t.Errorf("capabilities after TLS = %q", caps)
	}
	if got := c.do(`AUTHENTICATE "PLAIN" "` + plainResp("alice", "secret") + `"`); got != `OK "Logged in"` {
		t.Errorf("AUTHENTICATE over TLS: %q", got)
	}
	if got := c.do(`STARTTLS`); got != `NO "STARTTLS is not available"` {
		t.Errorf("second STARTTLS: %q", got)
	}
}

func TestLimits(t *testing.T) {
	st := newMemStore()
	cfg := insecureConfig(st)
	cfg.Parse.MaxSize = 100
	_, addr := start(t, cfg)
	c, _ := dial(t, addr)
	c.do(`AUTHENTICATE "PLAIN" "` + plainResp("alice", "secret") + `"`)
	// A literal over the limit is read and refused; the session goes on.
	big := strings.Repeat("#", 200)
	if got := c.do(fmt.Sprintf("PUTSCRIPT \"big\" {%d+}\r\n%s", len(big), big)); got != `NO (QUOTA/MAXSIZE) "script larger than 100 octets"` {
		t.Errorf("big literal: %q", got)
	}
	if got := c.do(`NOOP`); got != `OK "Done"` {
		t.Errorf("after big literal: %q", got)
	}
	// A line too long closes the connection.
	if got := c.do("NOOP \"" + strings.Repeat("x", maxLine) + "\""); got != `BYE "line too long"` {
		t.Errorf("long line: %q", got)
	}
	// A store failure is TRYLATER.
	c2, _ := dial(t, addr)
	c2.do(`AUTHENTICATE "PLAIN" "` + plainResp("alice", "secret") + `"`)
	st.mu.Lock()
	st.fail = errors.New("disk on fire")
	st.mu.Unlock()
	if got := c2.do(`LISTSCRIPTS`); got != `NO (TRYLATER) "temporary failure, try again later"` {
		t.Errorf("store failure: %q", got)
	}
}

func TestIdleTimeout(t *testing.T) {
	cfg := insecureConfig(newMemStore())
	cfg.IdleTimeout = 200 * time.Millisecond
	_, addr := start(t, cfg)
	c, _ := dial(t, addr)
	if got := c.response(); got[0] != `BYE "idle for too long"` {
		t.Errorf("idle: %q", got)
	}
}

func TestMaxConns(t *testing.T) {
	cfg := insecureConfig(newMemStore())
	cfg.MaxConnsPerIP = 2
	_, addr := start(t, cfg)
	c1, _ := dial(t, addr)
	dial(t, addr)
	c3, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	c3.SetReadDeadline(time.Now().Add(5 * time.Second))
	if l, _ := bufio.NewReader(c3).ReadString('\n'); l != "BYE \"too many connections, try again later\"\r\n" {
		t.Errorf("third connection from one address: %q", l)
	}
	// A connection that ends gives its place back.
	c1.do("LOGOUT")
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		l, _ := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if strings.HasPrefix(l, `"IMPLEMENTATION"`) {
			break
		}
		if i == 50 {
			t.Fatalf("after a LOGOUT still refused: %q", l)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// recorder is a Metrics that keeps counts by key.
type recorder struct {
	mu sync.Mutex // guards n
	n  map[string]int
}

func (r *recorder) add(k string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n[k]++
}
func (r *recorder) get(k string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[k]
}
func (r *recorder) Session(refused bool) { r.add(fmt.Sprintf("session refused=%v", refused)) }
func (r *recorder) SessionClosed()       { r.add("closed") }
func (r *recorder) Command(name, result string) {
	r.add(name + " " + result)
}
func (r *recorder) Login(outcome string) { r.add("login " + outcome) }

// TestMetrics: connections, commands by name and result, and logins
// reach Config.Metrics.
func TestMetrics(t *testing.T) {
	rec := &recorder{n: map[string]int{}}
	cfg := insecureConfig(newMemStore())
	cfg.Metrics, cfg.MaxConnsPerIP = rec, 1
	_, addr := start(t, cfg)
	c, _ := dial(t, addr)
	refused, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	refused.SetReadDeadline(time.Now().Add(5 * time.Second))
	bufio.NewReader(refused).ReadString('\n')
	refused.Close()
	for _, l := range []string{
		`AUTHENTICATE "PLAIN" "` + plainResp("alice", "wrong") + `"`,
		`AUTHENTICATE "PLAIN" "` + plainResp("alice", "secret") + `"`,
		`PUTSCRIPT "s" "keep;"`, `PUTSCRIPT "t" "filein;"`, `CAPABILITY`, `FROB`,
	} {
		c.do(l)
	}
	c.do("LOGOUT")
	deadline := time.Now().Add(5 * time.Second)
	for rec.get("closed") < 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	for k, want := range map[string]int{
		"session refused=false": 1, "session refused=true": 1, "closed": 1,
		"login invalid": 1, "login success": 1,
		"AUTHENTICATE no": 1, "AUTHENTICATE ok": 1, "PUTSCRIPT ok": 1, "PUTSCRIPT no": 1,
		"CAPABILITY ok": 1, "FROB no": 1, "LOGOUT ok": 1,
	} {
		if got := rec.get(k); got != want {
			t.Errorf("%s = %d, want %d", k, got, want)
		}
	}
}
