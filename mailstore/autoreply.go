package mailstore

import (
	"context"
	"time"
)

// AutoReply is a mailbox's automatic reply (vacation notice, RFC 3834).
type AutoReply struct {
	MailboxID int64
	Enabled   bool
	Subject   string
	Body      string
	// Start and End bound when it replies, in UTC; zero: unbounded.
	Start, End time.Time
}

// Active reports whether a replies at now: enabled, and now within
// [Start, End).
func (a AutoReply) Active(now time.Time) bool {
	return a.Enabled && (a.Start.IsZero() || !now.Before(a.Start)) && (a.End.IsZero() || now.Before(a.End))
}

// AutoReplies keeps the mailboxes' auto-replies and, so that several
// nodes agree and a restart forgets nothing, whom each mailbox replied to
// when (RFC 3834 section 2: at most once per sender in an interval).
//
// A mailbox's auto-reply and its memory of senders go with the mailbox
// when it is deleted.
type AutoReplies interface {
	// AutoReply answers the mailbox's auto-reply, or ErrNotFound when
	// none was set.
	AutoReply(ctx context.Context, mailboxID int64) (AutoReply, error)
	// SetAutoReply stores a, replacing the mailbox's auto-reply; its
	// memory of senders is kept. Times are stored in UTC to the second.
	// ErrMailboxNotFound when the mailbox does not exist;
	// ErrInvalidArgument when End is not after Start (both set).
	SetAutoReply(ctx context.Context, a AutoReply) error
	// DeleteAutoReply removes the mailbox's auto-reply and its memory of
	// senders; a mailbox without one is no error.
	DeleteAutoReply(ctx context.Context, mailboxID int64) error
	// TakeAutoReply reports whether the mailbox may reply to sender at
	// now: true when it has not within interval before now, and then it
	// records now in the same transaction, so that of two deliveries at
	// once, on one node or two, one gets true. sender is the memory's
	// key, kept as it is: an address, or the responder's key of an
	// address and a Sieve vacation's handle. An empty sender is
	// ErrInvalidArgument.
	TakeAutoReply(ctx context.Context, mailboxID int64, sender string, now time.Time, interval time.Duration) (bool, error)
}
