package mailauth_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mailhost/mailhost/internal/dnstest"
	"github.com/mailhost/mailhost/mailauth"
)

// TestCheckOwnership asks a stub DNS server through a real *net.Resolver,
// as the service does with its `dns` setting.
func TestCheckOwnership(t *testing.T) {
	const token = "abcdefghijklmnopqrstuvwxyz"
	for _, tc := range []struct {
		name  string
		setup func(s *dnstest.Server)
		token string
		// want: "txt", "mx" or "" (not verified); err: ErrDNSUnanswered.
		want  string
		err   error
		found []string // parts of Found, when not verified
	}{
		{name: "nothing published", setup: func(s *dnstest.Server) {},
			found: []string{"no TXT record at _mailhost.example.com", "no MX record for example.com"}},
		{name: "TXT record", setup: func(s *dnstest.Server) {
			s.SetTXT("_mailhost.example.com", "mailhost-verify="+token)
		}, want: "txt"},
		{name: "TXT record among others", setup: func(s *dnstest.Server) {
			s.SetTXT("_mailhost.example.com", "something else", "mailhost-verify="+token)
		}, want: "txt"},
		{name: "TXT record over 255 bytes is joined", setup: func(s *dnstest.Server) {
			s.SetTXT("_mailhost.example.com", strings.Repeat("x", 300), "mailhost-verify="+token)
		}, want: "txt"},
		{name: "wrong token", setup: func(s *dnstest.Server) {
			s.SetTXT("_mailhost.example.com", "mailhost-verify=other")
		}, found: []string{`TXT at _mailhost.example.com: "mailhost-verify=other"`, "no MX record for example.com"}},
		{name: "TXT at the domain, not at _mailhost", setup: func(s *dnstest.Server) {
			s.SetTXT("example.com", "mailhost-verify="+token)
		}, found: []string{"no TXT record at _mailhost.example.com"}},
		{name: "empty token proves nothing", token: "-", setup: func(s *dnstest.Server) {
			s.SetTXT("_mailhost.example.com", "mailhost-verify=")
		}, found: []string{`TXT at _mailhost.example.com: "mailhost-verify="`}},
		{name: "MX here", setup: func(s *dnstest.Server) {
			s.SetMX("example.com", "mx.mailhost.test")
		}, want: "mx"},
		{name: "MX here, second, other case, trailing dot", setup: func(s *dnstest.Server) {
			s.SetMX("example.com", "mx.elsewhere.test", "MX.Mailhost.Test.")
		}, want: "mx"},
		{name: "MX elsewhere", setup: func(s *dnstest.Server) {
			s.SetMX("example.com", "mx.elsewhere.test")
		}, found: []string{"no TXT record at _mailhost.example.com", "MX of example.com: mx.elsewhere.test"}},
		{name: "MX of a subdomain of this host", setup: func(s *dnstest.Server) {
			s.SetMX("example.com", "evil.mx.mailhost.test")
		}, found: []string{"MX of example.com: evil.mx.mailhost.test"}},
		{name: "TXT lookup fails, MX proves it", setup: func(s *dnstest.Server) {
			s.Fail("_mailhost.example.com", true)
			s.SetMX("example.com", "mx.mailhost.test")
		}, want: "mx"},
		{name: "TXT lookup fails", setup: func(s *dnstest.Server) {
			s.Fail("_mailhost.example.com", true)
			s.SetMX("example.com", "mx.elsewhere.test")
		}, err: mailauth.ErrDNSUnanswered, found: []string{"no answer for the TXT record at _mailhost.example.com"}},
		{name: "MX lookup fails", setup: func(s *dnstest.Server) {
			s.Fail("example.com", true)
		}, err: mailauth.ErrDNSUnanswered, found: []string{"no answer for the MX records of example.com"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := dnstest.Start(t)
			tc.setup(s)
			tok := token
			if tc.token == "-" {
				tok = ""
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			o, err := mailauth.CheckOwnership(ctx, s.Resolver(), "example.com", tok, "mx.mailhost.test")
			if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Fatalf("CheckOwnership() error = %v, want %v", err, tc.err)
			}
			if o.Verified != (tc.want != "") || o.By != tc.want {
				t.Errorf("CheckOwnership() = verified %v by %q, want by %q (found %s)", o.Verified, o.By, tc.want, o.Found)
			}
			wantExpected := `a TXT record "mailhost-verify=` + tok + `" at _mailhost.example.com, or an MX record of example.com pointing to mx.mailhost.test`
			if o.Expected != wantExpected {
				t.Errorf("CheckOwnership().Expected = %q, want %q", o.Expected, wantExpected)
			}
			for _, f := range tc.found {
				if !strings.Contains(o.Found, f) {
					t.Errorf("CheckOwnership().Found = %q, want it to say %q", o.Found, f)
				}
			}
		})
	}
}

func TestNewVerifyToken(t *testing.T) {
	a, b := mailauth.NewVerifyToken(), mailauth.NewVerifyToken()
	if len(a) != 26 || a == b || strings.ToLower(a) != a {
		t.Errorf("NewVerifyToken() = %q, %q, want two different lower-case 26-character tokens", a, b)
	}
	r := mailauth.VerifyRecord("example.com", a)
	if r.Type != "TXT" || r.Name != "_mailhost.example.com" || r.Value != "mailhost-verify="+a {
		t.Errorf("VerifyRecord() = %+v, want TXT _mailhost.example.com mailhost-verify=%s", r, a)
	}
}
