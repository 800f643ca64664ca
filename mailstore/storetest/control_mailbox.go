package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

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
