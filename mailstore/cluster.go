package mailstore

import (
	"context"
	"time"
)

// Cluster is what the nodes sharing one store agree on.
//
// A bbolt store has one node (its file is locked by one process), for
// which both methods are a durable once-only; a shared store (pgstore)
// makes them hold across the nodes.
type Cluster interface {
	// RunOnce reports whether this node should run the periodic job name
	// for the slot (e.g. the day's retention pass, slot = that day's
	// start): exactly one caller across all nodes gets true for a given
	// (name, slot), and later slots are claimable once an earlier one
	// was. Durable. A slot before or at the last one taken answers false,
	// so that a node whose clock lags does not run a slot again. Slots
	// are compared at the store's precision, the second (a slot is
	// truncated to it). An empty name is ErrInvalidArgument.
	RunOnce(ctx context.Context, name string, slot time.Time) (bool, error)
	// Setting answers a cluster-wide setting, creating it with make() if
	// no node has yet (two nodes racing create it once and both answer
	// the winner's value). make's error is answered, wrapped, and stores
	// nothing. An empty name is ErrInvalidArgument.
	Setting(ctx context.Context, name string, make func() (string, error)) (string, error)
}
