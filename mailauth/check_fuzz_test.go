package mailauth

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/emersion/go-msgauth/dkim"
)

// fuzzDNS publishes example.org's DKIM keys, an SPF and a DMARC record,
// so that fuzzed messages reach every branch of the checks.
func fuzzDNS(tb testing.TB) *fakeDNS {
	dns := &fakeDNS{txt: map[string][]string{
		"example.org":        {"v=spf1 ip4:192.0.2.0/24 -all"},
		"_dmarc.example.org": {"v=DMARC1; p=reject; sp=quarantine; adkim=s"},
	}}
	dns.publish("example.org", keys(tb))
	return dns
}

// checkField fails unless h is one header field ending in CRLF, folded
// only with CRLF and a blank (RFC 5322 section 2.2.3), with no other CR
// or LF: an Authentication-Results field prepended to a message must not
// be able to add fields of its own.
func checkField(t *testing.T, what, h string) {
	t.Helper()
	if !strings.HasSuffix(h, "\r\n") {
		t.Fatalf("%s %q does not end in CRLF", what, h)
	}
	for i, line := range strings.Split(strings.TrimSuffix(h, "\r\n"), "\r\n") {
		if strings.ContainsAny(line, "\r\n") {
			t.Fatalf("%s %q: bare CR or LF in line %d", what, h, i)
		}
		if i > 0 && !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "\t") {
			t.Fatalf("%s %q: line %d is not a continuation", what, h, i)
		}
		if len(line) > 998 {
			t.Fatalf("%s: line %d has %d octets", what, i, len(line))
		}
	}
}

// FuzzCheck runs SPF, DKIM and DMARC on arbitrary messages and envelopes
// (all of it comes from the sending client): Check never panics and the
// field it returns is one well-formed header field.
func FuzzCheck(f *testing.F) {
	msg := "From: Alice <alice@example.org>\r\nTo: bob@example.com\r\nSubject: hi\r\n\r\nhello\r\n"
	signed, err := Signer{}.Sign("example.org", keys(f), []byte(msg))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(signed, "mail.example.org", "alice@example.org")
	f.Add([]byte(msg), "[192.0.2.1]", "")
	f.Add([]byte("From: a@b, c@d\r\nDKIM-Signature: v=1; d=ex\r\n ample.org; s=x; b=; bh=\r\n\r\n"), "x", "a@b")
	f.Add([]byte("From: \"\r\n\" <a@example.org>\r\n\r\n"), "\r\n", "@")
	f.Add([]byte(msg), strings.Repeat(`"`, 600), strings.Repeat(`"`, 600)+"@"+strings.Repeat(`"`, 600))
	f.Add([]byte(msg), `helo\`, `a\@b\`)
	c := &Checker{Resolver: fuzzDNS(f), Hostname: "mx.test"}
	ip := net.ParseIP("192.0.2.7")
	f.Fuzz(func(t *testing.T, msg []byte, helo, from string) {
		h, _ := c.Check(context.Background(), Input{IP: ip, HELO: helo, MailFrom: from, Message: msg})
		if !strings.HasPrefix(h, "Authentication-Results: mx.test;") {
			t.Fatalf("Check = %q", h)
		}
		checkField(t, "Check", h)
		if strings.Contains(strings.TrimPrefix(h, "Authentication-Results:"), `\`) {
			t.Fatalf("Check = %q: a backslash can escape the quote that ends a value", h)
		}
		_, _ = fromDomain(msg)
	})
}

// FuzzSign signs arbitrary messages (a submitting user's): what Sign
// answers must be the message with well-formed fields prepended, and
// verify with the published keys.
func FuzzSign(f *testing.F) {
	for _, s := range []string{
		"From: Alice <alice@example.org>\r\nSubject: hi\r\n\r\nhello\r\n",
		"From: a@example.org\nSubject: bare LF\n\nbody\n",
		"Subject: no From\r\n\r\n",
		"From: a@example.org\r\nFrom: b@example.org\r\n\r\n",
		"From: a@example.org\r\n\r\n \r\n\r\n\r\n",
		"From: a@example.org",
	} {
		f.Add([]byte(s))
	}
	ks := keys(f)
	dns := fuzzDNS(f)
	lookup := func(domain string) ([]string, error) { return dns.LookupTXT(context.Background(), domain) }
	f.Fuzz(func(t *testing.T, msg []byte) {
		out, err := Signer{}.Sign("example.org", ks, msg)
		if err != nil {
			return
		}
		if !bytes.HasSuffix(out, msg) {
			t.Fatalf("Sign(%q) does not end with the message", msg)
		}
		for _, h := range strings.SplitAfter(string(out[:len(out)-len(msg)]), "\r\nDKIM-Signature:") {
			if !strings.HasSuffix(h, "\r\n") && !strings.HasSuffix(h, "\r\nDKIM-Signature:") {
				t.Fatalf("Sign(%q): signature fields %q", msg, out[:len(out)-len(msg)])
			}
		}
		if bytes.ContainsAny(msg, "\r") || !bytes.Contains(msg, []byte("\n\n")) && !bytes.Contains(msg, []byte("\r\n\r\n")) ||
			len(msg) > 0 && (msg[0] == ' ' || msg[0] == '\t' || msg[0] == '\n') {
			// Bare CRs and header-only messages (verifiers differ), a
			// first line that would continue the last signature:
			// submission refuses all of these (smtpd's headerEnd).
			return
		}
		vs, err := dkim.VerifyWithOptions(bytes.NewReader(out), &dkim.VerifyOptions{LookupTXT: lookup})
		if err != nil {
			t.Fatalf("Verify(Sign(%q)) = %v", msg, err)
		}
		if len(vs) != len(ks) {
			t.Fatalf("Verify(Sign(%q)) = %d verifications, want %d", msg, len(vs), len(ks))
		}
		for _, v := range vs {
			if v.Err != nil {
				t.Fatalf("Verify(Sign(%q)): %s: %v", msg, v.Domain, v.Err)
			}
		}
	})
}

// FuzzForwardReverse: any sender Forward accepts comes back from Reverse
// of the address Forward made, so that bounces to forwarded mail reach
// the sender (the SRS0 part of another forwarder that an SRS1 address
// carries must also be fresh: see Reverse).
func FuzzForwardReverse(f *testing.F) {
	for _, s := range []string{"alice@example.com", "a=b@example.org", "SRS0=eEttNugi=JL=example.com=Alice@forward.example",
		"SRS1=QnCHbPIS=forward.example==eEttNugi=JL=example.com=Alice@next.example", "\"a b\"@c.d", "@", "a@", "x@y@z"} {
		f.Add(s)
	}
	s := newSRS(testNow)
	f.Fuzz(func(t *testing.T, sender string) {
		fwd, err := s.Forward(sender, "forward.example")
		if err != nil || fwd == sender {
			return
		}
		back, err := s.Reverse(fwd)
		if errors.Is(err, ErrExpired) && strings.HasPrefix(fwd, "SRS1=") {
			return // another forwarder's SRS0 part, too old already: by design
		}
		if err != nil {
			t.Fatalf("Reverse(Forward(%q) = %q) = %v", sender, fwd, err)
		}
		if tag, _ := srsTag(sender[:strings.LastIndexByte(sender, '@')]); tag == "" && back != sender {
			t.Fatalf("Reverse(Forward(%q) = %q) = %q", sender, fwd, back)
		}
	})
}
