package smtpd

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/emersion/go-msgauth/authres"

	"github.com/mailhost/mailhost/internal/dnstest"
	"github.com/mailhost/mailhost/mailauth"
)

// dmarcChecker adapts mailauth.Checker as the wiring does.
type dmarcChecker struct{ c *mailauth.Checker }

func (d dmarcChecker) Check(ctx context.Context, ip net.IP, helo, from string, msg []byte) string {
	h, _ := d.CheckDMARC(ctx, ip, helo, from, msg)
	return h
}

func (d dmarcChecker) CheckDMARC(ctx context.Context, ip net.IP, helo, from string, msg []byte) (string, DMARCVerdict) {
	h, r := d.c.Check(ctx, mailauth.Input{IP: ip, HELO: helo, MailFrom: from, Message: msg})
	return h, DMARCVerdict{Fail: r.DMARC == authres.ResultFail, Domain: r.FromDomain, Policy: DMARCPolicy(r.Policy)}
}

// TestDMARCPolicy drives the MX with the real checks over the stub DNS:
// unsigned mail from loopback, whose SPF fails (-all) for every sender
// domain below, so DMARC fails and each domain's policy decides.
func TestDMARCPolicy(t *testing.T) {
	dns := dnstest.Start(t)
	for d, rec := range map[string]string{
		"reject.test":     "v=DMARC1; p=reject",
		"quarantine.test": "v=DMARC1; p=quarantine",
		"none.test":       "v=DMARC1; p=none",
	} {
		dns.SetTXT(d, "v=spf1 -all")
		dns.SetTXT("_dmarc."+d, rec)
	}
	// Allowed by SPF: DMARC passes whatever the policy.
	dns.SetTXT("good.test", "v=spf1 ip4:127.0.0.1 -all")
	dns.SetTXT("_dmarc.good.test", "v=DMARC1; p=reject")
	// sub.reject.test has no record: the organizational domain's sp=
	// (absent, so p=) applies.
	checker := dmarcChecker{&mailauth.Checker{Resolver: dns.Resolver(), Hostname: "mx.test"}}

	tests := []struct {
		name, from string
		enforce    bool
		wantErr    string // "" delivered
		quarantine bool
	}{
		{"reject refused", "a@reject.test", true, "550 5.7.1", false},
		{"reject of the organizational domain", "a@sub.reject.test", true, "550 5.7.1", false},
		{"quarantine marked", "a@quarantine.test", true, "", true},
		{"none delivered", "a@none.test", true, "", false},
		{"pass delivered", "a@good.test", true, "", false},
		{"not enforced", "a@reject.test", false, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(c *Config) {
				c.Authenticator = checker
				c.DMARCEnforce = tt.enforce
			})
			msg := "From: " + tt.from + "\r\nTo: bob@a.test\r\nSubject: dmarc\r\n\r\nbody\r\n"
			err := e.send(t, tt.from, []string{"bob@a.test"}, msg)
			inbox := e.inbox(t, "bob@a.test")
			if tt.wantErr != "" {
				if got := smtpCode(err); got != tt.wantErr {
					t.Fatalf("send = %v (%s), want %s", err, got, tt.wantErr)
				}
				if !strings.Contains(err.Error(), "DMARC") {
					t.Errorf("reply %q does not name DMARC", err)
				}
				if len(inbox) != 0 {
					t.Errorf("INBOX has %d messages, want none", len(inbox))
				}
				return
			}
			if err != nil {
				t.Fatalf("send = %v, want delivered", err)
			}
			// p=quarantine: to the Junk folder, marked (RFC 7489 section 6.3).
			got, want := inbox, "INBOX"
			if tt.quarantine {
				got, want = e.folder(t, "bob@a.test", "Junk"), "Junk"
				if len(inbox) != 0 {
					t.Errorf("INBOX has %d messages, want none (quarantined to Junk)", len(inbox))
				}
			}
			if len(got) != 1 {
				t.Fatalf("%s has %d messages, want 1", want, len(got))
			}
			if marked := strings.Contains(string(got[0]), "X-Mailhost-Quarantine: dmarc"); marked != tt.quarantine {
				t.Errorf("quarantine field present = %v, want %v:\n%s", marked, tt.quarantine, got[0])
			}
		})
	}
}
