package imapd

import (
	"bufio"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-sasl"

	"github.com/mailhost/mailhost/credential"
	"github.com/mailhost/mailhost/internal/testcert"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
)

const (
	alice    = "alice@example.com"
	password = "alice's secret"
)

// env is a running server on a fresh bbolt store with one mailbox.
type env struct {
	t         testing.TB
	st        *boltstore.Store
	srv       *Server
	addr      string // plain, with STARTTLS
	tlsAddr   string // implicit TLS
	partnerID int64
	mb        mailstore.Mailbox
	clientTLS *tls.Config
}

type envOptions struct {
	insecureAuth bool
	maxFailures  int
	maxConns     int
	// maxConnsPerIP and handshakeTimeout: 0 for Config's defaults.
	maxConnsPerIP int
	// noRateLimit turns off the per-address connection rate and the
	// per-mailbox-and-address limit (a fuzzer opens thousands).
	noRateLimit      bool
	handshakeTimeout time.Duration
	log              io.Writer // nil: discard
	reserve          func(ctx context.Context, bytes int64) (func(), error)
	// accountRecheck and pollInterval: 0 for Config's defaults.
	accountRecheck, pollInterval time.Duration
	// changeLogKeep: 0 for mailstore.ChangeLogKeep.
	changeLogKeep int
	// wrap, when set, wraps the store the server uses (e.st stays the
	// store itself).
	wrap       func(mailstore.Store) mailstore.Store
	onJunkMove func(mailboxID, folderID int64, uids []uint32, spam bool)
	// dataDir, when set, is the store's directory (t.TempDir otherwise);
	// prepare, when set, runs once the account exists, before the
	// server starts, and answers the store to serve (it may close st
	// and open it again).
	dataDir string
	prepare func(st *boltstore.Store, mb mailstore.Mailbox) *boltstore.Store
}

func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	ctx := context.Background()
	st, err := boltstore.Open(ctx, cmp.Or(o.dataDir, t.TempDir()), boltstore.Options{ChangeLogKeep: o.changeLogKeep})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	p, err := st.CreatePartner(ctx, "partner", now)
	if err != nil {
		t.Fatal(err)
	}
	plan := mailstore.Plan{Name: "starter", QuotaMB: 1024, RetentionDays: 30, TransferMonthlyMB: 5120}
	if _, err := st.CreateDomain(ctx, p.ID, mailstore.NewDomain{Name: "example.com", Plan: plan, MaxMailboxes: 10, MaxAliases: 10}, now); err != nil {
		t.Fatal(err)
	}
	hash, err := credential.HashPassword(password)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := st.CreateMailbox(ctx, p.ID, "example.com", alice, hash, now)
	if err != nil {
		t.Fatal(err)
	}
	if o.prepare != nil {
		st = o.prepare(st, mb)
	}

	serverTLS, clientTLS := selfSigned(t)
	// maxFailures is the burst of guesses of one (account, address); 0
	// keeps the defaults.
	logins := credential.NewLogins(credential.LoginConfig{Accounts: st, Guesses: credential.GuessLimits{
		Pair: credential.Budget{Burst: o.maxFailures, PerHour: 1},
	}})
	var store mailstore.Store = st
	if o.wrap != nil {
		store = o.wrap(st)
	}
	srv := New(Config{
		Store: store, Logins: logins, TLS: serverTLS, AllowInsecureAuth: o.insecureAuth,
		Logger: slog.New(slog.NewTextHandler(cmp.Or(o.log, io.Discard), nil)), MaxConns: o.maxConns,
		Reserve: o.reserve, MaxConnsPerIP: o.maxConnsPerIP, HandshakeTimeout: o.handshakeTimeout,
		MaxConnRatePerIP: noRate(o.noRateLimit), MaxConnsPerUserIP: noRate(o.noRateLimit),
		AccountRecheck: o.accountRecheck, PollInterval: o.pollInterval, OnJunkMove: o.onJunkMove,
	})
	e := &env{t: t, st: st, srv: srv, partnerID: p.ID, mb: mb, clientTLS: clientTLS}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.addr, e.tlsAddr = ln.Addr().String(), tln.Addr().String()
	served := make(chan error, 2)
	go func() { served <- srv.Serve(ln) }()
	go func() { served <- srv.ServeTLS(tln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		for range 2 {
			// nil, or ErrClosed if Serve began after Shutdown.
			if err := <-served; err != nil && !errors.Is(err, net.ErrClosed) {
				t.Errorf("Serve after Shutdown = %v, want nil", err)
			}
		}
		st.Close()
	})
	return e
}

// selfSigned makes a certificate for 127.0.0.1 and the client config that
// trusts it.
func selfSigned(t testing.TB) (server, client *tls.Config) {
	cert, pool := testcert.New(t, "127.0.0.1", "localhost")
	return &tls.Config{Certificates: []tls.Certificate{cert}}, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
}

// dial connects with STARTTLS.
func (e *env) dial(o *imapclient.Options) *imapclient.Client {
	e.t.Helper()
	if o == nil {
		o = &imapclient.Options{}
	}
	o.TLSConfig = e.clientTLS
	c, err := imapclient.DialStartTLS(e.addr, o)
	if err != nil {
		e.t.Fatalf("DialStartTLS: %v", err)
	}
	e.t.Cleanup(func() { c.Close() })
	return c
}

// login connects with STARTTLS and logs in as alice.
func (e *env) login(o *imapclient.Options) *imapclient.Client {
	e.t.Helper()
	c := e.dial(o)
	if err := c.Login(alice, password).Wait(); err != nil {
		e.t.Fatalf("Login: %v", err)
	}
	return c
}

// deliver puts a message into alice's INBOX.
func (e *env) deliver(body string, at time.Time) {
	e.t.Helper()
	_, err := e.st.Deliver(context.Background(), mailstore.Delivery{Body: []byte(body), ReceivedAt: at, MailboxIDs: []int64{e.mb.ID}})
	if err != nil {
		e.t.Fatalf("Deliver: %v", err)
	}
}

// imapCode is the response code of an IMAP error, or "" for another error.
func imapCode(err error) imap.ResponseCode {
	var ie *imap.Error
	if errors.As(err, &ie) {
		return ie.Code
	}
	return ""
}

func TestLogin(t *testing.T) {
	e := newEnv(t, envOptions{})
	tests := []struct {
		name     string
		user     string
		password string
		plain    bool // AUTHENTICATE PLAIN instead of LOGIN
		code     imap.ResponseCode
		ok       bool
	}{
		{"login", alice, password, false, "", true},
		{"address in any case", "Alice@Example.COM", password, false, "", true},
		{"authenticate plain", alice, password, true, "", true},
		{"wrong password", alice, "not the password", false, imap.ResponseCodeAuthenticationFailed, false},
		{"wrong password plain", alice, "not the password", true, imap.ResponseCodeAuthenticationFailed, false},
		{"unknown address", "bob@example.com", password, false, imap.ResponseCodeAuthenticationFailed, false},
		{"local part only", "alice", password, false, imap.ResponseCodeAuthenticationFailed, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := e.dial(nil)
			var err error
			if tt.plain {
				err = c.Authenticate(sasl.NewPlainClient("", tt.user, tt.password))
			} else {
				err = c.Login(tt.user, tt.password).Wait()
			}
			if tt.ok != (err == nil) || imapCode(err) != tt.code {
				t.Fatalf("login(%q, %q) = %v, want ok=%v code %q", tt.user, tt.password, err, tt.ok, tt.code)
			}
			if tt.ok {
				// Only an authenticated session may list.
				if _, err := c.List("", "", nil).Collect(); err != nil {
					t.Errorf("LIST after login: %v", err)
				}
			}
		})
	}
}

func TestLoginRecordsLastLogin(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.login(nil)
	mb, _, err := e.st.MailboxByEmail(context.Background(), alice)
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(mb.LastLogin) > time.Minute {
		t.Errorf("LastLogin = %v, want about now", mb.LastLogin)
	}
}

func TestLoginThrottled(t *testing.T) {
	e := newEnv(t, envOptions{maxFailures: 2})
	c := e.dial(nil)
	for i := 0; i < 2; i++ {
		// Distinct passwords: a repeated one is not a new guess.
		if err := c.Login(alice, fmt.Sprintf("wrong password %d", i)).Wait(); imapCode(err) != imap.ResponseCodeAuthenticationFailed {
			t.Fatalf("failure %d: Login = %v, want AUTHENTICATIONFAILED", i, err)
		}
	}
	err := c.Login(alice, password).Wait()
	if imapCode(err) != imap.ResponseCodeUnavailable {
		t.Fatalf("Login after 2 failures = %v, want NO [UNAVAILABLE]", err)
	}
}

func TestLoginDisabledWithoutTLS(t *testing.T) {
	e := newEnv(t, envOptions{})
	c, err := imapclient.DialInsecure(e.addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	caps := c.Caps()
	if !caps.Has(imap.CapLoginDisabled) || !caps.Has(imap.CapStartTLS) {
		t.Errorf("plain capabilities = %v, want LOGINDISABLED and STARTTLS", caps)
	}
	if err := c.Login(alice, password).Wait(); imapCode(err) != imap.ResponseCodePrivacyRequired {
		t.Errorf("Login without TLS = %v, want NO [PRIVACYREQUIRED]", err)
	}

	// After STARTTLS the same server takes the login.
	tc := e.dial(nil)
	if tc.Caps().Has(imap.CapLoginDisabled) {
		t.Errorf("capabilities after STARTTLS = %v, want no LOGINDISABLED", tc.Caps())
	}
	if err := tc.Login(alice, password).Wait(); err != nil {
		t.Errorf("Login after STARTTLS: %v", err)
	}
}

func TestInsecureAuthAllowed(t *testing.T) {
	e := newEnv(t, envOptions{insecureAuth: true})
	c, err := imapclient.DialInsecure(e.addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Caps().Has(imap.CapLoginDisabled) {
		t.Errorf("capabilities = %v, want no LOGINDISABLED", c.Caps())
	}
	if err := c.Login(alice, password).Wait(); err != nil {
		t.Errorf("Login without TLS, allowed: %v", err)
	}
}

func TestImplicitTLS(t *testing.T) {
	e := newEnv(t, envOptions{})
	c, err := imapclient.DialTLS(e.tlsAddr, &imapclient.Options{TLSConfig: e.clientTLS})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Login(alice, password).Wait(); err != nil {
		t.Fatalf("Login over implicit TLS: %v", err)
	}
	caps, err := c.Capability().Wait()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []imap.Cap{imap.CapIMAP4rev2, imap.CapIMAP4rev1, imap.CapIdle, imap.CapUIDPlus, imap.CapMove, imap.CapNamespace, imap.CapSpecialUse, imap.CapStatusSize} {
		if !caps.Has(want) {
			t.Errorf("capabilities = %v, want %s", caps, want)
		}
	}
}

func TestPasswordChangeAndDeletion(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx := context.Background()
	e.login(nil)

	hash, err := credential.HashPassword("a new password")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.SetPassword(ctx, e.partnerID, alice, hash, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := e.dial(nil).Login(alice, password).Wait(); imapCode(err) != imap.ResponseCodeAuthenticationFailed {
		t.Errorf("Login with the old password = %v, want AUTHENTICATIONFAILED", err)
	}
	if err := e.dial(nil).Login(alice, "a new password").Wait(); err != nil {
		t.Errorf("Login with the new password: %v", err)
	}

	if _, err := e.st.SetSuspended(ctx, e.partnerID, "example.com", true); err != nil {
		t.Fatal(err)
	}
	if err := e.dial(nil).Login(alice, "a new password").Wait(); imapCode(err) != imap.ResponseCodeAuthenticationFailed {
		t.Errorf("Login to a suspended domain = %v, want AUTHENTICATIONFAILED", err)
	}
	if _, err := e.st.SetSuspended(ctx, e.partnerID, "example.com", false); err != nil {
		t.Fatal(err)
	}

	if err := e.st.DeleteMailbox(ctx, e.partnerID, alice); err != nil {
		t.Fatal(err)
	}
	if err := e.dial(nil).Login(alice, "a new password").Wait(); imapCode(err) != imap.ResponseCodeAuthenticationFailed {
		t.Errorf("Login to a deleted mailbox = %v, want AUTHENTICATIONFAILED", err)
	}
}

func TestMaxConns(t *testing.T) {
	e := newEnv(t, envOptions{maxConns: 1})
	e.dial(nil)
	// Read raw: imapclient may report the closed connection before the
	// BYE greeting that came ahead of it (the test failed now and then).
	c, err := net.DialTimeout("tcp", e.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if !strings.HasPrefix(line, "* BYE") || !strings.Contains(line, "Too many connections") {
		t.Errorf("greeting beyond MaxConns = %q, %v; want * BYE ... Too many connections", line, err)
	}
}

func TestShutdownClosesSessions(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.login(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	select {
	case <-c.Closed():
	case <-time.After(5 * time.Second):
		t.Fatal("client still connected after Shutdown")
	}
	if _, err := net.DialTimeout("tcp", e.addr, time.Second); err == nil {
		t.Error("listener still accepts after Shutdown")
	}
}

// noRate is a limit of Config: -1 (none) when off, else 0 (the default).
func noRate(off bool) int {
	if off {
		return -1
	}
	return 0
}
