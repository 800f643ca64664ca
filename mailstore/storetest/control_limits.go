package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/mailhost/mailhost/mailstore"
)

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
			// A page of one as well: a store that keeps the totals as
			// counters stops at the page's end.
			for _, pg := range []mailstore.Page{{}, {Limit: 1}} {
				if _, n := c.mailboxes(a.ID, 0, pg); n != st.allBoxes {
					t.Errorf("Mailboxes(all, limit %d) total = %d, want %d", pg.Limit, n, st.allBoxes)
				}
				if _, n := c.aliases(a.ID, 0, pg); n != st.allAliases {
					t.Errorf("Aliases(all, limit %d) total = %d, want %d", pg.Limit, n, st.allAliases)
				}
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
