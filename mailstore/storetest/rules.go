package storetest

import "testing"

// The rules both stores decide inside their transactions, where a rule
// must see what it counts under the transaction's locks (PostgreSQL
// decides some in SQL, so that racing writers on several nodes cannot
// pass them), each a conformance case of its own: each store's tests
// run every one as TestRule<Name>, so that a failure names the rule.
// RunRules runs them all. docs/architecture.md ("Rules") says where
// each is written.

// RuleCountLimits: a domain's mailboxes and aliases and a partner's
// domains stop at their limit, 0 being none (mailstore.LimitReached).
func RuleCountLimits(t *testing.T, open Open) { ctlLimits(t, open) }

// RuleQuotaAtCommit: a delivery takes a mailbox's room under its lock,
// so that concurrent deliveries cannot overfill it, and a full mailbox
// gets a local retry rather than the message (mailstore.Mailbox.Full,
// mailstore.RefuseAllFull); APPEND refuses what does not fit
// (mailstore.Mailbox.Fits).
func RuleQuotaAtCommit(t *testing.T, open Open) {
	t.Run("deliver_quota_concurrent", func(t *testing.T) { mailDeliverQuotaConcurrent(t, open) })
	t.Run("deliver_quota_partial", func(t *testing.T) { mailDeliverQuotaPartial(t, open) })
	t.Run("append_quota", func(t *testing.T) { mailAppendQuota(t, open) })
}

// RuleTransferCap: a domain's transfer counts in and out once per
// message, the sender's cap used refuses a submission, and a relay
// domain's holds its entries until the cap has room
// (mailstore.DecideCaps, mailstore.OutboundDomains,
// mailstore.Domain.TransferCapReached).
func RuleTransferCap(t *testing.T, open Open) {
	t.Run("transfer_counting", func(t *testing.T) { queueTransferCounting(t, open) })
	t.Run("transfer_cap", func(t *testing.T) { queueTransferCap(t, open) })
}

// RuleRetention: a purge deletes exactly the messages older than each
// domain's retention, in bounded batches (mailstore.PurgeDomains).
func RuleRetention(t *testing.T, open Open) {
	t.Run("purge", func(t *testing.T) { mailPurge(t, open) })
	t.Run("purge_batches", func(t *testing.T) { mailPurgeBatches(t, open) })
}

// RuleFlags: flags are stored as mailstore.NormFlags and ApplyFlags make
// them, and a folder's keywords stop at their limit
// (mailstore.CheckKeywords).
func RuleFlags(t *testing.T, open Open) {
	t.Run("flags", func(t *testing.T) { mailFlags(t, open) })
	t.Run("keyword_limit", func(t *testing.T) { mailKeywordLimit(t, open) })
}

// RuleFolderNames: folder names are checked (mailstore.CheckFolderName),
// INBOX is INBOX whatever its case (mailstore.CanonFolder), and an
// account's folders stop at their limit.
func RuleFolderNames(t *testing.T, open Open) {
	t.Run("folder_names", func(t *testing.T) { mailFolderNames(t, open) })
	t.Run("folder_limit", func(t *testing.T) { mailFolderLimit(t, open) })
}

// RuleAttempt: what a delivery attempt does to a queue entry
// (mailstore.ApplyAttempt).
func RuleAttempt(t *testing.T, open Open) { queueAttemptRules(t, open) }

// RunRules runs every rule, each as a subtest by its name.
func RunRules(t *testing.T, open Open) {
	for _, r := range []struct {
		name string
		run  func(*testing.T, Open)
	}{
		{"CountLimits", RuleCountLimits},
		{"QuotaAtCommit", RuleQuotaAtCommit},
		{"TransferCap", RuleTransferCap},
		{"Retention", RuleRetention},
		{"Flags", RuleFlags},
		{"FolderNames", RuleFolderNames},
		{"Attempt", RuleAttempt},
	} {
		t.Run(r.name, func(t *testing.T) { r.run(t, open) })
	}
}
