package policy

import (
	"net"
	"testing"
)

func TestConnsPerAddress(t *testing.T) {
	c := NewConnsPerAddress(2)
	steps := []struct {
		op, ip string
		want   bool // for acquire
	}{
		{"acquire", "192.0.2.1", true},
		{"acquire", "192.0.2.1", true},
		{"acquire", "192.0.2.1", false}, // at max
		{"acquire", "192.0.2.2", true},  // another address
		{"release", "192.0.2.1", false},
		{"acquire", "192.0.2.1", true}, // the slot given back
		{"acquire", "192.0.2.1", false},
	}
	for i, s := range steps {
		if s.op == "release" {
			c.Release(s.ip)
			continue
		}
		if got := c.Acquire(s.ip); got != s.want {
			t.Errorf("step %d: Acquire(%s) = %v, want %v", i, s.ip, got, s.want)
		}
	}
	for _, ip := range []string{"192.0.2.1", "192.0.2.1", "192.0.2.2"} {
		c.Release(ip)
	}
	if len(c.n) != 0 {
		t.Errorf("counts after every release = %v, want none kept", c.n)
	}
}

func TestRemoteIP(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.ParseIP("192.0.2.1"), Port: 25}, "192.0.2.1"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 993}, "2001:db8::1"},
		{&net.UnixAddr{Name: "/run/x.sock", Net: "unix"}, "/run/x.sock"},
	} {
		if got := RemoteIP(tc.addr); got != tc.want {
			t.Errorf("RemoteIP(%v) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}
