package delivery

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/policy"
)

// Transaction is one message on its way: the recipients accepted so far
// and where each leads, then its delivery (Commit). It is not safe for
// concurrent use; a session adds recipients one at a time.
type Transaction struct {
	a    *Agent
	mode Mode
	from string // envelope sender: normalised for submission; "" for <>
	size int64  // announced (MX, submission) or known (forward); 0: none
	kind mailstore.OutboundKind
	// partner is the partner the mail comes from, for
	// policy.DeliverLocally: 0 for the MX, the user's for a submission,
	// the entry's for a Forward (Agent.EntryPartner).
	partner int64

	// Submission: the user and its domain, as read at the start.
	user   mailstore.Mailbox
	domain mailstore.Domain
	// unverified is the first domain the submission sends as (the
	// user's, the envelope sender's) that is not verified; the zero
	// Domain (Name "") when there is none. policy.MayReach holds its
	// recipients to the user's partner's mailboxes.
	unverified mailstore.Domain

	rcpts     []Recipient
	mailboxes []mailstore.Mailbox
	// relay are the remote destinations, grouped by kind, domain and
	// envelope sender, each address once in all of them (addRelay).
	relay []mailstore.Relay
	// forwards are a Forward's remote destinations, made relays at
	// Commit.
	forwards []forward
	// junk are the mailboxes that get the message in their Junk folder
	// (Filter).
	junk []int64
	// outside are the mailboxes of a submission that are another
	// partner's (policy.FromOutside): the message gets the MX's checks
	// for them (InboundChecks).
	outside []mailstore.Mailbox
}

// Recipient is an accepted recipient and where it leads.
type Recipient struct {
	// Address is the recipient as given to AddRecipient.
	Address string
	// MailboxIDs are the local mailboxes it reaches.
	MailboxIDs []int64
	// Remote: it also leads to remote addresses (queued).
	Remote bool
}

// forward is a remote alias destination and the hosted domain whose
// alias names it.
type forward struct {
	to  string
	via mailstore.Domain
}

// plan is where one recipient leads, applied to the transaction only once
// the whole recipient is accepted.
type plan struct {
	mailboxes []mailstore.Mailbox
	relays    []queued
	forwards  []forward
}

// remote are the plan's remote destinations.
func (p plan) remote() []string {
	var to []string
	for _, q := range p.relays {
		to = append(to, q.to)
	}
	for _, f := range p.forwards {
		to = append(to, f.to)
	}
	return to
}

type queued struct {
	kind     mailstore.OutboundKind
	domainID int64
	from, to string
}

// AddRecipient accepts addr, normalised (policy.NormalizeAddress; a
// Forward's recipients are taken as queued), or answers why not: a
// Refusal, or another error when a lookup failed (temporary). Nothing is
// added unless the whole recipient is accepted. raw is the address as
// the client wrote it: the MX reverses an SRS address from it, so that
// the original sender's local part keeps its case; "" for none.
func (t *Transaction) AddRecipient(ctx context.Context, addr, raw string) error {
	p, err := t.accept(ctx, addr, raw, t.partner)
	if err != nil {
		return err
	}
	if t.mode == Submission && t.unverified.Name != "" {
		if err := policy.MayReach(t.unverified, t.partner, p.mailboxes, p.remote()); err != nil {
			return &NotVerifiedError{Recipient: addr, Domain: t.unverified.Name, err: fmt.Errorf("%s: %w", addr, err)}
		}
	}
	r := Recipient{Address: addr, Remote: len(p.relays) > 0 || len(p.forwards) > 0}
	for _, m := range p.mailboxes {
		r.MailboxIDs = append(r.MailboxIDs, m.ID)
		if !slices.ContainsFunc(t.mailboxes, func(h mailstore.Mailbox) bool { return h.ID == m.ID }) {
			t.mailboxes = append(t.mailboxes, m)
			if t.mode == Submission && policy.FromOutside(t.partner, m) {
				t.outside = append(t.outside, m)
			}
		}
	}
	for _, q := range p.relays {
		t.relay = addRelay(t.relay, q)
	}
	for _, f := range p.forwards {
		if !slices.ContainsFunc(t.forwards, func(h forward) bool { return h.to == f.to }) {
			t.forwards = append(t.forwards, f)
		}
	}
	if i := slices.IndexFunc(t.rcpts, func(h Recipient) bool { return h.Address == addr }); i >= 0 {
		// Given twice: resolved again, the second answer stands.
		t.rcpts[i] = r
	} else {
		t.rcpts = append(t.rcpts, r)
	}
	return nil
}

// accept is AddRecipient's decision, for mail from partner (see
// policy.Resolve).
func (t *Transaction) accept(ctx context.Context, addr, raw string, partner int64) (plan, error) {
	if t.mode == MX && raw != "" && t.a.cfg.SRS != nil && isSRS(addr) {
		if p, handled, err := t.bounce(ctx, addr, raw); handled {
			return p, err
		}
	}
	var res policy.Resolution
	var err error
	if addr != Postmaster {
		res, err = policy.ResolveWith(ctx, t.a.dir, addr, partner, t.a.resolveOpts())
	}
	if to, ok := policy.RoleFallback(addr, err, t.a.cfg.Postmaster); ok {
		return t.postmaster(ctx, addr, to)
	}
	if addr == Postmaster {
		return plan{}, fmt.Errorf("%s: no postmaster configured: %w", addr, ErrUnknownRecipient)
	}
	if err != nil {
		// Also a domain another partner hosts and has not verified
		// (policy.ErrNotVerified): the user's mail to it leaves as mail
		// to any domain not hosted here.
		if t.mode == Submission && errors.Is(err, policy.ErrNotHosted) {
			return plan{relays: []queued{{mailstore.KindSubmission, t.domain.ID, t.from, addr}}}, nil
		}
		return plan{}, t.resolveRefusal(err)
	}
	if len(res.Mailboxes) == 0 && len(res.Remote) == 0 {
		return plan{}, fmt.Errorf("%s resolves to nothing: %w", addr, ErrUnknownRecipient)
	}
	if err := t.checkQuota(ctx, addr, res.Mailboxes); err != nil {
		return plan{}, err
	}
	if t.mode != Submission && t.a.cfg.RefuseInboundOverCap {
		if err := t.checkInboundCap(ctx, addr, res.Mailboxes); err != nil {
			return plan{}, err
		}
	}
	p := plan{mailboxes: res.Mailboxes}
	for i, r := range res.Remote {
		via := res.RemoteVia[i]
		switch t.mode {
		case MX:
			if t.a.cfg.SRS == nil {
				return plan{}, fmt.Errorf("%s to %v: %w", addr, res.Remote, ErrNeedsRelay)
			}
			// RFC 5321 section 4.5.5: the null sender stays null, so that
			// a forwarded bounce cannot bounce.
			from := ""
			if t.from != "" {
				if from, err = t.a.cfg.SRS.Forward(t.from, via.Name); err != nil {
					return plan{}, fmt.Errorf("%s: SRS forward of %s via %s: %w", addr, t.from, via.Name, err)
				}
			}
			p.relays = append(p.relays, queued{mailstore.KindForward, via.ID, from, r})
		case Submission:
			// The user's own mail: its domain is charged and the sender
			// is its own, no SRS.
			p.relays = append(p.relays, queued{mailstore.KindSubmission, t.domain.ID, t.from, r})
		case Forward:
			p.forwards = append(p.forwards, forward{to: r, via: via})
		}
	}
	return p, nil
}

// Postmaster is the domainless recipient RFC 5321 section 4.5.1 has
// every SMTP server accept ("RCPT TO:<Postmaster>", in any case), as
// AddRecipient takes it: lower case (policy.Postmaster).
const Postmaster = policy.Postmaster

// postmaster accepts addr, a role address nothing of its own takes
// (policy.RoleFallback: "postmaster", or postmaster@ or abuse@ a hosted
// domain that has none), for to, Config.Postmaster: resolved as mail
// from outside to it (it is the operator's address); one in a domain not
// hosted here is queued for it with the sender as it is (no domain is
// charged, no SRS: the operator chose the address), as a submission is.
func (t *Transaction) postmaster(ctx context.Context, addr, to string) (plan, error) {
	_, err := policy.ResolveWith(ctx, t.a.dir, to, 0, t.a.resolveOpts())
	if errors.Is(err, policy.ErrNotHosted) {
		if t.mode == Submission {
			return plan{relays: []queued{{mailstore.KindSubmission, t.domain.ID, t.from, to}}}, nil
		}
		return plan{relays: []queued{{mailstore.KindForward, 0, t.from, to}}}, nil
	}
	p, err := t.accept(ctx, to, "", 0)
	if err != nil {
		return plan{}, fmt.Errorf("%s for postmaster %s: %w", addr, to, err)
	}
	return p, nil
}

// resolveRefusal is the outcome of a recipient policy.Resolve refused,
// or err itself when the lookup failed.
func (t *Transaction) resolveRefusal(err error) error {
	switch {
	case errors.Is(err, policy.ErrNotHosted):
		if t.mode == Forward {
			return refuse(ErrNoLongerHosted, err)
		}
		return refuse(ErrNotHosted, err)
	case errors.Is(err, policy.ErrUnknownUser):
		return refuse(ErrUnknownRecipient, err)
	case errors.Is(err, policy.ErrAliasLoop), errors.Is(err, policy.ErrAliasTooDeep):
		return refuse(ErrAliasLoop, err)
	case errors.Is(err, policy.ErrBadAddress):
		return refuse(ErrBadAddress, err)
	}
	return err
}

// checkQuota refuses a recipient when one of the mailboxes it reaches is
// full, or would be with the transaction's size (the quota rule, docs/mail.md).
func (t *Transaction) checkQuota(ctx context.Context, addr string, ms []mailstore.Mailbox) error {
	for _, m := range ms {
		if !policy.AcceptAtRCPT(m, t.size) {
			if t.a.cfg.OnQuotaFull != nil {
				t.a.cfg.OnQuotaFull(ctx, m)
			}
			return fmt.Errorf("%s (%s, %d of %d bytes used, SIZE=%d): %w",
				addr, m.Email, m.UsedBytes, m.QuotaBytes(), t.size, ErrOverQuota)
		}
	}
	return nil
}

// checkInboundCap refuses a recipient when the domain of a mailbox it
// reaches, whose inbound transfer the message would count in, has used its
// cap for the month (Config.RefuseInboundOverCap).
func (t *Transaction) checkInboundCap(ctx context.Context, addr string, ms []mailstore.Mailbox) error {
	st := t.a.cfg.Store
	month := mailstore.Month(t.a.now())
	var seen []string
	for _, m := range ms {
		name := policy.DomainOf(m.Email)
		if slices.Contains(seen, name) {
			continue
		}
		seen = append(seen, name)
		d, err := st.DomainByName(ctx, name)
		if err != nil {
			return fmt.Errorf("%s: domain %s: %w", addr, name, err)
		}
		tr, err := st.Transfer(ctx, d.ID, month)
		if err != nil {
			return fmt.Errorf("%s: transfer of %s: %w", addr, name, err)
		}
		if policy.TransferCapReached(d, tr) {
			return fmt.Errorf("%s: %s used %d+%d bytes of %d MB in %s: %w",
				addr, name, tr.InBytes, tr.OutBytes, d.TransferMonthlyMB, month, ErrTransferCapReached)
		}
	}
	return nil
}

// addRelay adds a remote destination to the relay of the same kind,
// domain and sender, or to a new one; an address queued already is left
// where it is.
func addRelay(relay []mailstore.Relay, q queued) []mailstore.Relay {
	for _, r := range relay {
		if slices.Contains(r.To, q.to) {
			return relay
		}
	}
	for i := range relay {
		if r := &relay[i]; r.Kind == q.kind && r.DomainID == q.domainID && r.From == q.from {
			r.To = append(r.To, q.to)
			return relay
		}
	}
	return append(relay, mailstore.Relay{Kind: q.kind, DomainID: q.domainID, From: q.from, To: []string{q.to}})
}

// relays are the relay parts of the Delivery. A Forward's remote
// destinations are made relays here: one per domain whose alias names
// them, counted against that domain's transfer cap, with the envelope
// sender SRS-rewritten under it so that the destination's SPF check
// passes, as the MX does. A bounce stays a bounce, with the null sender,
// counted against no one. Without Config.SRS the sender stays as it is.
func (t *Transaction) relays() ([]mailstore.Relay, error) {
	if len(t.forwards) == 0 {
		return t.relay, nil
	}
	relay := slices.Clone(t.relay)
	for _, f := range t.forwards {
		if t.kind == mailstore.KindBounce || t.from == "" {
			relay = addRelay(relay, queued{kind: mailstore.KindBounce, to: f.to})
			continue
		}
		from := t.from
		if t.a.cfg.SRS != nil {
			var err error
			if from, err = t.a.cfg.SRS.Forward(t.from, f.via.Name); err != nil {
				return nil, fmt.Errorf("SRS forward of %s via %s: %w", t.from, f.via.Name, err)
			}
		}
		relay = addRelay(relay, queued{mailstore.KindForward, f.via.ID, from, f.to})
	}
	return relay, nil
}

// Result is what Commit delivered.
type Result struct {
	mailstore.DeliveryResult
	// Gone are the accepted recipients that reach no remote address and
	// none of whose mailboxes took the message: each was deleted since
	// the recipient was accepted.
	Gone []string
}

// Commit delivers body, received at at, to the accepted recipients with
// one Store.Deliver: a copy in each mailbox, the remote destinations
// queued, committed and synced before it returns. A submission is
// charged to the user's domain, and refused whole when that domain has
// used its cap (ErrTransferCapReached, matching
// mailstore.ErrTransferCapReached too). When nothing was stored nor
// queued the answer is ErrGone, with the Result (every recipient Gone).
//
// The store applies the quota of concurrent deliveries (mailstore.Mail.
// Deliver): a mailbox that reached its quota since its recipient was
// accepted (other messages to it committed meanwhile) is not written to.
// When that leaves the message no local mailbox, nothing is stored nor
// queued and the answer is ErrOverQuota (matching mailstore.ErrOverQuota
// too), temporary: the MX's and submission's sender retries, the queue
// keeps the entry. When other mailboxes took it, the full ones' copies
// wait in the queue (Result.OverQuota, KindLocal entries, from this
// transaction's sender) for a local delivery under the same rule, and
// Commit succeeds: one reply after DATA cannot accept for some
// recipients and refuse for others, and this loses nothing and
// duplicates nothing.
// Other errors are the store's, temporary.
func (t *Transaction) Commit(ctx context.Context, body []byte, at time.Time) (Result, error) {
	relay, err := t.relays()
	if err != nil {
		return Result{}, fmt.Errorf("forward: %w", err)
	}
	sv, err := t.runSieve(ctx, body)
	if err != nil {
		return Result{}, fmt.Errorf("sieve: %w", err)
	}
	if sv.reject != nil {
		return Result{}, sv.reject
	}
	ids, junk := t.MailboxIDs(), t.junk
	if t.a.cfg.Sieve != nil {
		ids = slices.DeleteFunc(ids, func(id int64) bool { return slices.Contains(sv.discarded, id) })
		junk = unionIDs(slices.Clone(junk), sv.junk)
		for _, q := range sv.redirects {
			relay = addRelay(relay, q)
		}
		body = markRedirected(body, sv.marks)
	}
	d := mailstore.Delivery{Body: body, ReceivedAt: at, MailboxIDs: ids, JunkMailboxIDs: junk, Relay: relay, From: t.from, Placements: sv.places}
	if t.mode == Submission {
		d.SenderDomainID = t.domain.ID
	}
	if len(ids) == 0 && len(relay) == 0 && len(sv.discarded) > 0 {
		// Every copy discarded by its script: the message was taken,
		// and nothing is to be stored (RFC 5228 section 4.5).
		t.a.cfg.Sieve.vacations(ctx, sv, body, nil)
		t.sendRejections(ctx, sv.rejected, body, at)
		return Result{}, nil
	}
	res, err := t.a.cfg.Store.Deliver(ctx, d)
	if errors.Is(err, mailstore.ErrTransferCapReached) {
		return Result{}, refuse(ErrTransferCapReached, err)
	}
	if errors.Is(err, mailstore.ErrOverQuota) {
		return Result{}, refuse(ErrOverQuota, err)
	}
	if err != nil {
		return Result{}, fmt.Errorf("deliver: %w", err)
	}
	r := Result{DeliveryResult: res}
	for _, rc := range t.rcpts {
		// A mailbox is gone only when Deliver skipped it (deleted
		// meanwhile); one its script discarded, or whose copy waits in
		// the queue for room (OverQuota), was taken care of.
		if !rc.Remote && !slices.ContainsFunc(rc.MailboxIDs, func(id int64) bool { return !slices.Contains(res.Skipped, id) }) {
			r.Gone = append(r.Gone, rc.Address)
		}
	}
	if len(res.Delivered) == 0 && len(res.Queued) == 0 && len(sv.discarded) == 0 {
		return r, ErrGone
	}
	if t.a.cfg.Sieve != nil {
		t.a.cfg.Sieve.vacations(ctx, sv, body, res.Delivered)
		t.sendRejections(ctx, sv.rejected, body, at)
	}
	return r, nil
}

// Mode is how the message came.
func (t *Transaction) Mode() Mode { return t.mode }

// MaySignAs checks, once the message is read, the domain of a
// submission's From: address, which signs it: when it is not verified
// the message may go only to the user's own partner's mailboxes, as at
// RCPT for the envelope sender's (policy.MayReach); else a
// *NotVerifiedError, with no Recipient. Other modes answer nil.
func (t *Transaction) MaySignAs(from mailstore.Domain) error {
	if t.mode != Submission {
		return nil
	}
	var remote []string
	for _, r := range t.relay {
		remote = append(remote, r.To...)
	}
	if err := policy.MayReach(from, t.partner, t.mailboxes, remote); err != nil {
		return &NotVerifiedError{Domain: from.Name, err: fmt.Errorf("From: domain: %w", err)}
	}
	return nil
}

// InboundChecks reports whether the message gets the checks of mail from
// outside: an Authentication-Results field, the DMARC policy, and the
// spam filter of its recipients' domains (Filter). The MX's mail does; so
// does a submission that reaches another partner's mailbox
// (policy.FromOutside), which is mail from outside to that partner. A
// Forward was checked when it came.
func (t *Transaction) InboundChecks() bool {
	return t.mode == MX || len(t.outside) > 0
}

// From is the envelope sender ("" for <>), normalised for a submission.
func (t *Transaction) From() string { return t.from }

// User is the submitting user's mailbox as read at the start (zero
// unless Submission).
func (t *Transaction) User() mailstore.Mailbox { return t.user }

// Recipients are the accepted recipients, each address once, in the
// order first given.
func (t *Transaction) Recipients() []Recipient { return t.rcpts }

// Mailboxes are the local mailboxes the message goes to, each once.
func (t *Transaction) Mailboxes() []mailstore.Mailbox { return t.mailboxes }

// MailboxIDs are the ids of Mailboxes.
func (t *Transaction) MailboxIDs() []int64 {
	ids := make([]int64, len(t.mailboxes))
	for i, m := range t.mailboxes {
		ids[i] = m.ID
	}
	return ids
}

// Remote is how many remote addresses the message is queued for.
func (t *Transaction) Remote() int {
	n := len(t.forwards)
	for _, r := range t.relay {
		n += len(r.To)
	}
	return n
}

// Empty reports whether the message has nowhere to go yet.
func (t *Transaction) Empty() bool { return len(t.mailboxes) == 0 && t.Remote() == 0 }
