package credential

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/policy"
	"golang.org/x/crypto/argon2"
)

// accounts is a map of mailboxes by address for Logins, standing in for
// the store's one lookup.
type accounts struct {
	mu    sync.Mutex
	boxes map[string]mailstore.Mailbox
	doms  map[string]mailstore.Domain
	calls int
}

func (a *accounts) MailboxByEmail(ctx context.Context, email string) (mailstore.Mailbox, mailstore.Domain, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls++
	mb, ok := a.boxes[email]
	if !ok {
		return mailstore.Mailbox{}, mailstore.Domain{}, mailstore.ErrMailboxNotFound
	}
	return mb, a.doms["example.com"], nil
}

// cheapHash is an argon2id PHC string with the lowest cost, so that tests
// verify many passwords quickly (VerifyPassword takes any parameters).
func cheapHash(password string) string {
	salt := []byte("0123456789abcdef")
	key := argon2.IDKey([]byte(password), salt, 1, 8, 1, 32)
	return fmt.Sprintf("$argon2id$v=%d$m=8,t=1,p=1$%s$%s", argon2.Version, b64.EncodeToString(salt), b64.EncodeToString(key))
}

func (a *accounts) setPassword(t *testing.T, email, password string, at time.Time) {
	t.Helper()
	h := cheapHash(password)
	a.mu.Lock()
	defer a.mu.Unlock()
	mb := a.boxes[email]
	mb.PasswordHash = h
	mb.PasswordChangedAt = at
	a.boxes[email] = mb
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

const goodPassword = "correct horse battery"

func newTestLogins(t *testing.T) (*Logins, *accounts, *clock) {
	t.Helper()
	a := &accounts{
		boxes: map[string]mailstore.Mailbox{"alice@example.com": {ID: 7, Email: "alice@example.com"}},
		doms:  map[string]mailstore.Domain{"example.com": {ID: 1, Name: "example.com"}},
	}
	a.setPassword(t, "alice@example.com", goodPassword, time.Unix(1000, 0))
	for i := 0; i < 9; i++ {
		email := fmt.Sprintf("u%d@example.com", i)
		a.boxes[email] = mailstore.Mailbox{ID: int64(100 + i), Email: email}
		a.setPassword(t, email, goodPassword, time.Unix(1000, 0))
	}
	c := &clock{t: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)}
	l := NewLogins(LoginConfig{Accounts: a, Now: c.now, MaxFailures: 3, Window: 8 * time.Minute})
	return l, a, c
}

var (
	ip1 = netip.MustParseAddr("192.0.2.1")
	ip2 = netip.MustParseAddr("192.0.2.2")
)

func TestAuthenticate(t *testing.T) {
	tests := []struct {
		name     string
		email    string
		password string
		suspend  bool
		want     error
	}{
		{"good", "alice@example.com", goodPassword, false, nil},
		{"case and spaces", " Alice@EXAMPLE.com ", goodPassword, false, nil},
		{"wrong password", "alice@example.com", "wrong password", false, ErrInvalidCredentials},
		{"password case matters", "alice@example.com", "CORRECT HORSE BATTERY", false, ErrInvalidCredentials},
		{"unknown address", "bob@example.com", goodPassword, false, ErrInvalidCredentials},
		{"malformed address", "alice", goodPassword, false, ErrInvalidCredentials},
		{"empty password", "alice@example.com", "", false, ErrInvalidCredentials},
		{"suspended domain", "alice@example.com", goodPassword, true, ErrInvalidCredentials},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, a, _ := newTestLogins(t)
			a.doms["example.com"] = mailstore.Domain{ID: 1, Name: "example.com", Suspended: tt.suspend}
			mb, err := l.Authenticate(context.Background(), tt.email, tt.password, ip1)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("Authenticate(%q, %q) = %v, want %v", tt.email, tt.password, err, tt.want)
			}
			if err == nil && mb.ID != 7 {
				t.Errorf("Authenticate(%q) mailbox id = %d, want 7", tt.email, mb.ID)
			}
		})
	}
}

func TestAuthenticateCache(t *testing.T) {
	ctx := context.Background()
	l, a, c := newTestLogins(t)
	login := func(password string) error {
		_, err := l.Authenticate(ctx, "alice@example.com", password, ip1)
		return err
	}
	if err := login(goodPassword); err != nil {
		t.Fatalf("first login: %v", err)
	}
	if n := len(l.cache); n != 1 {
		t.Fatalf("cache entries after a success = %d, want 1", n)
	}
	if err := login(goodPassword); err != nil {
		t.Fatalf("cached login: %v", err)
	}
	if a.calls != 2 {
		t.Errorf("MailboxByEmail calls = %d, want 2 (every login looks up)", a.calls)
	}

	// Suspension takes effect at once despite the cache.
	a.doms["example.com"] = mailstore.Domain{ID: 1, Name: "example.com", Suspended: true}
	if err := login(goodPassword); !errors.Is(err, ErrInvalidCredentials) {
		t.Fatalf("login to suspended domain = %v, want ErrInvalidCredentials", err)
	}
	a.doms["example.com"] = mailstore.Domain{ID: 1, Name: "example.com"}

	// A password change, even within the same second, invalidates it.
	a.setPassword(t, "alice@example.com", "new password 1", time.Unix(1000, 0))
	if err := login(goodPassword); !errors.Is(err, ErrInvalidCredentials) {
		t.Fatalf("login with old password after change = %v, want ErrInvalidCredentials", err)
	}
	if err := login("new password 1"); err != nil {
		t.Fatalf("login with new password: %v", err)
	}

	// Deletion takes effect at once.
	delete(a.boxes, "alice@example.com")
	if err := login("new password 1"); !errors.Is(err, ErrInvalidCredentials) {
		t.Fatalf("login to deleted mailbox = %v, want ErrInvalidCredentials", err)
	}

	// Entries expire.
	c.advance(11 * time.Minute)
	a.setPassword(t, "alice@example.com", goodPassword, time.Unix(2000, 0))
	if err := login(goodPassword); err != nil {
		t.Fatal(err)
	}
	if n := len(l.cache); n != 3 {
		t.Errorf("cache entries = %d, want 3 (expired entries stay until met or the table fills)", n)
	}
}

func TestThrottle(t *testing.T) {
	ctx := context.Background()
	type attempt struct {
		email, password string
		ip              netip.Addr
		after           time.Duration // clock advance before the attempt
		want            error
	}
	wrong := "wrong password"
	alice := "alice@example.com"
	many := func(n int, a attempt) []attempt {
		var l []attempt
		for i := 0; i < n; i++ {
			l = append(l, a)
		}
		return l
	}
	cat := func(ls ...[]attempt) []attempt {
		var out []attempt
		for _, l := range ls {
			out = append(out, l...)
		}
		return out
	}
	var spray []attempt
	for i := 0; i < 9; i++ {
		spray = append(spray, attempt{email: fmt.Sprintf("u%d@example.com", i), password: wrong, ip: ip2, want: ErrInvalidCredentials})
	}
	var distributed []attempt
	for i := 0; i < 9; i++ {
		distributed = append(distributed, attempt{email: alice, password: wrong, ip: netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}), want: ErrInvalidCredentials})
	}
	tests := []struct {
		name     string
		attempts []attempt
	}{
		{"pair locks after MaxFailures, even the right password", cat(
			many(3, attempt{alice, wrong, ip1, 0, ErrInvalidCredentials}),
			[]attempt{{alice, goodPassword, ip1, 0, ErrThrottled}},
		)},
		{"another IP is not locked by the pair", cat(
			many(3, attempt{alice, wrong, ip1, 0, ErrInvalidCredentials}),
			[]attempt{{alice, goodPassword, ip2, 0, nil}},
		)},
		{"lockout ends within the window", cat(
			many(3, attempt{alice, wrong, ip1, 0, ErrInvalidCredentials}),
			[]attempt{
				{alice, goodPassword, ip1, 6 * time.Minute, ErrThrottled},
				{alice, goodPassword, ip1, 2 * time.Minute, nil},
			},
		)},
		{"success resets the pair", cat(
			many(2, attempt{alice, wrong, ip1, 0, ErrInvalidCredentials}),
			[]attempt{{alice, goodPassword, ip1, 0, nil}},
			many(2, attempt{alice, wrong, ip1, 0, ErrInvalidCredentials}),
			[]attempt{{alice, goodPassword, ip1, 0, nil}},
		)},
		{"spraying addresses locks the IP", cat(
			spray,
			[]attempt{{alice, goodPassword, ip2, 0, ErrThrottled}, {alice, goodPassword, ip1, 0, nil}},
		)},
		{"distributed guessing locks failed IPs but not a clean one", cat(
			distributed,
			[]attempt{
				{alice, goodPassword, netip.AddrFrom4([4]byte{198, 51, 100, 0}), 0, ErrThrottled},
				{alice, goodPassword, ip1, 0, nil},
			},
		)},
		{"IPv6 counts per /64", cat(
			many(3, attempt{alice, wrong, netip.MustParseAddr("2001:db8::1"), 0, ErrInvalidCredentials}),
			[]attempt{
				{alice, goodPassword, netip.MustParseAddr("2001:db8::ffff"), 0, ErrThrottled},
				{alice, goodPassword, netip.MustParseAddr("2001:db8:0:1::1"), 0, nil},
			},
		)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, _, c := newTestLogins(t)
			for i, a := range tt.attempts {
				c.advance(a.after)
				_, err := l.Authenticate(ctx, a.email, a.password, a.ip)
				if !errors.Is(err, a.want) || (a.want == nil) != (err == nil) {
					t.Fatalf("attempt %d: Authenticate(%s, %s) = %v, want %v", i, a.email, a.ip, err, a.want)
				}
			}
		})
	}
}

func TestCounter(t *testing.T) {
	tests := []struct {
		name  string
		adds  []int64
		at    int64
		count int
	}{
		{"empty", nil, 5, 0},
		{"same slot", []int64{3, 3, 3}, 3, 3},
		{"within window", []int64{1, 4, 8}, 8, 3},
		{"oldest expires", []int64{1, 4, 8}, 9, 2},
		{"all expire", []int64{1, 4, 8}, 100, 0},
		{"late add of old slot is dropped", []int64{20, 2}, 20, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c counter
			for _, s := range tt.adds {
				c.add(s)
			}
			if got := c.count(tt.at); got != tt.count {
				t.Errorf("count(%d) after %v = %d, want %d", tt.at, tt.adds, got, tt.count)
			}
		})
	}
}

// With two live nodes, each node allows half the failures (MaxFailures 4
// here), so that a guesser who alternates between the nodes is stopped
// after the cluster's four, not eight.
func TestThrottleShared(t *testing.T) {
	ctx := context.Background()
	share := &policy.Share{}
	share.SetNodes(2)
	a := &accounts{
		boxes: map[string]mailstore.Mailbox{"alice@example.com": {ID: 7, Email: "alice@example.com"}},
		doms:  map[string]mailstore.Domain{"example.com": {ID: 1, Name: "example.com"}},
	}
	a.setPassword(t, "alice@example.com", goodPassword, time.Unix(1000, 0))
	c := &clock{t: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)}
	l := NewLogins(LoginConfig{Accounts: a, Now: c.now, MaxFailures: 4, Window: 8 * time.Minute, Share: share})
	for i := range 2 {
		if _, err := l.Authenticate(ctx, "alice@example.com", "wrong", ip1); !errors.Is(err, ErrInvalidCredentials) {
			t.Fatalf("failure %d = %v, want ErrInvalidCredentials", i+1, err)
		}
	}
	if _, err := l.Authenticate(ctx, "alice@example.com", goodPassword, ip1); !errors.Is(err, ErrThrottled) {
		t.Fatalf("after this node's share (2) of 4 failures: %v, want ErrThrottled", err)
	}
	share.SetNodes(1)
	if _, err := l.Authenticate(ctx, "alice@example.com", goodPassword, ip1); err != nil {
		t.Fatalf("alone again (limit 4, 2 used): %v, want nil", err)
	}
}
