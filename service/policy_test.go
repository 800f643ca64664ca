package service

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/emersion/go-smtp"

	"github.com/mailhost/mailhost/internal/dnstest"
)

// mxSend sends one message to the MX on a new connection.
func mxSend(t *testing.T, addr, from string, to []string, msg string) error {
	t.Helper()
	c, err := smtp.Dial(addr)
	if err != nil {
		t.Fatalf("dial MX: %v", err)
	}
	defer c.Close()
	if err := c.Hello("client.test"); err != nil {
		t.Fatalf("EHLO: %v", err)
	}
	return c.SendMail(from, to, strings.NewReader(msg))
}

// repliesTo are the messages the sink got for rcpt.
func (s *sink) repliesTo(rcpt string) []sinkMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []sinkMessage
	for _, m := range s.msgs {
		for _, to := range m.To {
			if to == rcpt {
				out = append(out, m)
			}
		}
	}
	return out
}

// TestAutoReplyOnce is the auto-reply "done when": a mailbox on vacation
// answers two messages from one sender once, through the queue to the
// relay, from its address, DKIM-signed, with Auto-Submitted, In-Reply-To
// and References, counted in its domain's transfer; a list message, a
// null sender and a copy it was not named in (Bcc) get nothing.
func TestAutoReplyOnce(t *testing.T) {
	relay := startSink(t)
	dns := dnstest.Start(t)
	addrs, out, _ := startServer(t, t.TempDir(), "MAILHOST_RELAY", relay.addr, "MAILHOST_DNS", dns.Addr)
	key := keyRE.FindString(out.String())
	api := "http://" + addrs.HTTP
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/domains/", `{"name":"example.com"}`},
		{"POST", "/users/", `{"domain_name":"example.com","email":"alice@example.com","password":"password123"}`},
		{"POST", "/aliases/", `{"domain_name":"example.com","source":"sales@example.com","destination":"alice@example.com"}`},
	} {
		if code, body := call(t, c.method, api+c.path, key, c.body); code != 201 {
			t.Fatalf("%s %s = %d %s", c.method, c.path, code, body)
		}
	}
	verifyDomain(t, dns, api, key, "example.com", "mx.test")
	if code, body := call(t, "PUT", api+"/users/alice@example.com/autoreply", key,
		`{"enabled":true,"subject":"Away until Monday","body":"I am away.\nAlice"}`); code != 200 {
		t.Fatalf("PUT autoreply = %d %s", code, body)
	}

	msg := func(from, to, id, extra string) string {
		return "From: " + from + "\r\nTo: " + to + "\r\nSubject: hello\r\nMessage-ID: " + id + "\r\n" + extra + "\r\nHi\r\n"
	}
	sends := []struct {
		name, from string
		msg        string
	}{
		{"first from bob", "bob@remote.test", msg("bob@remote.test", "alice@example.com", "<1@remote.test>", "References: <0@remote.test>\r\n")},
		{"second from bob", "bob@remote.test", msg("bob@remote.test", "Alice <alice@example.com>", "<2@remote.test>", "")},
		{"list", "list-bounces@lists.test", msg("carol@remote.test", "alice@example.com", "<3@lists.test>", "List-Id: <friends.lists.test>\r\n")},
		{"bulk", "dave@remote.test", msg("dave@remote.test", "alice@example.com", "<4@remote.test>", "Precedence: bulk\r\n")},
		{"auto-submitted", "eve@remote.test", msg("eve@remote.test", "alice@example.com", "<5@remote.test>", "Auto-Submitted: auto-generated\r\n")},
		{"null sender", "", msg("MAILER-DAEMON@remote.test", "alice@example.com", "<6@remote.test>", "")},
		{"bcc", "frank@remote.test", msg("frank@remote.test", "someone@remote.test", "<7@remote.test>", "")},
		// Last: its reply proves the ones before were decided (each
		// before its 250).
		{"to an alias", "grace@remote.test", msg("grace@remote.test", "Sales <sales@example.com>", "<8@remote.test>", "")},
	}
	for _, s := range sends {
		if err := mxSend(t, addrs.SMTP, s.from, []string{"alice@example.com"}, s.msg); err != nil {
			t.Fatalf("%s: send = %v", s.name, err)
		}
	}
	grace := relay.wait(t, "grace@remote.test")
	first := relay.wait(t, "bob@remote.test")

	if got := len(relay.repliesTo("bob@remote.test")); got != 1 {
		t.Errorf("bob got %d replies, want 1", got)
	}
	for _, rcpt := range []string{"carol@remote.test", "list-bounces@lists.test", "dave@remote.test", "eve@remote.test", "frank@remote.test", "MAILER-DAEMON@remote.test"} {
		if got := len(relay.repliesTo(rcpt)); got != 0 {
			t.Errorf("%s got %d replies, want none", rcpt, got)
		}
	}
	// Nothing else was queued: the domain's outbound transfer is the two
	// replies the relay got, byte for byte.
	_, body := call(t, "GET", api+"/domains/example.com/usage", key, "")
	var usage struct {
		TransferOutBytes int64 `json:"transfer_out_bytes"`
	}
	json.Unmarshal([]byte(body), &usage)
	if want := int64(len(first.Data) + len(grace.Data)); usage.TransferOutBytes != want {
		t.Errorf("transfer_out_bytes = %d, want %d (the two replies): %s", usage.TransferOutBytes, want, body)
	}

	// RFC 3834 section 3.3, RFC 5230 section 5.1: a reply has the null
	// envelope sender, so that nothing answers or bounces it.
	if first.From != "" {
		t.Errorf("reply MAIL FROM = %q, want <>", first.From)
	}
	for _, want := range []string{
		"DKIM-Signature:", "From: <alice@example.com>", "To: <bob@remote.test>", "Subject: Away until Monday",
		"Auto-Submitted: auto-replied", "In-Reply-To: <1@remote.test>", "References: <0@remote.test>\r\n <1@remote.test>",
		"I am away.\r\nAlice",
	} {
		if !bytes.Contains(first.Data, []byte(want)) {
			t.Errorf("reply lacks %q:\n%s", want, first.Data)
		}
	}
}

// TestBlocklistAndDMARCWired: the dnsbl, dns, inbound_checks and
// dmarc_enforce settings reach the MX: a client listed in the stub DNS is
// refused at RCPT while postmaster passes, and (from a client no longer
// listed) a message failing DMARC for a p=reject domain is refused at
// DATA.
func TestBlocklistAndDMARCWired(t *testing.T) {
	dns := dnstest.Start(t)
	dns.SetIP("1.0.0.127.bl.example", net.ParseIP("127.0.0.2"))
	dns.SetTXT("reject.test", "v=spf1 -all")
	dns.SetTXT("_dmarc.reject.test", "v=DMARC1; p=reject")
	addrs, out, stop := startServer(t, t.TempDir(), "MAILHOST_DNS", dns.Addr, "MAILHOST_DNSBL", "bl.example",
		"MAILHOST_POSTMASTER", "alice@example.com", "MAILHOST_INBOUND_CHECKS", "true")
	key := keyRE.FindString(out.String())
	api := "http://" + addrs.HTTP
	call(t, "POST", api+"/domains/", key, `{"name":"example.com"}`)
	if code, body := call(t, "POST", api+"/users/", key, `{"domain_name":"example.com","email":"alice@example.com","password":"password123"}`); code != 201 {
		t.Fatalf("POST /users/ = %d %s", code, body)
	}
	ok := "From: x@remote.test\r\nSubject: hi\r\n\r\nhi\r\n"
	err := mxSend(t, addrs.SMTP, "x@remote.test", []string{"alice@example.com"}, ok)
	var se *smtp.SMTPError
	if !errors.As(err, &se) || se.Code != 554 || !strings.Contains(se.Message, "bl.example") {
		t.Errorf("listed client to alice = %v, want 554 naming bl.example", err)
	}
	if err := mxSend(t, addrs.SMTP, "x@remote.test", []string{"postmaster"}, ok); err != nil {
		t.Errorf("listed client to postmaster = %v, want accepted", err)
	}
	stop()

	addrs, _, _ = startServer(t, t.TempDir(), "MAILHOST_DNS", dns.Addr, "MAILHOST_INBOUND_CHECKS", "true",
		"MAILHOST_POSTMASTER", "pm@elsewhere.test")
	err = mxSend(t, addrs.SMTP, "a@reject.test", []string{"postmaster"},
		"From: a@reject.test\r\nSubject: forged\r\n\r\nx\r\n")
	if !errors.As(err, &se) || se.Code != 550 || !strings.Contains(se.Message, "DMARC") {
		t.Errorf("DMARC p=reject failure = %v, want 550 naming DMARC", err)
	}
}

// TestAutoReplyUnverified: a mailbox of a domain its partner has not
// verified sends no auto-reply: the reply would be the domain writing as
// itself to whoever the envelope names, signed by this server
// (policy.MayReach). The verified domain's reply, sent after, proves the
// first message was decided.
func TestAutoReplyUnverified(t *testing.T) {
	relay := startSink(t)
	dns := dnstest.Start(t)
	addrs, out, _ := startServer(t, t.TempDir(), "MAILHOST_RELAY", relay.addr, "MAILHOST_DNS", dns.Addr)
	key := keyRE.FindString(out.String())
	api := "http://" + addrs.HTTP
	for _, c := range []struct{ path, body string }{
		{"/domains/", `{"name":"example.com"}`},
		{"/domains/", `{"name":"bigbank.example"}`},
		{"/users/", `{"domain_name":"example.com","email":"alice@example.com","password":"password123"}`},
		{"/users/", `{"domain_name":"bigbank.example","email":"ceo@bigbank.example","password":"password123"}`},
	} {
		if code, body := call(t, "POST", api+c.path, key, c.body); code != 201 {
			t.Fatalf("POST %s = %d %s", c.path, code, body)
		}
	}
	verifyDomain(t, dns, api, key, "example.com", "mx.test")
	for _, m := range []string{"ceo@bigbank.example", "alice@example.com"} {
		if code, body := call(t, "PUT", api+"/users/"+m+"/autoreply", key, `{"enabled":true,"subject":"Away","body":"Wire the money."}`); code != 200 {
			t.Fatalf("PUT autoreply of %s = %d %s", m, code, body)
		}
	}
	for _, s := range []struct{ from, to string }{{"victim@remote.test", "ceo@bigbank.example"}, {"grace@remote.test", "alice@example.com"}} {
		msg := "From: " + s.from + "\r\nTo: " + s.to + "\r\nSubject: hello\r\nMessage-ID: <1@remote.test>\r\n\r\nHi\r\n"
		if err := mxSend(t, addrs.SMTP, s.from, []string{s.to}, msg); err != nil {
			t.Fatalf("send to %s = %v", s.to, err)
		}
	}
	// A reply is queued before the 250 of the message it answers, and
	// counted in its domain's transfer then.
	_, body := call(t, "GET", api+"/domains/bigbank.example/usage", key, "")
	var usage struct {
		TransferOutBytes int64 `json:"transfer_out_bytes"`
	}
	if err := json.Unmarshal([]byte(body), &usage); err != nil || usage.TransferOutBytes != 0 {
		t.Errorf("bigbank.example's usage = %s, want nothing sent out", body)
	}
	relay.wait(t, "grace@remote.test")
	if got := relay.repliesTo("victim@remote.test"); len(got) != 0 {
		t.Errorf("the unverified domain's mailbox replied: %s", got[0].Data)
	}
}
