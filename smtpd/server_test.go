package smtpd

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/mailhost/mailhost/delivery"
	"github.com/mailhost/mailhost/internal/testcert"
	"github.com/mailhost/mailhost/mailstore"
)

func TestEHLO(t *testing.T) {
	e := newEnv(t, nil)
	r := e.dialRaw(t)
	got := r.cmd("EHLO client.test", "250 ")
	for _, want := range []string{"PIPELINING", "8BITMIME", "SMTPUTF8", "SIZE 52428800", "ENHANCEDSTATUSCODES", "CHUNKING", "LIMITS RCPTMAX=100"} {
		if !strings.Contains(got, "250-"+want+"\n") && !strings.HasSuffix(got, "250 "+want) {
			t.Errorf("EHLO reply lacks %s:\n%s", want, got)
		}
	}
	for _, unwanted := range []string{"STARTTLS", "AUTH", "BINARYMIME"} {
		if strings.Contains(got, unwanted) {
			t.Errorf("EHLO reply offers %s without reason:\n%s", unwanted, got)
		}
	}
	if !strings.HasPrefix(got, "250-Hello client.test") {
		t.Errorf("EHLO reply = %q, want it to greet client.test", got)
	}
	r.cmd("QUIT", "221 ")
}

func TestDeliver(t *testing.T) {
	e := newEnv(t, nil)
	msg := message("hello bob", "How are you?")
	if err := e.send(t, "sender@remote.test", []string{"bob@a.test"}, msg); err != nil {
		t.Fatalf("send = %v", err)
	}
	got := e.inbox(t, "bob@a.test")
	if len(got) != 1 {
		t.Fatalf("bob's INBOX has %d messages, want 1", len(got))
	}
	body := string(got[0])
	if !strings.HasSuffix(body, msg) {
		t.Errorf("stored body = %q, want it to end with the message sent", body)
	}
	head := strings.TrimSuffix(body, msg)
	for _, want := range []string{
		"Return-Path: <sender@remote.test>\r\n",
		"Delivered-To: bob@a.test\r\n",
		"Received: from client.test ([127.0.0.1])\r\n\tby mx.test with ESMTP id ",
		"\r\n\tfor <bob@a.test>;\r\n\tSun, 22 Nov 2026 09:30:00 +0000\r\n",
	} {
		if !strings.Contains(head, want) {
			t.Errorf("trace headers %q lack %q", head, want)
		}
	}
	if !strings.HasPrefix(head, "Return-Path: ") {
		t.Errorf("trace headers %q do not start with Return-Path", head)
	}

	m, d, err := e.st.MailboxByEmail(context.Background(), "bob@a.test")
	if err != nil {
		t.Fatal(err)
	}
	if m.UsedBytes != int64(len(body)) || m.MessageCount != 1 {
		t.Errorf("bob used %d bytes in %d messages, want %d in 1", m.UsedBytes, m.MessageCount, len(body))
	}
	if d.UsedBytes != int64(len(body)) {
		t.Errorf("a.test used %d bytes, want %d", d.UsedBytes, len(body))
	}

	logs := e.logs.String()
	if !strings.Contains(logs, `"msg":"delivered"`) {
		t.Errorf("no delivery log line in:\n%s", logs)
	}
	if strings.Contains(logs, "How are you") || strings.Contains(logs, "hello bob") {
		t.Errorf("the log holds message content:\n%s", logs)
	}
}

// TestMessagesOnOneConnection sends messages of falling and rising sizes
// over one session: readMessage reuses its buffer from one message to the
// next, and no stored body may share it.
func TestMessagesOnOneConnection(t *testing.T) {
	kept := &keepBodies{}
	e := newEnv(t, func(c *Config) { kept.Store = c.Store; c.Store = kept })
	c := e.client(t)
	var sent []string
	for i, n := range []int{64 << 10, 10, 4 << 10, 0, 200 << 10, 1} {
		msg := message(fmt.Sprintf("message %d", i), strings.Repeat(string(rune('a'+i)), n))
		if err := c.SendMail("sender@remote.test", []string{"bob@a.test"}, strings.NewReader(msg)); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		sent = append(sent, msg)
	}
	c.Quit()
	got := e.inbox(t, "bob@a.test")
	if len(got) != len(sent) {
		t.Fatalf("bob's INBOX has %d messages, want %d", len(got), len(sent))
	}
	for i, msg := range sent {
		if !bytes.HasSuffix(got[i], []byte(msg)) {
			t.Errorf("message %d: stored %d bytes ending %q, want the %d bytes sent", i, len(got[i]), got[i][max(0, len(got[i])-40):], len(msg))
		}
		// What Deliver was given is still the message: a store may keep it
		// (pgstore's body cache does, by copy; another might not copy).
		if b := kept.bodies[i]; !bytes.Equal(b, got[i]) {
			t.Errorf("message %d: the body given to Deliver changed after it returned: now %d bytes ending %q", i, len(b), b[max(0, len(b)-40):])
		}
	}
}

// keepBodies is a Store that keeps the body of every Deliver call, as
// given, to see whether the server writes to it afterwards.
type keepBodies struct {
	Store
	mu     sync.Mutex
	bodies [][]byte
}

func (k *keepBodies) Deliver(ctx context.Context, d mailstore.Delivery) (mailstore.DeliveryResult, error) {
	k.mu.Lock()
	k.bodies = append(k.bodies, d.Body)
	k.mu.Unlock()
	return k.Store.Deliver(ctx, d)
}

func TestDeliverSeveralRecipients(t *testing.T) {
	e := newEnv(t, nil)
	msg := message("to all", "one body for three")
	// info@ is an alias of bob: bob gets one copy, not two.
	if err := e.send(t, "", []string{"bob@a.test", "carol@a.test", "info@a.test", "dave@b.test"}, msg); err != nil {
		t.Fatalf("send = %v", err)
	}
	for _, rcpt := range []string{"bob@a.test", "carol@a.test", "dave@b.test"} {
		got := e.inbox(t, rcpt)
		if len(got) != 1 {
			t.Fatalf("%s has %d messages, want 1", rcpt, len(got))
		}
		head := strings.TrimSuffix(string(got[0]), msg)
		if !strings.HasPrefix(head, "Return-Path: <>\r\n") {
			t.Errorf("%s: trace headers %q, want the null Return-Path first", rcpt, head)
		}
		// Several recipients: neither Delivered-To nor "for" (which would
		// tell each recipient who else got it).
		if strings.Contains(head, "Delivered-To") || strings.Contains(head, "for <") {
			t.Errorf("%s: trace headers %q name a recipient", rcpt, head)
		}
	}
}

func TestDeliveredToAfterAliases(t *testing.T) {
	e := newEnv(t, nil)
	// Two recipients, one mailbox: Delivered-To names it, "for" does not.
	msg := message("twice", "once")
	if err := e.send(t, "a@remote.test", []string{"info@a.test", "c1@a.test"}, msg); err != nil {
		t.Fatalf("send = %v", err)
	}
	got := e.inbox(t, "bob@a.test")
	if len(got) != 1 {
		t.Fatalf("bob has %d messages, want 1", len(got))
	}
	head := strings.TrimSuffix(string(got[0]), msg)
	if !strings.Contains(head, "Delivered-To: bob@a.test\r\n") || strings.Contains(head, "for <") {
		t.Errorf("trace headers = %q, want Delivered-To bob and no for", head)
	}
}

func TestAliases(t *testing.T) {
	e := newEnv(t, nil)
	for _, tc := range []struct {
		name, rcpt, mailbox string
	}{
		{"alias", "info@a.test", "bob@a.test"},
		{"upper case", "INFO@A.Test", "bob@a.test"},
		{"chain of 8", "c1@a.test", "bob@a.test"},
		{"catch-all", "whoever@b.test", "dave@b.test"},
		{"mailbox before catch-all", "erin@b.test", "erin@b.test"},
		{"alias into a catch-all", "x@a.test", "dave@b.test"},
		{"utf-8 mailbox", "jösé@a.test", "jösé@a.test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(e.inbox(t, tc.mailbox))
			msg := message(tc.name, "via "+tc.rcpt)
			if err := e.send(t, "s@remote.test", []string{tc.rcpt}, msg); err != nil {
				t.Fatalf("send to %s = %v", tc.rcpt, err)
			}
			got := e.inbox(t, tc.mailbox)
			if len(got) != before+1 || !bytes.HasSuffix(got[len(got)-1], []byte(msg)) {
				t.Fatalf("%s: %s has %d messages, want %d ending with the one sent", tc.rcpt, tc.mailbox, len(got), before+1)
			}
			if !bytes.Contains(got[len(got)-1], []byte("Delivered-To: "+tc.mailbox+"\r\n")) {
				t.Errorf("%s: no Delivered-To %s", tc.rcpt, tc.mailbox)
			}
		})
	}
	// Catch-all takes only what matches nothing: erin kept hers, dave has
	// just the two catch-all deliveries.
	if n := len(e.inbox(t, "dave@b.test")); n != 2 {
		t.Errorf("dave has %d messages, want 2", n)
	}
}

// TestRcptReplies checks each refusal at RCPT, over the raw protocol.
func TestRcptReplies(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxRecipients = 3 })
	ctx := context.Background()
	if _, err := e.st.SetQuota(ctx, e.partner.ID, "carol@a.test", 1); err != nil {
		t.Fatal(err)
	}
	// c.test's catch-all goes to an address nothing takes (a mailbox
	// deleted since, say).
	if _, err := e.st.CreateDomain(ctx, e.partner.ID, mailstore.NewDomain{Name: "c.test", MaxMailboxes: 10, MaxAliases: 10,
		Plan: mailstore.Plan{Name: "starter", QuotaMB: 1024, RetentionDays: 30, TransferMonthlyMB: 5120}}, testNow); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.CreateAlias(ctx, e.partner.ID, "c.test", "@c.test", "gone@c.test", testNow); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, mail, rcpt, want string
	}{
		{"unknown user", "", "nobody@a.test", "550 5.1.1 "},
		{"domain not hosted", "", "someone@elsewhere.test", "554 5.7.1 "},
		{"relay attempt to a remote alias destination's domain", "", "someone@remote.test", "554 5.7.1 "},
		{"alias to a remote address", "", "fwd@a.test", "451 4.3.0 "},
		{"alias loop", "", "loop1@a.test", "550 5.4.6 "},
		{"chain too deep", "", "d1@a.test", "550 5.4.6 "},
		{"catch-all to a missing address", "", "anyone@c.test", "550 5.1.1 "},
		{"the catch-all's missing destination", "", "gone@c.test", "550 5.1.1 "},
		{"bad address", "", "a..b@a.test", "501 5.1.3 "},
		{"address literal", "", "bob@[127.0.0.1]", "501 5.1.3 "},
		{"SIZE over the quota", " SIZE=1048577", "carol@a.test", "452 4.2.2 "},
		{"SIZE far over the quota", " SIZE=2000000", "carol@a.test", "452 4.2.2 "},
		{"SIZE within the quota", " SIZE=1048576", "carol@a.test", "250 "},
		{"mailbox", "", "bob@a.test", "250 "},
		{"mailbox, SIZE", " SIZE=1000", "bob@a.test", "250 "},
		{"alias", "", "info@a.test", "250 "},
		{"chain of 8", "", "c1@a.test", "250 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.dialRaw(t)
			r.cmd("EHLO client.test", "250 ")
			r.cmd("MAIL FROM:<s@remote.test>"+tc.mail, "250 ")
			r.cmd("RCPT TO:<"+tc.rcpt+">", tc.want)
			r.cmd("QUIT", "221 ")
		})
	}

	t.Run("too many recipients", func(t *testing.T) {
		r := e.dialRaw(t)
		r.cmd("EHLO client.test", "250 ")
		r.cmd("MAIL FROM:<s@remote.test>", "250 ")
		for range 3 {
			r.cmd("RCPT TO:<bob@a.test>", "250 ")
		}
		r.cmd("RCPT TO:<carol@a.test>", "452 4.5.3 ")
	})
	t.Run("message over the size limit announced", func(t *testing.T) {
		r := e.dialRaw(t)
		r.cmd("EHLO client.test", "250 ")
		r.cmd("MAIL FROM:<s@remote.test> SIZE=52428801", "552 5.3.4 ")
	})
	t.Run("RCPT before MAIL", func(t *testing.T) {
		r := e.dialRaw(t)
		r.cmd("EHLO client.test", "250 ")
		r.cmd("RCPT TO:<bob@a.test>", "503 5.5.1 ") // bad sequence, RFC 5321 section 4.1.4
	})
	t.Run("DATA without recipients", func(t *testing.T) {
		r := e.dialRaw(t)
		r.cmd("EHLO client.test", "250 ")
		r.cmd("MAIL FROM:<s@remote.test>", "250 ")
		r.cmd("RCPT TO:<nobody@a.test>", "550 5.1.1 ")
		r.cmd("DATA", "503 5.5.1 ") // RFC 5321 section 3.3: 503 or 554
	})
	t.Run("MAIL before EHLO", func(t *testing.T) {
		r := e.dialRaw(t)
		r.cmd("MAIL FROM:<s@remote.test>", "503 5.5.1 ")
	})
	t.Run("DATA after BDAT", func(t *testing.T) {
		r := e.dialRaw(t)
		r.cmd("EHLO client.test", "250 ")
		r.cmd("MAIL FROM:<s@remote.test>", "250 ")
		r.cmd("RCPT TO:<bob@a.test>", "250 ")
		r.write("BDAT 3\r\nabc")
		r.expect("250 ")
		r.cmd("DATA", "503 5.5.1 ") // RFC 3030 section 2: MUST be 503
	})
}

func TestQuotaAtRCPT(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	if _, err := e.st.SetQuota(ctx, e.partner.ID, "carol@a.test", 1); err != nil {
		t.Fatal(err)
	}
	// With no SIZE a message past the quota is accepted at RCPT and
	// delivered whole (the quota rule, docs/mail.md).
	big := message("big", strings.Repeat("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\r\n", 17000))
	if err := e.send(t, "s@remote.test", []string{"carol@a.test"}, big); err != nil {
		t.Fatalf("send a message past the quota = %v, want it accepted", err)
	}
	m, _, err := e.st.MailboxByEmail(ctx, "carol@a.test")
	if err != nil {
		t.Fatal(err)
	}
	if m.UsedBytes <= m.QuotaBytes() {
		t.Fatalf("carol uses %d of %d bytes, want over the quota", m.UsedBytes, m.QuotaBytes())
	}

	for _, tc := range []struct{ name, mail, rcpt, want string }{
		{"full mailbox without SIZE", "", "carol@a.test", "452 4.2.2 "},
		{"full mailbox with SIZE", " SIZE=10", "carol@a.test", "452 4.2.2 "},
		{"others still accepted", "", "bob@a.test", "250 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.dialRaw(t)
			r.cmd("EHLO client.test", "250 ")
			r.cmd("MAIL FROM:<s@remote.test>"+tc.mail, "250 ")
			r.cmd("RCPT TO:<"+tc.rcpt+">", tc.want)
		})
	}
	t.Run("go-smtp client", func(t *testing.T) {
		err := e.send(t, "s@remote.test", []string{"carol@a.test"}, message("more", "x"))
		if got := smtpCode(err); got != "452 4.2.2" {
			t.Errorf("send to a full mailbox = %s, want 452 4.2.2", got)
		}
	})
	t.Run("raised quota accepts again", func(t *testing.T) {
		if _, err := e.st.SetQuota(ctx, e.partner.ID, "carol@a.test", 2); err != nil {
			t.Fatal(err)
		}
		if err := e.send(t, "s@remote.test", []string{"carol@a.test"}, message("more", "x")); err != nil {
			t.Errorf("send after raising the quota = %v", err)
		}
	})
}

func TestTooLarge(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxMessageBytes = 10 << 10 })
	big := message("big", strings.Repeat("x", 70)+"\r\n"+strings.Repeat(strings.Repeat("y", 70)+"\r\n", 200))

	t.Run("DATA", func(t *testing.T) {
		err := e.send(t, "s@remote.test", []string{"bob@a.test"}, big)
		if got := smtpCode(err); got != "552 5.3.4" {
			t.Errorf("send of a message over the limit = %s, want 552 5.3.4", got)
		}
	})
	t.Run("BDAT", func(t *testing.T) {
		r := e.dialRaw(t)
		r.cmd("EHLO client.test", "250 ")
		r.cmd("MAIL FROM:<s@remote.test>", "250 ")
		r.cmd("RCPT TO:<bob@a.test>", "250 ")
		// Lines stay short: go-smtp reads ahead through its line limit.
		chunk := strings.Repeat(strings.Repeat("z", 62)+"\r\n", 96)
		r.write("BDAT 6144\r\n" + chunk)
		r.expect("250 ")
		r.write("BDAT 6144 LAST\r\n" + chunk)
		r.expect("552 5.3.4 ")
		// The connection is still usable.
		r.cmd("NOOP", "250 ")
	})
	t.Run("SIZE", func(t *testing.T) {
		r := e.dialRaw(t)
		r.cmd("EHLO client.test", "250 ")
		r.cmd("MAIL FROM:<s@remote.test> SIZE=10241", "552 5.3.4 ")
	})
	t.Run("at the limit", func(t *testing.T) {
		msg := message("fits", strings.Repeat(strings.Repeat("y", 62)+"\r\n", 140))
		if err := e.send(t, "s@remote.test", []string{"bob@a.test"}, msg); err != nil {
			t.Errorf("send of a message under the limit = %v", err)
		}
	})
	if n := len(e.inbox(t, "bob@a.test")); n != 1 {
		t.Errorf("bob has %d messages, want only the one under the limit", n)
	}
}

func TestPipelining(t *testing.T) {
	e := newEnv(t, nil)
	r := e.dialRaw(t)
	r.cmd("EHLO client.test", "250 ")
	// RFC 2920: the whole envelope in one write, replies in order.
	r.send("MAIL FROM:<s@remote.test>", "RCPT TO:<bob@a.test>", "RCPT TO:<nobody@a.test>", "RCPT TO:<carol@a.test>", "DATA")
	r.expect("250 ")
	r.expect("250 ")
	r.expect("550 5.1.1 ")
	r.expect("250 ")
	r.expect("354 ")
	r.send("Subject: pipelined", "", "..dot-stuffed line", ".", "MAIL FROM:<>", "RCPT TO:<someone@elsewhere.test>", "RSET", "QUIT")
	r.expect("250 2.0.0 ")
	r.expect("250 ")
	r.expect("554 5.7.1 ")
	r.expect("250 ")
	r.expect("221 ")

	for _, rcpt := range []string{"bob@a.test", "carol@a.test"} {
		got := e.inbox(t, rcpt)
		if len(got) != 1 || !bytes.HasSuffix(got[0], []byte("Subject: pipelined\r\n\r\n.dot-stuffed line\r\n")) {
			t.Fatalf("%s: INBOX = %q, want the pipelined message, unstuffed", rcpt, got)
		}
	}
}

func TestBDAT(t *testing.T) {
	e := newEnv(t, nil)
	r := e.dialRaw(t)
	r.cmd("EHLO client.test", "250 ")
	r.cmd("MAIL FROM:<s@remote.test> BODY=8BITMIME", "250 ")
	r.cmd("RCPT TO:<bob@a.test>", "250 ")
	part1 := "Subject: chunked\r\n\r\n"
	part2 := "caf\xc3\xa9\r\n.not stuffed\r\n"
	r.write("BDAT " + itoa(len(part1)) + "\r\n" + part1)
	r.expect("250 ")
	r.write("BDAT " + itoa(len(part2)) + " LAST\r\n" + part2)
	r.expect("250 2.0.0 ")
	got := e.inbox(t, "bob@a.test")
	if len(got) != 1 || !bytes.HasSuffix(got[0], []byte(part1+part2)) {
		t.Fatalf("INBOX = %q, want the chunks as sent", got)
	}
}

func itoa(n int) string { return big.NewInt(int64(n)).String() }

func TestSMTPUTF8(t *testing.T) {
	e := newEnv(t, nil)
	r := e.dialRaw(t)
	r.cmd("EHLO client.test", "250 ")
	r.cmd("MAIL FROM:<absender@entfernt.test> SMTPUTF8", "250 ")
	r.cmd("RCPT TO:<JÖSÉ@a.test>", "250 ")
	r.cmd("DATA", "354 ")
	r.send("Subject: grüße", "", "ok", ".")
	r.expect("250 ")
	got := e.inbox(t, "jösé@a.test")
	if len(got) != 1 || !bytes.Contains(got[0], []byte("with UTF8SMTP id")) || !bytes.Contains(got[0], []byte("for <jösé@a.test>")) {
		t.Fatalf("INBOX = %q, want one message received with UTF8SMTP for jösé", got)
	}
}

func TestSTARTTLS(t *testing.T) {
	cert := selfSigned(t, "mx.test")
	e := newEnv(t, func(c *Config) { c.TLS = &tls.Config{Certificates: []tls.Certificate{cert}} })

	r := e.dialRaw(t)
	if got := r.cmd("EHLO client.test", "250 "); !strings.Contains(got, "STARTTLS") {
		t.Fatalf("EHLO = %q, want STARTTLS offered", got)
	}
	r.cmd("QUIT", "221 ")

	pool := x509.NewCertPool()
	pool.AddCert(cert.Leaf)
	c, err := smtp.DialStartTLS(e.addr, &tls.Config{ServerName: "mx.test", RootCAs: pool})
	if err != nil {
		t.Fatalf("STARTTLS = %v", err)
	}
	defer c.Close()
	if err := c.Hello("client.test"); err != nil {
		t.Fatalf("EHLO inside TLS: %v", err)
	}
	if ok, _ := c.Extension("STARTTLS"); ok {
		t.Error("STARTTLS offered again inside TLS")
	}
	msg := message("secret", "over TLS")
	if err := c.SendMail("s@remote.test", []string{"bob@a.test"}, strings.NewReader(msg)); err != nil {
		t.Fatalf("send over TLS = %v", err)
	}
	c.Quit()
	got := e.inbox(t, "bob@a.test")
	if len(got) != 1 || !bytes.Contains(got[0], []byte("by mx.test with ESMTPS id")) {
		t.Fatalf("INBOX = %q, want one message received with ESMTPS", got)
	}

	// Without TLS the same server still takes mail (an MX cannot require it).
	if err := e.send(t, "s@remote.test", []string{"bob@a.test"}, message("plain", "x")); err != nil {
		t.Errorf("send without TLS = %v", err)
	}
}

// selfSigned makes a certificate for host, valid now.
func selfSigned(t *testing.T, host string) tls.Certificate {
	cert, _ := testcert.New(t, host)
	return cert
}

func TestConnsPerIP(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxConnsPerIP = 2 })
	r1 := e.dialRaw(t)
	e.dialRaw(t)
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	over := &raw{t: t, c: c, r: newReader(c)}
	over.expect("421 4.7.0 ")
	if got := over.reply(); got != "" {
		t.Errorf("after 421 the server sent %q, want the connection closed", got)
	}

	// A slot comes back when a connection ends.
	r1.cmd("QUIT", "221 ")
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.Dial("tcp", e.addr)
		if err != nil {
			t.Fatal(err)
		}
		r := &raw{t: t, c: c, r: newReader(c)}
		got := r.reply()
		c.Close()
		if strings.HasPrefix(got, "220 ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a QUIT the server still answers %q", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestReadTimeout(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.ReadTimeout = 200 * time.Millisecond })
	t.Run("idle", func(t *testing.T) {
		r := e.dialRaw(t)
		r.cmd("EHLO client.test", "250 ")
		time.Sleep(400 * time.Millisecond)
		r.expect("421 4.4.2 ")
	})
	t.Run("stalled DATA", func(t *testing.T) {
		r := e.dialRaw(t)
		r.cmd("EHLO client.test", "250 ")
		r.cmd("MAIL FROM:<s@remote.test>", "250 ")
		r.cmd("RCPT TO:<bob@a.test>", "250 ")
		r.cmd("DATA", "354 ")
		// Each line comes within the timeout, the whole message does not:
		// the deadline is per read, not per message.
		for range 4 {
			time.Sleep(100 * time.Millisecond)
			r.send("line")
		}
		time.Sleep(400 * time.Millisecond)
		r.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 512)
		n, _ := r.r.Read(buf)
		if got := string(buf[:n]); strings.HasPrefix(got, "250") {
			t.Fatalf("stalled DATA answered %q, want no acceptance", got)
		}
	})
}

func TestLongLine(t *testing.T) {
	e := newEnv(t, nil)
	r := e.dialRaw(t)
	r.cmd("EHLO client.test", "250 ")
	r.cmd("NOOP "+strings.Repeat("x", 3000), "500 5.4.0 ")
	if got := r.reply(); got != "" {
		t.Errorf("after a too long line the server sent %q, want the connection closed", got)
	}
}

func TestShutdown(t *testing.T) {
	f := newFixture(t, t.TempDir())
	defer f.st.Close()
	srv := New(Config{Store: f.st, Hostname: "mx.test"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	e := &env{fixture: f, srv: srv, addr: ln.Addr().String()}
	idle := e.dialRaw(t)
	idle.cmd("EHLO client.test", "250 ")
	busy := e.dialRaw(t)
	busy.cmd("EHLO client.test", "250 ")
	busy.cmd("MAIL FROM:<s@remote.test>", "250 ")

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	// The busy client never finishes its transaction: Shutdown waits for
	// it until ctx ends, then cuts it off.
	if err := srv.Shutdown(ctx); err != context.DeadlineExceeded {
		t.Errorf("Shutdown with a stalled transaction = %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Shutdown took %v", d)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve after Shutdown = %v, want nil", err)
	}
	if got := idle.reply(); got != "" {
		t.Errorf("idle connection got %q after Shutdown, want it closed", got)
	}
	if _, err := net.Dial("tcp", e.addr); err == nil {
		t.Error("listener still accepts after Shutdown")
	}
}

func TestShutdownWaitsForTransaction(t *testing.T) {
	e := newEnv(t, nil)
	busy := e.dialRaw(t)
	busy.cmd("EHLO client.test", "250 ")
	busy.cmd("MAIL FROM:<s@remote.test>", "250 ")
	busy.cmd("RCPT TO:<bob@a.test>", "250 ")
	busy.cmd("DATA", "354 ")
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		done <- e.srv.Shutdown(ctx)
	}()
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("Shutdown = %v before the transaction ended", err)
	default:
	}
	busy.send("Subject: last", "", "x", ".")
	busy.expect("250 2.0.0 ")
	if err := <-done; err != nil {
		t.Errorf("Shutdown = %v", err)
	}
	if n := len(e.inbox(t, "bob@a.test")); n != 1 {
		t.Errorf("bob has %d messages, want 1", n)
	}
}

// TestReplyMapping covers the replies the protocol tests cannot reach
// easily; reply must answer an *smtp.SMTPError for any error, as go-smtp
// sends only those codes.
func TestReplyMapping(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{smtp.ErrDataTooLarge, "552 5.3.4"},
		{delivery.ErrOverQuota, "452 4.2.2"},
		{delivery.ErrNeedsRelay, "451 4.3.0"},
		{delivery.ErrGone, "550 5.1.1"},
		{errShuttingDown, "421 4.3.2"},
		{context.Canceled, "451 4.3.0"},
		{&net.OpError{Op: "read", Err: timeoutErr{}}, "451 4.4.2"},
	} {
		if got := smtpCode(reply(tc.err)); got != tc.want {
			t.Errorf("reply(%v) = %s, want %s", tc.err, got, tc.want)
		}
	}
}

// TestDeliveryOutcomeReplies: every outcome of package delivery has its
// reply, the same as before the rules moved there (the partner contract fixes
// 452 4.2.2 for quota and 451 4.7.1 for the transfer cap), also when
// wrapped with details, and only the temporary ones answer 4xx.
func TestDeliveryOutcomeReplies(t *testing.T) {
	for _, tc := range []struct {
		err  *delivery.Refusal
		want string
	}{
		{delivery.ErrUnknownRecipient, "550 5.1.1 No such user here"},
		{delivery.ErrNotHosted, "554 5.7.1 Relay access denied"},
		{delivery.ErrAliasLoop, "550 5.4.6 Alias loop or chain too long"},
		{delivery.ErrBadAddress, "501 5.1.3 Bad recipient address syntax"},
		{delivery.ErrOverQuota, "452 4.2.2 Mailbox full, try again later"},
		{delivery.ErrTransferCapReached, "451 4.7.1 Monthly transfer limit reached, try again later"},
		{delivery.ErrSRSNotBounce, "550 5.7.1 SRS addresses take only bounces (MAIL FROM:<>)"},
		{delivery.ErrBadSRS, "550 5.1.1 No such user here"},
		{delivery.ErrNeedsRelay, "451 4.3.0 Forwarding is not available now, try again later"},
		{delivery.ErrGone, "550 5.1.1 No such user here"},
		{delivery.ErrAccountGone, "550 5.7.1 Account no longer exists"},
		{delivery.ErrDomainSuspended, "550 5.7.1 Domain suspended, sending refused"},
		{delivery.ErrBadSender, "501 5.1.7 Bad sender address syntax"},
		{delivery.ErrSenderNotOwned, "553 5.7.1 Sender address is not yours"},
	} {
		t.Run(tc.err.Error(), func(t *testing.T) {
			r := reply(fmt.Errorf("x@a.test: %w", tc.err))
			if got := smtpCode(r) + " " + r.Message; got != tc.want {
				t.Errorf("reply(%v) = %s, want %s", tc.err, got, tc.want)
			}
			if temp := r.Code < 500; temp != tc.err.Temporary() {
				t.Errorf("reply(%v) is %d, but Temporary() = %v", tc.err, r.Code, tc.err.Temporary())
			}
		})
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// TestRefusedRecipientLimit: after maxRefusedRcpts refused recipients
// the MX answers 421 4.7.0 and closes the connection, logging that once,
// so that guessing addresses (or SRS hashes) costs a connection per 20
// guesses and the log a line per guess at most.
func TestRefusedRecipientLimit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		refused int
		want    string
	}{
		{"under the limit", maxRefusedRcpts - 1, "250 "},
		{"at the limit", maxRefusedRcpts, "421 4.7.0 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			r := e.dialRaw(t)
			r.cmd("EHLO client.test", "250 ")
			r.cmd("MAIL FROM:<>", "250 ")
			for i := range tc.refused {
				if i%2 == 0 {
					// Refusals count across transactions.
					r.cmd("RSET", "250 ")
					r.cmd("MAIL FROM:<s@remote.test>", "250 ")
				}
				r.cmd(fmt.Sprintf("RCPT TO:<nobody%d@a.test>", i), "550 5.1.1 ")
			}
			r.cmd("RCPT TO:<bob@a.test>", tc.want)
			if tc.want == "250 " {
				return
			}
			// More commands pipelined after the 421 find the connection
			// closed and add nothing to the log.
			// (The writes may fail, or the read end in a reset rather
			// than EOF, once the server has closed.)
			r.c.SetDeadline(time.Now().Add(5 * time.Second))
			r.c.Write([]byte(strings.Repeat("RCPT TO:<nobody@a.test>\r\n", 50)))
			if got, err := r.r.ReadString('\n'); err == nil || isTimeout(err) {
				t.Errorf("after the 421: read %q, %v; want the connection closed", got, err)
			}
			logs := e.logs.String()
			if n := strings.Count(logs, `"msg":"recipient refused"`); n != maxRefusedRcpts {
				t.Errorf("log has %d refused recipients, want %d", n, maxRefusedRcpts)
			}
			if n := strings.Count(logs, `"msg":"connection closed"`); n != 1 {
				t.Errorf("log has %d lines for the limit, want 1:\n%s", n, logs)
			}
		})
	}
}

// TestConnRatePerIP: past its burst (MaxConnsPerIP) an address that opens
// connections faster than MaxConnRatePerIP is refused with 421 4.7.0 at
// accept, though it holds none open.
func TestConnRatePerIP(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxConnsPerIP = 3; c.MaxConnRatePerIP = 1 })
	for range 3 {
		r := e.dialRaw(t)
		r.cmd("QUIT", "221 ")
	}
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	over := &raw{t: t, c: c, r: newReader(c)}
	over.expect("421 4.7.0 ")
}

// A Serve that begins after Shutdown (its goroutine started late) returns
// at once instead of accepting forever: the wiring starts listeners in
// goroutines and may shut down before they run.
func TestServeAfterShutdown(t *testing.T) {
	s := New(Config{Hostname: "mx.test"})
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown = %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	select {
	case err := <-done:
		if !errors.Is(err, smtp.ErrServerClosed) {
			t.Errorf("Serve after Shutdown = %v, want ErrServerClosed", err)
		}
	case <-time.After(5 * time.Second):
		ln.Close()
		t.Fatal("Serve after Shutdown still accepting after 5 s")
	}
}
