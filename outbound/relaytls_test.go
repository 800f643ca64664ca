package outbound

import (
	"crypto/tls"
	"crypto/x509"
	"strings"
	"testing"

	"github.com/mailhost/mailhost/internal/testcert"
	"github.com/mailhost/mailhost/mailstore"
)

// loopbackCert is a server certificate for 127.0.0.1, its own CA, and a
// pool that trusts it.
func loopbackCert(t *testing.T) (*tls.Config, *x509.CertPool) {
	cert, pool := testcert.New(t, "127.0.0.1")
	return &tls.Config{Certificates: []tls.Certificate{cert}}, pool
}

// With RelayVerifyTLS the relay's certificate is checked (here against
// TLS.RootCAs) and the login goes over the verified session.
func TestRelayVerifyTLS(t *testing.T) {
	f := newFixture(t)
	srvTLS, roots := loopbackCert(t)
	relay := newRelay(t, relayOptions{tls: srvTLS, mechs: []string{"PLAIN"}, user: relayUser, pass: relayPass})
	clk := newClock()
	f.queue(clk.Now(), f.submission("x@remote.test"), message("verified"))
	e := f.start(clk, func(c *Config) {
		relayAuth(relay, relayPass)(c)
		c.RelayVerifyTLS = true
		c.TLS = &tls.Config{RootCAs: roots}
	})
	if got := relay.waitMessages(t, 1)[0]; !got.tls {
		t.Errorf("message sent without TLS")
	}
	f.waitEmpty()
	stopClean(t, e, relay)
}

// With RelayVerifyTLS, a relay whose certificate does not verify, that
// offers no STARTTLS or that refuses it gets nothing: the mail is
// deferred, never sent in plain text, and the password never goes out.
func TestRelayVerifyTLSRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		tls  *tls.Config
		want string
	}{
		{"untrusted certificate", selfSigned(t), "certificate"},
		{"no STARTTLS", nil, "offers no STARTTLS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			_, roots := loopbackCert(t) // trusts another certificate
			relay := newRelay(t, relayOptions{tls: tc.tls, insecureAuth: true, mechs: []string{"PLAIN"}, user: relayUser, pass: relayPass})
			clk := newClock()
			f.queue(clk.Now(), f.submission("x@remote.test"), message("not sent"))
			e := f.start(clk, func(c *Config) {
				relayAuth(relay, relayPass)(c)
				c.RelayVerifyTLS = true
				c.TLS = &tls.Config{RootCAs: roots}
			})
			got := f.waitAttempts(1)
			if got.Recipients[0].State != mailstore.RecipientPending || !got.NextAttempt.After(clk.Now()) {
				t.Errorf("entry %+v, want its recipient pending and a retry later", got)
			}
			for _, want := range []string{tc.want, "relay_verify_tls"} {
				if !strings.Contains(got.LastError, want) {
					t.Errorf("recorded error %q lacks %q", got.LastError, want)
				}
			}
			stopClean(t, e, relay)
			if n := len(relay.messages()); n != 0 {
				t.Errorf("relay got %d messages, want none", n)
			}
			relay.mu.Lock()
			defer relay.mu.Unlock()
			if len(relay.logins)+len(relay.failed) != 0 {
				t.Errorf("logins tried: %v %v, want none", relay.logins, relay.failed)
			}
		})
	}
}
