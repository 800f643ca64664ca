package credential

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/mailhost/mailhost/internal/testclock"
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

const goodPassword = "correct horse battery"

func newTestLogins(t *testing.T) (*Logins, *accounts, *testclock.Clock) {
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
	c := testclock.New(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
	l := NewLogins(LoginConfig{Accounts: a, Now: c.Now, Guesses: testGuesses})
	return l, a, c
}

// testGuesses are small budgets for the rule tests: one guess comes back
// every 10 minutes in each bucket.
var testGuesses = GuessLimits{
	Pair:    Budget{Burst: 5, PerHour: 6},
	Account: Budget{Burst: 8, PerHour: 6},
	Address: Budget{Burst: 10, PerHour: 6},
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
	c.Add(11 * time.Minute)
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
	alice := "alice@example.com"
	wrong := func(i int) string { return fmt.Sprintf("wrong password %d", i) }
	// distinct makes n guesses at email from ip, each a new password.
	distinct := func(n int, email string, ip netip.Addr) []attempt {
		var l []attempt
		for i := range n {
			l = append(l, attempt{email, wrong(i), ip, 0, ErrInvalidCredentials})
		}
		return l
	}
	same := func(n int, email, password string, ip netip.Addr) []attempt {
		var l []attempt
		for range n {
			l = append(l, attempt{email, password, ip, 0, ErrInvalidCredentials})
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
	ok := func(email string, ip netip.Addr) attempt { return attempt{email, goodPassword, ip, 0, nil} }
	refused := func(email string, ip netip.Addr) attempt { return attempt{email, goodPassword, ip, 0, ErrThrottled} }
	// spray: one password over the 9 other accounts and one unknown one.
	var spray []attempt
	for i := range 9 {
		spray = append(spray, attempt{fmt.Sprintf("u%d@example.com", i), "Summer2026!", ip2, 0, ErrInvalidCredentials})
	}
	spray = append(spray, attempt{"nobody@example.com", "Summer2026!", ip2, 0, ErrInvalidCredentials})
	// distributed: 8 guesses at alice, each from its own address.
	var distributed []attempt
	for i := range 8 {
		distributed = append(distributed, attempt{alice, wrong(i), netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}), 0, ErrInvalidCredentials})
	}
	v6a, v6b, v6other := netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::ffff"), netip.MustParseAddr("2001:db8:0:1::1")
	tests := []struct {
		name     string
		attempts []attempt
	}{
		{"pair refuses after its burst, even the right password", cat(
			distinct(5, alice, ip1),
			[]attempt{refused(alice, ip1)},
		)},
		{"the same wrong password sent again is not a guess", cat(
			same(100, alice, "old password", ip1),
			[]attempt{ok(alice, ip1)},
		)},
		{"several stale devices cost one guess each", cat(
			same(20, alice, "old password", ip1),
			same(20, alice, "older password", ip1),
			same(20, alice, "oldest password", ip1),
			same(20, alice, "old password", ip1),
			[]attempt{ok(alice, ip1)},
		)},
		{"unknown accounts and malformed logins repeat for free too", cat(
			same(20, "nobody@example.com", "x", ip1),
			same(20, "alice", "x", ip1),
			same(20, alice, "", ip1),
			[]attempt{ok(alice, ip1)},
		)},
		{"a sixth stale password is a guess over the burst", cat(
			distinct(5, alice, ip1),
			same(10, alice, wrong(4), ip1), // still remembered
			[]attempt{{alice, wrong(5), ip1, 0, ErrThrottled}},
		)},
		{"another address is not refused by the pair", cat(
			distinct(5, alice, ip1),
			[]attempt{ok(alice, ip2)},
		)},
		{"refusal ends when a guess comes back", cat(
			distinct(5, alice, ip1),
			[]attempt{
				{alice, goodPassword, ip1, 9 * time.Minute, ErrThrottled},
				{alice, goodPassword, ip1, time.Minute, nil},
			},
		)},
		{"success refills the pair", cat(
			distinct(4, alice, ip1),
			[]attempt{ok(alice, ip1)},
			distinct(4, alice, ip1),
			[]attempt{ok(alice, ip1)},
		)},
		{"spray refuses the address for accounts not trusted there", cat(
			spray,
			[]attempt{refused(alice, ip2), ok(alice, ip1)},
		)},
		{"spray from the owner's own address does not refuse the owner", cat(
			[]attempt{ok(alice, ip2)},
			spray,
			[]attempt{ok(alice, ip2), refused("u0@example.com", ip2)},
		)},
		{"distributed guessing refuses new addresses, not trusted ones", cat(
			[]attempt{ok(alice, ip1)},
			distributed,
			[]attempt{refused(alice, ip2), ok(alice, ip1), {alice, goodPassword, ip2, 10 * time.Minute, nil}},
		)},
		{"IPv6 counts per /64", cat(
			distinct(5, alice, v6a),
			[]attempt{refused(alice, v6b), ok(alice, v6other)},
		)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, _, c := newTestLogins(t)
			for i, a := range tt.attempts {
				c.Add(a.after)
				_, err := l.Authenticate(ctx, a.email, a.password, a.ip)
				if !errors.Is(err, a.want) || (a.want == nil) != (err == nil) {
					t.Fatalf("attempt %d: Authenticate(%s, %s) = %v, want %v", i, a.email, a.ip, err, a.want)
				}
			}
		})
	}
}

// TestStaleForgottenOnPasswordChange: a wrong password remembered before
// a change is checked again after it, so that a password set to what a
// device still sends works on that device.
func TestStaleForgottenOnPasswordChange(t *testing.T) {
	ctx := context.Background()
	l, a, _ := newTestLogins(t)
	if _, err := l.Authenticate(ctx, "alice@example.com", "phone password", ip1); !errors.Is(err, ErrInvalidCredentials) {
		t.Fatalf("wrong password = %v, want ErrInvalidCredentials", err)
	}
	a.setPassword(t, "alice@example.com", "phone password", time.Unix(3000, 0))
	if _, err := l.Authenticate(ctx, "alice@example.com", "phone password", ip1); err != nil {
		t.Fatalf("the same password once it is the mailbox's = %v, want nil", err)
	}
}

// TestStaleRepeatCostsNoHash: a repeated wrong password is answered
// without an argon2id check (a stale phone costs no CPU), which the
// Verifier with its one slot taken shows: the repeat does not wait for it.
func TestStaleRepeatCostsNoHash(t *testing.T) {
	ctx := context.Background()
	a := &accounts{
		boxes: map[string]mailstore.Mailbox{"alice@example.com": {ID: 7, Email: "alice@example.com"}},
		doms:  map[string]mailstore.Domain{"example.com": {ID: 1, Name: "example.com"}},
	}
	a.setPassword(t, "alice@example.com", goodPassword, time.Unix(1000, 0))
	v := NewVerifier(1)
	l := NewLogins(LoginConfig{Accounts: a, Verifier: v})
	if _, err := l.Authenticate(ctx, "alice@example.com", "old", ip1); !errors.Is(err, ErrInvalidCredentials) {
		t.Fatalf("first wrong password = %v", err)
	}
	v.slots <- struct{}{} // the one slot is busy
	defer func() { <-v.slots }()
	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := l.Authenticate(tctx, "alice@example.com", "old", ip1); !errors.Is(err, ErrInvalidCredentials) {
		t.Fatalf("repeat with the Verifier busy = %v, want ErrInvalidCredentials at once", err)
	}
}

// TestGuessRates drives each attack of the README's figures for an hour
// of the injected clock with the default budgets, and checks how many
// guesses were checked (answered ErrInvalidCredentials rather than
// ErrThrottled) and that nothing else was slowed.
func TestGuessRates(t *testing.T) {
	ctx := context.Background()
	const attempts = 1000
	step := time.Hour / attempts
	tests := []struct {
		name    string
		attempt func(i int) (email, password string, ip netip.Addr)
		max     int // README: burst + an hour's refill
		min     int
		// others must log in at once afterwards.
		others []netip.Addr
		// owner logs in first from trusted, and must still get in after.
		trusted netip.Addr
	}{
		{
			name: "1,000 passwords at one account from one address",
			attempt: func(i int) (string, string, netip.Addr) {
				return "alice@example.com", fmt.Sprintf("guess %d", i), ip1
			},
			max: 10 + 10, min: 18,
		},
		{
			name: "one password sprayed over 1,000 accounts from one address",
			attempt: func(i int) (string, string, netip.Addr) {
				return fmt.Sprintf("user%d@example.com", i), "Summer2026!", ip1
			},
			max: 30 + 60, min: 85,
		},
		{
			name: "1,000 passwords at one account from 1,000 addresses",
			attempt: func(i int) (string, string, netip.Addr) {
				return "alice@example.com", fmt.Sprintf("guess %d", i), netip.AddrFrom4([4]byte{198, 51, byte(i >> 8), byte(i)})
			},
			max: 20 + 12, min: 30,
			trusted: ip2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &accounts{boxes: map[string]mailstore.Mailbox{}, doms: map[string]mailstore.Domain{"example.com": {ID: 1, Name: "example.com"}}}
			hash := cheapHash(goodPassword)
			for i := range attempts {
				email := fmt.Sprintf("user%d@example.com", i)
				a.boxes[email] = mailstore.Mailbox{ID: int64(1000 + i), Email: email, PasswordHash: hash}
			}
			a.boxes["alice@example.com"] = mailstore.Mailbox{ID: 7, Email: "alice@example.com", PasswordHash: hash}
			a.boxes["bob@example.com"] = mailstore.Mailbox{ID: 8, Email: "bob@example.com", PasswordHash: hash}
			c := testclock.New(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
			l := NewLogins(LoginConfig{Accounts: a, Now: c.Now})
			if tt.trusted.IsValid() {
				if _, err := l.Authenticate(ctx, "alice@example.com", goodPassword, tt.trusted); err != nil {
					t.Fatalf("owner's first login: %v", err)
				}
			}
			// Bob works behind the attacker's address (an office NAT).
			if _, err := l.Authenticate(ctx, "bob@example.com", goodPassword, ip1); err != nil {
				t.Fatalf("bob's first login: %v", err)
			}
			checked := 0
			for i := range attempts {
				email, password, ip := tt.attempt(i)
				_, err := l.Authenticate(ctx, email, password, ip)
				switch {
				case errors.Is(err, ErrInvalidCredentials):
					checked++
				case !errors.Is(err, ErrThrottled):
					t.Fatalf("attempt %d = %v, want ErrInvalidCredentials or ErrThrottled", i, err)
				}
				c.Add(step)
			}
			t.Logf("guesses checked in an hour: %d", checked)
			if checked > tt.max || checked < tt.min {
				t.Errorf("guesses checked in an hour = %d, want %d-%d", checked, tt.min, tt.max)
			}
			// Nothing else slowed: bob from the attacking address where
			// he logged in before, bob from elsewhere, new or not, the
			// owner from its trusted address.
			for _, ip := range []netip.Addr{ip1, ip2, netip.MustParseAddr("203.0.113.9")} {
				if _, err := l.Authenticate(ctx, "bob@example.com", goodPassword, ip); err != nil {
					t.Errorf("bob from %s after the attack = %v, want nil", ip, err)
				}
			}
			if tt.trusted.IsValid() {
				if _, err := l.Authenticate(ctx, "alice@example.com", goodPassword, tt.trusted); err != nil {
					t.Errorf("owner from its trusted address = %v, want nil", err)
				}
			}
		})
	}
}

// With two live nodes, each node allows half of each budget (a pair's
// burst of 4 here), so that a guesser who alternates between the nodes is
// stopped after the cluster's four, not eight.
func TestThrottleShared(t *testing.T) {
	ctx := context.Background()
	share := &policy.Share{}
	share.SetNodes(2)
	a := &accounts{
		boxes: map[string]mailstore.Mailbox{"alice@example.com": {ID: 7, Email: "alice@example.com"}},
		doms:  map[string]mailstore.Domain{"example.com": {ID: 1, Name: "example.com"}},
	}
	a.setPassword(t, "alice@example.com", goodPassword, time.Unix(1000, 0))
	c := testclock.New(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
	guesses := testGuesses
	guesses.Pair = Budget{Burst: 4, PerHour: 1}
	l := NewLogins(LoginConfig{Accounts: a, Now: c.Now, Guesses: guesses, Share: share})
	for i := range 2 {
		if _, err := l.Authenticate(ctx, "alice@example.com", fmt.Sprintf("wrong %d", i), ip1); !errors.Is(err, ErrInvalidCredentials) {
			t.Fatalf("guess %d = %v, want ErrInvalidCredentials", i+1, err)
		}
	}
	if _, err := l.Authenticate(ctx, "alice@example.com", goodPassword, ip1); !errors.Is(err, ErrThrottled) {
		t.Fatalf("after this node's share (2) of 4 guesses: %v, want ErrThrottled", err)
	}
	share.SetNodes(1)
	if _, err := l.Authenticate(ctx, "alice@example.com", goodPassword, ip1); err != nil {
		t.Fatalf("alone again (burst 4, 2 used): %v, want nil", err)
	}
}

func TestBucket(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		takes []time.Duration // after t0
		at    time.Duration
		rate  float64 // a second
		used  float64
	}{
		{"empty is full", nil, time.Hour, 1, 0},
		{"takes add up", []time.Duration{0, 0, 0}, 0, 1, 3},
		{"drains at the rate", []time.Duration{0, 0, 0}, 2 * time.Second, 1, 1},
		{"never below zero", []time.Duration{0}, time.Hour, 1, 0},
		{"a late take of an earlier time counts now", []time.Duration{10 * time.Second, 5 * time.Second}, 10 * time.Second, 0.1, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bucket
			for _, d := range tt.takes {
				b.used(t0.Add(d), tt.rate)
				b.n++
			}
			if got := b.used(t0.Add(tt.at), tt.rate); got != tt.used {
				t.Errorf("used(%v) after %v = %v, want %v", tt.at, tt.takes, got, tt.used)
			}
		})
	}
}
