package smtpd

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/mailhost/mailhost/internal/dnstest"
)

// TestDNSBLRefusesListedClient: a client listed in the second of two
// lists (the stub DNS answers 127.0.0.2 for 1.0.0.127.<list>, as a real
// list does) is refused at RCPT with 554 5.7.1 naming the list, for
// every recipient but postmaster and abuse, which are delivered; the next
// transaction of the connection gets the same answer.
func TestDNSBLRefusesListedClient(t *testing.T) {
	dns := dnstest.Start(t)
	dns.SetIP("1.0.0.127.bl.example", net.ParseIP("127.0.0.2"))
	// The first list refuses the query the way Spamhaus refuses public
	// resolvers: not a listing.
	dns.SetIP("1.0.0.127.refusing.example", net.ParseIP("127.255.255.254"))
	e := newEnv(t, func(c *Config) {
		c.DNSBL = []string{"clean.example", "refusing.example", "bl.example"}
		c.DNSBLResolver = dns.Resolver()
		c.Postmaster = "carol@a.test"
	})

	r := e.dialRaw(t)
	r.cmd("EHLO client.test", "250")
	r.cmd("MAIL FROM:<someone@remote.test>", "250")
	got := r.cmd("RCPT TO:<bob@a.test>", "554 5.7.1")
	if !strings.Contains(got, "bl.example") || !strings.Contains(got, "127.0.0.1") {
		t.Errorf("RCPT reply = %q, want it to name the list and the address", got)
	}
	r.cmd("RCPT TO:<Postmaster>", "250")
	r.cmd("RCPT TO:<postmaster@a.test>", "250")
	r.cmd("RCPT TO:<abuse@a.test>", "250")
	r.cmd("DATA", "354")
	r.send("From: someone@remote.test", "Subject: please delist me", "", "hello", ".")
	r.expect("250")
	r.cmd("MAIL FROM:<someone@remote.test>", "250")
	r.cmd("RCPT TO:<info@a.test>", "554 5.7.1")
	r.cmd("QUIT", "221")

	if n := len(e.inbox(t, "carol@a.test")); n != 1 {
		t.Errorf("postmaster's INBOX has %d messages, want 1", n)
	}
	if n := len(e.inbox(t, "bob@a.test")); n != 0 {
		t.Errorf("bob's INBOX has %d messages, want 0", n)
	}
}

// TestDNSBLNotListed: a client no list names, and a list that fails
// (SERVFAIL), let mail through.
func TestDNSBLNotListed(t *testing.T) {
	dns := dnstest.Start(t)
	dns.Fail("1.0.0.127.broken.example", true)
	e := newEnv(t, func(c *Config) {
		c.DNSBL = []string{"clean.example", "broken.example"}
		c.DNSBLResolver = dns.Resolver()
	})
	if err := e.send(t, "someone@remote.test", []string{"bob@a.test"}, message("hi", "x")); err != nil {
		t.Fatalf("send = %v, want delivered", err)
	}
	if !strings.Contains(e.logs.String(), "DNS blocklist lookup failed") {
		t.Errorf("log has no line for the failed list:\n%s", e.logs.String())
	}
}

func TestReverseName(t *testing.T) {
	tests := []struct{ ip, want string }{
		{"192.0.2.99", "99.2.0.192"},
		{"::ffff:192.0.2.99", "99.2.0.192"},
		{"2001:db8:1:2:3:4:567:89ab", "b.a.9.8.7.6.5.0.4.0.0.0.3.0.0.0.2.0.0.0.1.0.0.0.8.b.d.0.1.0.0.2"},
	}
	for _, tt := range tests {
		if got := reverseName(netip.MustParseAddr(tt.ip)); got != tt.want {
			t.Errorf("reverseName(%s) = %q, want %q", tt.ip, got, tt.want)
		}
	}
}
