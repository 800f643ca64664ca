package mailstore

import (
	"context"
	"errors"
	"time"
)

// ErrTransferCapReached answers a Deliver whose SenderDomainID has used its
// monthly transfer cap (submission refused with 451 4.7.1: docs/mail.md).
var ErrTransferCapReached = errors.New("domain transfer cap reached for the month")

// ErrOutboundNotFound answers a queue call naming an entry that is gone.
var ErrOutboundNotFound = notFound("outbound entry not found")

// OutboundKind says why a message is in the outbound queue.
type OutboundKind string

const (
	// KindSubmission: sent by an authenticated user (SMTP submission).
	KindSubmission OutboundKind = "submission"
	// KindForward: received for an alias whose destination is remote.
	KindForward OutboundKind = "forward"
	// KindBounce: a delivery status notification (RFC 3464). Its envelope
	// sender is empty, so nothing bounces a bounce.
	KindBounce OutboundKind = "bounce"
	// KindLocal: a local recipient's copy that Deliver could not store
	// because the mailbox had reached its quota (see Mail.Deliver). Its
	// one recipient is the mailbox's address, DomainID the mailbox's
	// domain (whose partner delivers it here: policy.DeliverLocally), not
	// counted against that domain's transfer nor held by its cap; the
	// queue delivers it here again, or bounces it to From when it
	// expires. Deliver makes these itself: a Relay of this kind is
	// ErrInvalidArgument.
	KindLocal OutboundKind = "local"
)

// Relay is the remote part of a Delivery: the message queued for remote
// recipients in the same transaction that stores the local copies.
// An unknown Kind, or a recipient without a local part or a domain, is
// ErrInvalidArgument.
type Relay struct {
	Kind OutboundKind
	// DomainID is the hosted domain the relay is sent on behalf of: its
	// outbound transfer counts the message (once per message, however many
	// destinations), and while that domain's cap for the month of
	// ReceivedAt is used the relay's entries wait in the queue (Held)
	// instead of being refused, counted when ReleaseHeld lets them go.
	// When it is the Delivery's SenderDomainID the message is counted once
	// and never held (the sender's check came first). Zero for bounces,
	// which count against no one and are never held. An unknown domain is
	// ErrDomainNotFound.
	DomainID int64
	// From is the envelope sender to use (already SRS-rewritten for a
	// forward; empty for a bounce).
	From string
	// To are the remote recipients. The store groups them by domain (what
	// follows the last "@", in lower case): one queue entry per destination
	// domain, recipients in the order given, an address given twice once.
	To []string
}

// RecipientState is where one recipient of a queue entry stands.
type RecipientState string

const (
	RecipientPending   RecipientState = "pending"
	RecipientDelivered RecipientState = "delivered"
	RecipientFailed    RecipientState = "failed"
)

// OutboundRecipient is one recipient of a queue entry.
type OutboundRecipient struct {
	Address string         `json:"address"`
	State   RecipientState `json:"state"`
	// Reply is the last answer about this recipient (the remote server's
	// reply, or why it could not be reached).
	Reply string `json:"reply,omitempty"`
}

// Outbound is one queue entry: one message for the recipients it has in
// one destination domain.
type Outbound struct {
	ID          int64               `json:"id"`
	Kind        OutboundKind        `json:"kind"`
	DomainID    int64               `json:"domain_id"`
	From        string              `json:"from"`
	Destination string              `json:"destination"` // recipient domain
	Recipients  []OutboundRecipient `json:"recipients"`
	BlobID      int64               `json:"blob_id"`
	Size        int64               `json:"size"`
	QueuedAt    time.Time           `json:"queued_at"`
	NextAttempt time.Time           `json:"next_attempt"`
	Attempts    int                 `json:"attempts"`
	LastError   string              `json:"last_error,omitempty"`
	// Held: the entry waits for its domain's transfer cap (a forward
	// queued once the cap was used). It is not claimed, and its bytes are
	// not counted, until ReleaseHeld finds room.
	Held bool `json:"held"`
	// Leased: the entry was claimed and its attempt has not been
	// recorded yet; NextAttempt is when the lease runs out.
	Leased bool `json:"leased,omitempty"`
	// Warned: its sender was sent a delay notice (Attempt.Warned).
	Warned bool `json:"warned,omitempty"`
}

// Pending lists the addresses not yet delivered nor failed.
func (o Outbound) Pending() []string {
	var out []string
	for _, r := range o.Recipients {
		if r.State == RecipientPending {
			out = append(out, r.Address)
		}
	}
	return out
}

// Attempt is the outcome of one delivery attempt of a queue entry.
type Attempt struct {
	Now time.Time
	// Delivered recipients are done.
	Delivered []string
	// Failed recipients failed permanently, each with its reply.
	Failed map[string]string
	// Deferred is the reply for the recipients left pending; they are
	// tried again at NextAttempt (Now when zero). It becomes the entry's
	// LastError; with no Deferred, the first failure's reply does.
	Deferred    string
	NextAttempt time.Time
	// Warned: the attempt sent the sender a delay notice; the entry
	// keeps it (Outbound.Warned), so that there is one notice per entry.
	Warned bool
}

// ClaimOptions keep one destination's backlog from holding back the
// others. The delivery workers send to a destination over a few sessions
// at once; entries they cannot start yet wait in memory under their lease.
// Claimed strictly in due order, a backlog of thousands of entries to one
// slow destination would fill that memory and leave the workers idle while
// mail to other destinations waited behind it.
type ClaimOptions struct {
	// Skip are destination domains not to claim now: entries to them are
	// passed over, left due and in place.
	Skip []string
	// PerDestination, when positive, is the most entries to one
	// destination domain a claim returns; the rest are passed over.
	PerDestination int
}

// ClaimScanLimit bounds the entries one ClaimOutbound passes over (by
// ClaimOptions) before it returns what it has: beyond that, a backlog
// to skipped destinations is as deep as the claim looks.
const ClaimScanLimit = 4096

// Queue is the durable outbound queue. Entries are created by Deliver (its
// Relay part) and worked by the outbound package's delivery workers, which
// also keep here the MTA-STS policies of the destinations (STSPolicy).
// Deleting a domain or a mailbox leaves its queued mail in the queue: it
// is mail in flight.
type Queue interface {
	// ClaimOutbound returns up to limit entries that are not held and are
	// due at now (NextAttempt <= now), earliest first, and in the same
	// transaction moves each one's NextAttempt to now+lease (rounded up to
	// the second; the entries returned carry it, and Leased), so that no
	// other worker takes it meanwhile and a crash retries it once the
	// lease runs out, or at the next start with ReleaseLeases (a message
	// may go out twice, never zero times). limit and lease must be
	// positive, else ErrInvalidArgument. opt spreads a claim over
	// destinations (see ClaimOptions). Its cost is that of what it claims
	// and of at most ClaimScanLimit entries passed over, not of the queue.
	ClaimOutbound(ctx context.Context, now time.Time, lease time.Duration, limit int, opt ClaimOptions) ([]Outbound, error)
	// ReleaseLeases ends the leases taken by this store's node: the
	// entries it claimed and did not record become due at now, and it
	// answers how many. It is called as a node's delivery workers start:
	// no attempt of that node's earlier run (crashed or stopped) can
	// still be under way, and its claimed entries go at once rather than
	// when their leases run out. Other nodes sharing the store keep their
	// leases; a node's leases that it never releases (it died and does
	// not come back) run out at their NextAttempt, and the entries are
	// then claimable by the others. A store one process works at a time
	// (the bbolt file is locked) has one node, so for it this ends every
	// lease. Its cost is that of the entries due after now (bbolt) or of
	// the node's leases (a shared store).
	ReleaseLeases(ctx context.Context, now time.Time) (int, error)
	// OutboundBody is the message of a queue entry. ErrOutboundNotFound.
	OutboundBody(ctx context.Context, id int64) ([]byte, error)
	// RecordAttempt applies an attempt's outcome to an entry: recipients
	// delivered or failed are done, the rest wait for NextAttempt; Attempts
	// grows by one. Only pending recipients change; addresses the entry
	// does not have pending are ignored. An entry with no recipient pending
	// is removed with its body (when no message or other entry shares it)
	// and returned, as it ended, with no error. ErrOutboundNotFound.
	RecordAttempt(ctx context.Context, id int64, a Attempt) (Outbound, error)
	// ReleaseHeld releases held entries whose domain has room under its
	// transfer cap for the month of now (the month turned, or the cap was
	// raised): each is counted as that domain's outbound transfer and
	// becomes due at now, in the same transaction. A domain's entries go
	// oldest first, each as Deliver would take it if it came now: while
	// the domain's figures are under its cap (the entry that crosses it
	// goes too), the rest wait for the next release; a message's entries
	// for several destinations go together and count once. Entries of a
	// domain deleted meanwhile are released uncounted. It answers how many
	// were released. Its cost grows with the held entries, not the queue,
	// and a domain still at its cap costs one seek.
	ReleaseHeld(ctx context.Context, now time.Time) (int, error)
	// OutboundEntries lists the queue by id, held entries included, with
	// the total count.
	OutboundEntries(ctx context.Context, p Page) ([]Outbound, int, error)
	// QueueStats sums the queue up for monitoring, at every scrape: how
	// many entries (held included), how many held, and when the oldest was
	// queued. Its cost does not grow with the messages' sizes, and no
	// entry but the oldest is decoded (see each backend for the rest).
	QueueStats(ctx context.Context) (QueueStats, error)
	// FlushOutbound makes every entry that is not held due at now (those
	// due already keep their time) and answers how many entries that is.
	// An entry under a worker's lease is made due too, so it may go out
	// twice, as after a crash.
	FlushOutbound(ctx context.Context, now time.Time) (int, error)
	// FlushOutboundDomain makes the entries sent for one domain (its
	// submissions and forwards: DomainID) that are due after now due at
	// now, and answers how many; held entries stay held. It is how a
	// resumed domain's mail, deferred while it was suspended, goes at
	// once. Its cost is that of the entries due after now, not of the
	// whole queue.
	FlushOutboundDomain(ctx context.Context, domainID int64, now time.Time) (int, error)
	// DeleteOutbound removes an entry, held or not, with its body when
	// nothing else shares it, and answers it as it was: the operator's
	// way to drop mail that must not go out (Postfix's postsuper -d). No
	// bounce is sent and the transfer it was counted for stays counted.
	// An attempt already under way may still deliver it; its outcome then
	// finds the entry gone (ErrOutboundNotFound). ErrOutboundNotFound.
	DeleteOutbound(ctx context.Context, id int64) (Outbound, error)

	// STSPolicy answers the MTA-STS policy stored for a destination domain
	// (folded to lower case, a final dot dropped) that is still valid at
	// now (now before its Expires), as PutSTSPolicy stored it: times in
	// UTC with second precision, MaxAge in whole seconds, Domain folded.
	// ErrSTSPolicyNotFound when there is none, or it has expired. It is
	// one key read.
	STSPolicy(ctx context.Context, domain string, now time.Time) (STSPolicy, error)
	// PutSTSPolicy stores a domain's policy, replacing the one it had
	// (whatever its expiry), and in the same transaction deletes up to
	// STSPruneLimit other policies expired at now (Expires at or before
	// now), those that expired first. The outbound queue calls it once
	// per policy fetched, so that expired policies go at least as fast as
	// new ones come, and no call scans the policies: its cost is that of
	// the one it stores and the few it deletes. A policy already expired
	// at now may be stored, and may be deleted at once; STSPolicy never
	// answers it. ErrInvalidArgument for an empty domain or a negative
	// MaxAge.
	PutSTSPolicy(ctx context.Context, p STSPolicy, now time.Time) error
}
