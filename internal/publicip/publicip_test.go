package publicip

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"
)

func TestIs(t *testing.T) {
	for _, tt := range []struct {
		ip   string
		want bool
	}{
		{"93.184.216.34", true}, {"2606:2800:220:1::1", true}, {"8.8.8.8", true},
		{"127.0.0.1", false}, {"127.8.9.10", false}, {"::1", false},
		{"10.0.0.1", false}, {"172.16.5.4", false}, {"192.168.1.1", false},
		{"169.254.169.254", false}, {"fe80::1", false}, {"fd00::1", false}, {"fc00::1", false},
		{"0.0.0.0", false}, {"0.1.2.3", false}, {"::", false},
		{"100.64.1.1", false}, {"100.127.255.254", false}, {"100.128.0.1", true},
		{"::ffff:127.0.0.1", false}, {"::ffff:10.1.2.3", false},
		{"224.0.0.1", false}, {"ff02::1", false}, {"255.255.255.255", false},
		{"192.0.0.8", false}, {"198.18.0.1", false}, {"64:ff9b::7f00:1", false},
	} {
		if got := Is(netip.MustParseAddr(tt.ip)); got != tt.want {
			t.Errorf("Is(%s) = %v, want %v", tt.ip, got, tt.want)
		}
	}
}

// TestControl: a dialer with Control connects to nothing on loopback,
// whether it is given an address or a name that resolves to one.
func TestControl(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	d := net.Dialer{Timeout: 5 * time.Second, Control: Control}
	for _, addr := range []string{ln.Addr().String(), net.JoinHostPort("localhost", port)} {
		c, err := d.DialContext(context.Background(), "tcp", addr)
		if err == nil {
			c.Close()
		}
		if !errors.Is(err, ErrNotPublic) {
			t.Errorf("dial %s = %v, want ErrNotPublic", addr, err)
		}
	}
}
