package smtpd

import (
	"context"
	"time"

	"github.com/mailhost/mailhost/delivery"
)

// Store is what both modes use: what package delivery needs (address
// lookups, the month's transfer of a domain, Deliver), the domain of a
// submitted From: address, and the login time of submission's users.
// *boltstore.Store satisfies it; the methods keep the contract of
// mailstore.Store.
type Store interface {
	delivery.Store
	RecordLogin(ctx context.Context, mailboxID int64, now time.Time) error
}
