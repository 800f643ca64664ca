package mailstore

// The rules of a delivery both stores decide alike (Mail.Deliver): what a
// Delivery is once checked, the transfer caps, the refusal when every
// local recipient is full, and which domains' transfer a message counts
// in. The stores differ in how they lock and write, not in these.

import (
	"fmt"
	"slices"
	"time"
)

// CheckedDelivery is a Delivery as a store's delivery batch takes it:
// checked, its recipients each once, its relays grouped, its placements
// by mailbox with canonical folder names and stored flags.
type CheckedDelivery struct {
	Delivery
	// IDs are the local recipients, each once, in the order given.
	IDs    []int64
	Groups []RelayGroup
	Size   int64
	// Received is ReceivedAt as stored (UTC), and Month its month.
	Received time.Time
	Month    string
	// Summary is HeaderSummary(Body), nil without local recipients: made
	// before the transaction, which holds the store's lock.
	Summary []byte
	// Places are the first placement of each recipient that has one.
	Places map[int64]Placement
}

// CheckDelivery checks d and makes it a CheckedDelivery: ErrInvalidArgument
// without a received time or with a relay GroupRelays refuses.
func CheckDelivery(d Delivery) (CheckedDelivery, error) {
	if d.ReceivedAt.IsZero() {
		return CheckedDelivery{}, fmt.Errorf("no received time: %w", ErrInvalidArgument)
	}
	c := CheckedDelivery{Delivery: d, Size: int64(len(d.Body)), Received: UTC(d.ReceivedAt)}
	c.Month = Month(c.Received)
	c.IDs = make([]int64, 0, len(d.MailboxIDs))
	for _, id := range d.MailboxIDs {
		if !slices.Contains(c.IDs, id) {
			c.IDs = append(c.IDs, id)
		}
	}
	var err error
	if c.Groups, err = GroupRelays(d.Relay); err != nil {
		return CheckedDelivery{}, err
	}
	if len(c.IDs) > 0 {
		c.Summary = HeaderSummary(d.Body)
	}
	for _, p := range d.Placements {
		if _, ok := c.Places[p.MailboxID]; ok || !slices.Contains(c.IDs, p.MailboxID) {
			continue
		}
		if c.Places == nil {
			c.Places = map[int64]Placement{}
		}
		if p.Folder != "" {
			p.Folder = CanonFolder(p.Folder)
		}
		p.Flags = DeliveryFlags(p.Flags)
		c.Places[p.MailboxID] = p
	}
	return c, nil
}

// Empty reports whether c has nothing to deliver: no local recipient and
// no relay. Deliver then stores nothing.
func (c CheckedDelivery) Empty() bool { return len(c.IDs) == 0 && len(c.Groups) == 0 }

// ToJunk reports whether mailbox id's copy goes to its \Junk folder.
func (c CheckedDelivery) ToJunk(id int64) bool { return slices.Contains(c.JunkMailboxIDs, id) }

// DecideCaps decides a delivery's transfer caps on the month's figures
// as they stand before it: the sender domain's cap used refuses the
// delivery (ErrTransferCapReached), with nothing stored; a relay
// domain's cap used holds that domain's queue entries (Outbound.Held)
// rather than refusing. capUsed answers for a domain whether its cap is
// used, or ErrDomainNotFound. held has every relay domain decided on
// (not the sender's, which counts once as the sender).
func DecideCaps(sender int64, groups []RelayGroup, capUsed func(domainID int64) (bool, error)) (held map[int64]bool, err error) {
	if sender != 0 {
		used, err := capUsed(sender)
		if err != nil {
			return nil, fmt.Errorf("sender domain %d: %w", sender, err)
		}
		if used {
			return nil, fmt.Errorf("sender domain %d: %w", sender, ErrTransferCapReached)
		}
	}
	held = map[int64]bool{}
	for _, g := range groups {
		did := g.Relay.DomainID
		if _, ok := held[did]; ok || did == 0 || did == sender {
			continue
		}
		used, err := capUsed(did)
		if err != nil {
			return nil, fmt.Errorf("relay domain %d: %w", did, err)
		}
		held[did] = used
	}
	return held, nil
}

// RefuseAllFull is the refusal of a delivery none of whose local
// recipients took the message because each was full (ErrOverQuota),
// nil otherwise: such a delivery stores nothing, not even the queue
// entries of its full recipients.
func RefuseAllFull(res DeliveryResult) error {
	if len(res.OverQuota) > 0 && len(res.Delivered) == 0 {
		return fmt.Errorf("mailbox %d: %w", res.OverQuota[0], ErrOverQuota)
	}
	return nil
}

// OutboundDomains are the domains whose outbound transfer a delivery
// counts, once per domain per message: the sender's, and each relay
// domain's that is not held (a held entry counts when it goes).
func OutboundDomains(sender int64, groups []RelayGroup, held map[int64]bool) []int64 {
	var out []int64
	if sender != 0 {
		out = append(out, sender)
	}
	for _, g := range groups {
		did := g.Relay.DomainID
		if did != 0 && !held[did] && !slices.Contains(out, did) {
			out = append(out, did)
		}
	}
	return out
}

// RelayEntry is the queue entry of a delivery's relay group: its body,
// received at, every recipient pending.
func RelayEntry(g RelayGroup, blobID, size int64, received time.Time, held bool) Outbound {
	rcpts := make([]OutboundRecipient, len(g.To))
	for i, a := range g.To {
		rcpts[i] = OutboundRecipient{Address: a, State: RecipientPending}
	}
	return Outbound{
		Kind: g.Relay.Kind, DomainID: g.Relay.DomainID, From: g.Relay.From,
		Destination: g.Destination, Recipients: rcpts, BlobID: blobID, Size: size,
		QueuedAt: received, NextAttempt: received, Held: held,
	}
}
