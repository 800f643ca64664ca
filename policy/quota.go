package policy

import "github.com/mailhost/mailhost/mailstore"

// AcceptAtRCPT reports whether a message for mailbox m may be accepted at
// RCPT time (the quota rule, docs/mail.md): not when the mailbox has reached its
// quota, nor when the size the client announced with SIZE= (RFC 1870; 0 or
// less when it announced none) would take it past the quota. The answer is
// the same for every quota, including a zero one (nothing is accepted).
// A message accepted here is delivered whole even if it then takes the
// mailbox past its quota by itself: the sender announced less or nothing.
func AcceptAtRCPT(m mailstore.Mailbox, announcedSize int64) bool {
	return m.Fits(announcedSize)
}

// TransferCapReached reports whether domain d has used its monthly
// transfer cap with the month's counters t. The rule lives with the types
// (mailstore.Domain.TransferCapReached) because the store applies it in
// the transaction that counts; this is the same rule for the protocols.
func TransferCapReached(d mailstore.Domain, t mailstore.Transfer) bool {
	return d.TransferCapReached(t)
}
