package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// runControl checks the control plane: partners, keys, domains, mailboxes,
// aliases, limits and partner isolation.
func runControl(t *testing.T, open Open) {
	t.Run("partners", func(t *testing.T) { ctlPartners(t, open) })
	t.Run("partner_limits", func(t *testing.T) { ctlPartnerLimits(t, open) })
	t.Run("api_keys", func(t *testing.T) { ctlAPIKeys(t, open) })
	t.Run("domains", func(t *testing.T) { ctlDomains(t, open) })
	t.Run("domain_paging", func(t *testing.T) { ctlDomainPaging(t, open) })
	t.Run("domain_settings", func(t *testing.T) { ctlDomainSettings(t, open) })
	t.Run("apply_plan", func(t *testing.T) { ctlApplyPlan(t, open) })
	t.Run("delete_domain", func(t *testing.T) { ctlDeleteDomain(t, open) })
	t.Run("mailboxes", func(t *testing.T) { ctlMailboxes(t, open) })
	t.Run("mailbox_errors", func(t *testing.T) { ctlMailboxErrors(t, open) })
	t.Run("mailbox_paging", func(t *testing.T) { ctlMailboxPaging(t, open) })
	t.Run("aliases", func(t *testing.T) { ctlAliases(t, open) })
	t.Run("alias_errors", func(t *testing.T) { ctlAliasErrors(t, open) })
	t.Run("alias_paging", func(t *testing.T) { ctlAliasPaging(t, open) })
	t.Run("address_namespace", func(t *testing.T) { ctlAddressNamespace(t, open) })
	t.Run("counters", func(t *testing.T) { ctlCounters(t, open) })
	t.Run("partner_isolation", func(t *testing.T) { ctlIsolation(t, open) })
	t.Run("concurrent", func(t *testing.T) { ctlConcurrent(t, open) })
	t.Run("context_done", func(t *testing.T) { ctlContextDone(t, open) })
	t.Run("verify", func(t *testing.T) { runVerify(t, open) })
	t.Run("claims", func(t *testing.T) { runClaims(t, open) })
}

// Fixed inputs. ctlNow has a fraction and a zone on purpose: the store keeps
// times in UTC with second precision.
var (
	ctlNow     = time.Date(2026, 11, 22, 10, 30, 0, 123456789, time.FixedZone("CET", 3600))
	ctlNowUTC  = time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)
	ctlLater   = ctlNow.Add(90 * time.Minute)
	ctlStarter = mailstore.Plan{Name: "starter", QuotaMB: 1024, RetentionDays: 30, TransferMonthlyMB: 5120}
	ctlBiz     = mailstore.Plan{Name: "business", QuotaMB: 2048, RetentionDays: 60, TransferMonthlyMB: 10240}
	ctlEnt     = mailstore.Plan{Name: "enterprise", QuotaMB: 5120, RetentionDays: 90, TransferMonthlyMB: 51200}
)

// ctlHash stands for an argon2id hash: the store keeps it opaque.
const (
	ctlHash  = "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g"
	ctlHash2 = "$argon2id$v=19$m=19456,t=2,p=1$b3RoZXJzYWx0b3RoZXI$b3RoZXJoYXNob3RoZXJoYXNob3RoZXJoYXNob3RoZXI"
)

// ctl is one test's store with helpers that fail the test on error.
type ctl struct {
	t   *testing.T
	s   mailstore.Store
	ctx context.Context
}

func newCtl(t *testing.T, open Open) *ctl {
	t.Helper()
	s := open(t)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close() = %v, want nil", err)
		}
	})
	return &ctl{t: t, s: s, ctx: context.Background()}
}

func (c *ctl) partner(name string) mailstore.Partner {
	c.t.Helper()
	p, err := c.s.CreatePartner(c.ctx, name, ctlNow)
	if err != nil {
		c.t.Fatalf("CreatePartner(%q) = %v, want nil", name, err)
	}
	return p
}

func (c *ctl) domain(pid int64, name string, plan mailstore.Plan, maxMailboxes, maxAliases int64) mailstore.Domain {
	c.t.Helper()
	d, err := c.s.CreateDomain(c.ctx, pid, mailstore.NewDomain{Name: name, Plan: plan, MaxMailboxes: maxMailboxes, MaxAliases: maxAliases}, ctlNow)
	if err != nil {
		c.t.Fatalf("CreateDomain(%d, %q) = %v, want nil", pid, name, err)
	}
	return d
}

func (c *ctl) mailbox(pid int64, domain, email string) mailstore.Mailbox {
	c.t.Helper()
	m, err := c.s.CreateMailbox(c.ctx, pid, domain, email, ctlHash, ctlNow)
	if err != nil {
		c.t.Fatalf("CreateMailbox(%d, %q, %q) = %v, want nil", pid, domain, email, err)
	}
	return m
}

func (c *ctl) alias(pid int64, domain, source, dest string) mailstore.Alias {
	c.t.Helper()
	a, err := c.s.CreateAlias(c.ctx, pid, domain, source, dest, ctlNow)
	if err != nil {
		c.t.Fatalf("CreateAlias(%d, %q, %q, %q) = %v, want nil", pid, domain, source, dest, err)
	}
	return a
}

func (c *ctl) getDomain(pid int64, name string) mailstore.Domain {
	c.t.Helper()
	d, err := c.s.Domain(c.ctx, pid, name)
	if err != nil {
		c.t.Fatalf("Domain(%d, %q) = %v, want nil", pid, name, err)
	}
	return d
}

func (c *ctl) getMailbox(pid int64, email string) mailstore.Mailbox {
	c.t.Helper()
	m, err := c.s.Mailbox(c.ctx, pid, email)
	if err != nil {
		c.t.Fatalf("Mailbox(%d, %q) = %v, want nil", pid, email, err)
	}
	return m
}

func (c *ctl) mailboxes(pid, domainID int64, p mailstore.Page) ([]mailstore.MailboxEntry, int) {
	c.t.Helper()
	ms, n, err := c.s.Mailboxes(c.ctx, pid, domainID, p)
	if err != nil {
		c.t.Fatalf("Mailboxes(%d, %d, %+v) = %v, want nil", pid, domainID, p, err)
	}
	return ms, n
}

func (c *ctl) aliases(pid, domainID int64, p mailstore.Page) ([]mailstore.Alias, int) {
	c.t.Helper()
	as, n, err := c.s.Aliases(c.ctx, pid, domainID, p)
	if err != nil {
		c.t.Fatalf("Aliases(%d, %d, %+v) = %v, want nil", pid, domainID, p, err)
	}
	return as, n
}

// counts checks a domain's mailbox and alias counters and what its lists
// hold.
func (c *ctl) counts(pid int64, name string, mailboxes, aliases int64) {
	c.t.Helper()
	d := c.getDomain(pid, name)
	if d.MailboxCount != mailboxes || d.AliasCount != aliases {
		c.t.Errorf("Domain(%q) counts = %d mailboxes, %d aliases, want %d, %d", name, d.MailboxCount, d.AliasCount, mailboxes, aliases)
	}
	if _, n := c.mailboxes(pid, d.ID, mailstore.Page{}); int64(n) != mailboxes {
		c.t.Errorf("Mailboxes(%q) total = %d, want %d", name, n, mailboxes)
	}
	if _, n := c.aliases(pid, d.ID, mailstore.Page{}); int64(n) != aliases {
		c.t.Errorf("Aliases(%q) total = %d, want %d", name, n, aliases)
	}
	u, err := c.s.DomainUsage(c.ctx, pid, name, "2026-11")
	if err != nil {
		c.t.Fatalf("DomainUsage(%q) = %v, want nil", name, err)
	}
	if u.Domain.MailboxCount != mailboxes || u.Domain.AliasCount != aliases {
		c.t.Errorf("DomainUsage(%q) counts = %d, %d, want %d, %d", name, u.Domain.MailboxCount, u.Domain.AliasCount, mailboxes, aliases)
	}
}

// ctlIs checks err against want; a not-found sentinel must also match
// mailstore.ErrNotFound.
func ctlIs(err, want error) bool {
	if want == nil {
		return err == nil
	}
	if !errors.Is(err, want) {
		return false
	}
	if isNotFound(want) && !errors.Is(err, mailstore.ErrNotFound) {
		return false
	}
	return true
}

func isNotFound(err error) bool {
	for _, nf := range []error{mailstore.ErrPartnerNotFound, mailstore.ErrKeyNotFound, mailstore.ErrDomainNotFound, mailstore.ErrMailboxNotFound, mailstore.ErrAliasNotFound} {
		if err == nf {
			return true
		}
	}
	return false
}

// ctlJSON renders v for comparisons: times in UTC compare by instant.
func ctlJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("json.Marshal(%T) = %v", v, err)
	}
	return string(b)
}

func checkUTC(t *testing.T, what string, got time.Time, want time.Time) {
	t.Helper()
	if !got.Equal(want) || got.Location() != time.UTC {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func ctlPartners(t *testing.T, open Open) {
	c := newCtl(t, open)
	if ps, err := c.s.Partners(c.ctx); err != nil || len(ps) != 0 {
		t.Errorf("Partners() on an empty store = %v, %v, want [], nil", ps, err)
	}
	acme := c.partner("acme")
	globex := c.partner("globex")
	if acme.ID == 0 || globex.ID == 0 || acme.ID == globex.ID {
		t.Errorf("CreatePartner ids = %d, %d, want distinct non-zero", acme.ID, globex.ID)
	}
	if acme.Name != "acme" {
		t.Errorf("CreatePartner(acme).Name = %q, want acme", acme.Name)
	}
	checkUTC(t, "CreatePartner(acme).CreatedAt", acme.CreatedAt, ctlNowUTC)

	for _, tc := range []struct {
		name, in string
		err      error
	}{
		{"taken", "acme", mailstore.ErrPartnerExists},
		{"empty", "", mailstore.ErrInvalidArgument},
		{"number", "42", mailstore.ErrInvalidArgument},
		{"other partner's id", fmt.Sprint(globex.ID), mailstore.ErrInvalidArgument},
	} {
		t.Run("create "+tc.name, func(t *testing.T) {
			if _, err := c.s.CreatePartner(c.ctx, tc.in, ctlNow); !ctlIs(err, tc.err) {
				t.Errorf("CreatePartner(%q) = %v, want %v", tc.in, err, tc.err)
			}
		})
	}
	ps, err := c.s.Partners(c.ctx)
	if err != nil || len(ps) != 2 || ps[0].ID != acme.ID || ps[1].ID != globex.ID {
		t.Errorf("Partners() = %+v, %v, want acme, globex", ps, err)
	}

	for _, tc := range []struct {
		name, in string
		want     int64
		err      error
	}{
		{"by name", "globex", globex.ID, nil},
		{"by id", fmt.Sprint(acme.ID), acme.ID, nil},
		{"unknown name", "initech", 0, mailstore.ErrPartnerNotFound},
		{"unknown id", "999", 0, mailstore.ErrPartnerNotFound},
		{"case differs", "ACME", 0, mailstore.ErrPartnerNotFound},
		{"empty", "", 0, mailstore.ErrPartnerNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := c.s.PartnerByName(c.ctx, tc.in)
			if !ctlIs(err, tc.err) {
				t.Fatalf("PartnerByName(%q) = %v, want %v", tc.in, err, tc.err)
			}
			// The error is the bare sentinel on every store: the CLI
			// (service.storeOps) prefixes the partner's name itself, and
			// a store that did too printed it twice.
			if err != nil && err.Error() != tc.err.Error() {
				t.Errorf("PartnerByName(%q) error = %q, want %q", tc.in, err, tc.err)
			}
			if err == nil && (p.ID != tc.want || p.Name == "") {
				t.Errorf("PartnerByName(%q) = %+v, want id %d", tc.in, p, tc.want)
			}
		})
	}
}

func ctlAPIKeys(t *testing.T, open Open) {
	c := newCtl(t, open)
	a := c.partner("a")
	b := c.partner("b")
	add := func(pid int64, lookup string) mailstore.APIKey {
		t.Helper()
		k, err := c.s.AddAPIKey(c.ctx, pid, mailstore.APIKey{
			PartnerID: 4242, // the store sets it
			Lookup:    lookup, Prefix: "mhk_" + lookup,
			SecretHash: []byte("hash-of-" + lookup), CreatedAt: ctlNow,
		})
		if err != nil {
			t.Fatalf("AddAPIKey(%d, %q) = %v, want nil", pid, lookup, err)
		}
		return k
	}
	k1 := add(a.ID, "aaaaaaaaaaa1")
	k2 := add(a.ID, "aaaaaaaaaaa2")
	k3 := add(b.ID, "bbbbbbbbbbb1")
	if k1.ID == 0 || k1.ID == k2.ID || k2.ID == k3.ID || k1.ID == k3.ID {
		t.Errorf("AddAPIKey ids = %d, %d, %d, want distinct non-zero", k1.ID, k2.ID, k3.ID)
	}
	if k1.PartnerID != a.ID || k3.PartnerID != b.ID {
		t.Errorf("AddAPIKey PartnerIDs = %d, %d, want %d, %d", k1.PartnerID, k3.PartnerID, a.ID, b.ID)
	}
	checkUTC(t, "AddAPIKey().CreatedAt", k1.CreatedAt, ctlNowUTC)
	if k1.Revoked {
		t.Errorf("AddAPIKey().Revoked = true, want false")
	}

	if _, err := c.s.AddAPIKey(c.ctx, 999, mailstore.APIKey{Lookup: "ccccccccccc1", Prefix: "mhk_ccccccccccc1", CreatedAt: ctlNow}); !ctlIs(err, mailstore.ErrPartnerNotFound) {
		t.Errorf("AddAPIKey(999) = %v, want ErrPartnerNotFound", err)
	}

	t.Run("list", func(t *testing.T) {
		ks, err := c.s.APIKeys(c.ctx, a.ID)
		if err != nil || len(ks) != 2 || ks[0].ID != k1.ID || ks[1].ID != k2.ID {
			t.Fatalf("APIKeys(a) = %+v, %v, want k1, k2", ks, err)
		}
		if ks[0].Prefix != "mhk_aaaaaaaaaaa1" || string(ks[0].SecretHash) != "hash-of-aaaaaaaaaaa1" {
			t.Errorf("APIKeys(a)[0] = %+v, want prefix and hash as added", ks[0])
		}
		ks, err = c.s.APIKeys(c.ctx, b.ID)
		if err != nil || len(ks) != 1 || ks[0].ID != k3.ID {
			t.Errorf("APIKeys(b) = %+v, %v, want k3", ks, err)
		}
		if _, err := c.s.APIKeys(c.ctx, 999); !ctlIs(err, mailstore.ErrPartnerNotFound) {
			t.Errorf("APIKeys(999) = %v, want ErrPartnerNotFound", err)
		}
	})

	t.Run("lookup", func(t *testing.T) {
		for _, tc := range []struct {
			name, lookup string
			want         int64
			err          error
		}{
			{"first", "aaaaaaaaaaa1", k1.ID, nil},
			{"other partner", "bbbbbbbbbbb1", k3.ID, nil},
			{"unknown", "ffffffffffff", 0, mailstore.ErrKeyNotFound},
			{"prefix is not lookup", "mhk_aaaaaaaaaaa1", 0, mailstore.ErrKeyNotFound},
			{"empty", "", 0, mailstore.ErrKeyNotFound},
		} {
			t.Run(tc.name, func(t *testing.T) {
				k, err := c.s.APIKeyByLookup(c.ctx, tc.lookup)
				if !ctlIs(err, tc.err) {
					t.Fatalf("APIKeyByLookup(%q) = %v, want %v", tc.lookup, err, tc.err)
				}
				if err == nil && (k.ID != tc.want || k.Lookup != tc.lookup || len(k.SecretHash) == 0) {
					t.Errorf("APIKeyByLookup(%q) = %+v, want id %d", tc.lookup, k, tc.want)
				}
			})
		}
	})

	t.Run("revoke", func(t *testing.T) {
		r, err := c.s.RevokeAPIKey(c.ctx, k1.ID, ctlNow)
		if err != nil || !r.Revoked || r.ID != k1.ID {
			t.Fatalf("RevokeAPIKey(k1) = %+v, %v, want revoked", r, err)
		}
		checkUTC(t, "RevokeAPIKey(k1).RevokedAt", r.RevokedAt, ctlNowUTC)
		// Repeating is harmless and keeps the first revocation time.
		r, err = c.s.RevokeAPIKey(c.ctx, k1.ID, ctlLater)
		if err != nil || !r.Revoked {
			t.Fatalf("RevokeAPIKey(k1) again = %+v, %v, want revoked, nil", r, err)
		}
		checkUTC(t, "RevokeAPIKey(k1) again .RevokedAt", r.RevokedAt, ctlNowUTC)
		if k, err := c.s.APIKeyByLookup(c.ctx, k1.Lookup); err != nil || !k.Revoked {
			t.Errorf("APIKeyByLookup(revoked) = %+v, %v, want the key, revoked", k, err)
		}
		if k, err := c.s.APIKeyByLookup(c.ctx, k2.Lookup); err != nil || k.Revoked {
			t.Errorf("APIKeyByLookup(k2) = %+v, %v, want not revoked", k, err)
		}
		ks, err := c.s.APIKeys(c.ctx, a.ID)
		if err != nil || len(ks) != 2 || !ks[0].Revoked || ks[1].Revoked {
			t.Errorf("APIKeys(a) after revoke = %+v, %v, want k1 revoked, k2 not", ks, err)
		}
		if _, err := c.s.RevokeAPIKey(c.ctx, 999, ctlNow); !ctlIs(err, mailstore.ErrKeyNotFound) {
			t.Errorf("RevokeAPIKey(999) = %v, want ErrKeyNotFound", err)
		}
	})

	t.Run("lookup taken", func(t *testing.T) {
		_, err := c.s.AddAPIKey(c.ctx, b.ID, mailstore.APIKey{Lookup: "aaaaaaaaaaa2", Prefix: "mhk_aaaaaaaaaaa2", CreatedAt: ctlNow})
		if err == nil {
			t.Fatalf("AddAPIKey(b, taken lookup) = nil, want an error")
		}
		if k, err := c.s.APIKeyByLookup(c.ctx, "aaaaaaaaaaa2"); err != nil || k.ID != k2.ID || k.PartnerID != a.ID {
			t.Errorf("APIKeyByLookup(taken) = %+v, %v, want k2 of a", k, err)
		}
	})
}
