package mailstore

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// A store's whole state as a stream of records, so that `mailhost store
// copy` can move it between backends (bbolt, PostgreSQL) without either
// knowing the other, and `mailhost store verify` can recompute counters on
// both.
//
// What the stream holds is what a store keeps and cannot rebuild: the
// objects, with their ids, their counters as stored (a copy preserves
// drift rather than hiding it; verify finds it), the blob refcounts, the
// id sequences, and the state kept beside them: auto-replies and whom
// they answered, webhooks with their events and pending deliveries, the
// event marks, the audit log and the ACME client's blobs.
//
// Rebuilt by the Loader rather than carried: the indexes (bbolt's name and
// parent buckets, the claims index, each claim's addresses namespace, the
// queue's due and held keys, the retention keys, the verified domains'
// index, the webhooks' due keys and the audit log's time keys;
// PostgreSQL's rev_name), which claim of each name is live (by
// LiveClaim, from the claims loaded), and each body's
// header summary (HeaderSummary of the body, which is what Deliver would
// have stored).
//
// Not in the stream: the folders' change log (a copied folder keeps its
// HighestModSeq with an empty log, so that a session that synced before
// asks for changes since an older ModSeq, hears ErrChangesGone and
// re-reads the folder once; a HighestModSeq set back to 0 would instead
// answer "no changes" until it passed the session's), the queue's
// leases' node names on bbolt (a leased entry stays leased until its
// NextAttempt), the Cluster jobs' last slots (bbolt's cluster "job/" keys,
// PostgreSQL's jobs table: a periodic job may run once more after a copy,
// which each of them tolerates), PostgreSQL's nodes (heartbeats of the
// running nodes, renewed within seconds by each), and when an ACME blob
// or an event mark was last written on PostgreSQL (bbolt keeps no such
// time; a loader into PostgreSQL writes the time of the load).

// Record is one object of a store's dump: one of the *Record types below.
type Record interface{ recordKind() Kind }

// Kind names a kind of record, in the order a Dumper emits them.
type Kind int

// The kinds, in stream order: every record comes after the records it
// refers to (an API key after its partner, a message after its folder
// and its blob), so that a Loader can write in that order under foreign
// keys.
const (
	KindSetting Kind = iota
	KindPartner
	KindAPIKey
	KindDomain
	KindDKIM
	KindTransfer
	KindMailbox
	KindAlias
	KindFolder
	KindSubscription
	KindBlob
	KindMessage
	KindOutbound
	KindSTSPolicy
	KindAutoReply
	KindAutoReplySent
	KindSieveScript
	KindWebhook
	KindEvent
	KindWebhookDelivery
	KindEventMark
	KindAudit
	KindCert
	KindSequence
	numKinds
)

// Kinds lists every kind in stream order.
func Kinds() []Kind {
	out := make([]Kind, numKinds)
	for i := range out {
		out[i] = Kind(i)
	}
	return out
}

var kindNames = [numKinds]string{
	"settings", "partners", "API keys", "domains", "DKIM key sets",
	"transfer months", "mailboxes", "aliases", "folders", "subscriptions", "bodies",
	"messages", "queue entries", "MTA-STS policies", "auto-replies",
	"auto-reply senders", "Sieve scripts", "webhooks", "events", "webhook deliveries",
	"event marks", "audit entries", "ACME blobs", "sequences",
}

// String is the kind's plural name, as reports show it.
func (k Kind) String() string {
	if k < 0 || k >= numKinds {
		return fmt.Sprintf("kind(%d)", int(k))
	}
	return kindNames[k]
}

// SettingSRSSecret is the setting that holds the Sender Rewriting Scheme
// secret made on first start: PostgreSQL keeps it in its settings table,
// bbolt in SRSKeyFile next to the store's file.
const SettingSRSSecret = "srs_secret"

// SRSKeyFile is the file, in a bbolt data directory, that holds the SRS
// secret (package service makes it).
const SRSKeyFile = "srs.key"

// SettingRecord is a store-wide setting: a Cluster setting, or the SRS
// secret (SettingSRSSecret).
type SettingRecord struct {
	Name, Value string
}

// PartnerRecord is a partner; DomainCount is PostgreSQL's counter (bbolt
// counts its partner_domains index).
type PartnerRecord struct {
	Partner
	DomainCount int64
}

// APIKeyRecord is an API key, its secret's hash included.
type APIKeyRecord struct{ APIKey }

// DomainRecord is a domain with its counters.
type DomainRecord struct{ Domain }

// DKIMRecord is a domain's DKIM keys, in their order.
type DKIMRecord struct {
	DomainID int64
	Keys     []DKIMKey
}

// TransferRecord is one domain's transfer for one month.
type TransferRecord struct {
	DomainID int64
	Transfer
}

// MailboxRecord is a mailbox with its counters; FolderCount is the
// stored count of its folders (bbolt's folder_counts, PostgreSQL's
// folder_count).
type MailboxRecord struct {
	Mailbox
	FolderCount int64
}

// AliasRecord is an alias.
type AliasRecord struct{ Alias }

// FolderRecord is a folder with its counters, UIDs and HighestModSeq.
type FolderRecord struct{ Folder }

// SubscriptionRecord is one subscribed name of an account (Mail.Subscribe),
// a folder's name or not.
type SubscriptionRecord struct {
	MailboxID int64
	Name      string
}

// BlobRecord is a stored body and its reference count. Body is only
// valid during the callback that receives it: a Loader copies what it
// keeps, so that a dump never holds more than one body.
type BlobRecord struct {
	ID   int64
	Refs int64
	Body []byte
}

// MessageRecord is a message in a folder; its body is the BlobRecord
// with its BlobID, emitted before it.
type MessageRecord struct{ Message }

// OutboundRecord is a queue entry. LeasedBy is the node that holds its
// lease on PostgreSQL; bbolt keeps only Leased, and a loader into
// PostgreSQL names the lease LeaseNodeCopied.
type OutboundRecord struct {
	Outbound
	LeasedBy string
}

// LeaseNodeCopied names, on PostgreSQL, the lease of an entry copied
// leased from bbolt: no node has that name, so the lease runs out at the
// entry's NextAttempt, as after a crash.
const LeaseNodeCopied = "store-copy"

// STSRecord is a destination's MTA-STS policy, expired or not.
type STSRecord struct{ STSPolicy }

// AutoReplyRecord is a mailbox's auto-reply.
type AutoReplyRecord struct{ AutoReply }

// AutoReplySentRecord is one sender a mailbox's auto-reply answered, and
// when (AutoReplies.TakeAutoReply's memory, to the second), so that a
// copied store does not answer the same sender again within the
// interval.
type AutoReplySentRecord struct {
	MailboxID int64
	Sender    string
	SentAt    time.Time
}

// SieveScriptRecord is one of a mailbox's Sieve scripts, with whether it
// is the active one.
type SieveScriptRecord struct{ SieveScript }

// WebhookRecord is a partner's webhook, its secret included.
type WebhookRecord struct{ Webhook }

// EventRecord is an event kept for its webhooks (Webhooks). Data is JSON
// whose text may differ between stores (PostgreSQL keeps jsonb, which
// orders keys its own way); what it means is the same.
type EventRecord struct{ Event }

// WebhookDeliveryRecord is one event due to one webhook: the outbox of
// package webhook, with its retry state. A delivery whose webhook or
// event is gone (bbolt keeps those until a claim drops them) is not
// dumped.
type WebhookDeliveryRecord struct {
	ID          int64
	WebhookID   int64
	EventID     int64
	Attempts    int
	NextAttempt time.Time
	LastError   string
}

// EventMarkRecord is a mark of an event recorded once until re-armed
// (QuotaFullMark), so that a copy does not record it again.
type EventMarkRecord struct{ Mark string }

// AuditRecord is an entry of the audit log.
type AuditRecord struct{ AuditEntry }

// CertRecord is one of the ACME client's named blobs (Certs): the
// account key, a certificate with its key, a challenge token.
type CertRecord struct {
	Name string
	// Data is only valid during the callback that receives it, as a
	// BlobRecord's Body.
	Data []byte
}

// SequenceRecord is the last value an id sequence handed out, so that a
// loaded store never hands out an id (or, for folders, a UIDVALIDITY)
// that the source already used, even for an object since deleted.
type SequenceRecord struct {
	Name  string // one of the Seq* names
	Value int64
}

// The sequences. SeqUIDValidity is PostgreSQL's uid_validity_seq; bbolt
// takes a folder's UIDVALIDITY from the folders' sequence.
const (
	SeqPartners    = "partners"
	SeqAPIKeys     = "api_keys"
	SeqDomains     = "domains"
	SeqMailboxes   = "mailboxes"
	SeqAliases     = "aliases"
	SeqFolders     = "folders"
	SeqUIDValidity = "uid_validity"
	SeqBlobs       = "blobs"
	SeqQueue       = "queue"
	SeqWebhooks    = "webhooks"
	SeqEvents      = "events"
	SeqDeliveries  = "webhook_deliveries"
	SeqAudit       = "audit"
)

func (SettingRecord) recordKind() Kind         { return KindSetting }
func (PartnerRecord) recordKind() Kind         { return KindPartner }
func (APIKeyRecord) recordKind() Kind          { return KindAPIKey }
func (DomainRecord) recordKind() Kind          { return KindDomain }
func (DKIMRecord) recordKind() Kind            { return KindDKIM }
func (TransferRecord) recordKind() Kind        { return KindTransfer }
func (MailboxRecord) recordKind() Kind         { return KindMailbox }
func (AliasRecord) recordKind() Kind           { return KindAlias }
func (FolderRecord) recordKind() Kind          { return KindFolder }
func (SubscriptionRecord) recordKind() Kind    { return KindSubscription }
func (BlobRecord) recordKind() Kind            { return KindBlob }
func (MessageRecord) recordKind() Kind         { return KindMessage }
func (OutboundRecord) recordKind() Kind        { return KindOutbound }
func (STSRecord) recordKind() Kind             { return KindSTSPolicy }
func (AutoReplyRecord) recordKind() Kind       { return KindAutoReply }
func (AutoReplySentRecord) recordKind() Kind   { return KindAutoReplySent }
func (SieveScriptRecord) recordKind() Kind     { return KindSieveScript }
func (WebhookRecord) recordKind() Kind         { return KindWebhook }
func (EventRecord) recordKind() Kind           { return KindEvent }
func (WebhookDeliveryRecord) recordKind() Kind { return KindWebhookDelivery }
func (EventMarkRecord) recordKind() Kind       { return KindEventMark }
func (AuditRecord) recordKind() Kind           { return KindAudit }
func (CertRecord) recordKind() Kind            { return KindCert }
func (SequenceRecord) recordKind() Kind        { return KindSequence }

// KindOf is the kind of a record.
func KindOf(r Record) Kind { return r.recordKind() }

// Dumper reads a whole store as records.
//
// Dump calls fn once per record, in Kind order, and within a kind in a
// canonical order that every implementation shares (so that two dumps of
// equal stores hash alike): by id; transfer by domain id then month;
// subscriptions by mailbox id then name in byte order; DKIM
// by domain id; messages by folder id then UID; auto-replies by mailbox
// id, their senders by mailbox id then sender; audit entries by partner
// id then id; MTA-STS policies, settings, event marks and ACME blobs by
// name in byte order. It reads one consistent snapshot, and
// stops at fn's first error, which it answers unwrapped.
type Dumper interface {
	Dump(ctx context.Context, fn func(Record) error) error
}

// Loader writes a dump into an empty store.
//
// Load first checks that the store is empty (no record of any kind but
// settings, of which one the destination has must have the source's
// value), answering an error matching ErrNotEmpty otherwise, then calls
// src with a function that takes the records in Dump's order. It writes
// them in batches (a transaction per batch), rebuilds the indexes and the
// header summaries, and once src has returned moves the id sequences past
// both the ids loaded and the source's sequences. A Load that fails
// leaves what it wrote: the store must be emptied before another.
type Loader interface {
	Load(ctx context.Context, src func(put func(Record) error) error) error
}

// ErrNotEmpty answers a Load into a store that holds data.
var ErrNotEmpty = errors.New("destination store is not empty")

// Drift is a counter whose stored value differs from what it counts.
type Drift struct {
	// Object names the object: "domain 3 (example.com)".
	Object string
	// Field is the counter: "message_count".
	Field      string
	Stored     int64
	Recomputed int64
}

func (d Drift) String() string {
	return fmt.Sprintf("%s: %s stored %d, recomputed %d", d.Object, d.Field, d.Stored, d.Recomputed)
}

// Verifier recomputes a store's counters from what they count.
//
// Verify reads one snapshot and answers one Drift per counter that
// differs: domain mailbox_count, alias_count, message_count, used_bytes;
// mailbox used_bytes, message_count, folder count; folder messages,
// unseen, size and uid_next (which must be above every UID); blob
// refcounts against the messages and queue entries naming them (and
// bodies referenced but missing); on PostgreSQL, partner domain_count.
// Transfer counters count traffic, not stored objects, and cannot be
// recomputed.
type Verifier interface {
	Verify(ctx context.Context) ([]Drift, error)
}
