package storetest

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// runClaims checks claims of one name by several partners: an unverified
// claim does not block another partner's, the mail plane sees one claim
// (the live one: mailstore.LiveClaim), the first verification ends the
// others, and deleting the live claim hands the name to the next.
func runClaims(t *testing.T, open Open) {
	t.Run("unverified_claims", func(t *testing.T) { claimsUnverified(t, open) })
	t.Run("verify_ends_others", func(t *testing.T) { claimsVerifyEnds(t, open) })
	t.Run("sole_proof", func(t *testing.T) { claimsSole(t, open) })
	t.Run("concurrent_verify", func(t *testing.T) { claimsConcurrentVerify(t, open) })
	t.Run("delete_live", func(t *testing.T) { claimsDeleteLive(t, open) })
}

const claimed = "victim.example"

// claimsOf makes partners a and b, each with a claim of claimed (a's
// first) holding info@ and the alias sales@ (to a destination of its
// own), and answers the partners and the claims.
func claimsOf(c *ctl) (a, b mailstore.Partner, da, db mailstore.Domain) {
	c.t.Helper()
	a, b = c.partner("a"), c.partner("b")
	da = c.domain(a.ID, claimed, ctlStarter, 0, 0)
	db = c.domain(b.ID, claimed, ctlStarter, 0, 0)
	c.mailbox(a.ID, claimed, "info@"+claimed)
	c.mailbox(b.ID, claimed, "info@"+claimed)
	c.alias(a.ID, claimed, "sales@"+claimed, "a@dest.example")
	c.alias(b.ID, claimed, "sales@"+claimed, "b@dest.example")
	return a, b, da, db
}

// wantLive checks that the mail plane sees claim d of claimed: its
// domain, its info@ mailbox, its sales@ alias.
func (c *ctl) wantLive(what string, d mailstore.Domain) {
	c.t.Helper()
	got, err := c.s.DomainByName(c.ctx, claimed)
	if err != nil || got.ID != d.ID {
		c.t.Errorf("%s: DomainByName() = id %d, %v; want partner %d's claim %d", what, got.ID, err, d.PartnerID, d.ID)
	}
	m, md, err := c.s.MailboxByEmail(c.ctx, "info@"+claimed)
	if err != nil || m.DomainID != d.ID || m.PartnerID != d.PartnerID || md.ID != d.ID {
		c.t.Errorf("MailboxByEmail(info@) = mailbox of domain %d (partner %d), domain %d, %v; want claim %d's",
			m.DomainID, m.PartnerID, md.ID, err, d.ID)
	}
	al, err := c.s.AliasBySource(c.ctx, "sales@"+claimed)
	if err != nil || al.DomainID != d.ID {
		c.t.Errorf("%s: AliasBySource(sales@) = alias of domain %d, %v; want claim %d's", what, al.DomainID, err, d.ID)
	}
}

func claimsUnverified(t *testing.T, open Open) {
	c := newCtl(t, open)
	a, b, da, db := claimsOf(c)
	if da.ID == db.ID || db.PartnerID != b.ID || db.Ended() || db.Verified {
		t.Fatalf("second claim = %+v, want a domain of its own for b, standing, unverified", db)
	}
	c.wantLive("two unverified claims", da)

	for _, tc := range []struct {
		name string
		do   func() error
		err  error
	}{
		{"own claim again", func() error {
			_, err := c.s.CreateDomain(c.ctx, b.ID, mailstore.NewDomain{Name: claimed, Plan: ctlStarter}, ctlNow)
			return err
		}, mailstore.ErrDomainExists},
		{"own mailbox again", func() error {
			_, err := c.s.CreateMailbox(c.ctx, b.ID, claimed, "info@"+claimed, ctlHash, ctlNow)
			return err
		}, mailstore.ErrEmailExists},
		{"alias on own mailbox", func() error {
			_, err := c.s.CreateAlias(c.ctx, b.ID, claimed, "info@"+claimed, "x@dest.example", ctlNow)
			return err
		}, mailstore.ErrAliasExists},
		{"mailbox on own alias", func() error {
			_, err := c.s.CreateMailbox(c.ctx, b.ID, claimed, "sales@"+claimed, ctlHash, ctlNow)
			return err
		}, mailstore.ErrEmailExists},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.do(); !ctlIs(err, tc.err) {
				t.Errorf("%s = %v, want %v", tc.name, err, tc.err)
			}
		})
	}

	// The API sees each partner's own claim.
	if got := c.getDomain(b.ID, claimed); got.ID != db.ID {
		t.Errorf("Domain(b) = %d, want b's claim %d", got.ID, db.ID)
	}
	for _, p := range []struct {
		pid int64
		d   mailstore.Domain
	}{{a.ID, da}, {b.ID, db}} {
		if m := c.getMailbox(p.pid, "info@"+claimed); m.DomainID != p.d.ID {
			t.Errorf("Mailbox(%d, info@) = of domain %d, want %d", p.pid, m.DomainID, p.d.ID)
		}
		if ms, n := c.mailboxes(p.pid, p.d.ID, mailstore.Page{}); n != 1 || len(ms) != 1 || ms[0].DomainID != p.d.ID {
			t.Errorf("Mailboxes(%d, %d) = %+v, %d; want its one", p.pid, p.d.ID, ms, n)
		}
	}
	// b's catch-all is inert: the live claim (a's) has none.
	c.alias(b.ID, claimed, "@"+claimed, "b@dest.example")
	if al, err := c.s.AliasBySource(c.ctx, "@"+claimed); !ctlIs(err, mailstore.ErrAliasNotFound) {
		t.Errorf("AliasBySource(catch-all of a claim not live) = %+v, %v; want ErrAliasNotFound", al, err)
	}
	// A mailbox only b's claim has is not found by the mail plane.
	c.mailbox(b.ID, claimed, "only-b@"+claimed)
	if _, _, err := c.s.MailboxByEmail(c.ctx, "only-b@"+claimed); !ctlIs(err, mailstore.ErrMailboxNotFound) {
		t.Errorf("MailboxByEmail(only-b@, claim not live) = %v, want ErrMailboxNotFound", err)
	}
	// Deleting b's objects touches nothing of a's.
	if err := c.s.DeleteMailbox(c.ctx, b.ID, "info@"+claimed); err != nil {
		t.Fatalf("DeleteMailbox(b, info@) = %v", err)
	}
	if err := c.s.DeleteAlias(c.ctx, b.ID, "sales@"+claimed); err != nil {
		t.Fatalf("DeleteAlias(b, sales@) = %v", err)
	}
	if m := c.getMailbox(a.ID, "info@"+claimed); m.DomainID != da.ID {
		t.Errorf("Mailbox(a, info@) after b deleted its own = domain %d, want %d", m.DomainID, da.ID)
	}
	if al, err := c.s.AliasBySource(c.ctx, "sales@"+claimed); err != nil || al.DomainID != da.ID {
		t.Errorf("AliasBySource(sales@) after b deleted its own = %+v, %v; want a's", al, err)
	}
	c.counts(b.ID, claimed, 1, 1)
	c.counts(a.ID, claimed, 1, 1)
}

func claimsVerifyEnds(t *testing.T, open Open) {
	c := newCtl(t, open)
	a, b, da, db := claimsOf(c)
	third := c.partner("third")
	hooks, _ := c.s.(mailstore.Webhooks)
	audit, _ := c.s.(mailstore.Audit)
	if hooks == nil || audit == nil {
		t.Fatalf("%T implements neither mailstore.Webhooks nor mailstore.Audit", c.s)
	}
	if _, err := hooks.CreateWebhook(c.ctx, a.ID, mailstore.Webhook{URL: "https://hooks.example/a",
		Events: []string{mailstore.EventDomainClaimEnded}, Secret: "s3cret"}, ctlNow); err != nil {
		t.Fatalf("CreateWebhook(a) = %v", err)
	}

	// b, the later claim, verifies: a's claim ends.
	got := c.setVerified(b.ID, claimed, true, ctlLater)
	if !got.Verified || got.ID != db.ID || got.Ended() {
		t.Fatalf("SetVerified(b) = %+v, want b's claim verified", got)
	}
	c.wantLive("after b's verification", db)
	ended := c.getDomain(a.ID, claimed)
	checkUTC(t, "a's claim ClaimEndedAt", ended.ClaimEndedAt, ctlLater.UTC().Truncate(time.Second))
	if ended.ID != da.ID || ended.Verified {
		t.Errorf("a's claim after b's verification = %+v, want it ended, unverified", ended)
	}
	if got := c.getDomain(b.ID, claimed); got.Ended() {
		t.Errorf("b's claim ClaimEndedAt = %v, want none", got.ClaimEndedAt)
	}
	// a still reads its claim and its objects.
	if m := c.getMailbox(a.ID, "info@"+claimed); m.DomainID != da.ID {
		t.Errorf("Mailbox(a, info@) after its claim ended = domain %d, want %d", m.DomainID, da.ID)
	}
	if ds, n, err := c.s.Domains(c.ctx, a.ID, mailstore.Page{}); err != nil || n != 1 || len(ds) != 1 || !ds[0].Ended() {
		t.Errorf("Domains(a) = %+v, %d, %v; want its ended claim", ds, n, err)
	}
	if als, n := c.aliases(a.ID, da.ID, mailstore.Page{}); n != 1 || len(als) != 1 {
		t.Errorf("Aliases(a) after its claim ended = %+v, %d; want its one", als, n)
	}

	// The event and the audit entry, a's; b's log has none.
	ds, err := hooks.ClaimWebhookDeliveries(c.ctx, time.Now().Add(time.Hour), time.Minute, 100)
	if err != nil {
		t.Fatalf("ClaimWebhookDeliveries = %v", err)
	}
	var types []string
	for _, d := range ds {
		types = append(types, d.Event.Type)
		if d.Event.PartnerID != a.ID {
			t.Errorf("event %+v, want a's", d.Event)
		}
	}
	if !slices.Equal(types, []string{mailstore.EventDomainClaimEnded}) {
		t.Errorf("events due to a's webhook = %v, want one %s", types, mailstore.EventDomainClaimEnded)
	}
	es, _, err := audit.AuditEntries(c.ctx, a.ID, mailstore.Page{})
	want := mailstore.NewClaimEndedAudit(ended, ctlLater)
	if err != nil || len(es) != 1 || es[0].Method != want.Method || es[0].Route != want.Route ||
		es[0].Object != claimed || es[0].Status != want.Status || !es[0].Time.Equal(want.Time) {
		t.Errorf("AuditEntries(a) = %+v, %v; want one %+v", es, err, want)
	}
	if es, _, _ := audit.AuditEntries(c.ctx, b.ID, mailstore.Page{}); len(es) != 0 {
		t.Errorf("AuditEntries(b) = %+v, want none", es)
	}

	for _, tc := range []struct {
		name string
		do   func() error
		err  error
	}{
		{"a new claim of a name verified by another", func() error {
			_, err := c.s.CreateDomain(c.ctx, third.ID, mailstore.NewDomain{Name: claimed, Plan: ctlStarter}, ctlNow)
			return err
		}, mailstore.ErrDomainExists},
		{"the ended claim again", func() error {
			_, err := c.s.CreateDomain(c.ctx, a.ID, mailstore.NewDomain{Name: claimed, Plan: ctlStarter}, ctlNow)
			return err
		}, mailstore.ErrDomainExists},
		{"the ended claim verified", func() error {
			_, err := c.s.SetVerified(c.ctx, a.ID, claimed, true, ctlLater)
			return err
		}, mailstore.ErrDomainOwned},
		{"the ended claim verified by a sole proof", func() error {
			_, err := c.s.SetVerifiedSole(c.ctx, a.ID, claimed, ctlLater)
			return err
		}, mailstore.ErrDomainOwned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.do(); !ctlIs(err, tc.err) {
				t.Errorf("%s = %v, want %v", tc.name, err, tc.err)
			}
			c.wantLive("after a refused "+tc.name, db)
			if got := c.getDomain(a.ID, claimed); got.Verified || !got.Ended() {
				t.Errorf("a's claim after %s = %+v, want it ended", tc.name, got)
			}
		})
	}

	// Losing the proof keeps b's claim live, and a's ended: a later
	// claim does not displace it either.
	c.setVerified(b.ID, claimed, false, ctlLater)
	c.wantLive("after b lost its proof", db)
	if got := c.getDomain(a.ID, claimed); !got.Ended() {
		t.Errorf("a's claim after b lost its proof = %+v, want it still ended", got)
	}
	dt := c.domain(third.ID, claimed, ctlStarter, 0, 0)
	c.wantLive("after a third claim", db)

	// Now the name has no verified owner: a's proof wins it back, ends
	// the others (b's and the third's), and a's claim stands again.
	got = c.setVerified(a.ID, claimed, true, ctlLater.Add(time.Hour))
	if got.Ended() || !got.Verified {
		t.Errorf("SetVerified(a) on its ended claim = %+v, want it verified, standing", got)
	}
	c.wantLive("after a's verification", da)
	for _, p := range []int64{b.ID, third.ID} {
		if got := c.getDomain(p, claimed); !got.Ended() || got.Verified {
			t.Errorf("claim of partner %d after a's verification = %+v, want it ended", p, got)
		}
	}
	_ = dt

	// a deletes its objects and its claim: every other claim has ended,
	// so the name is hosted no more.
	if err := c.s.DeleteDomain(c.ctx, a.ID, claimed, true); err != nil {
		t.Fatalf("DeleteDomain(a, force) = %v", err)
	}
	if _, err := c.s.DomainByName(c.ctx, claimed); !ctlIs(err, mailstore.ErrDomainNotFound) {
		t.Errorf("DomainByName() with every claim ended = %v, want ErrDomainNotFound", err)
	}
	if _, _, err := c.s.MailboxByEmail(c.ctx, "info@"+claimed); !ctlIs(err, mailstore.ErrMailboxNotFound) {
		t.Errorf("MailboxByEmail(info@) with every claim ended = %v, want ErrMailboxNotFound", err)
	}
	// b's ended claim stands again by b's proof.
	c.setVerified(b.ID, claimed, true, ctlLater.Add(2*time.Hour))
	c.wantLive("after b's verification of its ended claim", db)
}

func claimsSole(t *testing.T, open Open) {
	c := newCtl(t, open)
	a, b, da, db := claimsOf(c)
	for _, p := range []int64{a.ID, b.ID} {
		if _, err := c.s.SetVerifiedSole(c.ctx, p, claimed, ctlNow); !ctlIs(err, mailstore.ErrDomainShared) {
			t.Errorf("SetVerifiedSole(%d) with two claims = %v, want ErrDomainShared", p, err)
		}
	}
	if got := c.getDomain(b.ID, claimed); got.Verified {
		t.Errorf("b's claim after a refused SetVerifiedSole = %+v, want unverified", got)
	}
	c.wantLive("after refused sole proofs", da)

	// Alone, a sole proof wins.
	if err := c.s.DeleteDomain(c.ctx, a.ID, claimed, true); err != nil {
		t.Fatalf("DeleteDomain(a) = %v", err)
	}
	c.wantLive("after a's claim was deleted", db)
	got, err := c.s.SetVerifiedSole(c.ctx, b.ID, claimed, ctlNow)
	if err != nil || !got.Verified {
		t.Fatalf("SetVerifiedSole(b, alone) = %+v, %v; want verified", got, err)
	}
	// Verified already, it keeps the name by it.
	if got, err = c.s.SetVerifiedSole(c.ctx, b.ID, claimed, ctlLater); err != nil || !got.Verified {
		t.Errorf("SetVerifiedSole(b) again = %+v, %v; want verified", got, err)
	}
	if _, err := c.s.SetVerifiedSole(c.ctx, a.ID, claimed, ctlNow); !ctlIs(err, mailstore.ErrDomainNotFound) {
		t.Errorf("SetVerifiedSole(a, no claim) = %v, want ErrDomainNotFound", err)
	}
}

func claimsConcurrentVerify(t *testing.T, open Open) {
	c := newCtl(t, open)
	var ps []mailstore.Partner
	for _, n := range []string{"a", "b", "c", "d"} {
		p := c.partner(n)
		c.domain(p.ID, claimed, ctlStarter, 0, 0)
		c.mailbox(p.ID, claimed, "info@"+claimed)
		ps = append(ps, p)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(ps))
	for i, p := range ps {
		wg.Go(func() {
			_, errs[i] = c.s.SetVerified(c.ctx, p.ID, claimed, true, ctlNow)
		})
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("SetVerified by partners %d and %d both succeeded, want one", ps[winner].ID, ps[i].ID)
		case err == nil:
			winner = i
		case !errors.Is(err, mailstore.ErrDomainOwned):
			t.Errorf("SetVerified by partner %d = %v, want nil or ErrDomainOwned", ps[i].ID, err)
		}
	}
	if winner < 0 {
		t.Fatalf("SetVerified raced by %d partners: none succeeded (%v)", len(ps), errs)
	}
	for i, p := range ps {
		d := c.getDomain(p.ID, claimed)
		if i == winner && (!d.Verified || d.Ended()) || i != winner && (d.Verified || !d.Ended()) {
			t.Errorf("claim of partner %d = verified %v, ended %v; winner is %d", p.ID, d.Verified, d.Ended(), ps[winner].ID)
		}
	}
	if m, _, err := c.s.MailboxByEmail(c.ctx, "info@"+claimed); err != nil || m.PartnerID != ps[winner].ID {
		t.Errorf("MailboxByEmail(info@) = partner %d's, %v; want the winner's (%d)", m.PartnerID, err, ps[winner].ID)
	}
}

func claimsDeleteLive(t *testing.T, open Open) {
	c := newCtl(t, open)
	var ds []mailstore.Domain
	var ps []mailstore.Partner
	for _, n := range []string{"a", "b", "c"} {
		p := c.partner(n)
		ps = append(ps, p)
		ds = append(ds, c.domain(p.ID, claimed, ctlStarter, 0, 0))
		c.mailbox(p.ID, claimed, "info@"+claimed)
		c.alias(p.ID, claimed, "sales@"+claimed, n+"@dest.example")
	}
	c.wantLive("three claims", ds[0])
	// Deleting a claim that is not live changes nothing.
	if err := c.s.DeleteDomain(c.ctx, ps[1].ID, claimed, true); err != nil {
		t.Fatalf("DeleteDomain(b) = %v", err)
	}
	c.wantLive("after b's claim was deleted", ds[0])
	// Deleting the live claim promotes the next oldest.
	if err := c.s.DeleteDomain(c.ctx, ps[0].ID, claimed, true); err != nil {
		t.Fatalf("DeleteDomain(a) = %v", err)
	}
	c.wantLive("after a's (live) claim was deleted", ds[2])
	// A new claim by a is later than c's.
	c.domain(ps[0].ID, claimed, ctlStarter, 0, 0)
	c.wantLive("after a claimed again", ds[2])
	if err := c.s.DeleteDomain(c.ctx, ps[2].ID, claimed, true); err != nil {
		t.Fatalf("DeleteDomain(c) = %v", err)
	}
	if got, err := c.s.DomainByName(c.ctx, claimed); err != nil || got.PartnerID != ps[0].ID {
		t.Errorf("DomainByName() after c's claim was deleted = %+v, %v; want a's new claim", got, err)
	}
	if _, _, err := c.s.MailboxByEmail(c.ctx, "info@"+claimed); !ctlIs(err, mailstore.ErrMailboxNotFound) {
		t.Errorf("MailboxByEmail(info@) in a's new, empty claim = %v, want ErrMailboxNotFound", err)
	}
}
