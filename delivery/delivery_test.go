package delivery

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailauth"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
)

// testNow is the clock of every test: the month of transfer checks and
// the SRS timestamps.
var testNow = time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)

var testSRS = &mailauth.SRS{Secret: []byte("test secret"), Now: func() time.Time { return testNow }}

// srsFrom is the SRS address sender gets when mail is forwarded on
// behalf of domain.
func srsFrom(sender, domain string) string {
	a, err := testSRS.Forward(sender, domain)
	if err != nil {
		panic(err)
	}
	return a
}

// fixture is a real store in t.TempDir():
//
//	a.test      verified; bob, carol, full (1 MB quota, full); aliases info -> bob,
//	            fwd -> someone@remote.test, loop1 <-> loop2,
//	            x -> nobody@a.test, tofull -> full
//	b.test      dave; catch-all @b.test -> dave; not verified
//	capped.test cap; has used its 1 MB transfer cap this month
//	susp.test   sue; suspended
//	            and an alias toeve@a.test -> eve@other.test
//
// and of a second partner, other:
//
//	other.test    eve; not verified
//	verified.test vic; verified
//
// Mailboxes of a.test have a 1 MB quota, so a SIZE= of 2 MB is too much.
type fixture struct {
	t       testing.TB
	st      *boltstore.Store
	partner int64
	domains map[string]mailstore.Domain
	boxes   map[string]mailstore.Mailbox
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	ctx := context.Background()
	st, err := boltstore.Open(ctx, t.TempDir(), boltstore.Options{})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	p, err := st.CreatePartner(ctx, "acme", testNow)
	if err != nil {
		t.Fatalf("create partner: %v", err)
	}
	f := &fixture{t: t, st: st, partner: p.ID, domains: map[string]mailstore.Domain{}, boxes: map[string]mailstore.Mailbox{}}
	for _, d := range []struct {
		name           string
		quotaMB, capMB int64
	}{{"a.test", 1, 1000}, {"b.test", 10, 1000}, {"capped.test", 10, 1}, {"susp.test", 10, 1000}} {
		plan := mailstore.Plan{Name: "test", QuotaMB: d.quotaMB, RetentionDays: 30, TransferMonthlyMB: d.capMB}
		dom, err := st.CreateDomain(ctx, p.ID, mailstore.NewDomain{Name: d.name, Plan: plan}, testNow)
		if err != nil {
			t.Fatalf("create domain %s: %v", d.name, err)
		}
		f.domains[d.name] = dom
	}
	for _, m := range []string{"bob@a.test", "carol@a.test", "full@a.test", "dave@b.test", "cap@capped.test", "sue@susp.test"} {
		mb, err := st.CreateMailbox(ctx, p.ID, m[strings.IndexByte(m, '@')+1:], m, "not a hash", testNow)
		if err != nil {
			t.Fatalf("create mailbox %s: %v", m, err)
		}
		f.boxes[m] = mb
	}
	for _, a := range [][2]string{
		{"info@a.test", "bob@a.test"},
		{"fwd@a.test", "someone@remote.test"},
		{"loop1@a.test", "loop2@a.test"},
		{"loop2@a.test", "loop1@a.test"},
		{"x@a.test", "nobody@a.test"},
		{"tofull@a.test", "full@a.test"},
		{"@b.test", "dave@b.test"},
	} {
		if _, err := st.CreateAlias(ctx, p.ID, a[0][strings.IndexByte(a[0], '@')+1:], a[0], a[1], testNow); err != nil {
			t.Fatalf("create alias %s: %v", a[0], err)
		}
	}
	other, err := st.CreatePartner(ctx, "other", testNow)
	if err != nil {
		t.Fatalf("create partner: %v", err)
	}
	for _, d := range []string{"other.test", "verified.test"} {
		plan := mailstore.Plan{Name: "test", QuotaMB: 10, RetentionDays: 30, TransferMonthlyMB: 1000}
		dom, err := st.CreateDomain(ctx, other.ID, mailstore.NewDomain{Name: d, Plan: plan}, testNow)
		if err != nil {
			t.Fatalf("create domain %s: %v", d, err)
		}
		f.domains[d] = dom
		mb, err := st.CreateMailbox(ctx, other.ID, d, map[string]string{"other.test": "eve@other.test", "verified.test": "vic@verified.test"}[d], "not a hash", testNow)
		if err != nil {
			t.Fatalf("create mailbox in %s: %v", d, err)
		}
		f.boxes[mb.Email] = mb
	}
	if _, err := st.SetVerified(ctx, other.ID, "verified.test", true, testNow); err != nil {
		t.Fatalf("verify: %v", err)
	}
	// bob's domain is verified, so that bob sends anywhere
	// (policy.MayReach); b.test is not.
	if f.domains["a.test"], err = st.SetVerified(ctx, p.ID, "a.test", true, testNow); err != nil {
		t.Fatalf("verify: %v", err)
	}
	if _, err := st.CreateAlias(ctx, p.ID, "a.test", "toeve@a.test", "eve@other.test", testNow); err != nil {
		t.Fatalf("create alias: %v", err)
	}
	// 1 MiB fills full@a.test's quota and capped.test's cap.
	for _, m := range []string{"full@a.test", "cap@capped.test"} {
		f.deliver(m, mailstore.MB)
	}
	if _, err := st.SetSuspended(ctx, p.ID, "susp.test", true); err != nil {
		t.Fatalf("suspend: %v", err)
	}
	// Read again: quotas and used bytes changed.
	for m := range f.boxes {
		f.boxes[m] = f.mailbox(m)
	}
	return f
}

func (f *fixture) mailbox(email string) mailstore.Mailbox {
	f.t.Helper()
	mb, _, err := f.st.MailboxByEmail(context.Background(), email)
	if err != nil {
		f.t.Fatalf("mailbox %s: %v", email, err)
	}
	return mb
}

// deliver stores a message of size bytes for email, outside any
// transaction under test.
func (f *fixture) deliver(email string, size int) {
	f.t.Helper()
	d := mailstore.Delivery{Body: []byte(strings.Repeat("x", size)), ReceivedAt: testNow, MailboxIDs: []int64{f.boxes[email].ID}}
	if _, err := f.st.Deliver(context.Background(), d); err != nil {
		f.t.Fatalf("deliver to %s: %v", email, err)
	}
}

func (f *fixture) agent(refuseOverCap, noSRS bool) *Agent {
	cfg := Config{Store: f.st, SRS: testSRS, RefuseInboundOverCap: refuseOverCap, Now: func() time.Time { return testNow }}
	if noSRS {
		cfg.SRS = nil
	}
	return New(cfg)
}

// start begins a transaction of mode: MX and Forward from from, a
// submission by bob@a.test as from.
func (f *fixture) start(a *Agent, mode Mode, from string, size int64) *Transaction {
	f.t.Helper()
	switch mode {
	case MX:
		return a.StartMX(from, size)
	case Submission:
		tx, err := a.StartSubmission(context.Background(), f.boxes["bob@a.test"], from, size)
		if err != nil {
			f.t.Fatalf("StartSubmission: %v", err)
		}
		return tx
	case Forward:
		kind := mailstore.KindForward
		if from == "" {
			kind = mailstore.KindBounce
		}
		// Queued for a.test (its user's submission, its alias's
		// forward): the fixture's partner, whose domains are unverified.
		tx, err := a.StartForward(context.Background(), mailstore.Outbound{Kind: kind, DomainID: f.domains["a.test"].ID, From: from, Size: size})
		if err != nil {
			f.t.Fatalf("StartForward: %v", err)
		}
		return tx
	}
	f.t.Fatalf("mode %v", mode)
	return nil
}

// relay is an expected queue part, the domain by name ("" for none).
type relay struct {
	kind         mailstore.OutboundKind
	domain, from string
	to           []string
}

func (f *fixture) relays(rs []relay) []mailstore.Relay {
	var out []mailstore.Relay
	for _, r := range rs {
		out = append(out, mailstore.Relay{Kind: r.kind, DomainID: f.domains[r.domain].ID, From: r.from, To: r.to})
	}
	return out
}

// TestAddRecipient: which recipients each mode takes, where they lead,
// and the typed outcome of those it does not.
func TestAddRecipient(t *testing.T) {
	f := newFixture(t)
	bounceTo := func(orig string) string {
		a, err := testSRS.Forward(orig, "a.test")
		if err != nil {
			t.Fatal(err)
		}
		return strings.ToLower(a)
	}
	forged := "srs0=aaaaaaaa=tt=elsewhere.test=joe@a.test"
	for _, tc := range []struct {
		name          string
		mode          Mode
		from          string
		size          int64
		rcpt          string
		raw           string // as the client wrote it; "" means rcpt
		refuseOverCap bool
		noSRS         bool

		want      *Refusal // nil: accepted
		mailboxes []string
		relay     []relay
		remote    int // Forward: destinations made relays at Commit
	}{
		// The MX.
		{name: "mx mailbox", mode: MX, from: "joe@elsewhere.test", rcpt: "bob@a.test", mailboxes: []string{"bob@a.test"}},
		{name: "mx alias", mode: MX, from: "joe@elsewhere.test", rcpt: "info@a.test", mailboxes: []string{"bob@a.test"}},
		{name: "mx catch-all", mode: MX, from: "joe@elsewhere.test", rcpt: "anyone@b.test", mailboxes: []string{"dave@b.test"}},
		{name: "mx unknown user", mode: MX, from: "joe@elsewhere.test", rcpt: "nobody@a.test", want: ErrUnknownRecipient},
		{name: "mx alias to an unknown user", mode: MX, from: "joe@elsewhere.test", rcpt: "x@a.test", want: ErrUnknownRecipient},
		{name: "mx domain not hosted", mode: MX, from: "joe@elsewhere.test", rcpt: "joe@remote.test", want: ErrNotHosted},
		{name: "mx alias loop", mode: MX, from: "joe@elsewhere.test", rcpt: "loop1@a.test", want: ErrAliasLoop},
		{name: "mx full mailbox", mode: MX, from: "joe@elsewhere.test", rcpt: "full@a.test", want: ErrOverQuota},
		{name: "mx alias to a full mailbox", mode: MX, from: "joe@elsewhere.test", rcpt: "tofull@a.test", want: ErrOverQuota},
		{name: "mx SIZE= over the room left", mode: MX, from: "joe@elsewhere.test", size: 2 * mailstore.MB, rcpt: "bob@a.test", want: ErrOverQuota},
		{name: "mx SIZE= within the room left", mode: MX, from: "joe@elsewhere.test", size: mailstore.MB / 2, rcpt: "bob@a.test", mailboxes: []string{"bob@a.test"}},
		{name: "mx forward with SRS", mode: MX, from: "joe@elsewhere.test", rcpt: "fwd@a.test",
			relay: []relay{{mailstore.KindForward, "a.test", srsFrom("joe@elsewhere.test", "a.test"), []string{"someone@remote.test"}}}},
		{name: "mx forward of the null sender", mode: MX, from: "", rcpt: "fwd@a.test",
			relay: []relay{{mailstore.KindForward, "a.test", "", []string{"someone@remote.test"}}}},
		{name: "mx forward without SRS", mode: MX, from: "joe@elsewhere.test", rcpt: "fwd@a.test", noSRS: true, want: ErrNeedsRelay},
		{name: "mx domain at its cap, received by default", mode: MX, from: "joe@elsewhere.test", rcpt: "cap@capped.test", mailboxes: []string{"cap@capped.test"}},
		{name: "mx domain at its cap, refused when configured", mode: MX, from: "joe@elsewhere.test", rcpt: "cap@capped.test", refuseOverCap: true, want: ErrTransferCapReached},
		{name: "mx domain under its cap, configured", mode: MX, from: "joe@elsewhere.test", rcpt: "bob@a.test", refuseOverCap: true, mailboxes: []string{"bob@a.test"}},
		{name: "mx suspended domain still receives", mode: MX, from: "joe@elsewhere.test", rcpt: "sue@susp.test", mailboxes: []string{"sue@susp.test"}},
		{name: "mx SRS address with a sender", mode: MX, from: "joe@elsewhere.test", rcpt: bounceTo("Joe@remote.test"), want: ErrSRSNotBounce},
		{name: "mx forged SRS address", mode: MX, from: "", rcpt: forged, want: ErrBadSRS},
		{name: "mx bounce to a remote original sender", mode: MX, from: "",
			rcpt: bounceTo("Joe@remote.test"), raw: srsFrom("Joe@remote.test", "a.test"),
			relay: []relay{{mailstore.KindBounce, "a.test", "", []string{"Joe@remote.test"}}}},
		{name: "mx bounce to a hosted original sender", mode: MX, from: "",
			rcpt: bounceTo("dave@b.test"), mailboxes: []string{"dave@b.test"}},
		{name: "mx SRS address at a domain not hosted", mode: MX, from: "", rcpt: "srs0=aaaaaaaa=tt=x.test=joe@remote.test", want: ErrNotHosted},
		{name: "mx SRS address without SRS configured", mode: MX, from: "", rcpt: forged, noSRS: true, want: ErrUnknownRecipient},

		// Another partner's domain, not verified: mail from
		// outside is delivered, mail from acme's users and aliases leaves
		// as for a domain not hosted here.
		{name: "mx to another partner's unverified domain", mode: MX, from: "joe@elsewhere.test", rcpt: "eve@other.test", mailboxes: []string{"eve@other.test"}},
		{name: "mx alias to another partner's unverified domain forwards", mode: MX, from: "joe@elsewhere.test", rcpt: "toeve@a.test",
			relay: []relay{{mailstore.KindForward, "a.test", srsFrom("joe@elsewhere.test", "a.test"), []string{"eve@other.test"}}}},
		{name: "mx bounce to a sender in another partner's unverified domain leaves", mode: MX, from: "",
			rcpt: bounceTo("eve@other.test"), relay: []relay{{mailstore.KindBounce, "a.test", "", []string{"eve@other.test"}}}},
		{name: "mx bounce to a sender in another partner's verified domain", mode: MX, from: "",
			rcpt: bounceTo("vic@verified.test"), mailboxes: []string{"vic@verified.test"}},
		{name: "submission to another partner's unverified domain leaves", mode: Submission, from: "bob@a.test", rcpt: "eve@other.test",
			relay: []relay{{mailstore.KindSubmission, "a.test", "bob@a.test", []string{"eve@other.test"}}}},
		{name: "submission to another partner's verified domain", mode: Submission, from: "bob@a.test", rcpt: "vic@verified.test",
			mailboxes: []string{"vic@verified.test"}},
		{name: "submission through an alias to another partner's unverified domain", mode: Submission, from: "bob@a.test", rcpt: "toeve@a.test",
			relay: []relay{{mailstore.KindSubmission, "a.test", "bob@a.test", []string{"eve@other.test"}}}},
		{name: "submission to the own partner's unverified domain", mode: Submission, from: "bob@a.test", rcpt: "dave@b.test", mailboxes: []string{"dave@b.test"}},
		{name: "forward to another partner's unverified domain goes out next attempt", mode: Forward, from: "joe@elsewhere.test", rcpt: "eve@other.test", want: ErrNoLongerHosted},
		{name: "forward through an alias to another partner's unverified domain", mode: Forward, from: "joe@elsewhere.test", rcpt: "toeve@a.test", remote: 1},
		{name: "forward to another partner's verified domain", mode: Forward, from: "joe@elsewhere.test", rcpt: "vic@verified.test", mailboxes: []string{"vic@verified.test"}},

		// Submission, by bob@a.test.
		{name: "submission to a domain not hosted", mode: Submission, from: "bob@a.test", rcpt: "joe@remote.test",
			relay: []relay{{mailstore.KindSubmission, "a.test", "bob@a.test", []string{"joe@remote.test"}}}},
		{name: "submission to a hosted mailbox", mode: Submission, from: "bob@a.test", rcpt: "dave@b.test", mailboxes: []string{"dave@b.test"}},
		{name: "submission unknown user", mode: Submission, from: "bob@a.test", rcpt: "nobody@a.test", want: ErrUnknownRecipient},
		{name: "submission full mailbox", mode: Submission, from: "bob@a.test", rcpt: "full@a.test", want: ErrOverQuota},
		{name: "submission alias loop", mode: Submission, from: "bob@a.test", rcpt: "loop2@a.test", want: ErrAliasLoop},
		{name: "submission through a forwarding alias, no SRS", mode: Submission, from: "bob@a.test", rcpt: "fwd@a.test", noSRS: true,
			relay: []relay{{mailstore.KindSubmission, "a.test", "bob@a.test", []string{"someone@remote.test"}}}},
		{name: "submission to a domain at its cap, configured", mode: Submission, from: "bob@a.test", rcpt: "cap@capped.test", refuseOverCap: true,
			mailboxes: []string{"cap@capped.test"}},
		{name: "submission to an SRS address is an address", mode: Submission, from: "bob@a.test", rcpt: bounceTo("joe@remote.test"), want: ErrUnknownRecipient},

		// Forward: a queued message delivered here.
		{name: "forward mailbox", mode: Forward, from: "joe@elsewhere.test", size: 100, rcpt: "bob@a.test", mailboxes: []string{"bob@a.test"}},
		{name: "forward domain no longer hosted", mode: Forward, from: "joe@elsewhere.test", rcpt: "joe@remote.test", want: ErrNoLongerHosted},
		{name: "forward unknown user", mode: Forward, from: "joe@elsewhere.test", rcpt: "nobody@a.test", want: ErrUnknownRecipient},
		{name: "forward entry too big for the room left", mode: Forward, from: "joe@elsewhere.test", size: 2 * mailstore.MB, rcpt: "bob@a.test", want: ErrOverQuota},
		{name: "forward alias loop", mode: Forward, from: "joe@elsewhere.test", rcpt: "loop1@a.test", want: ErrAliasLoop},
		{name: "forward through an alias", mode: Forward, from: "joe@elsewhere.test", rcpt: "fwd@a.test", remote: 1},
		{name: "forward domain at its cap, received by default", mode: Forward, from: "joe@elsewhere.test", rcpt: "cap@capped.test",
			mailboxes: []string{"cap@capped.test"}},
		{name: "forward domain at its cap, refused when configured", mode: Forward, from: "joe@elsewhere.test", rcpt: "cap@capped.test", refuseOverCap: true,
			want: ErrTransferCapReached},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tx := f.start(f.agent(tc.refuseOverCap, tc.noSRS), tc.mode, tc.from, tc.size)
			raw := tc.raw
			if raw == "" {
				raw = tc.rcpt
			}
			err := tx.AddRecipient(context.Background(), tc.rcpt, raw)
			if tc.want != nil {
				if !errors.Is(err, tc.want) {
					t.Fatalf("AddRecipient(%s) = %v, want %v", tc.rcpt, err, tc.want)
				}
				if got := Temporary(err); got != tc.want.Temporary() {
					t.Errorf("Temporary(%v) = %v, want %v", err, got, tc.want.Temporary())
				}
				if !tx.Empty() || len(tx.Recipients()) != 0 {
					t.Errorf("after a refusal the transaction has %d recipients, %d mailboxes, %d remote, want none",
						len(tx.Recipients()), len(tx.Mailboxes()), tx.Remote())
				}
				return
			}
			if err != nil {
				t.Fatalf("AddRecipient(%s) = %v, want accepted", tc.rcpt, err)
			}
			var got []string
			for _, m := range tx.Mailboxes() {
				got = append(got, m.Email)
			}
			if !slices.Equal(got, tc.mailboxes) {
				t.Errorf("mailboxes = %v, want %v", got, tc.mailboxes)
			}
			if want := f.relays(tc.relay); !slices.EqualFunc(tx.relay, want, relayEqual) {
				t.Errorf("relay = %+v, want %+v", tx.relay, want)
			}
			if tc.remote > 0 && tx.Remote() != tc.remote {
				t.Errorf("Remote() = %d, want %d", tx.Remote(), tc.remote)
			}
			if rs := tx.Recipients(); len(rs) != 1 || rs[0].Address != tc.rcpt {
				t.Errorf("Recipients() = %+v, want %s alone", rs, tc.rcpt)
			}
		})
	}
}

// TestRoutesHere: a queue entry whose destination is hosted here is
// delivered here unless another partner hosts it unverified; the queue's
// own bounces (no domain) and entries of a deleted domain are delivered
// here to verified domains only.
func TestRoutesHere(t *testing.T) {
	f := newFixture(t)
	a := f.agent(false, false)
	for _, tc := range []struct {
		name        string
		domain      string // the entry's domain; "" for none
		deletedID   bool
		destination string
		want        bool
	}{
		{"not hosted", "a.test", false, "remote.test", false},
		{"own partner's domain", "a.test", false, "b.test", true},
		{"another partner's unverified domain", "a.test", false, "other.test", false},
		{"another partner's verified domain", "a.test", false, "verified.test", true},
		{"the other partner's own entry", "verified.test", false, "other.test", true},
		{"the queue's own bounce, unverified", "", false, "other.test", false},
		{"the queue's own bounce, verified", "", false, "verified.test", true},
		{"a deleted domain's entry, unverified", "", true, "b.test", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := mailstore.Outbound{Kind: mailstore.KindSubmission, DomainID: f.domains[tc.domain].ID, Destination: tc.destination}
			if tc.deletedID {
				e.DomainID = 1 << 40
			}
			got, err := a.RoutesHere(context.Background(), e)
			if err != nil || got != tc.want {
				t.Errorf("RoutesHere(domain %q to %s) = %v, %v, want %v", tc.domain, tc.destination, got, err, tc.want)
			}
		})
	}
}

func relayEqual(a, b mailstore.Relay) bool {
	return a.Kind == b.Kind && a.DomainID == b.DomainID && a.From == b.From && slices.Equal(a.To, b.To)
}

// TestStartSubmission: who may start a submission, and as which sender.
func TestStartSubmission(t *testing.T) {
	f := newFixture(t)
	a := f.agent(false, false)
	bob := f.boxes["bob@a.test"]
	for _, tc := range []struct {
		name string
		user mailstore.Mailbox
		from string
		want *Refusal // nil: started
		// wantFrom is the sender the transaction carries.
		wantFrom string
	}{
		{name: "own address", user: bob, from: "bob@a.test", wantFrom: "bob@a.test"},
		{name: "own address, other case", user: bob, from: "Bob@A.test", wantFrom: "bob@a.test"},
		{name: "alias that delivers to the user", user: bob, from: "info@a.test", wantFrom: "info@a.test"},
		{name: "null sender", user: bob, from: "", wantFrom: ""},
		{name: "another user's address", user: bob, from: "carol@a.test", want: ErrSenderNotOwned},
		{name: "an address only the catch-all takes", user: f.boxes["dave@b.test"], from: "ceo@b.test", want: ErrSenderNotOwned},
		{name: "not an address", user: bob, from: "bob", want: ErrBadSender},
		{name: "mailbox deleted", user: mailstore.Mailbox{ID: 999, Email: "ghost@a.test"}, from: "ghost@a.test", want: ErrAccountGone},
		{name: "mailbox deleted and its address taken again", user: mailstore.Mailbox{ID: 999, Email: "bob@a.test"}, from: "bob@a.test", want: ErrAccountGone},
		{name: "domain suspended", user: f.boxes["sue@susp.test"], from: "sue@susp.test", want: ErrDomainSuspended},
		{name: "domain at its transfer cap", user: f.boxes["cap@capped.test"], from: "cap@capped.test", want: ErrTransferCapReached},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tx, err := a.StartSubmission(context.Background(), tc.user, tc.from, 0)
			if tc.want != nil {
				if !errors.Is(err, tc.want) {
					t.Fatalf("StartSubmission(%s, %q) = %v, want %v", tc.user.Email, tc.from, err, tc.want)
				}
				if got := Temporary(err); got != tc.want.Temporary() {
					t.Errorf("Temporary(%v) = %v, want %v", err, got, tc.want.Temporary())
				}
				return
			}
			if err != nil {
				t.Fatalf("StartSubmission(%s, %q) = %v, want started", tc.user.Email, tc.from, err)
			}
			if tx.From() != tc.wantFrom || tx.User().ID != tc.user.ID || tx.Mode() != Submission {
				t.Errorf("transaction from %q, user %d, mode %v; want %q, %d, submission", tx.From(), tx.User().ID, tx.Mode(), tc.wantFrom, tc.user.ID)
			}
		})
	}
}

// TestCommit: what one Deliver stores and queues in each mode, and its
// outcomes.
func TestCommit(t *testing.T) {
	ctx := context.Background()
	body := []byte("Subject: hi\r\n\r\nhello\r\n")
	for _, tc := range []struct {
		name  string
		mode  Mode
		from  string
		rcpts []string
		// before runs after the recipients were accepted, before Commit.
		before func(f *fixture)

		want      *Refusal // nil: delivered
		delivered []string
		overQuota []string
		gone      []string
		queued    []relay // the queue entries made, by domain
	}{
		{name: "mx to mailboxes and a forward", mode: MX, from: "joe@elsewhere.test", rcpts: []string{"bob@a.test", "info@a.test", "fwd@a.test"},
			delivered: []string{"bob@a.test"},
			queued:    []relay{{mailstore.KindForward, "a.test", srsFrom("joe@elsewhere.test", "a.test"), []string{"someone@remote.test"}}}},
		{name: "mx every mailbox deleted meanwhile", mode: MX, from: "joe@elsewhere.test", rcpts: []string{"carol@a.test"},
			before: func(f *fixture) { f.deleteMailbox("carol@a.test") },
			want:   ErrGone, gone: []string{"carol@a.test"}},
		{name: "submission charged to a domain that reached its cap meanwhile", mode: Submission, from: "bob@a.test", rcpts: []string{"joe@remote.test"},
			before: func(f *fixture) { f.setCap("a.test", 1) },
			want:   ErrTransferCapReached},
		{name: "submission to a mailbox and a remote address", mode: Submission, from: "bob@a.test", rcpts: []string{"carol@a.test", "joe@remote.test"},
			delivered: []string{"carol@a.test"},
			queued:    []relay{{mailstore.KindSubmission, "a.test", "bob@a.test", []string{"joe@remote.test"}}}},
		{name: "forward through an alias, SRS sender", mode: Forward, from: "joe@elsewhere.test", rcpts: []string{"fwd@a.test", "bob@a.test"},
			delivered: []string{"bob@a.test"},
			queued:    []relay{{mailstore.KindForward, "a.test", srsFrom("joe@elsewhere.test", "a.test"), []string{"someone@remote.test"}}}},
		{name: "forward of a bounce stays a bounce, counted for no one", mode: Forward, from: "", rcpts: []string{"fwd@a.test"},
			queued: []relay{{mailstore.KindBounce, "", "", []string{"someone@remote.test"}}}},
		{name: "forward with one mailbox deleted meanwhile", mode: Forward, from: "joe@elsewhere.test", rcpts: []string{"bob@a.test", "carol@a.test"},
			before:    func(f *fixture) { f.deleteMailbox("carol@a.test") },
			delivered: []string{"bob@a.test"}, gone: []string{"carol@a.test"}},
		// The quota of concurrent deliveries (mailstore.Mail.Deliver):
		// another message filled the mailbox after its recipient was
		// accepted.
		{name: "mx to a mailbox filled meanwhile", mode: MX, from: "joe@elsewhere.test", rcpts: []string{"carol@a.test"},
			before: func(f *fixture) { f.deliver("carol@a.test", 1<<20) },
			want:   ErrOverQuota},
		{name: "mx to a mailbox filled meanwhile and another", mode: MX, from: "joe@elsewhere.test", rcpts: []string{"carol@a.test", "bob@a.test"},
			before:    func(f *fixture) { f.deliver("carol@a.test", 1<<20) },
			delivered: []string{"bob@a.test"}, overQuota: []string{"carol@a.test"},
			queued: []relay{{mailstore.KindLocal, "a.test", "joe@elsewhere.test", []string{"carol@a.test"}}}},
		{name: "submission to a mailbox filled meanwhile and a remote address", mode: Submission, from: "bob@a.test", rcpts: []string{"carol@a.test", "joe@remote.test"},
			before: func(f *fixture) { f.deliver("carol@a.test", 1<<20) },
			want:   ErrOverQuota},
		{name: "forward to a mailbox filled meanwhile", mode: Forward, from: "joe@elsewhere.test", rcpts: []string{"carol@a.test"},
			before: func(f *fixture) { f.deliver("carol@a.test", 1<<20) },
			want:   ErrOverQuota},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tx := f.start(f.agent(false, false), tc.mode, tc.from, 0)
			for _, r := range tc.rcpts {
				if err := tx.AddRecipient(ctx, r, r); err != nil {
					t.Fatalf("AddRecipient(%s) = %v", r, err)
				}
			}
			if tc.before != nil {
				tc.before(f)
			}
			res, err := tx.Commit(ctx, body, testNow)
			switch {
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("Commit = %v, want %v", err, tc.want)
			case tc.want == nil && err != nil:
				t.Fatalf("Commit = %v", err)
			}
			if tc.want == ErrTransferCapReached && !errors.Is(err, mailstore.ErrTransferCapReached) {
				t.Errorf("Commit = %v, want it to match mailstore.ErrTransferCapReached too", err)
			}
			if tc.want == ErrOverQuota && (!errors.Is(err, mailstore.ErrOverQuota) || !Temporary(err)) {
				t.Errorf("Commit = %v, want it temporary and matching mailstore.ErrOverQuota too", err)
			}
			var overQuota []int64
			for _, m := range tc.overQuota {
				overQuota = append(overQuota, f.boxes[m].ID)
			}
			if !slices.Equal(res.OverQuota, overQuota) {
				t.Errorf("OverQuota = %v, want %v (%v)", res.OverQuota, overQuota, tc.overQuota)
			}
			var want []int64
			for _, m := range tc.delivered {
				want = append(want, f.boxes[m].ID)
			}
			if !slices.Equal(res.Delivered, want) {
				t.Errorf("delivered to %v, want %v (%v)", res.Delivered, want, tc.delivered)
			}
			if !slices.Equal(res.Gone, tc.gone) {
				t.Errorf("Gone = %v, want %v", res.Gone, tc.gone)
			}
			entries, _, err := f.st.OutboundEntries(ctx, mailstore.Page{})
			if err != nil {
				t.Fatal(err)
			}
			var got []mailstore.Relay
			for _, e := range entries {
				r := mailstore.Relay{Kind: e.Kind, DomainID: e.DomainID, From: e.From}
				for _, rc := range e.Recipients {
					r.To = append(r.To, rc.Address)
				}
				got = append(got, r)
			}
			if want := f.relays(tc.queued); !slices.EqualFunc(got, want, relayEqual) {
				t.Errorf("queued %+v, want %+v", got, want)
			}
		})
	}
}

func (f *fixture) deleteMailbox(email string) {
	f.t.Helper()
	if err := f.st.DeleteMailbox(context.Background(), f.partner, email); err != nil {
		f.t.Fatalf("delete %s: %v", email, err)
	}
}

func (f *fixture) setCap(domain string, mb int64) {
	f.t.Helper()
	if _, err := f.st.SetTransferCap(context.Background(), f.partner, domain, mb); err != nil {
		f.t.Fatalf("set cap of %s: %v", domain, err)
	}
	// 1 MiB received for bob uses it.
	f.deliver("bob@a.test", mailstore.MB)
}

// TestRecipientGivenTwice: a recipient given twice is one recipient, its
// mailbox one copy.
func TestRecipientGivenTwice(t *testing.T) {
	f := newFixture(t)
	tx := f.agent(false, false).StartMX("joe@elsewhere.test", 0)
	for _, r := range []string{"bob@a.test", "info@a.test", "bob@a.test"} {
		if err := tx.AddRecipient(context.Background(), r, r); err != nil {
			t.Fatalf("AddRecipient(%s) = %v", r, err)
		}
	}
	if n := len(tx.Recipients()); n != 2 {
		t.Errorf("%d recipients, want 2 (bob, info)", n)
	}
	if ids := tx.MailboxIDs(); !slices.Equal(ids, []int64{f.boxes["bob@a.test"].ID}) {
		t.Errorf("MailboxIDs() = %v, want bob's alone", ids)
	}
}
