package outbound

import "time"

// Metrics is told of the delivery attempts, for monitoring; the wiring
// gives a *metrics.Outbound. Calls come from the workers and must not
// block.
type Metrics interface {
	// Attempt counts one attempt: its outcome (delivered, deferred,
	// failed, partial or none), its recipients delivered, failed for
	// good (bounced) and deferred, and how long it took.
	Attempt(outcome string, delivered, failed, deferred int, d time.Duration)
}

// metricsOutcome is result's word as a label value.
func metricsOutcome(result string) string {
	if result == "nothing pending" {
		return "none"
	}
	return result
}
