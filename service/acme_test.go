package service

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"golang.org/x/net/dns/dnsmessage"

	"github.com/mailhost/mailhost/config"
	"github.com/mailhost/mailhost/internal/pgtest"
)

// pebbleVersion is the Pebble (Let's Encrypt's test CA) the ACME tests
// build from the Go module proxy.
const pebbleVersion = "v2.10.1"

// pebble is a running Pebble on loopback.
type pebble struct {
	dir      string       // its ACME directory URL
	client   *http.Client // trusts Pebble's own HTTPS listener
	roots    *x509.CertPool
	httpPort int // where it validates HTTP-01
	tlsPort  int // where it validates TLS-ALPN-01
	log      string
}

// TestACMEPebble obtains certificates from Pebble, which validates the
// challenges for real (no PEBBLE_VA_ALWAYS_VALID): its DNS server is a
// stub that answers 127.0.0.1 for every name, so it reaches the HTTP-01
// listener and the https listener at the ports its configuration names.
// The certificate is then served on IMAP and SMTP STARTTLS and on https,
// verified against Pebble's root; and a second node on the same store
// serves it without a request to the CA.
func TestACMEPebble(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: builds and runs Pebble")
	}
	p := startPebble(t)

	t.Run("http-01 on bbolt, then a restart", func(t *testing.T) {
		dir := t.TempDir()
		host := "mx.http01.example"
		a := startACMENode(t, p, dir, host, nil, "MAILHOST_ACME_HTTP", fmt.Sprintf("127.0.0.1:%d", p.httpPort))
		waitForACMECert(t, p, host, func() (*x509.Certificate, error) { return imapCert(a.addrs.IMAP, host, p.roots) })
		// Pebble fetched the token from the HTTP-01 listener (after
		// TLS-ALPN-01, which autocert tries first, failed: nothing
		// listens on its tlsPort in this test).
		if !strings.Contains(p.logTail(), "validate w/ HTTP: http://"+host) {
			t.Errorf("Pebble's log shows no HTTP-01 validation of %s", host)
		}
		if c, err := smtpCert(a.addrs.SMTP, host, p.roots); err != nil {
			t.Errorf("SMTP STARTTLS: %v", err)
		} else if c.VerifyHostname(host) != nil {
			t.Errorf("SMTP certificate names %v, want %s", c.DNSNames, host)
		}
		a.stop()

		// The store keeps it: the next start asks the CA nothing.
		var requests atomic.Int64
		b := startACMENode(t, p, dir, host, &requests, "MAILHOST_ACME_HTTP", fmt.Sprintf("127.0.0.1:%d", p.httpPort))
		waitForACMECert(t, p, host, func() (*x509.Certificate, error) { return imapCert(b.addrs.IMAP, host, p.roots) })
		if n := requests.Load(); n != 0 {
			t.Errorf("the restarted node made %d requests to the CA, want 0", n)
		}
	})

	t.Run("tls-alpn-01 on https", func(t *testing.T) {
		host := "mx.alpn.example"
		a := startACMENode(t, p, t.TempDir(), host, nil, "MAILHOST_HTTPS", fmt.Sprintf("127.0.0.1:%d", p.tlsPort))
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: p.roots, ServerName: host},
		}}
		waitForACMECert(t, p, host, func() (*x509.Certificate, error) {
			resp, err := client.Get("https://" + a.addrs.HTTPS + "/healthz")
			if err != nil {
				return nil, err
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				return nil, fmt.Errorf("GET /healthz = %d", resp.StatusCode)
			}
			return resp.TLS.PeerCertificates[0], nil
		})
		if c, err := imapCert(a.addrs.IMAP, host, p.roots); err != nil {
			t.Errorf("IMAP STARTTLS: %v", err)
		} else if c.VerifyHostname(host) != nil {
			t.Errorf("IMAP certificate names %v", c.DNSNames)
		}
	})

	t.Run("two nodes on PostgreSQL", func(t *testing.T) {
		url := pgtest.URL(t)
		host := "mx.shared.example"
		a := startACMENode(t, p, t.TempDir(), host, nil, "MAILHOST_STORE", url, "MAILHOST_NODE", "a",
			"MAILHOST_ACME_HTTP", fmt.Sprintf("127.0.0.1:%d", p.httpPort))
		waitForACMECert(t, p, host, func() (*x509.Certificate, error) { return imapCert(a.addrs.IMAP, host, p.roots) })
		// Node b runs beside a, on the same database: it finds the
		// certificate there and asks the CA nothing.
		var requests atomic.Int64
		b := startACMENode(t, p, t.TempDir(), host, &requests, "MAILHOST_STORE", url, "MAILHOST_NODE", "b", "MAILHOST_HTTPS", "127.0.0.1:0")
		waitForACMECert(t, p, host, func() (*x509.Certificate, error) { return smtpCert(b.addrs.SMTP, host, p.roots) })
		if n := requests.Load(); n != 0 {
			t.Errorf("the second node made %d requests to the CA, want 0", n)
		}
	})
}

type acmeNode struct {
	addrs Addrs
	stop  func()
}

// startACMENode runs the service with acme on, Pebble as the CA; when
// requests is set, it counts the requests made to the CA.
func startACMENode(t *testing.T, p *pebble, dir, host string, requests *atomic.Int64, env ...string) acmeNode {
	t.Helper()
	env = append([]string{"MAILHOST_HOSTNAME", host, "MAILHOST_ACME", "true", "MAILHOST_ACME_DIRECTORY", p.dir}, env...)
	cfg, err := testConfig(dir, env...)
	if err != nil {
		t.Fatal(err)
	}
	client := p.client
	if requests != nil {
		client = &http.Client{Timeout: p.client.Timeout, Transport: countingTransport{p.client.Transport, requests}}
	}
	addrs, stop := runService(t, cfg, Options{ACMEHTTPClient: client})
	return acmeNode{addrs, stop}
}

type countingTransport struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.rt.RoundTrip(r)
}

// waitForACMECert polls get until it answers a certificate for host that
// chains to Pebble's root (the self-signed one is served until then).
func waitForACMECert(t *testing.T, p *pebble, host string, get func() (*x509.Certificate, error)) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		c, err := get()
		if err == nil && c.VerifyHostname(host) == nil {
			return
		}
		last = err
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no certificate from Pebble for %s after 90s; last: %v\npebble log:\n%s", host, last, p.logTail())
}

// imapCert does IMAP STARTTLS (RFC 9051 section 6.2.1) and answers the
// server's certificate once it verifies against roots for host.
func imapCert(addr, host string, roots *x509.CertPool) (*x509.Certificate, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	if _, err := r.ReadString('\n'); err != nil {
		return nil, fmt.Errorf("greeting: %w", err)
	}
	fmt.Fprintf(c, "a STARTTLS\r\n")
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("STARTTLS: %w", err)
		}
		if strings.HasPrefix(line, "a ") {
			if !strings.HasPrefix(line, "a OK") {
				return nil, fmt.Errorf("STARTTLS: %s", line)
			}
			break
		}
	}
	tc := tls.Client(c, &tls.Config{RootCAs: roots, ServerName: host})
	if err := tc.Handshake(); err != nil {
		return nil, err
	}
	return tc.ConnectionState().PeerCertificates[0], nil
}

// smtpCert does SMTP STARTTLS and answers the verified certificate.
func smtpCert(addr, host string, roots *x509.CertPool) (*x509.Certificate, error) {
	c, err := smtp.DialStartTLS(addr, &tls.Config{RootCAs: roots, ServerName: host})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	// The handshake runs with the first command after STARTTLS.
	if err := c.Noop(); err != nil {
		return nil, err
	}
	st, ok := c.TLSConnectionState()
	if !ok || len(st.PeerCertificates) == 0 {
		return nil, fmt.Errorf("no TLS after STARTTLS")
	}
	return st.PeerCertificates[0], nil
}

// startPebble builds Pebble (cached in the user's cache directory) and
// runs it on loopback with a stub DNS server.
func startPebble(t *testing.T) *pebble {
	t.Helper()
	bin := pebbleBinary(t)
	dir := t.TempDir()
	certFile, keyFile, pool := pebbleListenerCert(t, dir)
	acmePort, mgmtPort := freePort(t), freePort(t)
	p := &pebble{httpPort: freePort(t), tlsPort: freePort(t)}
	cfg := map[string]any{"pebble": map[string]any{
		"listenAddress":                  fmt.Sprintf("127.0.0.1:%d", acmePort),
		"managementListenAddress":        fmt.Sprintf("127.0.0.1:%d", mgmtPort),
		"certificate":                    certFile,
		"privateKey":                     keyFile,
		"httpPort":                       p.httpPort,
		"tlsPort":                        p.tlsPort,
		"ocspResponderURL":               "",
		"externalAccountBindingRequired": false,
		"profiles":                       map[string]any{"default": map[string]any{"description": "test", "validityPeriod": 7776000}},
	}}
	raw, _ := json.Marshal(cfg)
	cfgFile := filepath.Join(dir, "pebble.json")
	if err := os.WriteFile(cfgFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(dir, "pebble.log")
	p.log = logFile
	lf, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lf.Close() })
	cmd := exec.Command(bin, "-config", cfgFile, "-dnsserver", startStubDNS(t))
	// No sleeping before validation, and no nonces refused on purpose
	// (the client copes, but the test is quicker without).
	cmd.Env = append(os.Environ(), "PEBBLE_VA_NOSLEEP=1", "PEBBLE_WFE_NONCEREJECT=0")
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start pebble: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })

	p.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	p.dir = fmt.Sprintf("https://127.0.0.1:%d/dir", acmePort)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := p.client.Get(p.dir)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("pebble not up after 30s: %v\n%s", err, p.logTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The root its certificates chain to, from the management API.
	resp, err := p.client.Get(fmt.Sprintf("https://127.0.0.1:%d/roots/0", mgmtPort))
	if err != nil {
		t.Fatalf("pebble root: %v", err)
	}
	defer resp.Body.Close()
	root, _ := io.ReadAll(resp.Body)
	p.roots = x509.NewCertPool()
	if !p.roots.AppendCertsFromPEM(root) {
		t.Fatalf("pebble root is not PEM: %q", root)
	}
	return p
}

func (p *pebble) logTail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 64000 {
		b = b[len(b)-64000:]
	}
	return string(b)
}

// pebbleBinary answers the pebble command, built from the module proxy
// on first use. Without network it skips, except under CI=true.
func pebbleBinary(t *testing.T) string {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "mailhost-test", "pebble-"+pebbleVersion)
	bin := filepath.Join(dir, "pebble")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	cmd := exec.Command("go", "install", "github.com/letsencrypt/pebble/v2/cmd/pebble@"+pebbleVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=", "GOWORK=off", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("build pebble %s: %v\n%s (CI=true: the ACME test must run)", pebbleVersion, err, out)
		}
		t.Skipf("cannot build pebble %s (%v): %s", pebbleVersion, err, out)
	}
	return bin
}

// pebbleListenerCert makes the certificate of Pebble's own HTTPS listener.
func pebbleListenerCert(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	c, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(c)
	return certFile, keyFile, pool
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startStubDNS serves DNS over TCP (Pebble asks over TCP) on loopback:
// 127.0.0.1 for every A question, no records of any other type.
func startStubDNS(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				for {
					var n uint16
					if binary.Read(c, binary.BigEndian, &n) != nil {
						return
					}
					q := make([]byte, n)
					if _, err := io.ReadFull(c, q); err != nil {
						return
					}
					a, err := stubAnswer(q)
					if err != nil {
						return
					}
					binary.Write(c, binary.BigEndian, uint16(len(a)))
					c.Write(a)
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func stubAnswer(query []byte) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired})
	b.EnableCompression()
	b.StartQuestions()
	b.Question(q)
	b.StartAnswers()
	if q.Type == dnsmessage.TypeA {
		b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}, dnsmessage.AResource{A: [4]byte{127, 0, 0, 1}})
	}
	return b.Finish()
}

// runService runs the service with cfg and o (its Stdout, Logger and
// Ready set here) until the test ends or stop is called.
func runService(t *testing.T, cfg *config.Config, o Options) (Addrs, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan Addrs, 1)
	done := make(chan error, 1)
	o.Stdout = io.Discard
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	o.Ready = func(a Addrs) { ready <- a }
	go func() { done <- Run(ctx, cfg, o) }()
	var addrs Addrs
	select {
	case addrs = <-ready:
	case err := <-done:
		t.Fatalf("Run = %v before ready", err)
	case <-time.After(10 * time.Second):
		t.Fatal("server not ready after 10s")
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run = %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return addrs, stop
}
