package outbound

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mailhost/mailhost/internal/publicip"
)

// TestPrivateMXRefused: without AllowPrivate, a destination whose MX
// hosts lead only to loopback, private or other non-public addresses is
// not connected to, and bounces at the first attempt (550 5.4.4) naming
// the hosts and their addresses; a user cannot make the server talk to
// an internal relay that trusts it. A host that may yet lead elsewhere
// (a lookup that failed) defers instead. AllowPrivate, or a relay (the
// operator's, trusted whatever its address), delivers.
func TestPrivateMXRefused(t *testing.T) {
	for _, tc := range []struct {
		name     string
		resolver resolver
		cfg      func(c *Config, mx *fakeMX)
		// want: "bounce" (the reply's text must hold each of says),
		// "defer" or "deliver".
		want string
		says []string
	}{
		{
			name:     "MX name resolves to loopback",
			resolver: mxFor("evil.test"),
			want:     "bounce", says: []string{"550 5.4.4", "mx.evil.test (127.0.0.1)", "does not deliver there"},
		},
		{
			name: "MX names resolve to loopback and private addresses",
			resolver: resolver{
				mx: map[string][]*net.MX{"evil.test": {{Host: "mx1.evil.test.", Pref: 10}, {Host: "mx2.evil.test.", Pref: 20}}},
				addrs: map[string][]net.IPAddr{
					"mx1.evil.test": {{IP: net.ParseIP("10.1.2.3")}, {IP: net.ParseIP("::1")}},
					"mx2.evil.test": {{IP: net.ParseIP("169.254.169.254")}, {IP: net.ParseIP("127.0.0.1")}},
				},
			},
			want: "bounce", says: []string{"550 5.4.4", "mx1.evil.test (10.1.2.3, ::1)", "mx2.evil.test (169.254.169.254, 127.0.0.1)"},
		},
		{
			name:     "MX is an IP literal",
			resolver: resolver{mx: map[string][]*net.MX{"evil.test": {{Host: "127.0.0.1.", Pref: 10}}}},
			want:     "bounce", says: []string{"550 5.4.4", "127.0.0.1 (127.0.0.1)"},
		},
		{
			name:     "implicit MX: no MX, an address on loopback",
			resolver: resolver{addrs: map[string][]net.IPAddr{"evil.test": loopback}},
			want:     "bounce", says: []string{"550 5.4.4", "evil.test (127.0.0.1)"},
		},
		{
			name: "IPv4-mapped loopback",
			resolver: resolver{
				mx:    map[string][]*net.MX{"evil.test": {{Host: "mx.evil.test.", Pref: 10}}},
				addrs: map[string][]net.IPAddr{"mx.evil.test": {{IP: net.ParseIP("::ffff:127.0.0.1")}}},
			},
			want: "bounce", says: []string{"550 5.4.4"},
		},
		{
			name: "another MX could not be looked up: deferred",
			resolver: resolver{
				mx:    map[string][]*net.MX{"evil.test": {{Host: "mx1.evil.test.", Pref: 10}, {Host: "mx2.evil.test.", Pref: 20}}},
				addrs: map[string][]net.IPAddr{"mx1.evil.test": loopback},
			},
			want: "defer",
		},
		{
			name:     "allow_private",
			resolver: mxFor("evil.test"),
			cfg:      func(c *Config, _ *fakeMX) { c.AllowPrivate = true },
			want:     "deliver",
		},
		{
			name:     "relay on loopback",
			resolver: mxFor("evil.test"),
			cfg:      func(c *Config, mx *fakeMX) { c.Relay = mx.addr },
			want:     "deliver",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			mx := newMX(t, nil)
			clk := newClock()
			f.queue(clk.Now(), f.submission("x@evil.test"), message("inside"))
			f.start(clk, func(c *Config) {
				c.Resolver = tc.resolver
				c.Port = mx.port
				c.AllowPrivate = false
				if tc.cfg != nil {
					tc.cfg(c, mx)
				}
			})
			switch tc.want {
			case "deliver":
				mx.waitMessages(t, 1)
				f.waitEmpty()
				return
			case "defer":
				e := f.waitAttempts(1)
				if len(e.Pending()) != 1 {
					t.Errorf("entry %+v, want x@evil.test still pending", e)
				}
			case "bounce":
				f.waitEmpty()
				d := parseDSN(t, f.waitInbox("bob@a.test", 1)[0])
				d.check(t, "bob@a.test", "inside")
				r := d.rcpts[0]
				diag := r.Get("Diagnostic-Code")
				if r.Get("Status") != "5.4.4" || r.Get("Action") != "failed" {
					t.Errorf("DSN recipient %v, want failed with 5.4.4", r)
				}
				for _, s := range tc.says {
					if !strings.Contains(diag, s) {
						t.Errorf("Diagnostic-Code %q, want it to hold %q", diag, s)
					}
				}
			}
			if got := mx.messages(); len(got) != 0 {
				t.Errorf("the MX on loopback got %d messages, want none", len(got))
			}
		})
	}
}

// TestDialRefusesPrivate: whatever reaches the dialer, the address it
// connects to is checked there, after resolution, unless AllowPrivate or
// a relay says otherwise.
func TestDialRefusesPrivate(t *testing.T) {
	mx := newMX(t, nil)
	ctx := context.Background()
	s := New(Config{Hostname: "out.a.test", DialTimeout: 5 * time.Second})
	if c, _, err := s.dial(ctx, mx.addr); !errors.Is(err, publicip.ErrNotPublic) {
		if c != nil {
			c.Close()
		}
		t.Errorf("dial %s = %v, want ErrNotPublic", mx.addr, err)
	}
	for _, cfg := range []Config{{AllowPrivate: true}, {Relay: mx.addr}} {
		cfg.Hostname, cfg.DialTimeout = "out.a.test", 5*time.Second
		c, _, err := New(cfg).dial(ctx, mx.addr)
		if err != nil {
			t.Errorf("dial %s with AllowPrivate %v, Relay %q = %v, want a session", mx.addr, cfg.AllowPrivate, cfg.Relay, err)
			continue
		}
		c.Close()
	}
}
