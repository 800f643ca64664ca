package mailauth

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/emersion/go-msgauth/dkim"

	"github.com/mailhost/mailhost/mailstore"
)

const testMsg = "From: Alice <alice@example.org>\r\n" +
	"To: bob@example.net\r\n" +
	"Subject: Hello\r\n" +
	"Date: Sun, 22 Nov 2026 09:30:00 +0000\r\n" +
	"Message-ID: <1@example.org>\r\n" +
	"MIME-Version: 1.0\r\n" +
	"Content-Type: text/plain; charset=utf-8\r\n" +
	"X-Mailer: test\r\n" +
	"\r\n" +
	"Hello Bob,\r\n\r\nsee you.\r\n"

func TestGenerateDKIMKeys(t *testing.T) {
	ks := keys(t)
	if len(ks) != 2 {
		t.Fatalf("GenerateDKIMKeys() gave %d keys, want 2", len(ks))
	}
	want := []struct{ sel, alg string }{{"ed20261122", AlgEd25519}, {"rsa20261122", AlgRSA}}
	for i, k := range ks {
		if k.Selector != want[i].sel || k.Algorithm != want[i].alg || !k.CreatedAt.Equal(testNow) {
			t.Errorf("key %d = %s %s %v, want %s %s %v", i, k.Selector, k.Algorithm, k.CreatedAt, want[i].sel, want[i].alg, testNow)
		}
		key, err := x509.ParsePKCS8PrivateKey(k.Private)
		if err != nil {
			t.Fatalf("key %s: ParsePKCS8PrivateKey = %v", k.Selector, err)
		}
		switch key := key.(type) {
		case ed25519.PrivateKey:
			if k.Algorithm != AlgEd25519 {
				t.Errorf("key %s is Ed25519, algorithm %q", k.Selector, k.Algorithm)
			}
		case *rsa.PrivateKey:
			if k.Algorithm != AlgRSA || key.N.BitLen() != 2048 {
				t.Errorf("key %s is RSA-%d, algorithm %q; want RSA-2048", k.Selector, key.N.BitLen(), k.Algorithm)
			}
		default:
			t.Errorf("key %s is a %T", k.Selector, key)
		}
	}
}

// verify checks msg's signatures with go-msgauth's verifier against the
// records DNSRecords publishes.
func verify(t *testing.T, domain string, ks []mailstore.DKIMKey, msg []byte) []*dkim.Verification {
	t.Helper()
	dns := &fakeDNS{txt: map[string][]string{}}
	dns.publish(domain, ks)
	vs, err := dkim.VerifyWithOptions(bytes.NewReader(msg), &dkim.VerifyOptions{
		LookupTXT: func(name string) ([]string, error) { return dns.LookupTXT(t.Context(), name) },
	})
	if err != nil {
		t.Fatalf("Verify() = %v", err)
	}
	return vs
}

func TestSign(t *testing.T) {
	ks := keys(t)
	for _, tc := range []struct {
		name string
		msg  string
	}{
		{"crlf", testMsg},
		{"bare lf", strings.ReplaceAll(testMsg, "\r\n", "\n")},
		{"folded header", strings.Replace(testMsg, "Subject: Hello\r\n", "Subject: Hello\r\n there\r\n", 1)},
		{"empty body", testMsg[:strings.Index(testMsg, "\r\n\r\n")+4]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			signed, err := Signer{}.Sign("example.org", ks, []byte(tc.msg))
			if err != nil {
				t.Fatalf("Sign() = %v", err)
			}
			if !bytes.HasSuffix(signed, []byte(tc.msg)) {
				t.Fatalf("Sign() changed the message:\n%s", signed)
			}
			if n := bytes.Count(signed, []byte("DKIM-Signature:")); n != 2 {
				t.Fatalf("Sign() added %d DKIM-Signature fields, want 2", n)
			}
			vs := verify(t, "example.org", ks, signed)
			if len(vs) != 2 {
				t.Fatalf("Verify() = %d verifications, want 2", len(vs))
			}
			for _, v := range vs {
				if v.Err != nil || v.Domain != "example.org" {
					t.Errorf("verification %s = %v, want pass", v.Domain, v.Err)
				}
				for _, h := range []string{"from", "to", "subject", "date", "message-id", "mime-version", "content-type"} {
					if !slices.Contains(v.HeaderKeys, h) && !slices.Contains(v.HeaderKeys, headerCase(h)) {
						t.Errorf("signed headers %v lack %s", v.HeaderKeys, h)
					}
				}
				if slices.Contains(v.HeaderKeys, "X-Mailer") {
					t.Errorf("signed headers %v include X-Mailer", v.HeaderKeys)
				}
			}
			for _, tag := range []string{"c=relaxed/relaxed", "a=ed25519-sha256", "a=rsa-sha256", "s=ed20261122", "s=rsa20261122"} {
				if !bytes.Contains(signed, []byte(tag)) {
					t.Errorf("signatures lack %s:\n%s", tag, signed[:len(signed)-len(tc.msg)])
				}
			}
		})
	}
}

// headerCase is h as DefaultSignedHeaders spells it.
func headerCase(h string) string {
	for _, d := range DefaultSignedHeaders {
		if strings.EqualFold(d, h) {
			return d
		}
	}
	return h
}

func TestSignTampered(t *testing.T) {
	ks := keys(t)
	signed, err := Signer{}.Sign("example.org", ks, []byte(testMsg))
	if err != nil {
		t.Fatalf("Sign() = %v", err)
	}
	s := string(signed)
	for _, tc := range []struct {
		name, msg string
	}{
		{"body altered", strings.Replace(s, "see you.", "send money.", 1)},
		{"subject altered", strings.Replace(s, "Subject: Hello", "Subject: Urgent", 1)},
		// Oversigning: a second From or Subject added on the way does not
		// verify (RFC 6376 section 8.15).
		{"from added", strings.Replace(s, "From: Alice", "From: Mallory <m@evil.example>\r\nFrom: Alice", 1)},
		{"subject added", strings.Replace(s, "To: bob", "Subject: Urgent\r\nTo: bob", 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.msg == s {
				t.Fatal("test message not altered")
			}
			for _, v := range verify(t, "example.org", ks, []byte(tc.msg)) {
				if v.Err == nil {
					t.Errorf("verification %s of altered message passed", v.Domain)
				}
			}
		})
	}
	// Headers not signed may change: relaxed canonicalization and a field
	// outside the list.
	relaxed := strings.Replace(s, "Subject: Hello", "subject:   Hello ", 1)
	relaxed = strings.Replace(relaxed, "X-Mailer: test", "X-Mailer: other", 1)
	for _, v := range verify(t, "example.org", ks, []byte(relaxed)) {
		if v.Err != nil {
			t.Errorf("relaxed verification %s = %v, want pass", v.Domain, v.Err)
		}
	}
}

func TestSignErrors(t *testing.T) {
	ks := keys(t)
	wrongAlg := ks[0]
	wrongAlg.Algorithm = AlgRSA
	bad := ks[1]
	bad.Private = []byte("not der")
	for _, tc := range []struct {
		name string
		keys []mailstore.DKIMKey
		msg  string
		want error
	}{
		{"no keys", nil, testMsg, ErrNoKeys},
		{"algorithm mismatch", []mailstore.DKIMKey{wrongAlg}, testMsg, nil},
		{"bad key", []mailstore.DKIMKey{bad}, testMsg, nil},
		{"no end of header", ks, "From: a@example.org\r\nSubject: x\r\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Signer{}.Sign("example.org", tc.keys, []byte(tc.msg))
			if err == nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("Sign() = %v, want error %v", err, tc.want)
			}
		})
	}
}

func TestSignedFields(t *testing.T) {
	head := []byte("Received: x\r\nFrom: a\r\nTo: b\r\n c\r\nTo: d\r\nList-Unsubscribe: <u>\r\nX-Other: y\r\n\r\n")
	got := Signer{}.signedFields(head)
	want := []string{"From", "From", "To", "To", "To", "List-Unsubscribe"}
	if !slices.Equal(got, want) {
		t.Errorf("signedFields() = %v, want %v", got, want)
	}
	got = Signer{Headers: []string{"X-Other"}}.signedFields([]byte("X-Other: y\r\n\r\n"))
	if want := []string{"From", "X-Other"}; !slices.Equal(got, want) {
		t.Errorf("signedFields(custom) = %v, want %v", got, want)
	}
}

func TestPublicKeyRecord(t *testing.T) {
	for _, k := range keys(t) {
		txt, err := PublicKeyRecord(k)
		if err != nil {
			t.Fatalf("PublicKeyRecord(%s) = %v", k.Selector, err)
		}
		if !strings.HasPrefix(txt, "v=DKIM1; k="+k.Algorithm+"; p=") {
			t.Errorf("PublicKeyRecord(%s) = %q", k.Selector, txt)
		}
	}
}
