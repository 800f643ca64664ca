package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// runVerify checks domain verification: the token, SetVerified, the
// refusal of relatives of another partner's verified domain, and the
// operator's list of verified domains.
func runVerify(t *testing.T, open Open) {
	t.Run("set_verified", func(t *testing.T) { ctlSetVerified(t, open) })
	t.Run("verify_token", func(t *testing.T) { ctlVerifyToken(t, open) })
	t.Run("related_domains", func(t *testing.T) { ctlRelatedDomains(t, open) })
	t.Run("verified_domains", func(t *testing.T) { ctlVerifiedDomains(t, open) })
}

func (c *ctl) setVerified(pid int64, name string, verified bool, now time.Time) mailstore.Domain {
	c.t.Helper()
	d, err := c.s.SetVerified(c.ctx, pid, name, verified, now)
	if err != nil {
		c.t.Fatalf("SetVerified(%d, %q, %v) = %v, want nil", pid, name, verified, err)
	}
	return d
}

func ctlSetVerified(t *testing.T, open Open) {
	c := newCtl(t, open)
	a := c.partner("a")
	b := c.partner("b")
	d, err := c.s.CreateDomain(c.ctx, a.ID, mailstore.NewDomain{Name: "example.com", Plan: ctlStarter, VerifyToken: "tok1"}, ctlNow)
	if err != nil {
		t.Fatalf("CreateDomain(with token) = %v, want nil", err)
	}
	if d.Verified || !d.VerifiedAt.IsZero() || d.VerifyToken != "tok1" {
		t.Errorf("CreateDomain(with token) = verified %v at %v, token %q, want unverified, token tok1", d.Verified, d.VerifiedAt, d.VerifyToken)
	}
	c.domain(b.ID, "b.example", ctlStarter, 0, 0)

	got := c.setVerified(a.ID, "example.com", true, ctlNow)
	if !got.Verified || got.VerifyToken != "tok1" || got.ID != d.ID {
		t.Errorf("SetVerified(true) = %+v, want verified, token tok1", got)
	}
	checkUTC(t, "SetVerified(true).VerifiedAt", got.VerifiedAt, ctlNowUTC)
	if r := c.getDomain(a.ID, "example.com"); ctlJSON(t, r) != ctlJSON(t, got) {
		t.Errorf("Domain() after SetVerified = %+v, want %+v", r, got)
	}
	// Repeating moves VerifiedAt to the last good check.
	got = c.setVerified(a.ID, "example.com", true, ctlLater)
	checkUTC(t, "SetVerified(true) again .VerifiedAt", got.VerifiedAt, ctlLater.UTC().Truncate(time.Second))
	// Losing the proof keeps when it was last seen.
	got = c.setVerified(a.ID, "example.com", false, ctlLater.Add(time.Hour))
	if got.Verified {
		t.Errorf("SetVerified(false).Verified = true, want false")
	}
	checkUTC(t, "SetVerified(false).VerifiedAt", got.VerifiedAt, ctlLater.UTC().Truncate(time.Second))
	if r := c.getDomain(a.ID, "example.com"); r.Verified {
		t.Errorf("Domain() after SetVerified(false) is verified")
	}
	got = c.setVerified(a.ID, "example.com", false, ctlLater)
	if got.Verified {
		t.Errorf("SetVerified(false) again .Verified = true, want false")
	}

	for _, tc := range []struct {
		name string
		pid  int64
		in   string
	}{
		{"other partner's", a.ID, "b.example"},
		{"unknown", a.ID, "nowhere.example"},
		{"unknown partner", 999, "example.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := c.s.SetVerified(c.ctx, tc.pid, tc.in, true, ctlNow); !ctlIs(err, mailstore.ErrDomainNotFound) {
				t.Errorf("SetVerified(%d, %q) = %v, want ErrDomainNotFound", tc.pid, tc.in, err)
			}
		})
	}
	if r := c.getDomain(b.ID, "b.example"); r.Verified {
		t.Errorf("b.example verified by another partner's SetVerified")
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.s.SetVerified(ctx, a.ID, "example.com", true, ctlNow); !errors.Is(err, context.Canceled) {
		t.Errorf("SetVerified(done context) = %v, want context.Canceled", err)
	}
	if r := c.getDomain(a.ID, "example.com"); r.Verified {
		t.Errorf("SetVerified(done context) verified the domain")
	}
}

func ctlVerifyToken(t *testing.T, open Open) {
	c := newCtl(t, open)
	a := c.partner("a")
	b := c.partner("b")
	d := c.domain(a.ID, "example.com", ctlStarter, 0, 0)
	if d.VerifyToken != "" {
		t.Errorf("CreateDomain(no token).VerifyToken = %q, want empty", d.VerifyToken)
	}
	got, err := c.s.EnsureVerifyToken(c.ctx, a.ID, "example.com", "first")
	if err != nil || got.VerifyToken != "first" || got.ID != d.ID {
		t.Fatalf("EnsureVerifyToken(first) = %+v, %v, want token first", got, err)
	}
	got, err = c.s.EnsureVerifyToken(c.ctx, a.ID, "example.com", "second")
	if err != nil || got.VerifyToken != "first" {
		t.Errorf("EnsureVerifyToken(second) = %q, %v, want the first token kept", got.VerifyToken, err)
	}
	if r := c.getDomain(a.ID, "example.com"); r.VerifyToken != "first" {
		t.Errorf("Domain().VerifyToken = %q, want first", r.VerifyToken)
	}
	c.domain(b.ID, "b.example", ctlStarter, 0, 0)
	for _, tc := range []struct {
		name  string
		pid   int64
		in    string
		token string
		err   error
	}{
		{"empty token", a.ID, "example.com", "", mailstore.ErrInvalidArgument},
		{"other partner's", a.ID, "b.example", "x", mailstore.ErrDomainNotFound},
		{"unknown", a.ID, "nowhere.example", "x", mailstore.ErrDomainNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := c.s.EnsureVerifyToken(c.ctx, tc.pid, tc.in, tc.token); !ctlIs(err, tc.err) {
				t.Errorf("EnsureVerifyToken(%d, %q, %q) = %v, want %v", tc.pid, tc.in, tc.token, err, tc.err)
			}
		})
	}
	if r := c.getDomain(b.ID, "b.example"); r.VerifyToken != "" {
		t.Errorf("b.example got token %q through another partner", r.VerifyToken)
	}

	// Racing calls all answer the one token stored first.
	c.domain(a.ID, "race.example", ctlStarter, 0, 0)
	tokens := make(chan string, 8)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := c.s.EnsureVerifyToken(c.ctx, a.ID, "race.example", fmt.Sprintf("token%d", i))
			if err != nil {
				t.Errorf("EnsureVerifyToken(token%d) = %v", i, err)
			}
			tokens <- d.VerifyToken
		}()
	}
	wg.Wait()
	close(tokens)
	stored := c.getDomain(a.ID, "race.example").VerifyToken
	for tok := range tokens {
		if tok != stored {
			t.Errorf("racing EnsureVerifyToken answered %q, want the stored %q", tok, stored)
		}
	}
}

func ctlRelatedDomains(t *testing.T, open Open) {
	c := newCtl(t, open)
	a := c.partner("a")
	b := c.partner("b")
	other := c.partner("other")
	c.domain(a.ID, "example.com", ctlStarter, 0, 0)
	c.setVerified(a.ID, "example.com", true, ctlNow)
	c.domain(a.ID, "deep.x.org", ctlStarter, 0, 0)
	c.setVerified(a.ID, "deep.x.org", true, ctlNow)
	c.domain(a.ID, "plain.net", ctlStarter, 0, 0) // never verified
	c.domain(other.ID, "other.example", ctlStarter, 0, 0)
	c.setVerified(other.ID, "other.example", true, ctlNow)

	for _, tc := range []struct {
		name string
		pid  int64
		in   string
		err  error
	}{
		{"subdomain", b.ID, "sub.example.com", mailstore.ErrDomainRelated},
		{"deeper subdomain", b.ID, "a.b.example.com", mailstore.ErrDomainRelated},
		{"parent", b.ID, "x.org", mailstore.ErrDomainRelated},
		{"parent of a parent", b.ID, "org", mailstore.ErrDomainRelated},
		{"the name itself", b.ID, "example.com", mailstore.ErrDomainExists},
		{"a suffix that is not a label", b.ID, "notexample.com", nil},
		{"a prefix that is not a label", b.ID, "example.co", nil},
		{"a longer last label", b.ID, "example.comm", nil},
		{"a sibling", b.ID, "other.x.org", nil},
		{"under an unverified domain", b.ID, "sub.plain.net", nil},
		{"own subdomain", a.ID, "sub.example.com", nil},
		{"own parent", a.ID, "x.org", nil},
		{"own subdomain, another partner's parent", other.ID, "sub.other.example", nil},
		{"subdomain of two partners' domains", other.ID, "a.sub.example.com", mailstore.ErrDomainRelated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.s.CreateDomain(c.ctx, tc.pid, mailstore.NewDomain{Name: tc.in, Plan: ctlStarter}, ctlNow)
			if !ctlIs(err, tc.err) {
				t.Errorf("CreateDomain(%d, %q) = %v, want %v", tc.pid, tc.in, err, tc.err)
			}
			if tc.err == mailstore.ErrDomainRelated {
				if _, err := c.s.DomainByName(c.ctx, tc.in); !ctlIs(err, mailstore.ErrDomainNotFound) {
					t.Errorf("DomainByName(%q) after a refused create = %v, want ErrDomainNotFound", tc.in, err)
				}
			}
		})
	}
	// A refused create takes no slot of a limited partner.
	lim := int64(1)
	limited := c.partner("limited")
	if _, err := c.s.SetPartnerLimits(c.ctx, limited.ID, mailstore.PartnerLimits{MaxDomains: &lim}); err != nil {
		t.Fatalf("SetPartnerLimits(limited, 1) = %v", err)
	}
	if _, err := c.s.CreateDomain(c.ctx, limited.ID, mailstore.NewDomain{Name: "l.example.com", Plan: ctlStarter}, ctlNow); !ctlIs(err, mailstore.ErrDomainRelated) {
		t.Errorf("CreateDomain(limited, l.example.com) = %v, want ErrDomainRelated", err)
	}
	c.domain(limited.ID, "limited.example", ctlStarter, 0, 0)

	// Unverified, or deleted, a domain no longer holds its relatives.
	c.setVerified(a.ID, "example.com", false, ctlLater)
	c.domain(b.ID, "b.example.com", ctlStarter, 0, 0)
	if err := c.s.DeleteDomain(c.ctx, a.ID, "deep.x.org", true); err != nil {
		t.Fatalf("DeleteDomain(deep.x.org) = %v", err)
	}
	c.domain(b.ID, "z.deep.x.org", ctlStarter, 0, 0)
	// And verified again, it refuses new relatives but keeps those made
	// while it was not (they stay unverified, routed as not hosted).
	c.setVerified(a.ID, "example.com", true, ctlLater)
	if _, err := c.s.CreateDomain(c.ctx, b.ID, mailstore.NewDomain{Name: "two.example.com", Plan: ctlStarter}, ctlNow); !ctlIs(err, mailstore.ErrDomainRelated) {
		t.Errorf("CreateDomain(two.example.com) after verifying again = %v, want ErrDomainRelated", err)
	}
	if d := c.getDomain(b.ID, "b.example.com"); d.Verified {
		t.Errorf("b.example.com verified by its parent's verification")
	}
}

func ctlVerifiedDomains(t *testing.T, open Open) {
	c := newCtl(t, open)
	a := c.partner("a")
	b := c.partner("b")
	// Reversed: com.example, com.example.sub, net.zeta, org.alpha,
	// org.alpha.www; unverified.example is left unverified and
	// gone.example is deleted.
	domains := []struct {
		pid  int64
		name string
	}{
		{a.ID, "alpha.org"}, {b.ID, "zeta.net"}, {a.ID, "example.com"}, {a.ID, "sub.example.com"},
		{b.ID, "www.alpha.org"}, {a.ID, "unverified.example"}, {b.ID, "gone.example"},
	}
	for _, d := range domains {
		c.domain(d.pid, d.name, ctlStarter, 0, 0)
	}
	// Verified once all exist: b's www.alpha.org could not be made under
	// a's verified alpha.org.
	for _, d := range domains {
		if d.name != "unverified.example" {
			c.setVerified(d.pid, d.name, true, ctlNow)
		}
	}
	if err := c.s.DeleteDomain(c.ctx, b.ID, "gone.example", false); err != nil {
		t.Fatalf("DeleteDomain(gone.example) = %v", err)
	}
	c.domain(a.ID, "lost.example", ctlStarter, 0, 0)
	c.setVerified(a.ID, "lost.example", true, ctlNow)
	c.setVerified(a.ID, "lost.example", false, ctlNow)

	want := []string{"example.com", "sub.example.com", "zeta.net", "alpha.org", "www.alpha.org"}
	names := func(ds []mailstore.Domain) []string {
		out := []string{}
		for _, d := range ds {
			if !d.Verified {
				t.Errorf("VerifiedDomains() answered %s, unverified", d.Name)
			}
			out = append(out, d.Name)
		}
		return out
	}
	all, err := c.s.VerifiedDomains(c.ctx, "", 0)
	if err != nil || !slices.Equal(names(all), want) {
		t.Fatalf("VerifiedDomains(\"\", 0) = %v, %v, want %v", names(all), err, want)
	}
	if all[0].PartnerID != a.ID || all[2].PartnerID != b.ID {
		t.Errorf("VerifiedDomains() partners = %d, %d, want %d, %d", all[0].PartnerID, all[2].PartnerID, a.ID, b.ID)
	}
	for _, size := range []int{1, 2, 3, 5, 6} {
		var got []string
		after := ""
		for range 10 {
			batch, err := c.s.VerifiedDomains(c.ctx, after, size)
			if err != nil {
				t.Fatalf("VerifiedDomains(%q, %d) = %v", after, size, err)
			}
			if len(batch) > size {
				t.Fatalf("VerifiedDomains(%q, %d) = %d domains, want at most %d", after, size, len(batch), size)
			}
			got = append(got, names(batch)...)
			if len(batch) < size {
				break
			}
			after = mailstore.ReversedName(batch[len(batch)-1].Name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("VerifiedDomains in batches of %d = %v, want %v", size, got, want)
		}
	}
	// after need not be a domain's: a batch starts past it.
	if got, err := c.s.VerifiedDomains(c.ctx, "com.example.a", 0); err != nil || !slices.Equal(names(got), want[1:]) {
		t.Errorf("VerifiedDomains(com.example.a) = %v, %v, want %v", names(got), err, want[1:])
	}
	if got, err := c.s.VerifiedDomains(c.ctx, "zzz", 0); err != nil || len(got) != 0 {
		t.Errorf("VerifiedDomains(zzz) = %v, %v, want none", names(got), err)
	}
}
