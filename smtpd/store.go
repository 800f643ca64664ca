package smtpd

import (
	"context"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/policy"
)

// Store is what both modes use: address lookups (recipients, and the
// senders a user may send as), the month's transfer of a domain, the one
// Deliver of each message, and the login time of submission's users.
// *mailstore.Bolt satisfies it; the methods keep the contract of
// mailstore.Store.
type Store interface {
	policy.Directory
	Transfer(ctx context.Context, domainID int64, month string) (mailstore.Transfer, error)
	Deliver(ctx context.Context, d mailstore.Delivery) (mailstore.DeliveryResult, error)
	RecordLogin(ctx context.Context, mailboxID int64, now time.Time) error
}
