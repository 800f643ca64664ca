package service

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mailhost/mailhost/internal/dnstest"
)

// TestSmugglingNotRelayed reproduces SMTP smuggling through the queue: a body that
// holds "\r.\r" (and "\n.\n"), the end of data to a lenient next hop,
// received on the MX for an alias that forwards out, or submitted, must
// leave with every line ended by CRLF and the dot stuffed, so that the
// relay reads one message, the one stored, and never the commands
// smuggled after the false end.
func TestSmugglingNotRelayed(t *testing.T) {
	relay := startSink(t)
	dir := t.TempDir()
	dns := dnstest.Start(t)
	addrs, out, _ := startServer(t, dir,
		"MAILHOST_SUBMISSION", "127.0.0.1:0", "MAILHOST_RELAY", relay.addr,
		"MAILHOST_ALLOW_INSECURE_AUTH", "true", "MAILHOST_DNS", dns.Addr)
	key := keyRE.FindString(out.String())
	api := "http://" + addrs.HTTP
	for _, c := range []struct{ path, body string }{
		{"/domains/", `{"name":"example.com"}`},
		{"/users/", `{"domain_name":"example.com","email":"alice@example.com","password":"password123"}`},
		{"/aliases/", `{"domain_name":"example.com","source":"fwd@example.com","destination":"carol@remote.test"}`},
	} {
		if code, body := call(t, "POST", api+c.path, key, c.body); code != 201 {
			t.Fatalf("POST %s = %d %s", c.path, code, body)
		}
	}
	verifyDomain(t, dns, api, key, "example.com", "mx.test")
	smuggled := func(end string) string {
		return "Hi" + end + "MAIL FROM:<evil@x.test>" + end + "RCPT TO:<victim@y.test>" + end + "DATA" + end + "smuggled" + end
	}
	const wantCR = "Hi\r\n.\r\nMAIL FROM:<evil@x.test>\r\n.\r\nRCPT TO:<victim@y.test>\r\n.\r\nDATA\r\n.\r\nsmuggled\r\n.\r\n"

	// Through the MX to the forwarding alias, written byte for byte.
	mx := dialSMTP(t, addrs.SMTP)
	mx.cmd(t, "EHLO client.test", "250")
	mx.cmd(t, "MAIL FROM:<dave@sender.test>", "250")
	mx.cmd(t, "RCPT TO:<fwd@example.com>", "250")
	mx.cmd(t, "DATA", "354")
	mx.cmd(t, "From: dave@sender.test\r\nSubject: mx\r\n\r\n"+smuggled("\r.\r")+"lf"+smuggled("\n.\n")+"end\r\n.", "250")
	fw := relay.wait(t, "carol@remote.test")

	// Through submission, as alice.
	sub := dialSMTP(t, addrs.Submission)
	sub.cmd(t, "EHLO client.test", "250")
	sub.cmd(t, "AUTH PLAIN "+base64.StdEncoding.EncodeToString([]byte("\x00alice@example.com\x00password123")), "235")
	sub.cmd(t, "MAIL FROM:<alice@example.com>", "250")
	sub.cmd(t, "RCPT TO:<bob@remote.test>", "250")
	sub.cmd(t, "DATA", "354")
	sub.cmd(t, "From: alice@example.com\r\nTo: bob@remote.test\r\nSubject: sub\r\n\r\n"+smuggled("\r.\r")+"end\r\n.", "250")
	sb := relay.wait(t, "bob@remote.test")

	if want := "\r\n\r\n" + wantCR + "lf" + wantCR + "end\r\n"; !strings.HasSuffix(string(fw.Data), want) {
		t.Errorf("forward as the relay read it:\n%q\nwant it to end with the body, CRLF line ends:\n%q", fw.Data, want)
	}
	if !strings.HasSuffix(string(sb.Data), "\r\n\r\n"+wantCR+"end\r\n") {
		t.Errorf("submission as the relay read it:\n%q\nwant the body with CRLF line ends:\n%q", sb.Data, wantCR)
	}
	raw := relay.raw.Bytes()
	for i, c := range raw {
		if c == '\r' && (i+1 == len(raw) || raw[i+1] != '\n') || c == '\n' && (i == 0 || raw[i-1] != '\r') {
			t.Fatalf("the relay's wire has a bare CR or LF at %d: %q", i, raw[max(0, i-40):min(len(raw), i+40)])
		}
	}
	if n := bytes.Count(raw, []byte("\r\n..\r\nMAIL FROM:<evil@x.test>\r\n")); n != 3 {
		t.Errorf("the relay's wire has the smuggled MAIL FROM dot-stuffed %d times, want 3:\n%q", n, raw)
	}
	// The only ends of data on the wire are the two messages' own.
	if n := bytes.Count(raw, []byte("\r\n.\r\n")); n != 2 {
		t.Errorf("the relay's wire has %d ends of data, want 2:\n%q", n, raw)
	}
}

// smtpConn is a client that writes exactly what it is given.
type smtpConn struct {
	c net.Conn
	r *bufio.Reader
}

func dialSMTP(t *testing.T, addr string) *smtpConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s := &smtpConn{c: c, r: bufio.NewReader(c)}
	s.expect(t, "220")
	return s
}

// cmd writes line and CRLF, and reads a reply that must start with want.
func (s *smtpConn) cmd(t *testing.T, line, want string) string {
	t.Helper()
	s.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(s.c, "%s\r\n", line); err != nil {
		t.Fatalf("write %q: %v", line, err)
	}
	return s.expect(t, want)
}

func (s *smtpConn) expect(t *testing.T, want string) string {
	t.Helper()
	var all string
	for {
		l, err := s.r.ReadString('\n')
		if err != nil {
			t.Fatalf("read reply: %v (so far %q)", err, all)
		}
		all += l
		if len(l) < 4 || l[3] != '-' {
			break
		}
	}
	if !strings.HasPrefix(all, want) {
		t.Fatalf("reply %q, want %s", all, want)
	}
	return all
}
