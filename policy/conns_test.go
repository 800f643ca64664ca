package policy

import (
	"errors"
	"net"
	"testing"
	"time"
)

func TestConns(t *testing.T) {
	type step struct {
		op    string // acquire, release, user, unuser, wait
		addr  string
		user  int64
		after time.Duration // for wait
		want  error
	}
	a, b := "192.0.2.1", "192.0.2.2"
	tests := []struct {
		name  string
		lim   ConnLimits
		steps []step
	}{
		{"per address ceiling", ConnLimits{PerAddress: 2}, []step{
			{op: "acquire", addr: a},
			{op: "acquire", addr: a},
			{op: "acquire", addr: a, want: ErrTooManyConns},
			{op: "acquire", addr: b}, // another address
			{op: "release", addr: a},
			{op: "acquire", addr: a}, // the slot given back
			{op: "acquire", addr: a, want: ErrTooManyConns},
		}},
		{"per user and address", ConnLimits{PerUserAddress: 2}, []step{
			{op: "user", user: 1, addr: a},
			{op: "user", user: 1, addr: a},
			{op: "user", user: 1, addr: a, want: ErrTooManyUserConns},
			{op: "user", user: 2, addr: a}, // a colleague behind the same address
			{op: "user", user: 1, addr: b}, // the same user elsewhere
			{op: "unuser", user: 1, addr: a},
			{op: "user", user: 1, addr: a},
		}},
		{"rate after the burst", ConnLimits{PerAddress: 3, RatePerMinute: 2}, []step{
			{op: "acquire", addr: a},
			{op: "release", addr: a},
			{op: "acquire", addr: a},
			{op: "release", addr: a},
			{op: "acquire", addr: a},
			{op: "release", addr: a},
			// The burst of 3 is used though nothing is open.
			{op: "acquire", addr: a, want: ErrConnRate},
			{op: "acquire", addr: b},
			{op: "wait", after: 30 * time.Second}, // one more a half minute
			{op: "acquire", addr: a},
			{op: "acquire", addr: a, want: ErrConnRate},
		}},
		{"zero is no limit", ConnLimits{}, []step{
			{op: "acquire", addr: a}, {op: "acquire", addr: a}, {op: "acquire", addr: a},
			{op: "user", user: 1, addr: a}, {op: "user", user: 1, addr: a},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
			c := NewConns(tt.lim, func() time.Time { return now })
			for i, s := range tt.steps {
				var err error
				switch s.op {
				case "acquire":
					err = c.Acquire(s.addr)
				case "release":
					c.Release(s.addr)
				case "user":
					err = c.AcquireUser(s.user, s.addr)
				case "unuser":
					c.ReleaseUser(s.user, s.addr)
				case "wait":
					now = now.Add(s.after)
				}
				if !errors.Is(err, s.want) || (s.want == nil) != (err == nil) {
					t.Fatalf("step %d: %s(%d, %s) = %v, want %v", i, s.op, s.user, s.addr, err, s.want)
				}
			}
		})
	}
}

func TestConnsReleaseForgets(t *testing.T) {
	c := NewConns(ConnLimits{PerAddress: 5, PerUserAddress: 5}, nil)
	for range 3 {
		if err := c.Acquire("192.0.2.1"); err != nil {
			t.Fatal(err)
		}
		if err := c.AcquireUser(7, "192.0.2.1"); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		c.Release("192.0.2.1")
		c.ReleaseUser(7, "192.0.2.1")
	}
	if len(c.open) != 0 || len(c.users) != 0 {
		t.Errorf("counts after every release = %v, %v; want none kept", c.open, c.users)
	}
}

func TestAddressKey(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.ParseIP("192.0.2.1"), Port: 25}, "192.0.2.1"},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:192.0.2.1"), Port: 25}, "192.0.2.1"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 993}, "2001:db8::/64"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8::ffff:1"), Port: 993}, "2001:db8::/64"},
		{&net.UnixAddr{Name: "/run/x.sock", Net: "unix"}, "/run/x.sock"},
	} {
		if got := AddressKey(tc.addr); got != tc.want {
			t.Errorf("AddressKey(%v) = %q, want %q", tc.addr, got, tc.want)
		}
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
