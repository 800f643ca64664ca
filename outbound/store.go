package outbound

import (
	"context"
	"time"

	"github.com/mailhost/mailhost/delivery"
	"github.com/mailhost/mailhost/mailstore"
)

// Store is what the delivery workers use: the queue they work, what
// package delivery needs for local delivery (address lookups, transfer,
// Deliver, which bounces use too), the domains entries name, and the
// MTA-STS policies they keep.
// *boltstore.Store satisfies it; the methods keep the contract of
// mailstore.Store.
type Store interface {
	ClaimOutbound(ctx context.Context, now time.Time, lease time.Duration, limit int, opt mailstore.ClaimOptions) ([]mailstore.Outbound, error)
	ReleaseLeases(ctx context.Context, now time.Time) (int, error)
	OutboundBody(ctx context.Context, id int64) ([]byte, error)
	RecordAttempt(ctx context.Context, id int64, a mailstore.Attempt) (mailstore.Outbound, error)
	ReleaseHeld(ctx context.Context, now time.Time) (int, error)

	delivery.Store // address lookups (policy.Directory), Transfer, Deliver
	DomainWithID(ctx context.Context, id int64) (mailstore.Domain, error)

	STSPolicy(ctx context.Context, domain string, now time.Time) (mailstore.STSPolicy, error)
	PutSTSPolicy(ctx context.Context, p mailstore.STSPolicy, now time.Time) error
}
