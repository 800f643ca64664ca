package outbound

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailhost/mailhost/internal/publicip"
	"github.com/mailhost/mailhost/internal/testcert"
	"github.com/mailhost/mailhost/mailstore"
)

// namedCert is a self-signed server certificate for names, its own CA,
// and a pool that trusts it.
func namedCert(t *testing.T, names ...string) (*tls.Config, *x509.CertPool) {
	cert, pool := testcert.New(t, names...)
	return &tls.Config{Certificates: []tls.Certificate{cert}}, pool
}

// stsDNS is a resolver whose records a test changes while the Sender
// runs: MX and addresses as mxFor gives them, and TXT records.
type stsDNS struct {
	// mu guards the fields below.
	mu  sync.Mutex
	res resolver
}

func newSTSDNS(domains ...string) *stsDNS {
	r := mxFor(domains...)
	r.txt = map[string][]string{}
	return &stsDNS{res: r}
}

func (d *stsDNS) LookupMX(ctx context.Context, name string) ([]*net.MX, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.res.LookupMX(ctx, name)
}

func (d *stsDNS) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.res.LookupIPAddr(ctx, host)
}

func (d *stsDNS) LookupTXT(ctx context.Context, name string) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.res.LookupTXT(ctx, name)
}

// setTXT sets the "_mta-sts" record of domain; "" removes it.
func (d *stsDNS) setTXT(domain, rec string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if rec == "" {
		delete(d.res.txt, "_mta-sts."+domain)
		return
	}
	d.res.txt["_mta-sts."+domain] = []string{"v=spf1 -all", rec}
}

// setMX makes host, at 127.0.0.1, the only MX of domain.
func (d *stsDNS) setMX(domain, host string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.res.mx[domain] = []*net.MX{{Host: host + ".", Pref: 10}}
	d.res.addrs[host] = loopback
}

// policyServer is an HTTPS server for https://mta-sts.<domain>/ on
// 127.0.0.1, answering what it is told.
type policyServer struct {
	srv *httptest.Server

	// mu guards the fields below.
	mu          sync.Mutex
	status      int
	contentType string
	body        string
	requests    []string // host and path of each request
}

func newPolicyServer(t *testing.T, tlsConfig *tls.Config, body string) *policyServer {
	t.Helper()
	p := &policyServer{status: 200, contentType: "text/plain; charset=utf-8", body: body}
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.requests = append(p.requests, r.Host+r.URL.Path)
		if r.URL.Path == "/elsewhere" {
			// Where a redirect leads: a policy no MX matches.
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "version: STSv1\nmode: enforce\nmx: nowhere.test\nmax_age: 86400\n")
			return
		}
		if p.status == http.StatusMovedPermanently {
			http.Redirect(w, r, "/elsewhere", p.status)
			return
		}
		w.Header().Set("Content-Type", p.contentType)
		w.WriteHeader(p.status)
		io.WriteString(w, p.body)
	}))
	p.srv.TLS = tlsConfig
	p.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	p.srv.StartTLS()
	t.Cleanup(p.srv.Close)
	return p
}

// set changes the answer; contentType "" keeps it.
func (p *policyServer) set(status int, contentType, body string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.status, p.body = status, body
	if contentType != "" {
		p.contentType = contentType
	}
}

func (p *policyServer) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.requests)
}

// client is an HTTP client that reaches the server whatever the host
// name, and trusts roots.
func (p *policyServer) client(roots *x509.CertPool) *http.Client {
	addr := p.srv.Listener.Addr().String()
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
		TLSClientConfig:   &tls.Config{RootCAs: roots},
		DisableKeepAlives: true,
	}}
}

const (
	stsDomain   = "sts.test"
	stsMXHost   = "mx.sts.test"
	stsRecord   = "v=STSv1; id=20261122T0930"
	stsEnforced = "version: STSv1\r\nmode: enforce\r\nmx: mx.sts.test\r\nmx: *.backup.test\r\nmax_age: 86400\r\n"
)

// stsSetup is an MTA-STS destination: sts.test, whose MX mx.sts.test
// (a relayServer, which records what came in plain text) has mxTLS for
// STARTTLS, and whose policy, when TXT is published, comes from an
// HTTPS server with a certificate for mta-sts.sts.test. roots trusts that
// certificate, and mxTLS when it was made by namedCert with them.
type stsSetup struct {
	f      *fixture
	dns    *stsDNS
	mx     *relayServer
	policy *policyServer
	roots  *x509.CertPool
}

func newSTSSetup(t *testing.T, mxTLS *tls.Config, txt, policy string) *stsSetup {
	t.Helper()
	httpsTLS, roots := namedCert(t, "mta-sts."+stsDomain)
	s := &stsSetup{f: newFixture(t), dns: newSTSDNS(stsDomain), roots: roots}
	s.mx = newRelay(t, relayOptions{tls: mxTLS})
	s.policy = newPolicyServer(t, httpsTLS, policy)
	if txt != "" {
		s.dns.setTXT(stsDomain, txt)
	}
	return s
}

// newEnforcedSetup is an stsSetup whose policy is published and
// enforced, and whose MX has a certificate for its name that the roots
// trust.
func newEnforcedSetup(t *testing.T) *stsSetup {
	t.Helper()
	mxTLS, _ := namedCert(t, stsMXHost)
	s := newSTSSetup(t, mxTLS, stsRecord, stsEnforced)
	s.roots.AddCert(mustLeaf(t, mxTLS))
	return s
}

// deliverFirst queues a message to the enforced domain, starts a Sender
// with cfg and waits until the MX has it and the queue is empty.
func (s *stsSetup) deliverFirst(t *testing.T, clk *clock, subject string, cfg func(*Config)) *env {
	t.Helper()
	s.f.queue(clk.Now(), s.f.submission("x@"+stsDomain), message(subject))
	e := s.start(clk, cfg)
	s.mx.waitMessages(t, 1)
	s.f.waitEmpty()
	return e
}

// start runs a Sender with MTA-STS on, the setup's roots for the MX and
// the policy server, and the setup's resolver.
func (s *stsSetup) start(clk *clock, cfg func(*Config)) *env {
	return s.f.start(clk, func(c *Config) {
		c.Resolver = s.dns
		c.Port = s.mx.port
		c.MTASTS = true
		c.MTASTSClient = s.policy.client(s.roots)
		// As in production, where TLS is nil, opportunistic TLS does
		// not verify; verified TLS checks under RootCAs.
		c.TLS = &tls.Config{RootCAs: s.roots, InsecureSkipVerify: true}
		if cfg != nil {
			cfg(c)
		}
	})
}

// Under an enforce policy, mail goes to a listed MX over TLS with a
// certificate verified for the MX's name.
func TestMTASTSEnforce(t *testing.T) {
	s := newEnforcedSetup(t)
	clk := newClock()
	s.f.queue(clk.Now(), s.f.submission("x@"+stsDomain), message("enforced"))
	e := s.start(clk, nil)
	if got := s.mx.waitMessages(t, 1)[0]; !got.tls {
		t.Errorf("message sent without TLS")
	}
	s.f.waitEmpty()
	stopClean(t, e, s.mx)
	s.policy.mu.Lock()
	defer s.policy.mu.Unlock()
	if got, want := s.policy.requests, []string{"mta-sts.sts.test/.well-known/mta-sts.txt"}; !slices.Equal(got, want) {
		t.Errorf("policy requests %q, want %q", got, want)
	}
	if !strings.Contains(e.logs.String(), "MTA-STS policy fetched") {
		t.Errorf("no log line of the fetch")
	}
}

func mustLeaf(t *testing.T, c *tls.Config) *x509.Certificate {
	t.Helper()
	leaf, err := x509.ParseCertificate(c.Certificates[0].Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf
}

// Under an enforce policy, an MX without a certificate valid for its
// name, without STARTTLS, or not listed gets nothing, not even in plain
// text: the mail is deferred with a reply that says MTA-STS.
func TestMTASTSEnforceRefuses(t *testing.T) {
	otherName, _ := namedCert(t, "mx.elsewhere.test")
	for _, tc := range []struct {
		name   string
		mxTLS  *tls.Config
		mxHost string // "": stsMXHost
		want   string
	}{
		{"untrusted certificate", selfSigned(t), "", "certificate"},
		{"certificate for another name", otherName, "", "mx.sts.test"},
		{"no STARTTLS", nil, "", "offers no STARTTLS"},
		{"MX not in the policy", otherName, "mx.other.test", "no MX host matches the MTA-STS policy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSTSSetup(t, tc.mxTLS, stsRecord, stsEnforced)
			s.roots.AddCert(mustLeaf(t, otherName)) // trusted, but for another name
			if tc.mxHost != "" {
				s.dns.setMX(stsDomain, tc.mxHost)
			}
			clk := newClock()
			s.f.queue(clk.Now(), s.f.submission("x@"+stsDomain), message("not sent"))
			e := s.start(clk, nil)
			got := s.f.waitAttempts(1)
			if got.Recipients[0].State != mailstore.RecipientPending || !got.NextAttempt.After(clk.Now()) {
				t.Errorf("entry %+v, want its recipient pending and a retry later", got)
			}
			for _, want := range []string{tc.want, "MTA-STS"} {
				if !strings.Contains(got.LastError, want) {
					t.Errorf("recorded error %q lacks %q", got.LastError, want)
				}
			}
			stopClean(t, e, s.mx)
			if n := len(s.mx.messages()); n != 0 {
				t.Errorf("MX got %d messages, want none", n)
			}
			if n := s.mx.count("MAIL"); n != 0 {
				t.Errorf("%d MAIL commands in plain text, want none", n)
			}
		})
	}
}

// Without an enforce policy that can be had, mail goes as it always did:
// opportunistic TLS, here to an MX whose certificate nobody trusts.
func TestMTASTSOpportunistic(t *testing.T) {
	for _, tc := range []struct {
		name         string
		txt          string
		status       int
		contentType  string
		policy       string
		wantRequests int
	}{
		{"no TXT record", "", 200, "", stsEnforced, 0},
		{"TXT record without id", "v=STSv1;", 200, "", stsEnforced, 0},
		{"testing mode", stsRecord, 200, "", strings.Replace(stsEnforced, "enforce", "testing", 1), 1},
		{"mode none", stsRecord, 200, "", "version: STSv1\nmode: none\nmax_age: 86400\n", 1},
		{"malformed policy", stsRecord, 200, "", "version: STSv1\nmode: enforce\nmax_age: soon\nmx: mx.sts.test\n", 1},
		{"not found", stsRecord, 404, "", stsEnforced, 1},
		{"not text/plain", stsRecord, 200, "text/html", stsEnforced, 1},
		{"redirect not followed", stsRecord, http.StatusMovedPermanently, "", stsEnforced, 1},
		{"too large", stsRecord, 200, "", stsEnforced + "x-pad: " + strings.Repeat("x", stsMaxPolicyBytes) + "\n", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSTSSetup(t, selfSigned(t), tc.txt, tc.policy)
			s.policy.set(tc.status, tc.contentType, tc.policy)
			clk := newClock()
			s.f.queue(clk.Now(), s.f.submission("x@"+stsDomain), message("opportunistic"))
			e := s.start(clk, nil)
			if got := s.mx.waitMessages(t, 1)[0]; !got.tls {
				t.Errorf("message sent without TLS, want opportunistic TLS")
			}
			s.f.waitEmpty()
			stopClean(t, e, s.mx)
			if n := s.policy.count(); n != tc.wantRequests {
				t.Errorf("%d policy requests (%q), want %d", n, s.policy.requests, tc.wantRequests)
			}
		})
	}
}

// A policy fetched once applies until max_age: without another fetch
// while the TXT id stays, and when a fetch for a new id fails or the TXT
// record is gone (RFC 8461 section 5.1); past max_age, it is forgotten.
// The MX is moved to a host the policy does not list, so that whether
// the policy applied shows in whether the mail waits.
func TestMTASTSCachedPolicy(t *testing.T) {
	s := newEnforcedSetup(t)
	clk := newClock()
	e := s.deliverFirst(t, clk, "first", func(c *Config) { c.SessionMessages = 1 })

	// The same id: the cached policy, no fetch.
	s.f.queue(clk.Now(), s.f.submission("x@"+stsDomain), message("second"))
	e.sender.Wake()
	s.mx.waitMessages(t, 2)
	s.f.waitEmpty()
	if n := s.policy.count(); n != 1 {
		t.Fatalf("%d policy requests, want 1", n)
	}

	// A new id whose policy cannot be fetched, then no record at all: the
	// cached policy still applies, and the unlisted MX gets nothing.
	s.dns.setMX(stsDomain, "mx.unlisted.test")
	s.policy.set(500, "", "")
	s.dns.setTXT(stsDomain, "v=STSv1; id=changed")
	s.f.queue(clk.Now(), s.f.submission("x@"+stsDomain), message("third"))
	e.sender.Wake()
	got := s.f.waitAttempts(1)
	if !strings.Contains(got.LastError, "no MX host matches the MTA-STS policy") {
		t.Errorf("recorded error %q, want the cached policy's", got.LastError)
	}
	if n := s.policy.count(); n != 2 {
		t.Errorf("%d policy requests, want 2", n)
	}
	s.dns.setTXT(stsDomain, "")
	clk.Add(time.Hour)
	e.sender.Wake()
	got = s.f.waitAttempts(2)
	if !strings.Contains(got.LastError, "no MX host matches the MTA-STS policy") {
		t.Errorf("without TXT: recorded error %q, want the cached policy's", got.LastError)
	}

	// Past max_age (a day) the policy is gone: the mail goes.
	clk.Add(24 * time.Hour)
	e.sender.Wake()
	s.mx.waitMessages(t, 3)
	s.f.waitEmpty()
	stopClean(t, e, s.mx)
}

// A policy still in use is fetched again in the last quarter of its
// max_age (here a day: the last 6 hours), so that it does not lapse while
// mail goes to its domain; once refreshed, it holds past the first
// expiry even when later fetches fail.
func TestMTASTSRefresh(t *testing.T) {
	s := newEnforcedSetup(t)
	clk := newClock()
	e := s.deliverFirst(t, clk, "first", func(c *Config) { c.SessionMessages = 1 })

	steps := []struct {
		advance time.Duration
		fetches int
	}{
		{17 * time.Hour, 1}, // 7 h left: the cached policy
		{2 * time.Hour, 2},  // 5 h left: fetched again
		{time.Hour, 2},      // renewed until 19 h + 24 h
	}
	for i, st := range steps {
		clk.Add(st.advance)
		s.f.queue(clk.Now(), s.f.submission("x@"+stsDomain), message("step "+strconv.Itoa(i)))
		e.sender.Wake()
		s.mx.waitMessages(t, 2+i)
		s.f.waitEmpty()
		if n := s.policy.count(); n != st.fetches {
			t.Fatalf("step %d: %d policy requests, want %d", i, n, st.fetches)
		}
	}

	// 30 h after the first fetch, the policy fetched at 19 h still
	// holds: with its server down and the MX changed to one it does not
	// list, the mail waits instead of going to that MX.
	s.dns.setMX(stsDomain, "mx.unlisted.test")
	s.policy.set(500, "", "")
	clk.Add(10 * time.Hour)
	s.f.queue(clk.Now(), s.f.submission("x@"+stsDomain), message("after the first expiry"))
	e.sender.Wake()
	got := s.f.waitAttempts(1)
	if !strings.Contains(got.LastError, "no MX host matches the MTA-STS policy") {
		t.Errorf("recorded error %q, want the refreshed policy's", got.LastError)
	}
	stopClean(t, e, s.mx)
}

// A policy fetched before a restart applies after it: the new Sender
// finds it in the store, though the TXT record is gone, the policy
// server fails and the MX is one the policy does not list; an attacker
// who blocks DNS and HTTPS right after a restart gets the mail deferred,
// not sent in plain text (RFC 8461 sections 5.1 and 10). With the same
// TXT id it is not fetched again; past its max_age it is forgotten.
func TestMTASTSRestart(t *testing.T) {
	s := newEnforcedSetup(t)
	clk := newClock()
	e := s.deliverFirst(t, clk, "before the restart", nil)
	stopClean(t, e, s.mx)
	if p, err := s.f.st.STSPolicy(context.Background(), stsDomain, clk.Now()); err != nil || p.ID != "20261122T0930" || p.Mode != "enforce" ||
		!slices.Equal(p.MX, []string{stsMXHost, "*.backup.test"}) || p.MaxAge != 24*time.Hour || !p.Expires.Equal(clk.Now().Add(24*time.Hour)) {
		t.Errorf("stored policy = %+v, %v; want the one fetched", p, err)
	}

	if err := s.f.st.Close(); err != nil {
		t.Fatal(err)
	}
	s.f.open()
	s.dns.setTXT(stsDomain, "")
	s.dns.setMX(stsDomain, "mx.unlisted.test")
	s.policy.set(500, "", "")
	clk.Add(time.Hour)
	s.f.queue(clk.Now(), s.f.submission("x@"+stsDomain), message("after the restart"))
	e = s.start(clk, nil)
	waitFor(t, "the first attempt after the restart", func() bool {
		es := s.f.entries()
		return len(s.mx.messages()) > 1 || len(es) == 1 && es[0].Attempts >= 1
	})
	if n := len(s.mx.messages()); n != 1 {
		t.Fatalf("after the restart the unlisted MX got %d messages, want none: the stored policy did not apply", n-1)
	}
	got := s.f.waitAttempts(1)
	if !strings.Contains(got.LastError, "no MX host matches the MTA-STS policy") {
		t.Errorf("recorded error %q, want the stored policy's", got.LastError)
	}
	if got.Recipients[0].State != mailstore.RecipientPending {
		t.Errorf("recipient %+v, want pending", got.Recipients[0])
	}

	// The TXT record back with the same id: the stored policy is
	// current, nothing is fetched.
	s.dns.setTXT(stsDomain, stsRecord)
	clk.Add(time.Hour)
	e.sender.Wake()
	got = s.f.waitAttempts(2)
	if !strings.Contains(got.LastError, "no MX host matches the MTA-STS policy") {
		t.Errorf("with the same id: recorded error %q, want the stored policy's", got.LastError)
	}
	if n := s.policy.count(); n != 1 {
		t.Errorf("%d policy requests, want 1 (before the restart)", n)
	}
	if n := len(s.mx.messages()); n != 1 {
		t.Errorf("MX got %d messages, want 1 (before the restart)", n)
	}

	// Past max_age (a day after the fetch) the policy is gone: the
	// fetch fails, and the mail goes with opportunistic TLS.
	clk.Add(23 * time.Hour)
	e.sender.Wake()
	s.mx.waitMessages(t, 2)
	s.f.waitEmpty()
	if n := s.policy.count(); n != 2 {
		t.Errorf("%d policy requests, want 2", n)
	}
	stopClean(t, e, s.mx)
}

func TestSTSRefreshWindow(t *testing.T) {
	for _, c := range []struct{ maxAge, want time.Duration }{
		{time.Hour, 15 * time.Minute},
		{24 * time.Hour, 6 * time.Hour},
		{4 * 24 * time.Hour, 24 * time.Hour},
		{stsMaxAge, stsRefreshMax},
		{0, 0},
	} {
		if got := stsRefreshWindow(c.maxAge); got != c.want {
			t.Errorf("stsRefreshWindow(%v) = %v, want %v", c.maxAge, got, c.want)
		}
	}
}

// A session opened with opportunistic TLS is not reused for an enforce
// destination, which opens its own with a verified certificate; that
// one is reused for the next enforce message.
func TestMTASTSSessionsApart(t *testing.T) {
	s := newEnforcedSetup(t)
	// plain.test has no policy and the same MX host.
	s.dns.setMX("plain.test", stsMXHost)
	clk := newClock()
	s.f.queue(clk.Now(), s.f.submission("y@plain.test"), message("plain"))
	e := s.start(clk, func(c *Config) { c.SessionIdle = time.Minute })
	s.mx.waitMessages(t, 1)
	s.f.waitEmpty()
	waitFor(t, "the session to be idle", func() bool { return e.sender.sessions.idleCount() == 1 })
	for i, subject := range []string{"enforced 1", "enforced 2"} {
		s.f.queue(clk.Now(), s.f.submission("x@"+stsDomain), message(subject))
		e.sender.Wake()
		s.mx.waitMessages(t, 2+i)
		s.f.waitEmpty()
	}
	if n := s.mx.accepted(); n != 2 {
		t.Errorf("MX accepted %d connections, want 2 (one opportunistic, one verified)", n)
	}
	stopClean(t, e, s.mx)
}

// The relay is not the destination's MX: MTA-STS does not apply to it.
func TestMTASTSNotForRelay(t *testing.T) {
	s := newSTSSetup(t, nil, stsRecord, stsEnforced)
	clk := newClock()
	s.f.queue(clk.Now(), s.f.submission("x@"+stsDomain), message("relayed"))
	e := s.start(clk, func(c *Config) { c.Relay = s.mx.addr })
	s.mx.waitMessages(t, 1)
	s.f.waitEmpty()
	stopClean(t, e, s.mx)
	if n := s.policy.count(); n != 0 {
		t.Errorf("%d policy requests, want none", n)
	}
}

// The default client verifies the policy server's certificate under
// TLS's RootCAs and finds its address with the Resolver; without
// AllowPrivate it connects to no policy server on a non-public address,
// as to no MX host there.
func TestMTASTSDefaultClient(t *testing.T) {
	httpsTLS, roots := namedCert(t, "mta-sts."+stsDomain)
	p := newPolicyServer(t, httpsTLS, stsEnforced)
	dns := newSTSDNS()
	dns.res.addrs["mta-sts."+stsDomain] = loopback
	_, port, _ := net.SplitHostPort(p.srv.Listener.Addr().String())
	for _, tc := range []struct {
		name    string
		roots   *x509.CertPool
		private bool
		ok      bool
	}{
		{"trusted", roots, true, true},
		{"untrusted", x509.NewCertPool(), true, false},
		{"loopback without AllowPrivate", roots, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Config{Resolver: dns, TLS: &tls.Config{RootCAs: tc.roots}, MTASTS: true, AllowPrivate: tc.private})
			resp, err := s.stsClient.Get("https://mta-sts." + stsDomain + ":" + port + "/.well-known/mta-sts.txt")
			if err == nil {
				resp.Body.Close()
			}
			if (err == nil) != tc.ok {
				t.Errorf("Get = %v, want ok %v", err, tc.ok)
			}
			if !tc.private && !errors.Is(err, publicip.ErrNotPublic) {
				t.Errorf("Get = %v, want publicip.ErrNotPublic", err)
			}
		})
	}
	if n := p.count(); n != 1 {
		t.Errorf("%d policy requests, want 1 (the trusted one)", n)
	}
}

func TestMatchMXPattern(t *testing.T) {
	for _, tc := range []struct {
		pattern, host string
		want          bool
	}{
		{"mx.example.net", "mx.example.net", true},
		{"mx.example.net", "MX.Example.NET.", true},
		{"mx.example.net", "mx2.example.net", false},
		{"mx.example.net", "example.net", false},
		{"*.example.net", "mx.example.net", true},
		{"*.example.net", "MX1.example.net.", true},
		{"*.example.net", "example.net", false},
		{"*.example.net", "a.mx.example.net", false},
		{"*.example.net", ".example.net", false},
		{"*.example.net", "mx.example.net.evil.test", false},
		{"*.example.net", "mxexample.net", false},
		{"example.net", "mx.example.net", false},
	} {
		if got := matchMXPattern(tc.pattern, tc.host); got != tc.want {
			t.Errorf("matchMXPattern(%q, %q) = %v, want %v", tc.pattern, tc.host, got, tc.want)
		}
	}
}

func TestParseSTSPolicy(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		want *stsPolicy // nil: invalid
	}{
		{"RFC example", "version: STSv1\r\nmode: enforce\r\nmx: mail.example.com\r\nmx: *.example.net\r\nmx: backupmx.example.com\r\nmax_age: 604800\r\n",
			&stsPolicy{mode: stsEnforce, mx: []string{"mail.example.com", "*.example.net", "backupmx.example.com"}, maxAge: 604800 * time.Second}},
		{"LF, spaces, no final newline", "version:STSv1\nmode :  testing \nmx: MX.Example.COM.\nmax_age: 0", &stsPolicy{mode: stsTesting, mx: []string{"mx.example.com"}}},
		{"none without mx", "version: STSv1\nmode: none\nmax_age: 86400\n", &stsPolicy{mode: stsNone, maxAge: 86400 * time.Second}},
		{"unknown key ignored", "version: STSv1\nmode: enforce\nmx: a.test\nmax_age: 1\nextension: whatever: here\n", &stsPolicy{mode: stsEnforce, mx: []string{"a.test"}, maxAge: time.Second}},
		{"max_age capped", "version: STSv1\nmode: enforce\nmx: a.test\nmax_age: 9999999999\n", &stsPolicy{mode: stsEnforce, mx: []string{"a.test"}, maxAge: stsMaxAge}},
		{"empty", "", nil},
		{"no version", "mode: enforce\nmx: a.test\nmax_age: 1\n", nil},
		{"wrong version", "version: STSv2\nmode: enforce\nmx: a.test\nmax_age: 1\n", nil},
		{"no mode", "version: STSv1\nmx: a.test\nmax_age: 1\n", nil},
		{"bad mode", "version: STSv1\nmode: Enforce\nmx: a.test\nmax_age: 1\n", nil},
		{"no max_age", "version: STSv1\nmode: enforce\nmx: a.test\n", nil},
		{"negative max_age", "version: STSv1\nmode: enforce\nmx: a.test\nmax_age: -1\n", nil},
		{"max_age of 11 digits", "version: STSv1\nmode: enforce\nmx: a.test\nmax_age: 10000000000\n", nil},
		{"plus in max_age", "version: STSv1\nmode: enforce\nmx: a.test\nmax_age: +5\n", nil},
		{"enforce without mx", "version: STSv1\nmode: enforce\nmax_age: 1\n", nil},
		{"mode twice", "version: STSv1\nmode: enforce\nmode: none\nmx: a.test\nmax_age: 1\n", nil},
		{"bad mx", "version: STSv1\nmode: enforce\nmx: a..test\nmax_age: 1\n", nil},
		{"wildcard in the middle", "version: STSv1\nmode: enforce\nmx: a.*.test\nmax_age: 1\n", nil},
		{"line without colon", "version: STSv1\nmode: enforce\nmx a.test\nmax_age: 1\n", nil},
		{"HTML", "<html><body>version: STSv1</body></html>", nil},
		{"64 mx", "version: STSv1\nmode: enforce\nmax_age: 1\n" + strings.Repeat("mx: a.test\n", 64),
			&stsPolicy{mode: stsEnforce, mx: slices.Repeat([]string{"a.test"}, 64), maxAge: time.Second}},
		{"65 mx", "version: STSv1\nmode: enforce\nmax_age: 1\n" + strings.Repeat("mx: a.test\n", 65), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseSTSPolicy(tc.text)
			switch {
			case tc.want == nil && err == nil:
				t.Errorf("parseSTSPolicy(%q) = %+v, want an error", tc.text, got)
			case tc.want != nil && err != nil:
				t.Errorf("parseSTSPolicy(%q) = %v, want %+v", tc.text, err, *tc.want)
			case tc.want != nil && (got.mode != tc.want.mode || got.maxAge != tc.want.maxAge || !slices.Equal(got.mx, tc.want.mx)):
				t.Errorf("parseSTSPolicy(%q) = %+v, want %+v", tc.text, got, *tc.want)
			}
		})
	}
}

func TestParseSTSRecord(t *testing.T) {
	for _, tc := range []struct {
		txts []string
		want string // "": an error
	}{
		{[]string{"v=STSv1; id=20160831085700Z;"}, "20160831085700Z"},
		{[]string{"v=spf1 -all", "v=STSv1;id=abc"}, "abc"},
		{[]string{"v=STSv1 ; id=abc ; ext=1"}, "abc"},
		{[]string{"v=STSv1; id=abc", "v=STSv1; id=def"}, ""},
		{[]string{"v=STSv1;"}, ""},
		{[]string{"v=STSv1; id="}, ""},
		{[]string{"v=STSv1; id=" + strings.Repeat("a", 33)}, ""},
		{[]string{"v=STSv1; id=a-b"}, ""},
		{[]string{"v=STSv10; id=abc"}, ""},
		{[]string{"id=abc; v=STSv1"}, ""},
		{nil, ""},
	} {
		got, err := parseSTSRecord(tc.txts)
		if got != tc.want || (err == nil) != (tc.want != "") {
			t.Errorf("parseSTSRecord(%q) = %q, %v, want %q", tc.txts, got, err, tc.want)
		}
	}
}

// FuzzParseSTSPolicy checks that any body parses without panicking, and
// that what parses is a policy delivery can apply.
func FuzzParseSTSPolicy(f *testing.F) {
	f.Add(stsEnforced)
	f.Add("version: STSv1\nmode: none\nmax_age: 0\n")
	f.Add("version: STSv1\nmode: testing\nmx: *.a.test\nmax_age: 99999999999\n")
	f.Add("mx: \x00\nversion:\n:")
	f.Fuzz(func(t *testing.T, text string) {
		p, err := parseSTSPolicy(text)
		if err != nil {
			return
		}
		switch {
		case p.mode != stsEnforce && p.mode != stsTesting && p.mode != stsNone:
			t.Errorf("mode %q", p.mode)
		case p.maxAge < 0 || p.maxAge > stsMaxAge:
			t.Errorf("max_age %v", p.maxAge)
		case p.mode != stsNone && len(p.mx) == 0:
			t.Errorf("mode %s without mx", p.mode)
		}
		for _, pat := range p.mx {
			if !validMXPattern(pat) || pat != strings.ToLower(pat) {
				t.Errorf("mx pattern %q", pat)
			}
			if h := strings.TrimPrefix(pat, "*."); !strings.HasPrefix(pat, "*.") && !p.allows(h) {
				t.Errorf("policy does not allow its own mx %q", h)
			}
		}
	})
}

// The policy cache keeps at most max domains, dropping the one stored
// longest ago; storing a domain again makes it the newest.
func TestSTSCacheBound(t *testing.T) {
	c := &stsCache{max: 3}
	for _, d := range []string{"a.test", "b.test", "c.test", "a.test", "d.test"} {
		c.put(stsEntry{domain: d})
	}
	for d, want := range map[string]bool{"a.test": true, "b.test": false, "c.test": true, "d.test": true} {
		if _, ok := c.get(d); ok != want {
			t.Errorf("get(%q) found %v, want %v", d, ok, want)
		}
	}
	if n := c.order.Len(); n != 3 {
		t.Errorf("%d entries, want 3", n)
	}
}

// add keeps the entry a domain has: a policy read from the store must
// not replace one fetched meanwhile.
func TestSTSCacheAdd(t *testing.T) {
	c := &stsCache{max: 3}
	fetched := stsEntry{domain: "a.test", id: "fetched"}
	c.put(fetched)
	if got := c.add(stsEntry{domain: "a.test", id: "stored"}); got.id != "fetched" {
		t.Errorf("add(a.test) = %+v, want the entry fetched", got)
	}
	if got := c.add(stsEntry{domain: "b.test", id: "stored"}); got.id != "stored" {
		t.Errorf("add(b.test) = %+v, want the entry added", got)
	}
	for d, want := range map[string]string{"a.test": "fetched", "b.test": "stored"} {
		if e, ok := c.get(d); !ok || e.id != want {
			t.Errorf("get(%q) = %+v, %v; want id %q", d, e, ok, want)
		}
	}
}
