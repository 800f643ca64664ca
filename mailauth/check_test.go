package mailauth

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-msgauth/authres"
	"github.com/emersion/go-msgauth/dmarc"

	"github.com/mailhost/mailhost/mailstore"
)

// checkDNS is the DNS of the Checker tests.
func checkDNS(t *testing.T) *fakeDNS {
	f := &fakeDNS{
		txt: map[string][]string{
			"example.org":           {"v=spf1 ip4:192.0.2.0/24 mx -all"},
			"mail.example.org":      {"v=spf1 ip4:192.0.2.0/24 -all"},
			"_dmarc.example.org":    {"v=DMARC1; p=reject; sp=quarantine"},
			"soft.example":          {"v=spf1 ~all"},
			"neutral.example":       {"v=spf1 ?all"},
			"include.example":       {"v=spf1 include:example.org -all"},
			"redirect.example":      {"v=spf1 redirect=example.org"},
			"broken.example":        {"v=spf1 foo:bar -all"},
			"loop.example":          {"v=spf1 include:loop.example -all"},
			"helo.example":          {"v=spf1 ip4:192.0.2.0/24 -all"},
			"strict.example":        {"v=spf1 ip4:192.0.2.0/24 -all"},
			"bounce.strict.example": {"v=spf1 ip4:192.0.2.0/24 -all"},
			"_dmarc.strict.example": {"v=DMARC1; p=quarantine; aspf=s; adkim=s"},
			"_dmarc.bad.example":    {"v=DMARC1; p=sometimes"},
			"other.example":         {"v=spf1 -all"},
		},
		ip:   map[string][]string{"mx.example.org": {"198.51.100.7"}},
		mx:   map[string][]*net.MX{"example.org": {{Host: "mx.example.org.", Pref: 10}}},
		temp: map[string]bool{"temp.example": true, "_dmarc.tempdmarc.example": true},
	}
	f.publish("example.org", keys(t))
	return f
}

// message is a test message from the given author; signed by domain's
// keys when sign is not "".
func message(t *testing.T, from, sign string) []byte {
	t.Helper()
	m := []byte("From: " + from + "\r\nTo: rcpt@mailhost.test\r\nSubject: test\r\nDate: Sun, 22 Nov 2026 09:30:00 +0000\r\nMessage-ID: <x@y>\r\n\r\nbody\r\n")
	if sign == "" {
		return m
	}
	signed, err := Signer{}.Sign(sign, keys(t), m)
	if err != nil {
		t.Fatalf("Sign() = %v", err)
	}
	return signed
}

func TestCheck(t *testing.T) {
	inside, outside, mxIP := net.ParseIP("192.0.2.10"), net.ParseIP("203.0.113.5"), net.ParseIP("198.51.100.7")
	signed := message(t, "a@example.org", "example.org")
	tampered := []byte(strings.Replace(string(signed), "body", "b0dy", 1))
	signedOther := message(t, "a@other.example", "other.example") // key not published

	tests := []struct {
		name      string
		in        Input
		spf       authres.ResultValue
		spfDomain string
		dkim      []authres.ResultValue
		dmarc     authres.ResultValue
		policy    dmarc.Policy
	}{
		{"spf pass ip4, dmarc pass", Input{IP: inside, HELO: "h", MailFrom: "a@example.org", Message: message(t, "a@example.org", "")},
			authres.ResultPass, "example.org", nil, authres.ResultPass, dmarc.PolicyReject},
		{"spf pass mx", Input{IP: mxIP, HELO: "h", MailFrom: "a@example.org", Message: message(t, "a@example.org", "")},
			authres.ResultPass, "example.org", nil, authres.ResultPass, dmarc.PolicyReject},
		{"spf fail, dmarc fail", Input{IP: outside, HELO: "h", MailFrom: "a@example.org", Message: message(t, "a@example.org", "")},
			authres.ResultFail, "example.org", nil, authres.ResultFail, dmarc.PolicyReject},
		{"spf softfail, no dmarc", Input{IP: outside, HELO: "h", MailFrom: "a@soft.example", Message: message(t, "a@soft.example", "")},
			authres.ResultSoftFail, "soft.example", nil, authres.ResultNone, ""},
		{"spf neutral", Input{IP: outside, HELO: "h", MailFrom: "a@neutral.example", Message: message(t, "a@neutral.example", "")},
			authres.ResultNeutral, "neutral.example", nil, authres.ResultNone, ""},
		{"spf none", Input{IP: outside, HELO: "h", MailFrom: "a@none.example", Message: message(t, "a@none.example", "")},
			authres.ResultNone, "none.example", nil, authres.ResultNone, ""},
		{"spf include", Input{IP: inside, HELO: "h", MailFrom: "a@include.example", Message: message(t, "a@include.example", "")},
			authres.ResultPass, "include.example", nil, authres.ResultNone, ""},
		{"spf redirect", Input{IP: outside, HELO: "h", MailFrom: "a@redirect.example", Message: message(t, "a@redirect.example", "")},
			authres.ResultFail, "redirect.example", nil, authres.ResultNone, ""},
		{"spf permerror syntax", Input{IP: inside, HELO: "h", MailFrom: "a@broken.example", Message: message(t, "a@broken.example", "")},
			authres.ResultPermError, "broken.example", nil, authres.ResultNone, ""},
		{"spf permerror lookup limit", Input{IP: inside, HELO: "h", MailFrom: "a@loop.example", Message: message(t, "a@loop.example", "")},
			authres.ResultPermError, "loop.example", nil, authres.ResultNone, ""},
		{"spf temperror", Input{IP: inside, HELO: "h", MailFrom: "a@temp.example", Message: message(t, "a@temp.example", "")},
			authres.ResultTempError, "temp.example", nil, authres.ResultNone, ""},
		{"null sender checks helo", Input{IP: inside, HELO: "helo.example", MailFrom: "", Message: message(t, "MAILER-DAEMON@helo.example", "")},
			authres.ResultPass, "helo.example", nil, authres.ResultNone, ""},
		{"no ip", Input{HELO: "h", MailFrom: "a@example.org", Message: message(t, "a@example.org", "")},
			authres.ResultNone, "example.org", nil, authres.ResultFail, dmarc.PolicyReject},
		{"dkim pass carries dmarc", Input{IP: outside, HELO: "h", MailFrom: "a@example.org", Message: signed},
			authres.ResultFail, "example.org", []authres.ResultValue{authres.ResultPass, authres.ResultPass}, authres.ResultPass, dmarc.PolicyReject},
		{"dkim fail, body altered", Input{IP: outside, HELO: "h", MailFrom: "a@example.org", Message: tampered},
			authres.ResultFail, "example.org", []authres.ResultValue{authres.ResultFail, authres.ResultFail}, authres.ResultFail, dmarc.PolicyReject},
		{"dkim permerror, no key", Input{IP: outside, HELO: "h", MailFrom: "a@other.example", Message: signedOther},
			authres.ResultFail, "other.example", []authres.ResultValue{authres.ResultPermError, authres.ResultPermError}, authres.ResultNone, ""},
		{"dkim of another domain does not align", Input{IP: outside, HELO: "h", MailFrom: "a@soft.example", Message: []byte(strings.Replace(string(signed), "From: a@example.org", "From: a@strict.example", 1))},
			authres.ResultSoftFail, "soft.example", []authres.ResultValue{authres.ResultFail, authres.ResultFail}, authres.ResultFail, dmarc.PolicyQuarantine},
		{"dmarc relaxed alignment", Input{IP: inside, HELO: "h", MailFrom: "bounce@mail.example.org", Message: message(t, "a@example.org", "")},
			authres.ResultPass, "mail.example.org", nil, authres.ResultPass, dmarc.PolicyReject},
		{"dmarc strict alignment", Input{IP: inside, HELO: "h", MailFrom: "b@bounce.strict.example", Message: message(t, "a@strict.example", "")},
			authres.ResultPass, "bounce.strict.example", nil, authres.ResultFail, dmarc.PolicyQuarantine},
		{"dmarc of the organizational domain", Input{IP: inside, HELO: "h", MailFrom: "a@example.org", Message: message(t, "a@sub.example.org", "")},
			authres.ResultPass, "example.org", nil, authres.ResultPass, dmarc.PolicyQuarantine},
		{"dmarc bad record", Input{IP: outside, HELO: "h", MailFrom: "a@bad.example", Message: message(t, "a@bad.example", "")},
			authres.ResultNone, "bad.example", nil, authres.ResultPermError, ""},
		{"dmarc temperror", Input{IP: outside, HELO: "h", MailFrom: "a@tempdmarc.example", Message: message(t, "a@tempdmarc.example", "")},
			authres.ResultNone, "tempdmarc.example", nil, authres.ResultTempError, ""},
		{"no from field", Input{IP: inside, HELO: "h", MailFrom: "a@example.org", Message: []byte("Subject: x\r\n\r\nbody\r\n")},
			authres.ResultPass, "example.org", nil, authres.ResultPermError, ""},
		{"two from domains", Input{IP: inside, HELO: "h", MailFrom: "a@example.org", Message: message(t, "a@example.org, b@evil.example", "")},
			authres.ResultPass, "example.org", nil, authres.ResultPermError, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Checker{Resolver: checkDNS(t), Hostname: "mx.mailhost.test"}
			hdr, res := c.Check(t.Context(), tt.in)
			var dk []authres.ResultValue
			for _, d := range res.DKIM {
				dk = append(dk, d.Value)
			}
			if res.SPF != tt.spf || res.SPFDomain != tt.spfDomain || !slices.Equal(dk, tt.dkim) || res.DMARC != tt.dmarc || res.Policy != tt.policy {
				t.Errorf("Check() = spf %s (%s) dkim %v dmarc %s policy %q; want spf %s (%s) dkim %v dmarc %s policy %q\n%s",
					res.SPF, res.SPFDomain, dk, res.DMARC, res.Policy, tt.spf, tt.spfDomain, tt.dkim, tt.dmarc, tt.policy, hdr)
			}
			checkHeader(t, hdr, res)
		})
	}
}

// checkHeader parses the Authentication-Results field and compares it
// with the results.
func checkHeader(t *testing.T, hdr string, res Results) {
	t.Helper()
	name, value, ok := strings.Cut(hdr, ": ")
	if !ok || name != "Authentication-Results" || !strings.HasSuffix(value, "\r\n") {
		t.Fatalf("header = %q, want an Authentication-Results field ending in CRLF", hdr)
	}
	for _, line := range strings.Split(strings.TrimSuffix(value, "\r\n"), "\r\n") {
		if len(line) > 998 {
			t.Errorf("header line of %d octets", len(line))
		}
	}
	unfolded := strings.ReplaceAll(strings.TrimSuffix(value, "\r\n"), "\r\n\t", " ")
	id, results, err := authres.Parse(unfolded)
	if err != nil {
		t.Fatalf("authres.Parse(%q) = %v", unfolded, err)
	}
	if id != "mx.mailhost.test" {
		t.Errorf("authserv-id = %q, want mx.mailhost.test", id)
	}
	var spf, dm authres.ResultValue
	var dk []authres.ResultValue
	for _, r := range results {
		switch r := r.(type) {
		case *authres.SPFResult:
			spf = r.Value
		case *authres.DKIMResult:
			dk = append(dk, r.Value)
		case *authres.DMARCResult:
			dm = r.Value
			if r.From != res.FromDomain {
				t.Errorf("header.from = %q, want %q", r.From, res.FromDomain)
			}
		}
	}
	wantDK := []authres.ResultValue{authres.ResultNone}
	if len(res.DKIM) > 0 {
		wantDK = nil
		for _, d := range res.DKIM {
			wantDK = append(wantDK, d.Value)
		}
	}
	if spf != res.SPF || dm != res.DMARC || !slices.Equal(dk, wantDK) {
		t.Errorf("header %q says spf %s dkim %v dmarc %s; results say %s %v %s", hdr, spf, dk, dm, res.SPF, wantDK, res.DMARC)
	}
}

func TestCheckHeaderText(t *testing.T) {
	c := &Checker{Resolver: checkDNS(t), Hostname: "mx.mailhost.test"}
	hdr, _ := c.Check(t.Context(), Input{IP: net.ParseIP("192.0.2.10"), HELO: "client.example.org", MailFrom: "a@example.org",
		Message: message(t, "a@example.org", "example.org")})
	for _, want := range []string{
		"Authentication-Results: mx.mailhost.test;\r\n\tspf=pass smtp.helo=client.example.org smtp.mailfrom=example.org;",
		"\tdkim=pass header.d=example.org header.i=@example.org;",
		"\tdmarc=pass header.from=example.org\r\n",
	} {
		if !strings.Contains(hdr, want) {
			t.Errorf("header =\n%s\nwant it to contain %q", hdr, want)
		}
	}
}

// TestCheckDeadline: a resolver that never answers costs no more than the
// Checker's timeout (or the context's deadline), and gives temperror.
func TestCheckDeadline(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		ctx     func() (context.Context, context.CancelFunc)
	}{
		{"checker timeout", 100 * time.Millisecond, func() (context.Context, context.CancelFunc) { return context.WithCancel(t.Context()) }},
		{"context deadline", time.Hour, func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(t.Context(), 100*time.Millisecond)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Checker{Resolver: &fakeDNS{block: true}, Hostname: "mx.mailhost.test", Timeout: tc.timeout}
			ctx, cancel := tc.ctx()
			defer cancel()
			start := time.Now()
			_, res := c.Check(ctx, Input{IP: net.ParseIP("192.0.2.10"), HELO: "h", MailFrom: "a@example.org",
				Message: message(t, "a@example.org", "example.org")})
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Check() took %v with a 100ms bound", d)
			}
			if res.SPF != authres.ResultTempError || res.DMARC != authres.ResultTempError ||
				len(res.DKIM) != 2 || res.DKIM[0].Value != authres.ResultTempError {
				t.Errorf("Check() = spf %s dkim %+v dmarc %s, want temperror throughout", res.SPF, res.DKIM, res.DMARC)
			}
		})
	}
}

// TestPublishedRecordsPass: mail sent by this server for a domain that
// published what DNSRecords lists passes SPF, DKIM and DMARC at the
// receiver, and mail from elsewhere softfails SPF and fails DMARC.
func TestPublishedRecordsPass(t *testing.T) {
	f := &fakeDNS{txt: map[string][]string{}, ip: map[string][]string{"mx.mailhost.test": {"198.51.100.25"}}, mx: map[string][]*net.MX{}}
	for _, r := range DNSRecords("hosted.example", "mx.mailhost.test", keys(t)) {
		switch r.Type {
		case "TXT":
			f.txt[r.Name] = append(f.txt[r.Name], r.Value)
		case "MX":
			f.mx[r.Name] = append(f.mx[r.Name], &net.MX{Host: r.Value + ".", Pref: uint16(r.Priority)})
		}
	}
	c := &Checker{Resolver: f, Hostname: "receiver.example"}
	signed, err := StoreSigner{Store: keyTable{7: keys(t)}}.Sign(t.Context(), mailstore.Domain{ID: 7, Name: "hosted.example"}, message(t, "u@hosted.example", ""))
	if err != nil {
		t.Fatal(err)
	}
	_, res := c.Check(t.Context(), Input{IP: net.ParseIP("198.51.100.25"), HELO: "mx.mailhost.test", MailFrom: "u@hosted.example", Message: signed})
	if res.SPF != authres.ResultPass || len(res.DKIM) != 2 || res.DKIM[0].Value != authres.ResultPass ||
		res.DKIM[1].Value != authres.ResultPass || res.DMARC != authres.ResultPass || res.Policy != dmarc.PolicyNone {
		t.Errorf("our mail: spf %s dkim %+v dmarc %s policy %s; want pass, pass, pass, none", res.SPF, res.DKIM, res.DMARC, res.Policy)
	}
	_, res = c.Check(t.Context(), Input{IP: net.ParseIP("203.0.113.9"), HELO: "spoof.example", MailFrom: "u@hosted.example", Message: message(t, "u@hosted.example", "")})
	if res.SPF != authres.ResultSoftFail || res.DMARC != authres.ResultFail {
		t.Errorf("spoofed mail: spf %s dmarc %s; want softfail, fail", res.SPF, res.DMARC)
	}
}
