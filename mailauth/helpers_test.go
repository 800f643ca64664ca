package mailauth

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// testNow is the clock of the tests.
var testNow = time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)

// testKeys are one set of DKIM keys per test binary: RSA generation is
// too slow to repeat in every test.
var testKeys = sync.OnceValues(func() ([]mailstore.DKIMKey, error) {
	return GenerateDKIMKeys(testNow)
})

func keys(t testing.TB) []mailstore.DKIMKey {
	t.Helper()
	k, err := testKeys()
	if err != nil {
		t.Fatalf("GenerateDKIMKeys() = %v", err)
	}
	return k
}

// fakeDNS answers from tables. A name absent from every table is
// NXDOMAIN; a name in temp fails temporarily; block makes every query
// wait for its context.
type fakeDNS struct {
	txt   map[string][]string
	ip    map[string][]string
	mx    map[string][]*net.MX
	temp  map[string]bool
	block bool

	mu      sync.Mutex
	queries []string
}

func fqdn(name string) string { return strings.ToLower(strings.TrimSuffix(name, ".")) }

func (f *fakeDNS) lookup(ctx context.Context, kind, name string) error {
	f.mu.Lock()
	f.queries = append(f.queries, kind+" "+fqdn(name))
	f.mu.Unlock()
	if f.block {
		<-ctx.Done()
		return ctx.Err()
	}
	if f.temp[fqdn(name)] {
		return &net.DNSError{Err: "server failure", Name: name, IsTemporary: true}
	}
	return nil
}

func nxdomain(name string) error {
	return &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
}

func (f *fakeDNS) LookupTXT(ctx context.Context, name string) ([]string, error) {
	if err := f.lookup(ctx, "TXT", name); err != nil {
		return nil, err
	}
	if v, ok := f.txt[fqdn(name)]; ok {
		return v, nil
	}
	return nil, nxdomain(name)
}

func (f *fakeDNS) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	if err := f.lookup(ctx, "A", host); err != nil {
		return nil, err
	}
	v, ok := f.ip[fqdn(host)]
	if !ok {
		return nil, nxdomain(host)
	}
	var out []net.IPAddr
	for _, s := range v {
		out = append(out, net.IPAddr{IP: net.ParseIP(s)})
	}
	return out, nil
}

func (f *fakeDNS) LookupMX(ctx context.Context, name string) ([]*net.MX, error) {
	if err := f.lookup(ctx, "MX", name); err != nil {
		return nil, err
	}
	if v, ok := f.mx[fqdn(name)]; ok {
		return v, nil
	}
	return nil, nxdomain(name)
}

// publish adds a domain's DKIM key records, as DNSRecords gives them, to
// the TXT table.
func (f *fakeDNS) publish(domain string, ks []mailstore.DKIMKey) {
	for _, r := range DNSRecords(domain, "mx.mailhost.test", ks) {
		if r.Type == "TXT" && strings.Contains(r.Name, "._domainkey.") {
			f.txt[r.Name] = []string{r.Value}
		}
	}
}
