package policy

import (
	"math"
	"sync/atomic"
)

// Share is this node's part of the limits meant for a whole cluster of
// nodes sharing one store: with n live nodes, each enforces 1/n of every
// such limit (failed logins, the API's requests per key, a mailbox's
// recipients per hour), so that their sum holds whichever node a client
// reaches, and no one gets n times the limit by spreading over nodes.
//
// Dividing is chosen over shared counters in the database: it costs no
// round trip on the paths it guards (a login, each API request, each
// RCPT) and needs no writes while nothing is refused. Its price is that
// a client who reaches only one node of n gets 1/n of the limit; with a
// load balancer spreading connections, that is close to the whole. The
// zero value, and a nil *Share, is one node: limits whole.
type Share struct {
	nodes atomic.Int64
}

// SetNodes records how many nodes are live (at least 1).
func (s *Share) SetNodes(n int) {
	s.nodes.Store(int64(max(n, 1)))
}

// Nodes is the number of live nodes last recorded (1 before any).
func (s *Share) Nodes() int {
	if s == nil {
		return 1
	}
	return int(max(s.nodes.Load(), 1))
}

// Int is this node's share of an integer limit: limit/n rounded up, so
// that a limit never drops to nothing; 0 (no limit) stays 0.
func (s *Share) Int(limit int) int {
	if limit <= 0 {
		return limit
	}
	n := s.Nodes()
	return (limit + n - 1) / n
}

// Float is this node's share of a rate.
func (s *Share) Float(limit float64) float64 {
	if limit <= 0 || math.IsInf(limit, 0) {
		return limit
	}
	return limit / float64(s.Nodes())
}
