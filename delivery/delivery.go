// Package delivery is mailhost's one delivery use case, outside the
// protocols: it accepts a message's recipients (mailbox, alias and
// catch-all resolution with package policy, bounces to SRS addresses,
// the quota at RCPT, transfer caps) and, for submission, its sender
// (account, suspended domain, transfer cap, policy.MaySendAs), then
// delivers it with one Store.Deliver: the local copies and the queue
// entries of its remote destinations in one transaction. It knows nothing
// of SMTP: every refusal is a typed outcome (Refusal, outcome.go),
// temporary or permanent, that smtpd maps to a reply in one function and
// outbound to the reply a queue entry records and bounces with.
//
// A Transaction is started in one of three modes (Mode), one for each way
// mail reaches a mailbox. They differ on purpose, and only as this table
// says:
//
//	                         MX (StartMX)         Submission              Forward (StartForward)
//	                                              (StartSubmission)       queue-local delivery
//	sender                   any, <> too          user's mailbox exists,  as queued (outbound
//	                                              its domain neither      holds the entries of
//	                                              suspended nor at its    a suspended domain)
//	                                              cap, MaySendAs
//	domain not hosted        ErrNotHosted         queued, as the user's   ErrNoLongerHosted
//	                         (never a relay)      submission              (temporary: the next
//	                                                                      attempt sends it out)
//	another partner's        delivered (whoever   queued, as a domain     not delivered here:
//	domain, not verified     points its MX here   not hosted              RoutesHere sends the
//	(policy.DeliverLocally)  chose this server)                           entry out
//	  reached through an     forwarded out (SRS)  queued, as a domain     forwarded out (SRS)
//	  alias of another                            not hosted
//	  partner
//	sender's domain not      -                    only the user's own     -
//	verified (the user's,                         partner's mailboxes,
//	the envelope's, the                           else ErrSender-
//	From:'s)                                      NotVerified
//	(policy.MayReach)
//	another partner's        checked (every       checked, those          not checked (it
//	mailbox: the MX's        message is)          copies (Inbound-        was when it came)
//	checks (policy.                               Checks, Quarantine,
//	FromOutside)                                  Filter)
//	SRS address              bounce routing       resolved as any         resolved as any
//	                         (srs.go)             address                 address
//	quota at RCPT            SIZE= announced      SIZE= announced         the entry's size
//	mailbox full at Commit   ErrOverQuota if no   ErrOverQuota if no      ErrOverQuota if no
//	(concurrent deliveries)  local mailbox took   local mailbox took      local mailbox took
//	                         it, else its copy    it, else its copy       it (the entry waits),
//	                         queued (KindLocal)   queued (KindLocal)      else its copy queued
//	recipient domain's cap   ErrTransferCap-      not checked             as the MX
//	                         Reached with
//	                         RefuseInboundOverCap
//	remote destination       KindForward for the  KindSubmission for the  KindForward for the
//	of an alias              alias's domain, SRS  user's domain, the      alias's domain, SRS
//	                         sender (<> stays     user's sender           sender (without SRS the
//	                         <>); without SRS                             sender as it is); a
//	                         ErrNeedsRelay                                bounce or <>: KindBounce,
//	                                                                      counted for no one
//	sender domain's cap      -                    Deliver refuses the     -
//	                                              whole message
//	                                              (ErrTransferCapReached)
//	mailboxes deleted        ErrGone if nothing   ErrGone if nothing      Result.Gone, per
//	before Deliver           stored nor queued    stored nor queued       recipient: resolved
//	                                                                      again next attempt
//
// Why: the MX answers strangers, so it relays nothing it was not asked
// to forward, takes SRS addresses only for bounces, and can be told to
// refuse domains at their cap; submission is a user sending, charged to
// its domain, to anyone; a forward is a message this server already
// took, so what it can no longer place waits in the queue rather than
// being refused to someone, and its sender was checked when it came.
//
// The queue's bounces (delivery status notifications to a failed
// entry's sender) are a fourth way, Agent.Bounce (bounce.go): resolved as
// the entry's partner's mail, no quota check and no cap, and a recipient
// that leads nowhere is dropped rather than refused.
//
// A domain a partner named and has not verified sends only to its own
// partner's mailboxes (policy.MayReach: at RCPT for the user's and the
// envelope sender's domain, after DATA for the From: domain through
// MaySignAs), so that naming bigbank.example gives no one a way to write
// as it to others, signed by this server. Mail between partners is mail
// from outside to its recipient: a submission that reaches another
// partner's mailbox has smtpd run the MX's checks (InboundChecks).
//
// A domain a partner named and has not verified is entered
// only by mail from outside and by that partner's own mailboxes and
// aliases: the sender partner of each hop (Transaction.partner; the
// alias's partner after an alias) decides, with policy.DeliverLocally,
// through policy.Resolve. Otherwise any partner could take over the mail
// other partners' users send to a domain by naming it first.
//
// In every mode, Commit runs each local recipient mailbox's active Sieve
// script once (Config.Sieve, sieve.go), after the spam filter and the
// DMARC policy so that scripts see their fields and the Junk decision:
// the copy may go to another folder with flags (Delivery.Placements),
// be discarded, redirected (a forward of the mailbox's domain, as an
// alias's), or refused (ErrSieveReject, only for a message of one
// recipient mailbox that is not the queue's; otherwise a rejection DSN
// to the sender, reject.go); vacation replies go to the
// auto-reply responder once the message is stored. A script that fails
// keeps the message. Recipients are resolved with subaddresses
// (Config.RecipientDelimiter, policy.ResolveWith).
//
// A Forward checks the recipient domain's cap as the MX does: with
// RefuseInboundOverCap, mail queued for a domain that became hosted here
// must not reach a domain the MX would refuse. It answers
// ErrTransferCapReached, which the queue defers (the entry waits, as
// the MX's sender would retry).
package delivery

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/policy"
)

// Store is what delivery reads and writes: address lookups
// (policy.Directory), the month's transfer of a domain, and Deliver.
// *boltstore.Store satisfies it; the methods keep the contract of
// mailstore.Store.
type Store interface {
	policy.Directory
	DomainWithID(ctx context.Context, id int64) (mailstore.Domain, error)
	Transfer(ctx context.Context, domainID int64, month string) (mailstore.Transfer, error)
	Deliver(ctx context.Context, d mailstore.Delivery) (mailstore.DeliveryResult, error)
}

// SRS is the Sender Rewriting Scheme; *mailauth.SRS satisfies it.
type SRS interface {
	// Forward rewrites sender (not empty) into an address at
	// forwardDomain that Reverse turns back into it.
	Forward(sender, forwardDomain string) (string, error)
	// Reverse returns the original sender of an SRS0= or SRS1= address,
	// or an error when addr is not one, is forged or has expired.
	Reverse(addr string) (string, error)
}

// Config configures an Agent.
type Config struct {
	// Store is where addresses are looked up and mail delivered.
	// Required.
	Store Store
	// SRS rewrites the envelope sender of forwarded mail and reverses
	// the SRS addresses bounces come back to. nil: the MX refuses
	// recipients that lead to a remote address (ErrNeedsRelay) and does
	// not recognise SRS addresses; a Forward keeps the sender as it is.
	SRS SRS
	// RefuseInboundOverCap refuses a recipient of the MX or of a Forward
	// (ErrTransferCapReached) when the domain of a mailbox it reaches has
	// used its transfer cap for the month. Default false: inbound mail is always received and
	// counted (the transfer cap, docs/mail.md).
	RefuseInboundOverCap bool
	// Postmaster is where mail to the domainless recipient "postmaster"
	// goes (RFC 5321 section 4.5.1 requires taking it), and mail to
	// postmaster@ and abuse@ a hosted domain where nothing (mailbox,
	// alias, catch-all) takes it (policy.RoleFallback): the operator's
	// address, normalised, hosted here or not. "": they are
	// ErrUnknownRecipient.
	Postmaster string
	// RecipientDelimiter separates a recipient's subaddress detail (RFC
	// 5233, policy.ResolveOptions): "" for none.
	RecipientDelimiter string
	// Sieve runs the active Sieve script of each local recipient at
	// Commit (sieve.go). nil: none.
	Sieve *Sieve
	// Now is the clock that picks the month of transfer checks. nil:
	// time.Now.
	Now func() time.Time
	// OnQuotaFull, when set, is told of each mailbox whose quota
	// refuses a recipient (ErrOverQuota), before the refusal is
	// answered: the wiring records the mailbox.quota_full event. nil:
	// nothing.
	OnQuotaFull func(ctx context.Context, m mailstore.Mailbox)
	// Spam is the spam filter Transaction.Filter asks. nil: none, all
	// mail goes to INBOX.
	Spam Scanner
	// SpamDefault is the filter setting of domains without one of their
	// own (mailstore.SpamFilterOff, Junk or Reject). "" means
	// mailstore.SpamFilterJunk.
	SpamDefault string
	// SpamFailClosed refuses mail the filter could not scan, with a
	// temporary ErrFilterUnavailable. Default false: it is delivered
	// unscanned, with UnscannedHeader (fail open).
	SpamFailClosed bool
}

// Agent starts transactions. Its methods may be called from any
// goroutine; each Transaction belongs to one.
type Agent struct {
	cfg Config
	now func() time.Time
	// dir is where recipients are resolved: cfg.Store, or its cached
	// look-ups when it has them (RecipientStore).
	dir policy.Directory
}

// RecipientStore is a Store whose node may answer the look-ups of
// recipients from a cache of its own, as pgstore does so that an RCPT
// does not cost a round trip to a shared database. Only the decisions on
// recipients (Resolve, and with it the quota at RCPT) read through it;
// the sender's own account at submission is read afresh.
type RecipientStore interface {
	RecipientByEmail(ctx context.Context, email string) (mailstore.Mailbox, mailstore.Domain, error)
}

// recipientDirectory is a Directory whose MailboxByEmail is a
// RecipientStore's cached one.
type recipientDirectory struct {
	policy.Directory
	r RecipientStore
}

func (d recipientDirectory) MailboxByEmail(ctx context.Context, email string) (mailstore.Mailbox, mailstore.Domain, error) {
	return d.r.RecipientByEmail(ctx, email)
}

// New makes an Agent from cfg; nothing can fail.
func New(cfg Config) *Agent {
	if n, err := policy.NormalizeAddress(cfg.Postmaster); err == nil {
		cfg.Postmaster = n
	}
	if cfg.SpamDefault == "" {
		cfg.SpamDefault = mailstore.SpamFilterJunk
	}
	a := &Agent{cfg: cfg, now: cfg.Now, dir: cfg.Store}
	if r, ok := cfg.Store.(RecipientStore); ok {
		a.dir = recipientDirectory{cfg.Store, r}
	}
	if a.now == nil {
		a.now = time.Now
	}
	return a
}

// Mode is how a message came: see the package comment.
type Mode int

const (
	// MX: from the Internet, for hosted addresses only.
	MX Mode = iota + 1
	// Submission: from an authenticated user, to anyone.
	Submission
	// Forward: a queued message whose destination is hosted here.
	Forward
)

func (m Mode) String() string {
	switch m {
	case MX:
		return "mx"
	case Submission:
		return "submission"
	case Forward:
		return "forward"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// StartMX starts a transaction of the MX: from is the reverse path
// ("" for the null one, RFC 5321 section 4.5.5), accepted whatever it is;
// size the size announced with SIZE= (RFC 1870; 0 when none).
func (a *Agent) StartMX(from string, size int64) *Transaction {
	return &Transaction{a: a, mode: MX, from: from, size: size, partner: 0}
}

// StartSubmission starts a transaction of an authenticated user (RFC
// 6409) with reverse path from ("" for the null one: read receipts, RFC
// 8098 section 3) and announced size. The mailbox and its domain are read
// again, so that a mailbox deleted (ErrAccountGone) or a domain suspended
// (ErrDomainSuspended) since the login sends nothing more; a domain that
// has used its transfer cap for the month is refused here
// (ErrTransferCapReached), before the client sends the message, and
// Deliver checks again in the transaction that counts it. A non-null
// from must be an address (ErrBadSender) the user may send as
// (ErrSenderNotOwned, policy.MaySendAs).
func (a *Agent) StartSubmission(ctx context.Context, user mailstore.Mailbox, from string, size int64) (*Transaction, error) {
	st := a.cfg.Store
	mb, dom, err := st.MailboxByEmail(ctx, user.Email)
	switch {
	case errors.Is(err, mailstore.ErrNotFound), err == nil && mb.ID != user.ID:
		return nil, fmt.Errorf("%s: %w", user.Email, ErrAccountGone)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", user.Email, err)
	case dom.Suspended:
		return nil, fmt.Errorf("%s: %w", dom.Name, ErrDomainSuspended)
	}
	month := mailstore.Month(a.now())
	t, err := st.Transfer(ctx, dom.ID, month)
	if err != nil {
		return nil, fmt.Errorf("transfer of %s: %w", dom.Name, err)
	}
	if policy.TransferCapReached(dom, t) {
		return nil, fmt.Errorf("%s used %d+%d bytes of %d MB in %s: %w",
			dom.Name, t.InBytes, t.OutBytes, dom.TransferMonthlyMB, month, ErrTransferCapReached)
	}
	sender := ""
	var unverified mailstore.Domain
	if !dom.Verified {
		unverified = dom
	}
	if from != "" {
		if sender, err = policy.NormalizeAddress(from); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadSender, err)
		}
		if err := policy.MaySendAs(ctx, st, mb, sender); err != nil {
			if errors.Is(err, policy.ErrNotOwner) {
				return nil, refuse(ErrSenderNotOwned, err)
			}
			return nil, err
		}
		// An alias the user sends as may be in another domain, whose
		// name goes out in the envelope: it must be verified too.
		if name := policy.DomainOf(sender); unverified.Name == "" && name != dom.Name {
			d, err := st.DomainByName(ctx, name)
			if err != nil {
				return nil, fmt.Errorf("domain of sender %s: %w", sender, err)
			}
			if !d.Verified {
				unverified = d
			}
		}
	}
	return &Transaction{a: a, mode: Submission, from: sender, size: size, user: mb, domain: dom, partner: mb.PartnerID, unverified: unverified}, nil
}

// StartForward starts the local delivery of queue entry e, whose
// destination is delivered here (RoutesHere; it was queued before the
// domain was added or verified, or submission queued it whole): its
// recipients are accepted as the MX would accept them, against the
// entry's size, for the entry's partner (EntryPartner), and alias
// destinations outside are queued again as forwards. The error is a
// failed lookup, temporary.
func (a *Agent) StartForward(ctx context.Context, e mailstore.Outbound) (*Transaction, error) {
	partner, err := a.EntryPartner(ctx, e)
	if err != nil {
		return nil, err
	}
	return &Transaction{a: a, mode: Forward, from: e.From, size: e.Size, kind: e.Kind, partner: partner}, nil
}

// EntryPartner is the partner queue entry e is sent for, the sender
// partner of policy.DeliverLocally: the partner of the domain it is
// charged to (the submitting user's, the forwarding alias's, or the one
// whose SRS address a bounce came back through); policy.NoPartner for
// the queue's own bounces and for entries of a domain deleted since.
func (a *Agent) EntryPartner(ctx context.Context, e mailstore.Outbound) (int64, error) {
	if e.DomainID == 0 {
		return policy.NoPartner, nil
	}
	d, err := a.cfg.Store.DomainWithID(ctx, e.DomainID)
	switch {
	case errors.Is(err, mailstore.ErrNotFound):
		return policy.NoPartner, nil
	case err != nil:
		return 0, fmt.Errorf("domain %d of queue entry %d: %w", e.DomainID, e.ID, err)
	}
	return d.PartnerID, nil
}

// RoutesHere reports whether queue entry e is delivered here (Forward)
// rather than sent out: its destination domain is hosted here and
// policy.DeliverLocally lets the entry's partner (EntryPartner) deliver
// to it. Mail one partner's user or alias queued for a domain another
// partner named and has not verified goes out to the domain's MX or the
// relay, as for any domain not hosted here. The error is a
// failed lookup, temporary.
func (a *Agent) RoutesHere(ctx context.Context, e mailstore.Outbound) (bool, error) {
	d, err := a.cfg.Store.DomainByName(ctx, e.Destination)
	switch {
	case errors.Is(err, mailstore.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("look up destination %s: %w", e.Destination, err)
	}
	partner, err := a.EntryPartner(ctx, e)
	if err != nil {
		return false, err
	}
	return policy.DeliverLocally(partner, d), nil
}

// resolveOpts are the options of the agent's recipient resolution.
func (a *Agent) resolveOpts() policy.ResolveOptions {
	return policy.ResolveOptions{Delimiter: a.cfg.RecipientDelimiter}
}
