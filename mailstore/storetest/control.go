package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
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
	t.Run("limits", func(t *testing.T) { ctlLimits(t, open) })
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

func ctlDomains(t *testing.T, open Open) {
	c := newCtl(t, open)
	a := c.partner("a")
	b := c.partner("b")
	d := c.domain(a.ID, "example.com", ctlBiz, 10, 20)
	want := mailstore.Domain{
		ID: d.ID, PartnerID: a.ID, Name: "example.com", Plan: "business",
		MaxMailboxes: 10, MaxAliases: 20, QuotaMB: 2048, RetentionDays: 60,
		TransferMonthlyMB: 10240, CreatedAt: ctlNowUTC,
	}
	if d.ID == 0 || ctlJSON(t, d) != ctlJSON(t, want) {
		t.Errorf("CreateDomain(example.com) = %+v, want %+v", d, want)
	}
	checkUTC(t, "CreateDomain().CreatedAt", d.CreatedAt, ctlNowUTC)
	d2 := c.domain(a.ID, "xn--bcher-kva.example", ctlStarter, 0, 0)
	db := c.domain(b.ID, "b.example", ctlStarter, 0, 0)

	for _, tc := range []struct {
		name string
		pid  int64
		in   string
		err  error
	}{
		{"same partner", a.ID, "example.com", mailstore.ErrDomainExists},
		// Another partner's unverified claim does not block (claims.go).
		{"other partner", b.ID, "example.com", nil},
		{"unknown partner", 999, "new.example", mailstore.ErrPartnerNotFound},
	} {
		t.Run("create "+tc.name, func(t *testing.T) {
			_, err := c.s.CreateDomain(c.ctx, tc.pid, mailstore.NewDomain{Name: tc.in, Plan: ctlStarter}, ctlNow)
			if !ctlIs(err, tc.err) {
				t.Errorf("CreateDomain(%d, %q) = %v, want %v", tc.pid, tc.in, err, tc.err)
			}
		})
	}
	if got := c.getDomain(a.ID, "example.com"); ctlJSON(t, got) != ctlJSON(t, want) {
		t.Errorf("Domain(example.com) after refused creates = %+v, want %+v", got, want)
	}

	for _, tc := range []struct {
		name string
		pid  int64
		in   string
		want int64
		err  error
	}{
		{"own", a.ID, "example.com", d.ID, nil},
		{"own idn", a.ID, "xn--bcher-kva.example", d2.ID, nil},
		{"unknown", a.ID, "nowhere.example", 0, mailstore.ErrDomainNotFound},
		{"other partner's", a.ID, "b.example", 0, mailstore.ErrDomainNotFound},
		{"unknown partner", 999, "example.com", 0, mailstore.ErrDomainNotFound},
		{"empty", a.ID, "", 0, mailstore.ErrDomainNotFound},
	} {
		t.Run("by name "+tc.name, func(t *testing.T) {
			got, err := c.s.Domain(c.ctx, tc.pid, tc.in)
			if !ctlIs(err, tc.err) {
				t.Fatalf("Domain(%d, %q) = %v, want %v", tc.pid, tc.in, err, tc.err)
			}
			if err == nil && (got.ID != tc.want || got.Name != tc.in) {
				t.Errorf("Domain(%d, %q) = %+v, want id %d", tc.pid, tc.in, got, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		name string
		pid  int64
		in   int64
		err  error
	}{
		{"own", a.ID, d.ID, nil},
		{"own second", a.ID, d2.ID, nil},
		{"unknown", a.ID, 999, mailstore.ErrDomainNotFound},
		{"zero", a.ID, 0, mailstore.ErrDomainNotFound},
		{"other partner's", a.ID, db.ID, mailstore.ErrDomainNotFound},
	} {
		t.Run("by id "+tc.name, func(t *testing.T) {
			got, err := c.s.DomainByID(c.ctx, tc.pid, tc.in)
			if !ctlIs(err, tc.err) {
				t.Fatalf("DomainByID(%d, %d) = %v, want %v", tc.pid, tc.in, err, tc.err)
			}
			if err == nil && got.ID != tc.in {
				t.Errorf("DomainByID(%d, %d) = %+v, want id %d", tc.pid, tc.in, got, tc.in)
			}
		})
	}

	ds, n, err := c.s.Domains(c.ctx, a.ID, mailstore.Page{})
	if err != nil || n != 2 || len(ds) != 2 || ds[0].ID != d.ID || ds[1].ID != d2.ID {
		t.Errorf("Domains(a) = %+v, %d, %v, want example.com, xn--bcher-kva.example, 2", ds, n, err)
	}
	ds, n, err = c.s.Domains(c.ctx, 999, mailstore.Page{})
	if err != nil || n != 0 || len(ds) != 0 {
		t.Errorf("Domains(999) = %+v, %d, %v, want none", ds, n, err)
	}

	t.Run("usage", func(t *testing.T) {
		u, err := c.s.DomainUsage(c.ctx, a.ID, "example.com", "2026-11")
		if err != nil {
			t.Fatalf("DomainUsage(example.com) = %v, want nil", err)
		}
		if u.Domain.ID != d.ID || u.Transfer.Month != "2026-11" || u.Transfer.InBytes != 0 || u.Transfer.OutBytes != 0 {
			t.Errorf("DomainUsage(example.com) = %+v, want domain %d, month 2026-11, no transfer", u, d.ID)
		}
		if _, err := c.s.DomainUsage(c.ctx, a.ID, "nowhere.example", "2026-11"); !ctlIs(err, mailstore.ErrDomainNotFound) {
			t.Errorf("DomainUsage(nowhere.example) = %v, want ErrDomainNotFound", err)
		}
	})
}

func ctlDomainPaging(t *testing.T, open Open) {
	c := newCtl(t, open)
	a := c.partner("a")
	other := c.partner("other")
	var ids []int64
	for i := range 5 {
		ids = append(ids, c.domain(a.ID, fmt.Sprintf("d%d.example", i), ctlStarter, 0, 0).ID)
		c.domain(other.ID, fmt.Sprintf("o%d.example", i), ctlStarter, 0, 0)
	}
	for _, tc := range ctlPages(5) {
		t.Run(tc.name, func(t *testing.T) {
			ds, n, err := c.s.Domains(c.ctx, a.ID, tc.page)
			if err != nil {
				t.Fatalf("Domains(%+v) = %v, want nil", tc.page, err)
			}
			var got []int64
			for _, d := range ds {
				got = append(got, d.ID)
			}
			if want := ctlSlice(ids, tc.from, tc.to); n != 5 || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("Domains(%+v) = %v, %d, want %v, 5", tc.page, got, n, want)
			}
		})
	}
}

type ctlPage struct {
	name     string
	page     mailstore.Page
	from, to int // the expected slice of all items
}

// ctlPages are the paging cases for a list of n (>= 5) items.
func ctlPages(n int) []ctlPage {
	return []ctlPage{
		{"all", mailstore.Page{}, 0, n},
		{"limit 2", mailstore.Page{Limit: 2}, 0, 2},
		{"limit 2 offset 2", mailstore.Page{Limit: 2, Offset: 2}, 2, 4},
		{"limit 2 offset n-1", mailstore.Page{Limit: 2, Offset: n - 1}, n - 1, n},
		{"offset 3", mailstore.Page{Offset: 3}, 3, n},
		{"limit n", mailstore.Page{Limit: n}, 0, n},
		{"limit past end", mailstore.Page{Limit: n + 10}, 0, n},
		{"offset past end", mailstore.Page{Limit: 2, Offset: n + 10}, n, n},
		{"offset at end", mailstore.Page{Offset: n}, n, n},
	}
}

func ctlSlice(ids []int64, from, to int) []int64 {
	if from == to {
		return nil
	}
	return ids[from:to]
}

func ctlDomainSettings(t *testing.T, open Open) {
	c := newCtl(t, open)
	a := c.partner("a")
	d := c.domain(a.ID, "example.com", ctlStarter, 5, 7)
	i64 := func(v int64) *int64 { return &v }

	for _, tc := range []struct {
		name   string
		do     func() (mailstore.Domain, error)
		change func(d *mailstore.Domain)
	}{
		{"limits none", func() (mailstore.Domain, error) {
			return c.s.SetDomainLimits(c.ctx, a.ID, "example.com", mailstore.DomainLimits{})
		}, func(d *mailstore.Domain) {}},
		{"limits mailboxes", func() (mailstore.Domain, error) {
			return c.s.SetDomainLimits(c.ctx, a.ID, "example.com", mailstore.DomainLimits{MaxMailboxes: i64(50)})
		}, func(d *mailstore.Domain) { d.MaxMailboxes = 50 }},
		{"limits aliases", func() (mailstore.Domain, error) {
			return c.s.SetDomainLimits(c.ctx, a.ID, "example.com", mailstore.DomainLimits{MaxAliases: i64(70)})
		}, func(d *mailstore.Domain) { d.MaxAliases = 70 }},
		{"limits both to unlimited", func() (mailstore.Domain, error) {
			return c.s.SetDomainLimits(c.ctx, a.ID, "example.com", mailstore.DomainLimits{MaxMailboxes: i64(0), MaxAliases: i64(0)})
		}, func(d *mailstore.Domain) { d.MaxMailboxes, d.MaxAliases = 0, 0 }},
		{"retention", func() (mailstore.Domain, error) {
			return c.s.SetRetention(c.ctx, a.ID, "example.com", 365)
		}, func(d *mailstore.Domain) { d.RetentionDays = 365 }},
		{"retention repeated", func() (mailstore.Domain, error) {
			return c.s.SetRetention(c.ctx, a.ID, "example.com", 365)
		}, func(d *mailstore.Domain) {}},
		{"transfer", func() (mailstore.Domain, error) {
			return c.s.SetTransferCap(c.ctx, a.ID, "example.com", 777)
		}, func(d *mailstore.Domain) { d.TransferMonthlyMB = 777 }},
		{"suspend", func() (mailstore.Domain, error) {
			return c.s.SetSuspended(c.ctx, a.ID, "example.com", true)
		}, func(d *mailstore.Domain) { d.Suspended = true }},
		{"suspend repeated", func() (mailstore.Domain, error) {
			return c.s.SetSuspended(c.ctx, a.ID, "example.com", true)
		}, func(d *mailstore.Domain) {}},
		{"resume", func() (mailstore.Domain, error) {
			return c.s.SetSuspended(c.ctx, a.ID, "example.com", false)
		}, func(d *mailstore.Domain) { d.Suspended = false }},
		{"resume repeated", func() (mailstore.Domain, error) {
			return c.s.SetSuspended(c.ctx, a.ID, "example.com", false)
		}, func(d *mailstore.Domain) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.change(&d)
			got, err := tc.do()
			if err != nil {
				t.Fatalf("%s = %v, want nil", tc.name, err)
			}
			if ctlJSON(t, got) != ctlJSON(t, d) {
				t.Errorf("%s = %+v, want %+v", tc.name, got, d)
			}
			if got := c.getDomain(a.ID, "example.com"); ctlJSON(t, got) != ctlJSON(t, d) {
				t.Errorf("Domain() after %s = %+v, want %+v", tc.name, got, d)
			}
		})
	}

	for _, tc := range []struct {
		name string
		do   func() (mailstore.Domain, error)
	}{
		{"SetDomainLimits", func() (mailstore.Domain, error) {
			return c.s.SetDomainLimits(c.ctx, a.ID, "nowhere.example", mailstore.DomainLimits{MaxMailboxes: i64(1)})
		}},
		{"SetRetention", func() (mailstore.Domain, error) { return c.s.SetRetention(c.ctx, a.ID, "nowhere.example", 1) }},
		{"SetTransferCap", func() (mailstore.Domain, error) { return c.s.SetTransferCap(c.ctx, a.ID, "nowhere.example", 1) }},
		{"SetSuspended", func() (mailstore.Domain, error) { return c.s.SetSuspended(c.ctx, a.ID, "nowhere.example", true) }},
		{"ApplyPlan", func() (mailstore.Domain, error) { return c.s.ApplyPlan(c.ctx, a.ID, "nowhere.example", ctlEnt) }},
	} {
		t.Run(tc.name+" unknown", func(t *testing.T) {
			if _, err := tc.do(); !ctlIs(err, mailstore.ErrDomainNotFound) {
				t.Errorf("%s(nowhere.example) = %v, want ErrDomainNotFound", tc.name, err)
			}
		})
	}
}

func ctlApplyPlan(t *testing.T, open Open) {
	c := newCtl(t, open)
	a := c.partner("a")
	b := c.partner("b")
	c.domain(a.ID, "target.example", ctlStarter, 0, 0)
	c.domain(a.ID, "sibling.example", ctlStarter, 0, 0)
	c.domain(b.ID, "other.example", ctlStarter, 0, 0)
	var target, untouched []string
	for i := range 3 {
		target = append(target, c.mailbox(a.ID, "target.example", fmt.Sprintf("u%d@target.example", i)).Email)
		untouched = append(untouched, c.mailbox(a.ID, "sibling.example", fmt.Sprintf("u%d@sibling.example", i)).Email)
	}
	untouchedB := c.mailbox(b.ID, "other.example", "u0@other.example").Email
	// A mailbox with its own quota gets the plan's too.
	if _, err := c.s.SetQuota(c.ctx, a.ID, target[1], 7); err != nil {
		t.Fatalf("SetQuota(%s, 7) = %v, want nil", target[1], err)
	}
	c.alias(a.ID, "target.example", "info@target.example", target[0])

	for _, tc := range []struct {
		name string
		plan mailstore.Plan
	}{
		{"up", ctlEnt},
		{"repeated", ctlEnt},
		{"down", ctlBiz},
		{"custom", mailstore.Plan{Name: "tiny", QuotaMB: 1, RetentionDays: 1, TransferMonthlyMB: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := c.getDomain(a.ID, "target.example")
			d, err := c.s.ApplyPlan(c.ctx, a.ID, "target.example", tc.plan)
			if err != nil {
				t.Fatalf("ApplyPlan(target.example, %s) = %v, want nil", tc.plan.Name, err)
			}
			want := before
			want.Plan, want.QuotaMB, want.RetentionDays, want.TransferMonthlyMB = tc.plan.Name, tc.plan.QuotaMB, tc.plan.RetentionDays, tc.plan.TransferMonthlyMB
			if ctlJSON(t, d) != ctlJSON(t, want) {
				t.Errorf("ApplyPlan(target.example, %s) = %+v, want %+v", tc.plan.Name, d, want)
			}
			if got := c.getDomain(a.ID, "target.example"); ctlJSON(t, got) != ctlJSON(t, want) {
				t.Errorf("Domain(target.example) after ApplyPlan(%s) = %+v, want %+v", tc.plan.Name, got, want)
			}
			for _, e := range target {
				if m := c.getMailbox(a.ID, e); m.QuotaMB != tc.plan.QuotaMB {
					t.Errorf("Mailbox(%s).QuotaMB after ApplyPlan(%s) = %d, want %d", e, tc.plan.Name, m.QuotaMB, tc.plan.QuotaMB)
				}
			}
			ms, _ := c.mailboxes(a.ID, d.ID, mailstore.Page{})
			for _, e := range ms {
				if m := c.getMailbox(a.ID, e.Email); m.QuotaMB != tc.plan.QuotaMB {
					t.Errorf("Mailboxes(target.example) %s QuotaMB = %d, want %d", m.Email, m.QuotaMB, tc.plan.QuotaMB)
				}
			}
			for _, e := range untouched {
				if m := c.getMailbox(a.ID, e); m.QuotaMB != ctlStarter.QuotaMB {
					t.Errorf("Mailbox(%s).QuotaMB of another domain = %d, want %d", e, m.QuotaMB, ctlStarter.QuotaMB)
				}
			}
			if m := c.getMailbox(b.ID, untouchedB); m.QuotaMB != ctlStarter.QuotaMB {
				t.Errorf("Mailbox(%s).QuotaMB of another partner = %d, want %d", untouchedB, m.QuotaMB, ctlStarter.QuotaMB)
			}
			if sib := c.getDomain(a.ID, "sibling.example"); sib.Plan != "starter" || sib.QuotaMB != ctlStarter.QuotaMB || sib.RetentionDays != 30 || sib.TransferMonthlyMB != 5120 {
				t.Errorf("Domain(sibling.example) = %+v, want starter values", sib)
			}
			// A mailbox made later gets the plan's quota too.
			e := "later-" + tc.name + "@target.example"
			if m := c.mailbox(a.ID, "target.example", e); m.QuotaMB != tc.plan.QuotaMB {
				t.Errorf("CreateMailbox(%s).QuotaMB after ApplyPlan(%s) = %d, want %d", e, tc.plan.Name, m.QuotaMB, tc.plan.QuotaMB)
			}
			target = append(target, e)
		})
	}
}

func ctlDeleteDomain(t *testing.T, open Open) {
	c := newCtl(t, open)
	a := c.partner("a")
	c.domain(a.ID, "empty.example", ctlStarter, 0, 0)
	c.domain(a.ID, "boxes.example", ctlStarter, 0, 0)
	c.domain(a.ID, "aliases.example", ctlStarter, 0, 0)
	c.domain(a.ID, "full.example", ctlStarter, 0, 0)
	keep := c.domain(a.ID, "keep.example", ctlStarter, 0, 0)
	c.mailbox(a.ID, "boxes.example", "u@boxes.example")
	c.alias(a.ID, "aliases.example", "@aliases.example", "u@keep.example")
	for i := range 3 {
		c.mailbox(a.ID, "full.example", fmt.Sprintf("u%d@full.example", i))
		c.alias(a.ID, "full.example", fmt.Sprintf("a%d@full.example", i), "u0@full.example")
	}
	c.alias(a.ID, "full.example", "@full.example", "u0@full.example")
	keepBox := c.mailbox(a.ID, "keep.example", "u@keep.example")
	keepAlias := c.alias(a.ID, "keep.example", "a@keep.example", "u@full.example")

	for _, tc := range []struct {
		name, domain string
		force        bool
		err          error
	}{
		{"mailbox not empty", "boxes.example", false, mailstore.ErrDomainNotEmpty},
		{"alias not empty", "aliases.example", false, mailstore.ErrDomainNotEmpty},
		{"full not empty", "full.example", false, mailstore.ErrDomainNotEmpty},
		{"unknown", "nowhere.example", false, mailstore.ErrDomainNotFound},
		{"unknown force", "nowhere.example", true, mailstore.ErrDomainNotFound},
		{"empty", "empty.example", false, nil},
		{"empty again", "empty.example", false, mailstore.ErrDomainNotFound},
		{"mailbox force", "boxes.example", true, nil},
		{"alias force", "aliases.example", true, nil},
		{"full force", "full.example", true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, beforeErr := c.s.Domain(c.ctx, a.ID, tc.domain)
			err := c.s.DeleteDomain(c.ctx, a.ID, tc.domain, tc.force)
			if !ctlIs(err, tc.err) {
				t.Fatalf("DeleteDomain(%q, force=%v) = %v, want %v", tc.domain, tc.force, err, tc.err)
			}
			after, afterErr := c.s.Domain(c.ctx, a.ID, tc.domain)
			if err != nil {
				if beforeErr == nil && (afterErr != nil || ctlJSON(t, after) != ctlJSON(t, before)) {
					t.Errorf("Domain(%q) after refused delete = %+v, %v, want %+v", tc.domain, after, afterErr, before)
				}
				return
			}
			if !ctlIs(afterErr, mailstore.ErrDomainNotFound) {
				t.Errorf("Domain(%q) after delete = %v, want ErrDomainNotFound", tc.domain, afterErr)
			}
			if _, err := c.s.DomainByID(c.ctx, a.ID, before.ID); !ctlIs(err, mailstore.ErrDomainNotFound) {
				t.Errorf("DomainByID(%d) after delete = %v, want ErrDomainNotFound", before.ID, err)
			}
			if _, _, err := c.s.Mailboxes(c.ctx, a.ID, before.ID, mailstore.Page{}); !ctlIs(err, mailstore.ErrDomainNotFound) {
				t.Errorf("Mailboxes(%d) after delete = %v, want ErrDomainNotFound", before.ID, err)
			}
			if _, _, err := c.s.Aliases(c.ctx, a.ID, before.ID, mailstore.Page{}); !ctlIs(err, mailstore.ErrDomainNotFound) {
				t.Errorf("Aliases(%d) after delete = %v, want ErrDomainNotFound", before.ID, err)
			}
			if _, err := c.s.DomainByName(c.ctx, tc.domain); !ctlIs(err, mailstore.ErrDomainNotFound) {
				t.Errorf("DomainByName(%q) after delete = %v, want ErrDomainNotFound", tc.domain, err)
			}
			if _, err := c.s.DomainWithID(c.ctx, before.ID); !ctlIs(err, mailstore.ErrDomainNotFound) {
				t.Errorf("DomainWithID(%d) after delete = %v, want ErrDomainNotFound", before.ID, err)
			}
		})
	}

	t.Run("forced delete freed addresses", func(t *testing.T) {
		for _, e := range []string{"u@boxes.example", "u0@full.example", "u2@full.example"} {
			if _, err := c.s.Mailbox(c.ctx, a.ID, e); !ctlIs(err, mailstore.ErrMailboxNotFound) {
				t.Errorf("Mailbox(%s) = %v, want ErrMailboxNotFound", e, err)
			}
			if _, _, err := c.s.MailboxByEmail(c.ctx, e); !ctlIs(err, mailstore.ErrMailboxNotFound) {
				t.Errorf("MailboxByEmail(%s) = %v, want ErrMailboxNotFound", e, err)
			}
		}
		for _, src := range []string{"@aliases.example", "a0@full.example", "@full.example"} {
			if _, err := c.s.AliasBySource(c.ctx, src); !ctlIs(err, mailstore.ErrAliasNotFound) {
				t.Errorf("AliasBySource(%s) = %v, want ErrAliasNotFound", src, err)
			}
			if err := c.s.DeleteAlias(c.ctx, a.ID, src); !ctlIs(err, mailstore.ErrAliasNotFound) {
				t.Errorf("DeleteAlias(%s) = %v, want ErrAliasNotFound", src, err)
			}
		}
		if ms, n := c.mailboxes(a.ID, 0, mailstore.Page{}); n != 1 || len(ms) != 1 || ms[0].ID != keepBox.ID {
			t.Errorf("Mailboxes(all) = %+v, %d, want only %s", ms, n, keepBox.Email)
		}
		if as, n := c.aliases(a.ID, 0, mailstore.Page{}); n != 1 || len(as) != 1 || as[0].ID != keepAlias.ID {
			t.Errorf("Aliases(all) = %+v, %d, want only %s", as, n, keepAlias.Source)
		}
		if ds, n, err := c.s.Domains(c.ctx, a.ID, mailstore.Page{}); err != nil || n != 1 || len(ds) != 1 || ds[0].ID != keep.ID {
			t.Errorf("Domains() = %+v, %d, %v, want only keep.example", ds, n, err)
		}
		c.counts(a.ID, "keep.example", 1, 1)
	})

	t.Run("name and addresses reusable", func(t *testing.T) {
		d := c.domain(a.ID, "full.example", ctlBiz, 0, 0)
		if d.MailboxCount != 0 || d.AliasCount != 0 || d.MessageCount != 0 || d.UsedBytes != 0 {
			t.Errorf("CreateDomain(full.example) again = %+v, want zero counters", d)
		}
		c.mailbox(a.ID, "full.example", "u0@full.example")
		c.mailbox(a.ID, "full.example", "a0@full.example") // an alias source before
		c.alias(a.ID, "full.example", "@full.example", "u0@full.example")
		c.counts(a.ID, "full.example", 2, 1)
		b := c.partner("b")
		c.domain(b.ID, "empty.example", ctlStarter, 0, 0)
	})
}

func ctlMailboxes(t *testing.T, open Open) {
	c := newCtl(t, open)
	a := c.partner("a")
	d := c.domain(a.ID, "example.com", ctlBiz, 0, 0)
	m := c.mailbox(a.ID, "example.com", "john.doe@example.com")
	want := mailstore.Mailbox{
		ID: m.ID, DomainID: d.ID, PartnerID: a.ID, Email: "john.doe@example.com",
		PasswordHash: ctlHash, QuotaMB: 2048, CreatedAt: ctlNowUTC, PasswordChangedAt: ctlNowUTC,
	}
	if m.ID == 0 || ctlJSON(t, m) != ctlJSON(t, want) {
		t.Errorf("CreateMailbox(john.doe@example.com) = %+v, want %+v", m, want)
	}
	checkUTC(t, "CreateMailbox().CreatedAt", m.CreatedAt, ctlNowUTC)
	if got := c.getMailbox(a.ID, m.Email); ctlJSON(t, got) != ctlJSON(t, want) {
		t.Errorf("Mailbox(%s) = %+v, want %+v", m.Email, got, want)
	}
	if got, gd, err := c.s.MailboxByEmail(c.ctx, m.Email); err != nil || got.ID != m.ID || gd.ID != d.ID {
		t.Errorf("MailboxByEmail(%s) = %+v, %+v, %v, want mailbox %d of domain %d", m.Email, got, gd, err, m.ID, d.ID)
	}
	m2 := c.mailbox(a.ID, "example.com", "jane@example.com")
	if m2.ID == m.ID {
		t.Errorf("CreateMailbox ids = %d, %d, want distinct", m.ID, m2.ID)
	}

	t.Run("set password", func(t *testing.T) {
		got, err := c.s.SetPassword(c.ctx, a.ID, m.Email, ctlHash2, ctlLater)
		if err != nil || got.PasswordHash != ctlHash2 {
			t.Fatalf("SetPassword(%s) = %+v, %v, want new hash", m.Email, got, err)
		}
		checkUTC(t, "SetPassword().PasswordChangedAt", got.PasswordChangedAt, ctlLater.UTC().Truncate(time.Second))
		stored := c.getMailbox(a.ID, m.Email)
		if stored.PasswordHash != ctlHash2 || !stored.PasswordChangedAt.Equal(got.PasswordChangedAt) || !stored.CreatedAt.Equal(ctlNowUTC) {
			t.Errorf("Mailbox(%s) after SetPassword = %+v, want new hash and change time", m.Email, stored)
		}
		if other := c.getMailbox(a.ID, m2.Email); other.PasswordHash != ctlHash {
			t.Errorf("Mailbox(%s).PasswordHash = %q, want unchanged", m2.Email, other.PasswordHash)
		}
	})

	t.Run("set quota", func(t *testing.T) {
		for _, mb := range []int64{1, 4096, 4096, 1 << 20} {
			got, err := c.s.SetQuota(c.ctx, a.ID, m.Email, mb)
			if err != nil || got.QuotaMB != mb {
				t.Fatalf("SetQuota(%s, %d) = %+v, %v, want quota %d", m.Email, mb, got, err, mb)
			}
			if stored := c.getMailbox(a.ID, m.Email); stored.QuotaMB != mb || stored.QuotaBytes() != mb*mailstore.MB {
				t.Errorf("Mailbox(%s).QuotaMB after SetQuota(%d) = %d, want %d", m.Email, mb, stored.QuotaMB, mb)
			}
		}
		if other := c.getMailbox(a.ID, m2.Email); other.QuotaMB != 2048 {
			t.Errorf("Mailbox(%s).QuotaMB = %d, want 2048 (unchanged)", m2.Email, other.QuotaMB)
		}
		if dd := c.getDomain(a.ID, "example.com"); dd.QuotaMB != 2048 {
			t.Errorf("Domain(example.com).QuotaMB after SetQuota = %d, want 2048", dd.QuotaMB)
		}
	})

	t.Run("unknown", func(t *testing.T) {
		const e = "nobody@example.com"
		if _, err := c.s.Mailbox(c.ctx, a.ID, e); !ctlIs(err, mailstore.ErrMailboxNotFound) {
			t.Errorf("Mailbox(%s) = %v, want ErrMailboxNotFound", e, err)
		}
		if _, err := c.s.SetPassword(c.ctx, a.ID, e, ctlHash, ctlNow); !ctlIs(err, mailstore.ErrMailboxNotFound) {
			t.Errorf("SetPassword(%s) = %v, want ErrMailboxNotFound", e, err)
		}
		if _, err := c.s.SetQuota(c.ctx, a.ID, e, 5); !ctlIs(err, mailstore.ErrMailboxNotFound) {
			t.Errorf("SetQuota(%s) = %v, want ErrMailboxNotFound", e, err)
		}
		if err := c.s.DeleteMailbox(c.ctx, a.ID, e); !ctlIs(err, mailstore.ErrMailboxNotFound) {
			t.Errorf("DeleteMailbox(%s) = %v, want ErrMailboxNotFound", e, err)
		}
		if _, _, err := c.s.MailboxByEmail(c.ctx, e); !ctlIs(err, mailstore.ErrMailboxNotFound) {
			t.Errorf("MailboxByEmail(%s) = %v, want ErrMailboxNotFound", e, err)
		}
	})

	t.Run("delete", func(t *testing.T) {
		if err := c.s.DeleteMailbox(c.ctx, a.ID, m.Email); err != nil {
			t.Fatalf("DeleteMailbox(%s) = %v, want nil", m.Email, err)
		}
		if _, err := c.s.Mailbox(c.ctx, a.ID, m.Email); !ctlIs(err, mailstore.ErrMailboxNotFound) {
			t.Errorf("Mailbox(%s) after delete = %v, want ErrMailboxNotFound", m.Email, err)
		}
		if err := c.s.DeleteMailbox(c.ctx, a.ID, m.Email); !ctlIs(err, mailstore.ErrMailboxNotFound) {
			t.Errorf("DeleteMailbox(%s) again = %v, want ErrMailboxNotFound", m.Email, err)
		}
		if ms, n := c.mailboxes(a.ID, d.ID, mailstore.Page{}); n != 1 || len(ms) != 1 || ms[0].ID != m2.ID {
			t.Errorf("Mailboxes(example.com) after delete = %+v, %d, want only %s", ms, n, m2.Email)
		}
		c.counts(a.ID, "example.com", 1, 0)
		// The address is free again, as a mailbox or an alias source, and a
		// new mailbox there is a new account.
		again := c.mailbox(a.ID, "example.com", m.Email)
		if again.ID == m.ID || again.QuotaMB != 2048 || again.PasswordHash != ctlHash {
			t.Errorf("CreateMailbox(%s) again = %+v, want a new id, the domain quota and the new hash", m.Email, again)
		}
		if err := c.s.DeleteMailbox(c.ctx, a.ID, m.Email); err != nil {
			t.Fatalf("DeleteMailbox(%s) = %v, want nil", m.Email, err)
		}
		c.alias(a.ID, "example.com", m.Email, m2.Email)
		c.counts(a.ID, "example.com", 1, 1)
	})
}

func ctlMailboxErrors(t *testing.T, open Open) {
	c := newCtl(t, open)
	a := c.partner("a")
	b := c.partner("b")
	c.domain(a.ID, "example.com", ctlStarter, 0, 0)
	c.domain(a.ID, "example.org", ctlStarter, 0, 0)
	c.domain(a.ID, "sub.example.com", ctlStarter, 0, 0)
	c.domain(b.ID, "b.example", ctlStarter, 0, 0)
	c.mailbox(a.ID, "example.com", "taken@example.com")
	c.alias(a.ID, "example.com", "alias@example.com", "taken@example.com")
	c.alias(a.ID, "example.com", "@example.com", "taken@example.com")

	for _, tc := range []struct {
		name          string
		pid           int64
		domain, email string
		err           error
	}{
		{"ok", a.ID, "example.com", "new@example.com", nil},
		{"unknown domain", a.ID, "nowhere.example", "x@nowhere.example", mailstore.ErrDomainNotFound},
		{"other partner's domain", a.ID, "b.example", "x@b.example", mailstore.ErrDomainNotFound},
		{"unknown partner", 999, "example.com", "y@example.com", mailstore.ErrDomainNotFound},
		{"other domain of the partner", a.ID, "example.com", "x@example.org", mailstore.ErrWrongDomain},
		{"subdomain", a.ID, "example.com", "x@sub.example.com", mailstore.ErrWrongDomain},
		{"parent domain", a.ID, "sub.example.com", "x@example.com", mailstore.ErrWrongDomain},
		{"catch-all form", a.ID, "example.com", "@example.com", mailstore.ErrWrongDomain},
		{"no at sign", a.ID, "example.com", "example.com", mailstore.ErrWrongDomain},
		{"taken", a.ID, "example.com", "taken@example.com", mailstore.ErrEmailExists},
		{"alias source", a.ID, "example.com", "alias@example.com", mailstore.ErrEmailExists},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := c.s.CreateMailbox(c.ctx, tc.pid, tc.domain, tc.email, ctlHash, ctlNow)
			if !ctlIs(err, tc.err) {
				t.Fatalf("CreateMailbox(%d, %q, %q) = %v, want %v", tc.pid, tc.domain, tc.email, err, tc.err)
			}
			if err == nil && m.Email != tc.email {
				t.Errorf("CreateMailbox(%q).Email = %q, want %q", tc.email, m.Email, tc.email)
			}
		})
	}
	c.counts(a.ID, "example.com", 2, 2)
	c.counts(a.ID, "example.org", 0, 0)
	if a, err := c.s.AliasBySource(c.ctx, "alias@example.com"); err != nil || a.Destination != "taken@example.com" {
		t.Errorf("AliasBySource(alias@example.com) = %+v, %v, want the alias unchanged", a, err)
	}
	if _, err := c.s.Mailbox(c.ctx, a.ID, "alias@example.com"); !ctlIs(err, mailstore.ErrMailboxNotFound) {
		t.Errorf("Mailbox(alias@example.com) = %v, want ErrMailboxNotFound (an alias is no mailbox)", err)
	}
	if _, err := c.s.Mailbox(c.ctx, a.ID, "@example.com"); !ctlIs(err, mailstore.ErrMailboxNotFound) {
		t.Errorf("Mailbox(@example.com) = %v, want ErrMailboxNotFound", err)
	}
}

func ctlMailboxPaging(t *testing.T, open Open) {
	c := newCtl(t, open)
	a := c.partner("a")
	b := c.partner("b")
	d1 := c.domain(a.ID, "one.example", ctlStarter, 0, 0)
	d2 := c.domain(a.ID, "two.example", ctlStarter, 0, 0)
	db := c.domain(b.ID, "b.example", ctlStarter, 0, 0)
	var one, two, all []int64
	for i := range 6 {
		m := c.mailbox(a.ID, "one.example", fmt.Sprintf("u%d@one.example", i))
		one, all = append(one, m.ID), append(all, m.ID)
		c.mailbox(b.ID, "b.example", fmt.Sprintf("u%d@b.example", i))
		m = c.mailbox(a.ID, "two.example", fmt.Sprintf("u%d@two.example", i))
		two, all = append(two, m.ID), append(all, m.ID)
	}
	for _, list := range []struct {
		name     string
		domainID int64
		ids      []int64
	}{
		{"one", d1.ID, one},
		{"two", d2.ID, two},
		{"all", 0, all},
	} {
		for _, tc := range ctlPages(len(list.ids)) {
			t.Run(list.name+" "+tc.name, func(t *testing.T) {
				ms, n := c.mailboxes(a.ID, list.domainID, tc.page)
				var got []int64
				for _, m := range ms {
					got = append(got, m.ID)
					if full := c.getMailbox(a.ID, m.Email); m != full.Entry() {
						t.Errorf("Mailboxes(%d, %+v) holds %+v, want %+v (Mailbox(%s).Entry())", list.domainID, tc.page, m, full.Entry(), m.Email)
					}
					if m.PartnerID != a.ID || (list.domainID != 0 && m.DomainID != list.domainID) {
						t.Errorf("Mailboxes(%d, %+v) holds %+v, not of the partner and domain", list.domainID, tc.page, m)
					}
				}
				if want := ctlSlice(list.ids, tc.from, tc.to); n != len(list.ids) || fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("Mailboxes(%d, %+v) = %v, %d, want %v, %d", list.domainID, tc.page, got, n, want, len(list.ids))
				}
			})
		}
	}
	for _, tc := range []struct {
		name     string
		domainID int64
	}{
		{"unknown domain", 999},
		{"other partner's domain", db.ID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := c.s.Mailboxes(c.ctx, a.ID, tc.domainID, mailstore.Page{}); !ctlIs(err, mailstore.ErrDomainNotFound) {
				t.Errorf("Mailboxes(%d) = %v, want ErrDomainNotFound", tc.domainID, err)
			}
		})
	}
	if ms, n := c.mailboxes(999, 0, mailstore.Page{}); n != 0 || len(ms) != 0 {
		t.Errorf("Mailboxes(partner 999, all) = %+v, %d, want none", ms, n)
	}
}

func ctlAliases(t *testing.T, open Open) {
	c := newCtl(t, open)
	a := c.partner("a")
	d := c.domain(a.ID, "example.com", ctlStarter, 0, 0)
	c.mailbox(a.ID, "example.com", "john@example.com")
	al := c.alias(a.ID, "example.com", "info@example.com", "john@example.com")
	want := mailstore.Alias{ID: al.ID, DomainID: d.ID, PartnerID: a.ID, Source: "info@example.com", Destination: "john@example.com", CreatedAt: ctlNowUTC}
	if al.ID == 0 || ctlJSON(t, al) != ctlJSON(t, want) || al.CatchAll() {
		t.Errorf("CreateAlias(info@example.com) = %+v, want %+v", al, want)
	}
	checkUTC(t, "CreateAlias().CreatedAt", al.CreatedAt, ctlNowUTC)
	if got, err := c.s.AliasBySource(c.ctx, al.Source); err != nil || ctlJSON(t, got) != ctlJSON(t, want) {
		t.Errorf("AliasBySource(%s) = %+v, %v, want %+v", al.Source, got, err, want)
	}

	ca := c.alias(a.ID, "example.com", "@example.com", "john@example.com")
	if !ca.CatchAll() || ca.Source != "@example.com" || ca.DomainID != d.ID {
		t.Errorf("CreateAlias(@example.com) = %+v, want a catch-all of domain %d", ca, d.ID)
	}
	remote := c.alias(a.ID, "example.com", "out@example.com", "someone@elsewhere.example")
	chain := c.alias(a.ID, "example.com", "chain@example.com", "info@example.com")
	as, n := c.aliases(a.ID, d.ID, mailstore.Page{})
	if n != 4 || len(as) != 4 || as[0].ID != al.ID || as[1].ID != ca.ID || as[2].ID != remote.ID || as[3].ID != chain.ID {
		t.Errorf("Aliases(example.com) = %+v, %d, want the four aliases in id order", as, n)
	}
	c.counts(a.ID, "example.com", 1, 4)

	for _, tc := range []struct {
		name, source string
		err          error
		mailboxes    int64
		aliases      int64
	}{
		{"plain", "info@example.com", nil, 1, 3},
		{"plain again", "info@example.com", mailstore.ErrAliasNotFound, 1, 3},
		{"catch-all", "@example.com", nil, 1, 2},
		{"catch-all again", "@example.com", mailstore.ErrAliasNotFound, 1, 2},
		{"a mailbox address", "john@example.com", mailstore.ErrAliasNotFound, 1, 2},
		{"unknown", "nobody@example.com", mailstore.ErrAliasNotFound, 1, 2},
		{"catch-all of unknown domain", "@nowhere.example", mailstore.ErrAliasNotFound, 1, 2},
	} {
		t.Run("delete "+tc.name, func(t *testing.T) {
			err := c.s.DeleteAlias(c.ctx, a.ID, tc.source)
			if !ctlIs(err, tc.err) {
				t.Fatalf("DeleteAlias(%q) = %v, want %v", tc.source, err, tc.err)
			}
			if _, err := c.s.AliasBySource(c.ctx, tc.source); !ctlIs(err, mailstore.ErrAliasNotFound) {
				t.Errorf("AliasBySource(%q) after delete = %v, want ErrAliasNotFound", tc.source, err)
			}
			c.counts(a.ID, "example.com", tc.mailboxes, tc.aliases)
		})
	}
	if m := c.getMailbox(a.ID, "john@example.com"); m.Email != "john@example.com" {
		t.Errorf("Mailbox(john@example.com) after DeleteAlias of it = %+v, want it intact", m)
	}
	// A deleted catch-all can be made again, with a new destination.
	if ca2 := c.alias(a.ID, "example.com", "@example.com", "out@example.com"); ca2.ID == ca.ID || ca2.Destination != "out@example.com" {
		t.Errorf("CreateAlias(@example.com) again = %+v, want a new alias", ca2)
	}
}

func ctlAliasErrors(t *testing.T, open Open) {
	c := newCtl(t, open)
	a := c.partner("a")
	b := c.partner("b")
	c.domain(a.ID, "example.com", ctlStarter, 0, 0)
	c.domain(a.ID, "example.org", ctlStarter, 0, 0)
	c.domain(b.ID, "b.example", ctlStarter, 0, 0)
	c.mailbox(a.ID, "example.com", "john@example.com")
	c.alias(a.ID, "example.com", "info@example.com", "john@example.com")

	for _, tc := range []struct {
		name                string
		pid                 int64
		domain, source, dst string
		err                 error
	}{
		{"ok", a.ID, "example.com", "sales@example.com", "john@example.com", nil},
		{"catch-all", a.ID, "example.com", "@example.com", "john@example.com", nil},
		{"second catch-all", a.ID, "example.com", "@example.com", "info@example.com", mailstore.ErrAliasExists},
		{"unknown domain", a.ID, "nowhere.example", "x@nowhere.example", "john@example.com", mailstore.ErrDomainNotFound},
		{"other partner's domain", a.ID, "b.example", "x@b.example", "john@example.com", mailstore.ErrDomainNotFound},
		{"unknown partner", 999, "example.com", "y@example.com", "john@example.com", mailstore.ErrDomainNotFound},
		{"source in other domain", a.ID, "example.com", "x@example.org", "john@example.com", mailstore.ErrWrongDomain},
		{"catch-all of other domain", a.ID, "example.com", "@example.org", "john@example.com", mailstore.ErrWrongDomain},
		{"no at sign", a.ID, "example.com", "example.com", "john@example.com", mailstore.ErrWrongDomain},
		{"taken", a.ID, "example.com", "info@example.com", "other@example.com", mailstore.ErrAliasExists},
		{"mailbox address", a.ID, "example.com", "john@example.com", "other@example.com", mailstore.ErrAliasExists},
		{"destination is source", a.ID, "example.com", "loop@example.com", "loop@example.com", mailstore.ErrInvalidArgument},
		{"catch-all to itself", a.ID, "example.org", "@example.org", "@example.org", mailstore.ErrInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			al, err := c.s.CreateAlias(c.ctx, tc.pid, tc.domain, tc.source, tc.dst, ctlNow)
			if !ctlIs(err, tc.err) {
				t.Fatalf("CreateAlias(%d, %q, %q, %q) = %v, want %v", tc.pid, tc.domain, tc.source, tc.dst, err, tc.err)
			}
			if err == nil && (al.Source != tc.source || al.Destination != tc.dst) {
				t.Errorf("CreateAlias(%q, %q) = %+v, want that source and destination", tc.source, tc.dst, al)
			}
		})
	}
	c.counts(a.ID, "example.com", 1, 3)
	c.counts(a.ID, "example.org", 0, 0)
	if al, err := c.s.AliasBySource(c.ctx, "info@example.com"); err != nil || al.Destination != "john@example.com" {
		t.Errorf("AliasBySource(info@example.com) = %+v, %v, want destination unchanged", al, err)
	}
	if al, err := c.s.AliasBySource(c.ctx, "@example.com"); err != nil || al.Destination != "john@example.com" {
		t.Errorf("AliasBySource(@example.com) = %+v, %v, want the first catch-all", al, err)
	}
	if m := c.getMailbox(a.ID, "john@example.com"); m.Email != "john@example.com" {
		t.Errorf("Mailbox(john@example.com) = %+v, want intact", m)
	}
}

func ctlAliasPaging(t *testing.T, open Open) {
	c := newCtl(t, open)
	a := c.partner("a")
	b := c.partner("b")
	d1 := c.domain(a.ID, "one.example", ctlStarter, 0, 0)
	d2 := c.domain(a.ID, "two.example", ctlStarter, 0, 0)
	db := c.domain(b.ID, "b.example", ctlStarter, 0, 0)
	var one, two, all []int64
	for i := range 5 {
		al := c.alias(a.ID, "one.example", fmt.Sprintf("a%d@one.example", i), "dest@elsewhere.example")
		one, all = append(one, al.ID), append(all, al.ID)
		c.alias(b.ID, "b.example", fmt.Sprintf("a%d@b.example", i), "dest@elsewhere.example")
		al = c.alias(a.ID, "two.example", fmt.Sprintf("a%d@two.example", i), "dest@elsewhere.example")
		two, all = append(two, al.ID), append(all, al.ID)
	}
	for _, list := range []struct {
		name     string
		domainID int64
		ids      []int64
	}{
		{"one", d1.ID, one},
		{"two", d2.ID, two},
		{"all", 0, all},
	} {
		for _, tc := range ctlPages(len(list.ids)) {
			t.Run(list.name+" "+tc.name, func(t *testing.T) {
				as, n := c.aliases(a.ID, list.domainID, tc.page)
				var got []int64
				for _, al := range as {
					got = append(got, al.ID)
				}
				if want := ctlSlice(list.ids, tc.from, tc.to); n != len(list.ids) || fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("Aliases(%d, %+v) = %v, %d, want %v, %d", list.domainID, tc.page, got, n, want, len(list.ids))
				}
			})
		}
	}
	for _, tc := range []struct {
		name     string
		domainID int64
	}{
		{"unknown domain", 999},
		{"other partner's domain", db.ID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := c.s.Aliases(c.ctx, a.ID, tc.domainID, mailstore.Page{}); !ctlIs(err, mailstore.ErrDomainNotFound) {
				t.Errorf("Aliases(%d) = %v, want ErrDomainNotFound", tc.domainID, err)
			}
		})
	}
}

// ctlAddressNamespace: an address is a mailbox or an alias source, never
// both, whichever came first, and across the operations that free it.
func ctlAddressNamespace(t *testing.T, open Open) {
	c := newCtl(t, open)
	a := c.partner("a")
	c.domain(a.ID, "example.com", ctlStarter, 0, 0)
	steps := []struct {
		name string
		do   func() error
		err  error
	}{
		{"mailbox first", func() error {
			_, err := c.s.CreateMailbox(c.ctx, a.ID, "example.com", "x@example.com", ctlHash, ctlNow)
			return err
		}, nil},
		{"alias on mailbox", func() error {
			_, err := c.s.CreateAlias(c.ctx, a.ID, "example.com", "x@example.com", "y@elsewhere.example", ctlNow)
			return err
		}, mailstore.ErrAliasExists},
		{"delete mailbox", func() error { return c.s.DeleteMailbox(c.ctx, a.ID, "x@example.com") }, nil},
		{"alias after delete", func() error {
			_, err := c.s.CreateAlias(c.ctx, a.ID, "example.com", "x@example.com", "y@elsewhere.example", ctlNow)
			return err
		}, nil},
		{"mailbox on alias", func() error {
			_, err := c.s.CreateMailbox(c.ctx, a.ID, "example.com", "x@example.com", ctlHash, ctlNow)
			return err
		}, mailstore.ErrEmailExists},
		{"delete mailbox of alias address", func() error { return c.s.DeleteMailbox(c.ctx, a.ID, "x@example.com") }, mailstore.ErrMailboxNotFound},
		{"set quota of alias address", func() error {
			_, err := c.s.SetQuota(c.ctx, a.ID, "x@example.com", 5)
			return err
		}, mailstore.ErrMailboxNotFound},
		{"set password of alias address", func() error {
			_, err := c.s.SetPassword(c.ctx, a.ID, "x@example.com", ctlHash2, ctlNow)
			return err
		}, mailstore.ErrMailboxNotFound},
		{"delete alias", func() error { return c.s.DeleteAlias(c.ctx, a.ID, "x@example.com") }, nil},
		{"mailbox after alias delete", func() error {
			_, err := c.s.CreateMailbox(c.ctx, a.ID, "example.com", "x@example.com", ctlHash, ctlNow)
			return err
		}, nil},
		{"catch-all beside mailbox", func() error {
			_, err := c.s.CreateAlias(c.ctx, a.ID, "example.com", "@example.com", "x@example.com", ctlNow)
			return err
		}, nil},
		{"mailbox beside catch-all", func() error {
			_, err := c.s.CreateMailbox(c.ctx, a.ID, "example.com", "z@example.com", ctlHash, ctlNow)
			return err
		}, nil},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if err := st.do(); !ctlIs(err, st.err) {
				t.Fatalf("%s = %v, want %v", st.name, err, st.err)
			}
		})
	}
	c.counts(a.ID, "example.com", 2, 1)
	if m, _, err := c.s.MailboxByEmail(c.ctx, "x@example.com"); err != nil || m.Email != "x@example.com" {
		t.Errorf("MailboxByEmail(x@example.com) = %+v, %v, want the mailbox", m, err)
	}
	if _, err := c.s.AliasBySource(c.ctx, "x@example.com"); !ctlIs(err, mailstore.ErrAliasNotFound) {
		t.Errorf("AliasBySource(x@example.com) = %v, want ErrAliasNotFound", err)
	}
}

// ctlCounters follows a domain's counters through a run of creates and
// deletes, including refused ones.
func ctlCounters(t *testing.T, open Open) {
	c := newCtl(t, open)
	a := c.partner("a")
	c.domain(a.ID, "one.example", ctlStarter, 0, 0)
	c.domain(a.ID, "two.example", ctlStarter, 0, 0)
	mbox := func(d, e string) func() error {
		return func() error {
			_, err := c.s.CreateMailbox(c.ctx, a.ID, d, e, ctlHash, ctlNow)
			return err
		}
	}
	alias := func(d, src string) func() error {
		return func() error {
			_, err := c.s.CreateAlias(c.ctx, a.ID, d, src, "dest@elsewhere.example", ctlNow)
			return err
		}
	}
	delM := func(e string) func() error { return func() error { return c.s.DeleteMailbox(c.ctx, a.ID, e) } }
	delA := func(src string) func() error { return func() error { return c.s.DeleteAlias(c.ctx, a.ID, src) } }
	for _, st := range []struct {
		name       string
		do         func() error
		err        error
		one, two   [2]int64 // mailboxes, aliases
		allBoxes   int
		allAliases int
	}{
		{"mailbox 1", mbox("one.example", "m1@one.example"), nil, [2]int64{1, 0}, [2]int64{0, 0}, 1, 0},
		{"mailbox 2", mbox("one.example", "m2@one.example"), nil, [2]int64{2, 0}, [2]int64{0, 0}, 2, 0},
		{"mailbox in two", mbox("two.example", "m1@two.example"), nil, [2]int64{2, 0}, [2]int64{1, 0}, 3, 0},
		{"duplicate mailbox", mbox("one.example", "m1@one.example"), mailstore.ErrEmailExists, [2]int64{2, 0}, [2]int64{1, 0}, 3, 0},
		{"wrong domain", mbox("one.example", "m9@two.example"), mailstore.ErrWrongDomain, [2]int64{2, 0}, [2]int64{1, 0}, 3, 0},
		{"alias", alias("one.example", "a1@one.example"), nil, [2]int64{2, 1}, [2]int64{1, 0}, 3, 1},
		{"catch-all", alias("one.example", "@one.example"), nil, [2]int64{2, 2}, [2]int64{1, 0}, 3, 2},
		{"duplicate alias", alias("one.example", "a1@one.example"), mailstore.ErrAliasExists, [2]int64{2, 2}, [2]int64{1, 0}, 3, 2},
		{"alias on mailbox", alias("one.example", "m1@one.example"), mailstore.ErrAliasExists, [2]int64{2, 2}, [2]int64{1, 0}, 3, 2},
		{"mailbox on alias", mbox("one.example", "a1@one.example"), mailstore.ErrEmailExists, [2]int64{2, 2}, [2]int64{1, 0}, 3, 2},
		{"delete mailbox", delM("m1@one.example"), nil, [2]int64{1, 2}, [2]int64{1, 0}, 2, 2},
		{"delete mailbox again", delM("m1@one.example"), mailstore.ErrMailboxNotFound, [2]int64{1, 2}, [2]int64{1, 0}, 2, 2},
		{"delete alias", delA("a1@one.example"), nil, [2]int64{1, 1}, [2]int64{1, 0}, 2, 1},
		{"delete alias again", delA("a1@one.example"), mailstore.ErrAliasNotFound, [2]int64{1, 1}, [2]int64{1, 0}, 2, 1},
		{"delete catch-all", delA("@one.example"), nil, [2]int64{1, 0}, [2]int64{1, 0}, 2, 0},
		{"delete last of two", delM("m1@two.example"), nil, [2]int64{1, 0}, [2]int64{0, 0}, 1, 0},
	} {
		t.Run(st.name, func(t *testing.T) {
			if err := st.do(); !ctlIs(err, st.err) {
				t.Fatalf("%s = %v, want %v", st.name, err, st.err)
			}
			c.counts(a.ID, "one.example", st.one[0], st.one[1])
			c.counts(a.ID, "two.example", st.two[0], st.two[1])
			if _, n := c.mailboxes(a.ID, 0, mailstore.Page{}); n != st.allBoxes {
				t.Errorf("Mailboxes(all) total = %d, want %d", n, st.allBoxes)
			}
			if _, n := c.aliases(a.ID, 0, mailstore.Page{}); n != st.allAliases {
				t.Errorf("Aliases(all) total = %d, want %d", n, st.allAliases)
			}
		})
	}
}

func ctlLimits(t *testing.T, open Open) {
	i64 := func(v int64) *int64 { return &v }
	t.Run("mailboxes", func(t *testing.T) {
		c := newCtl(t, open)
		a := c.partner("a")
		c.domain(a.ID, "limited.example", ctlStarter, 2, 0)
		c.domain(a.ID, "free.example", ctlStarter, 0, 0)
		mbox := func(d, e string) func() error {
			return func() error {
				_, err := c.s.CreateMailbox(c.ctx, a.ID, d, e, ctlHash, ctlNow)
				return err
			}
		}
		limit := func(n int64) func() error {
			return func() error {
				_, err := c.s.SetDomainLimits(c.ctx, a.ID, "limited.example", mailstore.DomainLimits{MaxMailboxes: i64(n)})
				return err
			}
		}
		steps := []struct {
			name string
			do   func() error
			err  error
			n    int64
			o    int64 // the other counter
		}{
			{"first", mbox("limited.example", "m1@limited.example"), nil, 1, 0},
			{"second", mbox("limited.example", "m2@limited.example"), nil, 2, 0},
			{"third over limit", mbox("limited.example", "m3@limited.example"), mailstore.ErrMailboxLimit, 2, 0},
			{"duplicate at limit", mbox("limited.example", "m1@limited.example"), mailstore.ErrEmailExists, 2, 0},
			{"aliases not limited by mailbox count", func() error {
				_, err := c.s.CreateAlias(c.ctx, a.ID, "limited.example", "al@limited.example", "m1@limited.example", ctlNow)
				return err
			}, nil, 2, 1},
			{"delete frees a place", func() error { return c.s.DeleteMailbox(c.ctx, a.ID, "m2@limited.example") }, nil, 1, 1},
			{"third after delete", mbox("limited.example", "m3@limited.example"), nil, 2, 1},
			{"fourth over limit", mbox("limited.example", "m4@limited.example"), mailstore.ErrMailboxLimit, 2, 1},
			{"raise limit", limit(3), nil, 2, 1},
			{"fourth after raise", mbox("limited.example", "m4@limited.example"), nil, 3, 1},
			{"lower limit below count", limit(1), nil, 3, 1},
			{"fifth under lowered limit", mbox("limited.example", "m5@limited.example"), mailstore.ErrMailboxLimit, 3, 1},
			{"unlimited", limit(0), nil, 3, 1},
			{"fifth unlimited", mbox("limited.example", "m5@limited.example"), nil, 4, 1},
			{"sixth unlimited", mbox("limited.example", "m6@limited.example"), nil, 5, 1},
		}
		for _, st := range steps {
			t.Run(st.name, func(t *testing.T) {
				if err := st.do(); !ctlIs(err, st.err) {
					t.Fatalf("%s = %v, want %v", st.name, err, st.err)
				}
				c.counts(a.ID, "limited.example", st.n, st.o)
			})
		}
		// A limit is per domain: another domain of the partner is free.
		for i := range 8 {
			c.mailbox(a.ID, "free.example", fmt.Sprintf("m%d@free.example", i))
		}
		c.counts(a.ID, "free.example", 8, 0)
	})
	t.Run("aliases", func(t *testing.T) {
		c := newCtl(t, open)
		a := c.partner("a")
		c.domain(a.ID, "limited.example", ctlStarter, 0, 2)
		c.domain(a.ID, "free.example", ctlStarter, 0, 0)
		alias := func(src string) func() error {
			return func() error {
				_, err := c.s.CreateAlias(c.ctx, a.ID, "limited.example", src, "dest@elsewhere.example", ctlNow)
				return err
			}
		}
		limit := func(n int64) func() error {
			return func() error {
				_, err := c.s.SetDomainLimits(c.ctx, a.ID, "limited.example", mailstore.DomainLimits{MaxAliases: i64(n)})
				return err
			}
		}
		steps := []struct {
			name string
			do   func() error
			err  error
			n    int64
			o    int64 // the other counter
		}{
			{"first", alias("a1@limited.example"), nil, 1, 0},
			{"catch-all counts", alias("@limited.example"), nil, 2, 0},
			{"third over limit", alias("a3@limited.example"), mailstore.ErrAliasLimit, 2, 0},
			{"duplicate at limit", alias("a1@limited.example"), mailstore.ErrAliasExists, 2, 0},
			{"mailboxes not limited by alias count", func() error {
				_, err := c.s.CreateMailbox(c.ctx, a.ID, "limited.example", "m1@limited.example", ctlHash, ctlNow)
				return err
			}, nil, 2, 1},
			{"delete frees a place", func() error { return c.s.DeleteAlias(c.ctx, a.ID, "@limited.example") }, nil, 1, 1},
			{"third after delete", alias("a3@limited.example"), nil, 2, 1},
			{"fourth over limit", alias("a4@limited.example"), mailstore.ErrAliasLimit, 2, 1},
			{"raise limit", limit(3), nil, 2, 1},
			{"fourth after raise", alias("a4@limited.example"), nil, 3, 1},
			{"lower limit below count", limit(1), nil, 3, 1},
			{"fifth under lowered limit", alias("a5@limited.example"), mailstore.ErrAliasLimit, 3, 1},
			{"unlimited", limit(0), nil, 3, 1},
			{"fifth unlimited", alias("a5@limited.example"), nil, 4, 1},
			{"sixth unlimited", alias("a6@limited.example"), nil, 5, 1},
		}
		for _, st := range steps {
			t.Run(st.name, func(t *testing.T) {
				if err := st.do(); !ctlIs(err, st.err) {
					t.Fatalf("%s = %v, want %v", st.name, err, st.err)
				}
				c.counts(a.ID, "limited.example", st.o, st.n)
			})
		}
		for i := range 8 {
			c.alias(a.ID, "free.example", fmt.Sprintf("a%d@free.example", i), "dest@elsewhere.example")
		}
		c.counts(a.ID, "free.example", 0, 8)
	})
}

// ctlIsolation: partner B, calling every partner-scoped method on partner
// A's objects, is told they do not exist, and A's data stays as it was.
func ctlIsolation(t *testing.T, open Open) {
	c := newCtl(t, open)
	a := c.partner("a")
	b := c.partner("b")
	da := c.domain(a.ID, "a.example", ctlStarter, 0, 0)
	c.domain(b.ID, "b.example", ctlStarter, 0, 0)
	ma := c.mailbox(a.ID, "a.example", "user@a.example")
	c.alias(a.ID, "a.example", "alias@a.example", "user@a.example")
	c.alias(a.ID, "a.example", "@a.example", "user@a.example")
	c.mailbox(b.ID, "b.example", "user@b.example")
	// Verified, so that b cannot claim the name too (claims.go).
	c.setVerified(a.ID, "a.example", true, ctlNow)
	snapshot := func() string {
		t.Helper()
		d := c.getDomain(a.ID, "a.example")
		ms, _ := c.mailboxes(a.ID, 0, mailstore.Page{})
		as, _ := c.aliases(a.ID, 0, mailstore.Page{})
		ds, _, err := c.s.Domains(c.ctx, a.ID, mailstore.Page{})
		if err != nil {
			t.Fatalf("Domains(a) = %v", err)
		}
		return ctlJSON(t, []any{d, ds, ms, as})
	}
	before := snapshot()

	dom := func(f func() (mailstore.Domain, error)) func() error {
		return func() error { _, err := f(); return err }
	}
	mbox := func(f func() (mailstore.Mailbox, error)) func() error {
		return func() error { _, err := f(); return err }
	}
	i64 := func(v int64) *int64 { return &v }
	ctx, B := c.ctx, b.ID
	for _, tc := range []struct {
		name string
		do   func() error
		err  error
	}{
		{"Domain", dom(func() (mailstore.Domain, error) { return c.s.Domain(ctx, B, "a.example") }), mailstore.ErrDomainNotFound},
		{"DomainByID", dom(func() (mailstore.Domain, error) { return c.s.DomainByID(ctx, B, da.ID) }), mailstore.ErrDomainNotFound},
		{"ApplyPlan", dom(func() (mailstore.Domain, error) { return c.s.ApplyPlan(ctx, B, "a.example", ctlEnt) }), mailstore.ErrDomainNotFound},
		{"SetDomainLimits", dom(func() (mailstore.Domain, error) {
			return c.s.SetDomainLimits(ctx, B, "a.example", mailstore.DomainLimits{MaxMailboxes: i64(1), MaxAliases: i64(1)})
		}), mailstore.ErrDomainNotFound},
		{"SetRetention", dom(func() (mailstore.Domain, error) { return c.s.SetRetention(ctx, B, "a.example", 1) }), mailstore.ErrDomainNotFound},
		{"SetTransferCap", dom(func() (mailstore.Domain, error) { return c.s.SetTransferCap(ctx, B, "a.example", 1) }), mailstore.ErrDomainNotFound},
		{"SetSuspended", dom(func() (mailstore.Domain, error) { return c.s.SetSuspended(ctx, B, "a.example", true) }), mailstore.ErrDomainNotFound},
		{"DeleteDomain", func() error { return c.s.DeleteDomain(ctx, B, "a.example", false) }, mailstore.ErrDomainNotFound},
		{"DeleteDomain force", func() error { return c.s.DeleteDomain(ctx, B, "a.example", true) }, mailstore.ErrDomainNotFound},
		{"DomainUsage", func() error { _, err := c.s.DomainUsage(ctx, B, "a.example", "2026-11"); return err }, mailstore.ErrDomainNotFound},
		{"CreateMailbox", mbox(func() (mailstore.Mailbox, error) {
			return c.s.CreateMailbox(ctx, B, "a.example", "new@a.example", ctlHash, ctlNow)
		}), mailstore.ErrDomainNotFound},
		{"CreateMailbox taken address", mbox(func() (mailstore.Mailbox, error) {
			return c.s.CreateMailbox(ctx, B, "a.example", "user@a.example", ctlHash, ctlNow)
		}), mailstore.ErrDomainNotFound},
		{"CreateMailbox in own domain with A's address", mbox(func() (mailstore.Mailbox, error) {
			return c.s.CreateMailbox(ctx, B, "b.example", "user@a.example", ctlHash, ctlNow)
		}), mailstore.ErrWrongDomain},
		{"Mailboxes", func() error { _, _, err := c.s.Mailboxes(ctx, B, da.ID, mailstore.Page{}); return err }, mailstore.ErrDomainNotFound},
		{"Mailbox", mbox(func() (mailstore.Mailbox, error) { return c.s.Mailbox(ctx, B, ma.Email) }), mailstore.ErrMailboxNotFound},
		{"SetPassword", mbox(func() (mailstore.Mailbox, error) { return c.s.SetPassword(ctx, B, ma.Email, ctlHash2, ctlLater) }), mailstore.ErrMailboxNotFound},
		{"SetQuota", mbox(func() (mailstore.Mailbox, error) { return c.s.SetQuota(ctx, B, ma.Email, 1) }), mailstore.ErrMailboxNotFound},
		{"DeleteMailbox", func() error { return c.s.DeleteMailbox(ctx, B, ma.Email) }, mailstore.ErrMailboxNotFound},
		{"CreateAlias", func() error {
			_, err := c.s.CreateAlias(ctx, B, "a.example", "new@a.example", "user@b.example", ctlNow)
			return err
		}, mailstore.ErrDomainNotFound},
		{"CreateAlias catch-all", func() error {
			_, err := c.s.CreateAlias(ctx, B, "a.example", "@a.example", "user@b.example", ctlNow)
			return err
		}, mailstore.ErrDomainNotFound},
		{"CreateAlias in own domain with A's source", func() error {
			_, err := c.s.CreateAlias(ctx, B, "b.example", "alias@a.example", "user@b.example", ctlNow)
			return err
		}, mailstore.ErrWrongDomain},
		{"Aliases", func() error { _, _, err := c.s.Aliases(ctx, B, da.ID, mailstore.Page{}); return err }, mailstore.ErrDomainNotFound},
		{"DeleteAlias", func() error { return c.s.DeleteAlias(ctx, B, "alias@a.example") }, mailstore.ErrAliasNotFound},
		{"DeleteAlias catch-all", func() error { return c.s.DeleteAlias(ctx, B, "@a.example") }, mailstore.ErrAliasNotFound},
		{"DeleteAlias on a mailbox", func() error { return c.s.DeleteAlias(ctx, B, ma.Email) }, mailstore.ErrAliasNotFound},
		{"CreateDomain taken name", func() error {
			_, err := c.s.CreateDomain(ctx, B, mailstore.NewDomain{Name: "a.example", Plan: ctlStarter}, ctlNow)
			return err
		}, mailstore.ErrDomainExists},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.do(); !ctlIs(err, tc.err) {
				t.Errorf("%s by partner b on a's data = %v, want %v", tc.name, err, tc.err)
			}
			if after := snapshot(); after != before {
				t.Errorf("a's data after %s by b = %s, want %s", tc.name, after, before)
			}
		})
	}

	t.Run("lists", func(t *testing.T) {
		ds, n, err := c.s.Domains(ctx, B, mailstore.Page{})
		if err != nil || n != 1 || len(ds) != 1 || ds[0].Name != "b.example" {
			t.Errorf("Domains(b) = %+v, %d, %v, want only b.example", ds, n, err)
		}
		ms, n := c.mailboxes(B, 0, mailstore.Page{})
		if n != 1 || len(ms) != 1 || ms[0].Email != "user@b.example" {
			t.Errorf("Mailboxes(b, all) = %+v, %d, want only user@b.example", ms, n)
		}
		if as, n := c.aliases(B, 0, mailstore.Page{}); n != 0 || len(as) != 0 {
			t.Errorf("Aliases(b, all) = %+v, %d, want none", as, n)
		}
		if _, err := c.s.AddAPIKey(ctx, a.ID, mailstore.APIKey{Lookup: "aaaaaaaaaaaa", Prefix: "mhk_aaaaaaaaaaaa", CreatedAt: ctlNow}); err != nil {
			t.Fatalf("AddAPIKey(a) = %v", err)
		}
		if ks, err := c.s.APIKeys(ctx, B); err != nil || len(ks) != 0 {
			t.Errorf("APIKeys(b) = %+v, %v, want none", ks, err)
		}
	})

	// B may forward to A's addresses: a destination is any address.
	t.Run("alias to a's address", func(t *testing.T) {
		c.alias(B, "b.example", "fwd@b.example", "user@a.example")
		c.alias(B, "b.example", "@b.example", "alias@a.example")
		if after := snapshot(); after != before {
			t.Errorf("a's data after b's aliases = %s, want %s", after, before)
		}
	})
}

// ctlConcurrent: limits and the address namespace hold when creates race,
// since each create is one atomic use case.
func ctlConcurrent(t *testing.T, open Open) {
	c := newCtl(t, open)
	a := c.partner("a")
	c.domain(a.ID, "example.com", ctlStarter, 5, 5)
	const n = 16
	run := func(f func(i int) error) map[string]int {
		t.Helper()
		var mu sync.Mutex // guards got
		got := map[string]int{}
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				err := f(i)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					got["ok"]++
				case errors.Is(err, mailstore.ErrMailboxLimit):
					got["mailbox limit"]++
				case errors.Is(err, mailstore.ErrAliasLimit):
					got["alias limit"]++
				case errors.Is(err, mailstore.ErrEmailExists):
					got["email exists"]++
				case errors.Is(err, mailstore.ErrAliasExists):
					got["alias exists"]++
				default:
					got[err.Error()]++
				}
			})
		}
		wg.Wait()
		return got
	}
	for _, tc := range []struct {
		name string
		do   func(i int) error
	}{
		{"same address", func(i int) error {
			var err error
			if i%2 == 0 {
				_, err = c.s.CreateMailbox(c.ctx, a.ID, "example.com", "same@example.com", ctlHash, ctlNow)
			} else {
				_, err = c.s.CreateAlias(c.ctx, a.ID, "example.com", "same@example.com", "x@elsewhere.example", ctlNow)
			}
			return err
		}},
		{"mailbox limit", func(i int) error {
			_, err := c.s.CreateMailbox(c.ctx, a.ID, "example.com", fmt.Sprintf("m%d@example.com", i), ctlHash, ctlNow)
			return err
		}},
		{"alias limit", func(i int) error {
			_, err := c.s.CreateAlias(c.ctx, a.ID, "example.com", fmt.Sprintf("a%d@example.com", i), "x@elsewhere.example", ctlNow)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := c.getDomain(a.ID, "example.com")
			got := run(tc.do)
			switch tc.name {
			case "same address":
				if got["ok"] != 1 || got["email exists"]+got["alias exists"] != n-1 {
					t.Errorf("%d racing creates of one address = %v, want 1 ok, %d exists", n, got, n-1)
				}
			case "mailbox limit":
				if got["ok"]+got["mailbox limit"] != n || got["ok"] != 5-int(before.MailboxCount) {
					t.Errorf("%d racing mailbox creates = %v, want %d ok, the rest mailbox limit", n, got, 5-before.MailboxCount)
				}
			case "alias limit":
				if got["ok"]+got["alias limit"] != n || got["ok"] != 5-int(before.AliasCount) {
					t.Errorf("%d racing alias creates = %v, want %d ok, the rest alias limit", n, got, 5-before.AliasCount)
				}
			}
		})
	}
	d := c.getDomain(a.ID, "example.com")
	if d.MailboxCount != 5 || d.AliasCount != 5 {
		t.Errorf("Domain(example.com) after racing creates = %d mailboxes, %d aliases, want 5, 5", d.MailboxCount, d.AliasCount)
	}
	c.counts(a.ID, "example.com", 5, 5)
}

// ctlContextDone: a method called with a done context answers the
// context's error and changes nothing.
func ctlContextDone(t *testing.T, open Open) {
	c := newCtl(t, open)
	a := c.partner("a")
	c.domain(a.ID, "example.com", ctlStarter, 0, 0)
	c.mailbox(a.ID, "example.com", "john@example.com")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	before := ctlJSON(t, c.getDomain(a.ID, "example.com"))
	for _, tc := range []struct {
		name string
		do   func() error
	}{
		{"CreatePartner", func() error { _, err := c.s.CreatePartner(ctx, "b", ctlNow); return err }},
		{"CreateDomain", func() error {
			_, err := c.s.CreateDomain(ctx, a.ID, mailstore.NewDomain{Name: "new.example", Plan: ctlStarter}, ctlNow)
			return err
		}},
		{"CreateMailbox", func() error {
			_, err := c.s.CreateMailbox(ctx, a.ID, "example.com", "new@example.com", ctlHash, ctlNow)
			return err
		}},
		{"CreateAlias", func() error {
			_, err := c.s.CreateAlias(ctx, a.ID, "example.com", "new@example.com", "john@example.com", ctlNow)
			return err
		}},
		{"ApplyPlan", func() error { _, err := c.s.ApplyPlan(ctx, a.ID, "example.com", ctlEnt); return err }},
		{"DeleteMailbox", func() error { return c.s.DeleteMailbox(ctx, a.ID, "john@example.com") }},
		{"DeleteDomain", func() error { return c.s.DeleteDomain(ctx, a.ID, "example.com", true) }},
		{"Domain", func() error { _, err := c.s.Domain(ctx, a.ID, "example.com"); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.do(); !errors.Is(err, context.Canceled) {
				t.Errorf("%s(done context) = %v, want context.Canceled", tc.name, err)
			}
		})
	}
	if after := ctlJSON(t, c.getDomain(a.ID, "example.com")); after != before {
		t.Errorf("Domain(example.com) after calls with a done context = %s, want %s", after, before)
	}
	if _, err := c.s.PartnerByName(c.ctx, "b"); !ctlIs(err, mailstore.ErrPartnerNotFound) {
		t.Errorf("PartnerByName(b) = %v, want ErrPartnerNotFound", err)
	}
	c.counts(a.ID, "example.com", 1, 0)
}
