package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// The MTA-STS policies of the queue's destinations (Queue.STSPolicy and
// PutSTSPolicy). A policy whose record is gone and one that has expired
// read the same at a later now; reading at an earlier now tells them
// apart, which is how these tests see what a put pruned.

// stsPolicy is a policy of domain fetched at `at`, valid for maxAge.
func stsPolicy(domain, id string, at time.Time, maxAge time.Duration) mailstore.STSPolicy {
	return mailstore.STSPolicy{
		Domain: domain, ID: id, Mode: "enforce", MX: []string{"mx." + domain, "*.backup.example"},
		MaxAge: maxAge, Expires: at.Add(maxAge),
	}
}

func (c *ctl) putSTS(p mailstore.STSPolicy, now time.Time) {
	c.t.Helper()
	if err := c.s.PutSTSPolicy(c.ctx, p, now); err != nil {
		c.t.Fatalf("PutSTSPolicy(%s, %s) = %v, want nil", p.Domain, p.ID, err)
	}
}

// stsID answers the id of the policy STSPolicy finds, "" when it answers
// not found.
func (c *ctl) stsID(domain string, now time.Time) string {
	c.t.Helper()
	p, err := c.s.STSPolicy(c.ctx, domain, now)
	switch {
	case errors.Is(err, mailstore.ErrSTSPolicyNotFound):
		if !errors.Is(err, mailstore.ErrNotFound) {
			c.t.Errorf("STSPolicy(%s) = %v, which is not ErrNotFound", domain, err)
		}
		return ""
	case err != nil:
		c.t.Fatalf("STSPolicy(%s, %v) = %v, want a policy or ErrSTSPolicyNotFound", domain, now, err)
	}
	return p.ID
}

// stsRoundTrip: a policy reads back as it was put, times in UTC with
// second precision and max_age in whole seconds.
func stsRoundTrip(t *testing.T, open Open) {
	c := newCtl(t, open)
	in := stsPolicy("example.com", "20261122T0930", ctlNow, 86400*time.Second+300*time.Millisecond)
	c.putSTS(in, ctlNow)
	got, err := c.s.STSPolicy(c.ctx, "example.com", ctlNow)
	if err != nil {
		t.Fatalf("STSPolicy(example.com) = %v, want the policy", err)
	}
	if got.Domain != "example.com" || got.ID != in.ID || got.Mode != in.Mode || !slices.Equal(got.MX, in.MX) {
		t.Errorf("STSPolicy(example.com) = %+v, want %+v", got, in)
	}
	if got.MaxAge != 86400*time.Second {
		t.Errorf("STSPolicy(example.com).MaxAge = %v, want 24h (whole seconds)", got.MaxAge)
	}
	checkUTC(t, "Expires", got.Expires, ctlNowUTC.Add(24*time.Hour))
	if id := c.stsID("other.example", ctlNow); id != "" {
		t.Errorf("STSPolicy(other.example) found id %q, want ErrSTSPolicyNotFound", id)
	}
}

// stsExpiry: a policy is answered while now is before its Expires, and
// not from then on.
func stsExpiry(t *testing.T, open Open) {
	c := newCtl(t, open)
	c.putSTS(stsPolicy("example.com", "a", mailNow, time.Hour), mailNow)
	expires := mailNow.Add(time.Hour)
	for _, tc := range []struct {
		name string
		now  time.Time
		want string
	}{
		{"when fetched", mailNow, "a"},
		{"a second before", expires.Add(-time.Second), "a"},
		{"at expiry", expires, ""},
		{"a day after", expires.Add(24 * time.Hour), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.stsID("example.com", tc.now); got != tc.want {
				t.Errorf("STSPolicy(example.com, %v) id = %q, want %q", tc.now, got, tc.want)
			}
		})
	}
}

// stsReplace: a put replaces the domain's policy whether the new one
// expires before or after it, and the replaced one's expiry no longer
// counts: pruning follows the new one's.
func stsReplace(t *testing.T, open Open) {
	c := newCtl(t, open)
	// Sooner: pruned once the new expiry passes, though the old one
	// has not.
	c.putSTS(stsPolicy("sooner.example", "old", mailNow, 2*time.Hour), mailNow)
	c.putSTS(stsPolicy("sooner.example", "new", mailNow, time.Hour), mailNow)
	if got := c.stsID("sooner.example", mailNow); got != "new" {
		t.Errorf("STSPolicy(sooner.example) after a replace = %q, want new", got)
	}
	// Later: kept past the old expiry.
	c.putSTS(stsPolicy("later.example", "old", mailNow, time.Hour), mailNow)
	c.putSTS(stsPolicy("later.example", "new", mailNow, 3*time.Hour), mailNow)

	at := mailNow.Add(90 * time.Minute)
	c.putSTS(stsPolicy("other.example", "x", at, time.Hour), at)
	if got := c.stsID("sooner.example", mailNow); got != "" {
		t.Errorf("STSPolicy(sooner.example) after a put past its new expiry = %q, want it pruned", got)
	}
	if got := c.stsID("later.example", at); got != "new" {
		t.Errorf("STSPolicy(later.example) past its old expiry = %q, want new", got)
	}
	at = mailNow.Add(2*time.Hour + time.Minute)
	c.putSTS(stsPolicy("other.example", "y", at, time.Hour), at)
	if got := c.stsID("later.example", at); got != "new" {
		t.Errorf("STSPolicy(later.example) after a put past its old expiry = %q, want new", got)
	}
}

// stsPrune: a put deletes up to STSPruneLimit expired policies, those
// that expired first, and never one still valid.
func stsPrune(t *testing.T, open Open) {
	c := newCtl(t, open)
	n := mailstore.STSPruneLimit + 4
	domain := func(i int) string { return fmt.Sprintf("d%02d.example", i) }
	for i := range n {
		c.putSTS(stsPolicy(domain(i), "a", mailNow, time.Duration(i+1)*time.Minute), mailNow)
	}
	c.putSTS(stsPolicy("valid.example", "v", mailNow, 2*time.Hour), mailNow)
	later := mailNow.Add(time.Hour)
	kept := func() []string {
		var out []string
		for i := range n {
			if c.stsID(domain(i), mailNow) != "" {
				out = append(out, domain(i))
			}
		}
		return out
	}
	c.putSTS(stsPolicy("fresh.example", "f", later, 24*time.Hour), later)
	var want []string
	for i := mailstore.STSPruneLimit; i < n; i++ {
		want = append(want, domain(i))
	}
	if got := kept(); !slices.Equal(got, want) {
		t.Errorf("expired policies left after one put = %q, want %q (the last to expire)", got, want)
	}
	c.putSTS(stsPolicy("fresh.example", "g", later, 24*time.Hour), later)
	if got := kept(); len(got) != 0 {
		t.Errorf("expired policies left after two puts = %q, want none", got)
	}
	for d, id := range map[string]string{"valid.example": "v", "fresh.example": "g"} {
		if got := c.stsID(d, later); got != id {
			t.Errorf("STSPolicy(%s) after pruning = %q, want %q", d, got, id)
		}
	}
}

// stsFold: domain names are folded to lower case and a final dot
// dropped, both when a policy is put and when it is read.
func stsFold(t *testing.T, open Open) {
	c := newCtl(t, open)
	c.putSTS(stsPolicy("Example.COM.", "a", mailNow, time.Hour), mailNow)
	for _, tc := range []struct {
		name string
		want string
	}{
		{"example.com", "a"},
		{"EXAMPLE.com", "a"},
		{"example.com.", "a"},
		{"example.co", ""},
		{"www.example.com", ""},
	} {
		if got := c.stsID(tc.name, mailNow); got != tc.want {
			t.Errorf("STSPolicy(%s) id = %q, want %q", tc.name, got, tc.want)
		}
	}
	if p, err := c.s.STSPolicy(c.ctx, "EXAMPLE.COM", mailNow); err != nil || p.Domain != "example.com" {
		t.Errorf("STSPolicy(EXAMPLE.COM) = %+v, %v; want Domain example.com", p, err)
	}
	c.putSTS(stsPolicy("example.com", "b", mailNow, time.Hour), mailNow)
	if got := c.stsID("Example.Com.", mailNow); got != "b" {
		t.Errorf("STSPolicy(Example.Com.) after a put of example.com = %q, want b (the same record)", got)
	}
}

// stsInvalid: what cannot be stored is ErrInvalidArgument, and stores
// nothing.
func stsInvalid(t *testing.T, open Open) {
	c := newCtl(t, open)
	for _, tc := range []struct {
		name string
		p    mailstore.STSPolicy
	}{
		{"empty domain", stsPolicy("", "a", mailNow, time.Hour)},
		{"only a dot", stsPolicy(".", "a", mailNow, time.Hour)},
		{"negative max_age", stsPolicy("example.com", "a", mailNow, -time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := c.s.PutSTSPolicy(c.ctx, tc.p, mailNow); !errors.Is(err, mailstore.ErrInvalidArgument) {
				t.Errorf("PutSTSPolicy(%+v) = %v, want ErrInvalidArgument", tc.p, err)
			}
		})
	}
	if got := c.stsID("example.com", mailNow.Add(-time.Hour)); got != "" {
		t.Errorf("STSPolicy(example.com) after invalid puts = %q, want none", got)
	}
}

// stsContextDone: with a done context, both methods answer its error and
// change nothing.
func stsContextDone(t *testing.T, open Open) {
	c := newCtl(t, open)
	c.putSTS(stsPolicy("example.com", "a", mailNow, time.Hour), mailNow)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.s.STSPolicy(ctx, "example.com", mailNow); !errors.Is(err, context.Canceled) {
		t.Errorf("STSPolicy(done context) = %v, want context.Canceled", err)
	}
	if err := c.s.PutSTSPolicy(ctx, stsPolicy("example.com", "b", mailNow, time.Hour), mailNow); !errors.Is(err, context.Canceled) {
		t.Errorf("PutSTSPolicy(done context) = %v, want context.Canceled", err)
	}
	if got := c.stsID("example.com", mailNow); got != "a" {
		t.Errorf("STSPolicy(example.com) after a put with a done context = %q, want a", got)
	}
}
