package dovecottest

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"
)

// TestStart logs in over IMAP and reads ManageSieve's greeting.
func TestStart(t *testing.T) {
	d := Start(t, Options{ManageSieve: true})
	c, err := net.Dial("tcp", d.IMAPAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	if l, _ := r.ReadString('\n'); !strings.HasPrefix(l, "* OK") {
		t.Fatalf("IMAP greeting = %q, want * OK\n%s", l, d.Log())
	}
	c.Write([]byte("a LOGIN \"" + User + "\" \"alice's secret\"\r\n"))
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("read: %v\n%s", err, d.Log())
		}
		if strings.HasPrefix(l, "a ") {
			if !strings.HasPrefix(l, "a OK") {
				t.Fatalf("LOGIN = %q, want a OK\n%s", l, d.Log())
			}
			break
		}
	}
	c.Write([]byte("b SELECT INBOX\r\n"))
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("read: %v\n%s", err, d.Log())
		}
		if strings.HasPrefix(l, "b ") {
			if !strings.HasPrefix(l, "b OK") {
				t.Fatalf("SELECT = %q, want b OK\n%s", l, d.Log())
			}
			break
		}
	}

	s, err := net.Dial("tcp", d.ManageSieveAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.SetDeadline(time.Now().Add(5 * time.Second))
	sr := bufio.NewReader(s)
	var greeting []string
	for {
		l, err := sr.ReadString('\n')
		if err != nil {
			t.Fatalf("ManageSieve greeting: %v after %q", err, greeting)
		}
		greeting = append(greeting, l)
		if strings.HasPrefix(l, "OK") {
			break
		}
	}
	if !strings.Contains(strings.Join(greeting, ""), `"SIEVE"`) {
		t.Errorf("ManageSieve greeting = %q, want a SIEVE capability", greeting)
	}
}
