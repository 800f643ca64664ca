package mailauth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mailhost/mailhost/internal/testclock"
)

// cacheDNS is the DNS behind the cache tests.
func cacheDNS() *fakeDNS {
	return &fakeDNS{
		txt: map[string][]string{
			"example.org":        {"v=spf1 mx -all"},
			"_dmarc.example.org": {"v=DMARC1; p=reject"},
			"a.example":          {"a"},
			"b.example":          {"b"},
			"c.example":          {"c"},
			"d.example":          {"d"},
		},
		ip:   map[string][]string{"mx.example.org": {"198.51.100.7", "2001:db8::7"}},
		mx:   map[string][]*net.MX{"example.org": {{Host: "mx.example.org.", Pref: 10}}},
		temp: map[string]bool{"temp.example": true},
	}
}

func (f *fakeDNS) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.queries)
}

// query is one step of a cache test: move the clock, then look up.
type query struct {
	advance time.Duration
	kind    string // "TXT", "MX" or "IP"
	name    string
	want    int    // queries the wrapped resolver has had after this step
	wantErr string // "", "notfound" or "temporary"
}

func (q query) do(ctx context.Context, c *CachingResolver) (any, error) {
	switch q.kind {
	case "TXT":
		return c.LookupTXT(ctx, q.name)
	case "MX":
		return c.LookupMX(ctx, q.name)
	case "IP":
		return c.LookupIPAddr(ctx, q.name)
	}
	panic("unknown kind " + q.kind)
}

func errKind(err error) string {
	var d *net.DNSError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &d) && d.IsNotFound:
		return "notfound"
	case errors.As(err, &d) && (d.IsTemporary || d.IsTimeout):
		return "temporary"
	}
	return "other: " + err.Error()
}

func TestCachingResolver(t *testing.T) {
	tests := []struct {
		name  string
		steps []query
	}{
		{"hit", []query{
			{0, "TXT", "example.org", 1, ""},
			{time.Second, "TXT", "example.org", 1, ""},
		}},
		{"names without case and trailing dot", []query{
			{0, "TXT", "Example.ORG.", 1, ""},
			{0, "TXT", "example.org", 1, ""},
			{0, "TXT", "EXAMPLE.org.", 1, ""},
		}},
		{"types apart", []query{
			{0, "TXT", "example.org", 1, ""},
			{0, "MX", "example.org", 2, ""},
			{0, "IP", "mx.example.org", 3, ""},
			{0, "MX", "example.org", 3, ""},
			{0, "IP", "mx.example.org", 3, ""},
		}},
		{"expiry after the TTL", []query{
			{0, "MX", "example.org", 1, ""},
			{DefaultCacheTTL - time.Second, "MX", "example.org", 1, ""},
			{time.Second, "MX", "example.org", 2, ""},
			{time.Second, "MX", "example.org", 2, ""},
		}},
		{"negative answer kept for the negative TTL", []query{
			{0, "TXT", "none.example", 1, "notfound"},
			{DefaultCacheNegativeTTL - time.Second, "TXT", "none.example", 1, "notfound"},
			{time.Second, "TXT", "none.example", 2, "notfound"},
		}},
		{"temporary error not kept", []query{
			{0, "TXT", "temp.example", 1, "temporary"},
			{0, "TXT", "temp.example", 2, "temporary"},
			{0, "IP", "temp.example", 3, "temporary"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := cacheDNS()
			clock := testclock.New(testNow)
			c := NewCachingResolver(f, CacheOptions{Now: clock.Now})
			for i, q := range tt.steps {
				clock.Add(q.advance)
				v, err := q.do(t.Context(), c)
				if got := errKind(err); got != q.wantErr {
					t.Fatalf("step %d: Lookup%s(%q) error = %v, want %s", i, q.kind, q.name, err, q.wantErr)
				}
				if err == nil && fmt.Sprint(v) == "[]" {
					t.Errorf("step %d: Lookup%s(%q) = empty answer", i, q.kind, q.name)
				}
				if got := f.count(); got != q.want {
					t.Errorf("step %d: after Lookup%s(%q) the resolver had %d queries, want %d", i, q.kind, q.name, got, q.want)
				}
			}
		})
	}
}

func TestCachingResolverErrorName(t *testing.T) {
	c := NewCachingResolver(cacheDNS(), CacheOptions{})
	c.LookupTXT(t.Context(), "none.example")
	_, err := c.LookupTXT(t.Context(), "NONE.example.")
	var d *net.DNSError
	if !errors.As(err, &d) || !d.IsNotFound || d.Name != "NONE.example." {
		t.Errorf("LookupTXT(NONE.example.) = %#v, want not found for the name asked", err)
	}
	d.Name = "changed"
	_, err = c.LookupTXT(t.Context(), "none.example")
	if !errors.As(err, &d) || d.Name != "none.example" {
		t.Errorf("LookupTXT(none.example) after a caller changed its error = %#v", err)
	}
}

func TestCachingResolverCopies(t *testing.T) {
	ctx := t.Context()
	f := cacheDNS()
	c := NewCachingResolver(f, CacheOptions{})
	// Every second round is answered from the cache; both must be
	// unharmed by what the caller did to the answer before.
	for range 3 {
		txt, err := c.LookupTXT(ctx, "example.org")
		if err != nil || !slices.Equal(txt, []string{"v=spf1 mx -all"}) {
			t.Fatalf("LookupTXT() = %q, %v", txt, err)
		}
		txt[0] = "changed"

		mx, err := c.LookupMX(ctx, "example.org")
		if err != nil || len(mx) != 1 || *mx[0] != (net.MX{Host: "mx.example.org.", Pref: 10}) {
			t.Fatalf("LookupMX() = %v, %v", mx, err)
		}
		mx[0].Host = "evil.example."
		mx[0] = nil

		ips, err := c.LookupIPAddr(ctx, "mx.example.org")
		if err != nil || len(ips) != 2 || !ips[0].IP.Equal(net.ParseIP("198.51.100.7")) {
			t.Fatalf("LookupIPAddr() = %v, %v", ips, err)
		}
		ips[0].IP[len(ips[0].IP)-1] = 99
	}
	// The wrapped resolver's own tables are not shared either.
	if got := f.mx["example.org"][0].Host; got != "mx.example.org." {
		t.Errorf("the wrapped resolver's MX host = %q after callers changed theirs", got)
	}
	if got := f.count(); got != 3 {
		t.Errorf("resolver had %d queries, want 3", got)
	}
}

// gateDNS holds every TXT query until gate is closed.
type gateDNS struct {
	*fakeDNS
	gate chan struct{}
}

func (g gateDNS) LookupTXT(ctx context.Context, name string) ([]string, error) {
	select {
	case <-g.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.fakeDNS.LookupTXT(ctx, name)
}

// waitJoined waits until n callers wait for the TXT query of name under way.
func waitJoined(t *testing.T, c *CachingResolver, name string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.mu.Lock()
		call := c.flight[cacheKey{"TXT", name}]
		joined := call != nil && call.waiters == n
		c.mu.Unlock()
		if joined {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d callers did not join the query of %s", n, name)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestCachingResolverCoalesces(t *testing.T) {
	const callers = 50
	tests := []struct {
		name    string
		host    string
		wantErr string
		want    int // queries after a second round
	}{
		{"answer", "example.org", "", 1},
		{"not found", "none.example", "notfound", 1},
		{"temporary error, shared but not kept", "temp.example", "temporary", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := cacheDNS()
			g := gateDNS{f, make(chan struct{})}
			c := NewCachingResolver(g, CacheOptions{})
			errs := make(chan error, callers)
			var wg sync.WaitGroup
			for i := range callers {
				wg.Go(func() {
					name := tt.host
					if i%2 == 1 {
						name += "."
					}
					_, err := c.LookupTXT(t.Context(), name)
					errs <- err
				})
			}
			waitJoined(t, c, tt.host, callers-1)
			close(g.gate)
			wg.Wait()
			close(errs)
			for err := range errs {
				if got := errKind(err); got != tt.wantErr {
					t.Errorf("LookupTXT(%s) error = %v, want %s", tt.host, err, tt.wantErr)
				}
			}
			if got := f.count(); got != 1 {
				t.Errorf("%d concurrent lookups made %d queries, want 1", callers, got)
			}
			c.LookupTXT(t.Context(), tt.host)
			if got := f.count(); got != tt.want {
				t.Errorf("after one more lookup: %d queries, want %d", got, tt.want)
			}
		})
	}
}

// TestCachingResolverCallerGivesUp: a caller whose context ends gets a
// temporary error at once; the query goes on for the others and its answer
// is kept.
func TestCachingResolverCallerGivesUp(t *testing.T) {
	f := cacheDNS()
	g := gateDNS{f, make(chan struct{})}
	c := NewCachingResolver(g, CacheOptions{})

	first, cancel := context.WithCancel(t.Context())
	firstErr := make(chan error, 1)
	go func() {
		_, err := c.LookupTXT(first, "example.org")
		firstErr <- err
	}()
	second := make(chan error, 1)
	go func() {
		_, err := c.LookupTXT(t.Context(), "example.org")
		second <- err
	}()
	waitJoined(t, c, "example.org", 1)
	cancel()
	if err := <-firstErr; errKind(err) != "temporary" {
		t.Errorf("LookupTXT() with its context cancelled = %v, want a temporary error", err)
	}
	close(g.gate)
	if err := <-second; err != nil {
		t.Errorf("LookupTXT() of the caller still waiting = %v", err)
	}
	if _, err := c.LookupTXT(t.Context(), "example.org"); err != nil || f.count() != 1 {
		t.Errorf("LookupTXT() afterwards = %v with %d queries, want the kept answer after 1", err, f.count())
	}

	done, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.LookupTXT(done, "example.org"); errKind(err) != "temporary" {
		t.Errorf("LookupTXT() with a done context = %v, want a temporary error", err)
	}
}

func TestCachingResolverBound(t *testing.T) {
	f := cacheDNS()
	clock := testclock.New(testNow)
	c := NewCachingResolver(f, CacheOptions{MaxEntries: 3, Now: clock.Now})
	steps := []query{
		{0, "TXT", "a.example", 1, ""},
		{0, "TXT", "b.example", 2, ""},
		{0, "TXT", "c.example", 3, ""},
		{0, "TXT", "a.example", 3, ""}, // a is now the most recently used
		{0, "TXT", "d.example", 4, ""}, // b, the least, goes
		{0, "TXT", "a.example", 4, ""},
		{0, "TXT", "c.example", 4, ""},
		{0, "TXT", "d.example", 4, ""},
		{0, "TXT", "b.example", 5, ""}, // a goes
		{0, "TXT", "a.example", 6, ""},
	}
	for i, q := range steps {
		if _, err := q.do(t.Context(), c); err != nil {
			t.Fatalf("step %d: Lookup%s(%q) = %v", i, q.kind, q.name, err)
		}
		if got := f.count(); got != q.want {
			t.Errorf("step %d: after Lookup%s(%q) the resolver had %d queries, want %d", i, q.kind, q.name, got, q.want)
		}
		if n := c.Len(); n > 3 {
			t.Errorf("step %d: Len() = %d, want at most 3", i, n)
		}
	}
}

func TestCachingResolverAddr(t *testing.T) {
	c := NewCachingResolver(cacheDNS(), CacheOptions{})
	if _, err := c.LookupAddr(t.Context(), "192.0.2.1"); errKind(err) != "notfound" {
		t.Errorf("LookupAddr() without reverse lookups behind = %v, want not found", err)
	}
	f := &ptrDNS{fakeDNS: cacheDNS()}
	c = NewCachingResolver(f, CacheOptions{})
	for range 2 {
		names, err := c.LookupAddr(t.Context(), "192.0.2.1")
		if err != nil || !slices.Equal(names, []string{"host.example."}) {
			t.Errorf("LookupAddr() = %q, %v", names, err)
		}
	}
	if f.count() != 1 {
		t.Errorf("two LookupAddr() made %d queries, want 1", f.count())
	}
}

// ptrDNS does reverse lookups too.
type ptrDNS struct{ *fakeDNS }

func (p *ptrDNS) LookupAddr(ctx context.Context, addr string) ([]string, error) {
	if err := p.lookup(ctx, "PTR", addr); err != nil {
		return nil, err
	}
	return []string{"host.example."}, nil
}

// TestCheckCached runs the Checker's table through one cache twice: the
// results are the same, and the second round, every sender seen before,
// asks the DNS nothing, except for the temporary failures, which are
// asked again.
func TestCheckCached(t *testing.T) {
	inside := net.ParseIP("192.0.2.10")
	signed := message(t, "a@example.org", "example.org")
	ins := []Input{
		{IP: inside, HELO: "h", MailFrom: "a@example.org", Message: message(t, "a@example.org", "")},
		{IP: inside, HELO: "h", MailFrom: "b@example.org", Message: signed},
		{IP: net.ParseIP("198.51.100.7"), HELO: "h", MailFrom: "a@example.org", Message: message(t, "a@sub.example.org", "")},
		{IP: inside, HELO: "h", MailFrom: "a@none.example", Message: message(t, "a@none.example", "")},
		{IP: inside, HELO: "h", MailFrom: "a@include.example", Message: message(t, "a@include.example", "")},
	}
	f := checkDNS(t)
	c := &Checker{Resolver: NewCachingResolver(f, CacheOptions{}), Hostname: "mx.mailhost.test"}
	uncached := &Checker{Resolver: checkDNS(t), Hostname: "mx.mailhost.test"}
	var first []Results
	for _, in := range ins {
		_, res := c.Check(t.Context(), in)
		_, want := uncached.Check(t.Context(), in)
		if fmt.Sprint(res) != fmt.Sprint(want) {
			t.Errorf("Check(%s) through the cache = %+v, want %+v", in.MailFrom, res, want)
		}
		first = append(first, res)
	}
	n := f.count()
	if n == 0 {
		t.Fatal("the first round asked the DNS nothing")
	}
	for range 10 {
		for i, in := range ins {
			_, res := c.Check(t.Context(), in)
			if fmt.Sprint(res) != fmt.Sprint(first[i]) {
				t.Errorf("Check(%s) from the cache = %+v, want %+v", in.MailFrom, res, first[i])
			}
		}
	}
	if got := f.count(); got != n {
		t.Errorf("50 more checks of known senders made %d DNS queries, want 0", got-n)
	}
}

// BenchmarkCheckCached is the checks of a burst from one sender domain,
// with the DNS queries counted per message.
func BenchmarkCheckCached(b *testing.B) {
	for _, cached := range []bool{false, true} {
		b.Run(fmt.Sprintf("cached=%v", cached), func(b *testing.B) {
			f := &fakeDNS{txt: map[string][]string{
				"example.org":        {"v=spf1 ip4:192.0.2.0/24 -all"},
				"_dmarc.example.org": {"v=DMARC1; p=reject"},
			}}
			var r Resolver = f
			if cached {
				r = NewCachingResolver(f, CacheOptions{})
			}
			c := &Checker{Resolver: r, Hostname: "mx.mailhost.test"}
			in := Input{IP: net.ParseIP("192.0.2.10"), HELO: "h", MailFrom: "a@example.org",
				Message: []byte("From: a@example.org\r\nSubject: x\r\n\r\nbody\r\n")}
			for b.Loop() {
				c.Check(b.Context(), in)
			}
			b.ReportMetric(float64(f.count())/float64(b.N), "queries/op")
		})
	}
}
