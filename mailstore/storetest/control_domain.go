package storetest

import (
	"fmt"
	"testing"

	"github.com/mailhost/mailhost/mailstore"
)

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
