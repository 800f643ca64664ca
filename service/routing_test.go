package service

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/emersion/go-smtp"

	"github.com/mailhost/mailhost/config"
	"github.com/mailhost/mailhost/internal/dnstest"
)

// TestUnverifiedDomainOfAnotherPartner reproduces the first hole of unverified domains:
// partner acme names remote.test, a domain it has not verified, and
// creates bob@remote.test; mail that the default partner's mailbox
// submits to bob, and mail its alias forwards there, must leave as for
// any domain not hosted here (to the relay), not land in acme's INBOX.
// Mail from outside through the MX still reaches bob.
func TestUnverifiedDomainOfAnotherPartner(t *testing.T) {
	relay := startSink(t)
	dir := t.TempDir()
	dns := dnstest.Start(t)
	addrs, out, _ := startServer(t, dir,
		"MAILHOST_SUBMISSION", "127.0.0.1:0", "MAILHOST_RELAY", relay.addr, "MAILHOST_DNS", dns.Addr)
	key := keyRE.FindString(out.String())
	api := "http://" + addrs.HTTP
	var acme NewKey
	err := WithOperator(context.Background(), &config.Config{DataDir: dir}, func(op Operator) error {
		var err error
		acme, err = op.CreatePartner(context.Background(), "acme")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ key, path, body string }{
		{key, "/domains/", `{"name":"example.com"}`},
		{key, "/users/", `{"domain_name":"example.com","email":"alice@example.com","password":"password123"}`},
		{key, "/aliases/", `{"domain_name":"example.com","source":"fwd@example.com","destination":"carol@remote.test"}`},
		{acme.APIKey, "/domains/", `{"name":"remote.test"}`},
		{acme.APIKey, "/users/", `{"domain_name":"remote.test","email":"bob@remote.test","password":"password123"}`},
		{acme.APIKey, "/users/", `{"domain_name":"remote.test","email":"carol@remote.test","password":"password123"}`},
	} {
		if code, body := call(t, "POST", api+c.path, c.key, c.body); code != 201 {
			t.Fatalf("POST %s %s = %d %s", c.path, c.body, code, body)
		}
	}
	// The default partner's example.com is verified: its users send to
	// anyone. acme's remote.test is not.
	verifyDomain(t, dns, api, key, "example.com", "mx.test")
	messages := func(email string) int {
		t.Helper()
		code, body := call(t, "GET", api+"/users/"+email+"/usage", acme.APIKey, "")
		var u struct {
			N int `json:"message_count"`
		}
		if err := json.Unmarshal([]byte(body), &u); code != 200 || err != nil {
			t.Fatalf("GET usage of %s = %d %s", email, code, body)
		}
		return u.N
	}

	msg := "From: alice@example.com\r\nTo: bob@remote.test\r\nSubject: hello\r\n\r\nHi Bob!\r\n"
	if err := submit(addrs.Submission, "alice@example.com", "password123", "alice@example.com", []string{"bob@remote.test"}, msg); err != nil {
		t.Fatalf("submit: %v", err)
	}
	if got := relay.wait(t, "bob@remote.test"); got.From != "alice@example.com" || !strings.Contains(string(got.Data), "Hi Bob!") {
		t.Errorf("relay got MAIL FROM %q %q, want alice's message", got.From, got.Data)
	}

	c, err := smtp.Dial(addrs.SMTP)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SendMail("dave@sender.test", []string{"fwd@example.com"}, strings.NewReader("From: dave@sender.test\r\nSubject: fw\r\n\r\nforwarded\r\n")); err != nil {
		t.Fatalf("send to the forwarding alias: %v", err)
	}
	if fw := relay.wait(t, "carol@remote.test"); !strings.HasPrefix(strings.ToUpper(fw.From), "SRS0=") || !strings.HasSuffix(fw.From, "@example.com") {
		t.Errorf("forwarded MAIL FROM = %q, want an SRS0 address at example.com", fw.From)
	}

	// From outside, the MX takes mail for the unverified domain: whoever
	// points its MX here chose this server. Its 250 comes after the
	// message is stored, so bob's count is final once it answers; and by
	// then the two messages above were long relayed, so had either been
	// delivered here too it would show.
	if err := c.SendMail("dave@sender.test", []string{"bob@remote.test"}, strings.NewReader("From: dave@sender.test\r\nSubject: in\r\n\r\nfrom outside\r\n")); err != nil {
		t.Fatalf("send to bob through the MX: %v", err)
	}
	if n := messages("bob@remote.test"); n != 1 {
		t.Errorf("bob@remote.test holds %d messages, want 1 (the MX's only)", n)
	}
	if n := messages("carol@remote.test"); n != 0 {
		t.Errorf("carol@remote.test holds %d messages, want 0 (the forward went out)", n)
	}
}
