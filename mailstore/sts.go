package mailstore

import "time"

// ErrSTSPolicyNotFound answers STSPolicy for a domain with no policy
// stored, or whose policy has expired.
var ErrSTSPolicyNotFound = notFound("MTA-STS policy not found")

// STSPruneLimit bounds the expired policies one PutSTSPolicy deletes: the
// store of policies stays about as large as the policies still valid,
// and no call reads more than a few of those that are not.
const STSPruneLimit = 16

// STSPolicy is a destination domain's MTA-STS policy (RFC 8461) as the
// outbound queue fetched it. It is stored so that a restart does not
// forget it: a policy holds until it expires, whatever DNS and HTTPS
// answer meanwhile (RFC 8461 sections 5.1 and 10), and one known only in
// memory would leave a domain as safe as its DNS after each restart. The
// store checks none of its fields but Domain, MaxAge and Expires.
type STSPolicy struct {
	// Domain is the destination domain. The store folds it to lower case
	// and drops a final dot; empty is ErrInvalidArgument.
	Domain string
	// ID is the id of the domain's "_mta-sts" TXT record the policy was
	// fetched for (RFC 8461 section 3.1).
	ID string
	// Mode is the policy's mode: "enforce", "testing" or "none".
	Mode string
	// MX are the policy's mx patterns, as the outbound queue keeps them.
	MX []string
	// MaxAge is the policy's max_age, stored in whole seconds; negative is
	// ErrInvalidArgument.
	MaxAge time.Duration
	// Expires is when it stops applying: when it was fetched, plus MaxAge.
	Expires time.Time
}
