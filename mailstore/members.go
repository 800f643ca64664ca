package mailstore

import (
	"context"
	"time"
)

// Members counts the live nodes sharing a store, so that limits meant for
// the whole cluster (failed logins, the API's rate per key, a mailbox's
// sending per hour) can be split between them: each node enforces its
// share, and the sum holds whatever node a client reaches.
type Members interface {
	// Heartbeat records that node is alive at now and answers how many
	// nodes, itself included, were seen alive within ttl before now
	// (at least 1).
	Heartbeat(ctx context.Context, node string, now time.Time, ttl time.Duration) (int, error)
}
