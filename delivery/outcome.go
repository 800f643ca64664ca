package delivery

import "errors"

// Refusal is a typed outcome: why a recipient, a sender or a message was
// not taken. The protocols match the package's Err values with errors.Is
// and map each to their own reply; the error that carries it has the
// details, for the log. Temporary says whether the mail may be taken
// later as it is (the sender keeps it and retries) or never.
type Refusal struct {
	text      string
	temporary bool
}

func (r *Refusal) Error() string { return r.text }

// Temporary reports whether the refusal may go away by itself: a mailbox
// that shrinks, a month that turns, a configuration that changes.
func (r *Refusal) Temporary() bool { return r.temporary }

// Outcomes. Which mode can answer which is in the package comment.
var (
	// ErrUnknownRecipient: the domain is hosted, nothing takes the
	// address (policy.ErrUnknownUser), or it resolves to nothing.
	ErrUnknownRecipient = &Refusal{"unknown recipient", false}
	// ErrNotHosted: the recipient's domain is not hosted here, and this
	// is the MX, never an open relay.
	ErrNotHosted = &Refusal{"domain not hosted", false}
	// ErrNoLongerHosted: a queued message's destination domain was hosted
	// when the attempt started and is not now; the next attempt sends it
	// out.
	ErrNoLongerHosted = &Refusal{"domain no longer hosted here", true}
	// ErrAliasLoop: an alias chain loops or is too long
	// (policy.ErrAliasLoop, policy.ErrAliasTooDeep).
	ErrAliasLoop = &Refusal{"alias loop or chain too long", false}
	// ErrBadAddress: an address on the way (an alias destination) is not
	// one (policy.ErrBadAddress).
	ErrBadAddress = &Refusal{"bad address", false}
	// ErrOverQuota: a mailbox the recipient reaches is full, or would be
	// with the message's size (policy.AcceptAtRCPT); or, from Commit,
	// every local mailbox of the message reached its quota since its
	// recipient was accepted (concurrent deliveries: see Commit), and
	// nothing was stored. It also matches mailstore.ErrOverQuota then.
	ErrOverQuota = &Refusal{"mailbox full", true}
	// ErrTransferCapReached: a domain the message would be counted
	// against has used its monthly transfer cap: the submitting user's,
	// or with Config.RefuseInboundOverCap a recipient's (MX, Forward). It also matches
	// mailstore.ErrTransferCapReached when Deliver answered it.
	ErrTransferCapReached = &Refusal{"domain used its monthly transfer cap", true}
	// ErrSRSNotBounce: mail to an SRS address with a non-null sender;
	// only bounces go back through SRS.
	ErrSRSNotBounce = &Refusal{"mail to an SRS address with a non-null sender", false}
	// ErrBadSRS: an SRS address that is forged, malformed or expired: it
	// names nobody.
	ErrBadSRS = &Refusal{"invalid or expired SRS address", false}
	// ErrNeedsRelay: the recipient leads to a remote address and there is
	// no SRS to forward with; taking the message would lose it.
	ErrNeedsRelay = &Refusal{"destination needs relaying and no SRS is configured", true}
	// ErrGone: every mailbox of every recipient was deleted between its
	// acceptance and Deliver, and nothing was queued.
	ErrGone = &Refusal{"every recipient mailbox was deleted", false}
	// ErrAccountGone: the submitting user's mailbox was deleted since
	// it logged in.
	ErrAccountGone = &Refusal{"authenticated mailbox deleted", false}
	// ErrDomainSuspended: the submitting user's domain is suspended; it
	// sends nothing (the partner contract, docs/api.md).
	ErrDomainSuspended = &Refusal{"domain suspended", false}
	// ErrBadSender: the envelope sender is not an address.
	ErrBadSender = &Refusal{"bad sender address", false}
	// ErrSenderNotOwned: the submitting user may not send as the
	// envelope sender (policy.MaySendAs, policy.ErrNotOwner).
	ErrSenderNotOwned = &Refusal{"sender address not owned by the user", false}
	// ErrSenderNotVerified: a submission whose sender's domain is not
	// verified is for someone other than the user's own partner's
	// mailboxes (policy.MayReach); the error is a *NotVerifiedError.
	ErrSenderNotVerified = &Refusal{"sender domain not verified", false}
)

// NotVerifiedError is ErrSenderNotVerified with what a reply names: the
// recipient refused ("" when the message was refused after DATA, for its
// From: domain) and the sender's domain that is not verified.
type NotVerifiedError struct {
	Recipient string
	Domain    string
	err       error
}

func (e *NotVerifiedError) Error() string   { return e.err.Error() }
func (e *NotVerifiedError) Unwrap() []error { return []error{ErrSenderNotVerified, e.err} }

// Temporary reports whether err leaves the mail to be tried again: a
// Refusal that says so, or any error that is not a Refusal (a failed
// lookup or store write is this server's problem, never a reason to lose
// mail).
func Temporary(err error) bool {
	var r *Refusal
	if errors.As(err, &r) {
		return r.temporary
	}
	return true
}

// refused is a Refusal with the error that explains it (from package
// policy or the store): its text is that error's, and errors.Is matches
// both.
type refused struct {
	kind *Refusal
	err  error
}

func (e *refused) Error() string   { return e.err.Error() }
func (e *refused) Unwrap() []error { return []error{e.kind, e.err} }

func refuse(kind *Refusal, err error) error { return &refused{kind: kind, err: err} }
