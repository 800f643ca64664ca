package mailstore

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"
)

// Mail-plane errors.
var (
	ErrFolderNotFound  = notFound("folder not found")
	ErrMessageNotFound = notFound("message not found")
	ErrFolderExists    = errors.New("folder already exists")
	ErrOverQuota       = errors.New("mailbox is over quota")
	ErrFolderProtected = errors.New("folder cannot be deleted or renamed")
	ErrTooManyFolders  = errors.New("too many folders")
	// ErrTooManySubscriptions answers Subscribe at MaxSubscriptions.
	ErrTooManySubscriptions = errors.New("too many subscriptions")
)

// MaxFolders is the most folders an account may have, INBOX and the
// special-use folders included. Folders cost no quota, so without a bound
// one account could grow the database without limit (an audit saw 3,000
// folders with 500-byte names made in 2 s).
const MaxFolders = 1000

// MaxSubscriptions is the most subscribed names an account may have. A
// subscription need not name a folder (RFC 9051 section 6.3.7), so it is
// not bounded by MaxFolders; it costs no quota either, and the same
// reasoning bounds it. The folders an account can have fit.
const MaxSubscriptions = 1000

// Folder is an IMAP mailbox ("folder", to avoid a clash with Mailbox, the
// account) of one account. INBOX and the special-use folders exist from the
// account's creation.
type Folder struct {
	ID          int64  `json:"id"`
	MailboxID   int64  `json:"mailbox_id"`
	Name        string `json:"name"`
	SpecialUse  string `json:"special_use,omitempty"` // RFC 6154 attribute, e.g. `\Sent`
	UIDValidity uint32 `json:"uid_validity"`
	UIDNext     uint32 `json:"uid_next"`
	// Counters, kept in the same transactions as the messages.
	Messages int64 `json:"messages"`
	Unseen   int64 `json:"unseen"`
	Size     int64 `json:"size"`
	// HighestModSeq is the ModSeq of the folder's latest change (0 before any).
	HighestModSeq uint64 `json:"highest_modseq"`
}

// ChangeKind says what one Change did.
type ChangeKind uint8

const (
	ChangeAdd     ChangeKind = iota + 1 // a message arrived (delivery, APPEND, COPY or MOVE into the folder)
	ChangeFlags                         // a message's flags changed
	ChangeExpunge                       // a message was removed (EXPUNGE, MOVE out, retention, DeleteFolder excluded)
)

// Change is one committed change to one message of a folder.
type Change struct {
	ModSeq uint64
	Kind   ChangeKind
	// Message is the message after the change: for ChangeExpunge only its UID (and FolderID) are set.
	Message Message
}

// ErrChangesGone answers Changes when the log no longer reaches back to since.
var ErrChangesGone = errors.New("change log does not reach back that far")

// ChangeLogKeep is how many of each folder's latest changes the log keeps
// at least. A session is behind by the changes made since it last looked
// (a few, or a burst: a client marking a page read, a batch of
// deliveries); past a thousand, reading the changes costs about what
// re-reading the folder does (one record either way), so a longer log
// would buy little. The bbolt log keeps exactly this many, some 40 bytes
// each: at most ~40 KB for a folder, and only for one that has had a
// thousand changes, whose messages weigh far more.
const ChangeLogKeep = 1000

// DefaultFolders are created with every mailbox: name and special use.
var DefaultFolders = [][2]string{
	{"INBOX", ""},
	{"Sent", `\Sent`},
	{"Drafts", `\Drafts`},
	{"Trash", `\Trash`},
	{"Junk", `\Junk`},
	{"Archive", `\Archive`},
}

// Message is one message in one folder. Several messages (one per local
// recipient, or a copy) may share one stored body, named by BlobID.
type Message struct {
	FolderID   int64     `json:"folder_id"`
	UID        uint32    `json:"uid"`
	BlobID     int64     `json:"blob_id"`
	Size       int64     `json:"size"`
	ReceivedAt time.Time `json:"received_at"`
	Flags      []string  `json:"flags,omitempty"`
	// ModSeq is the folder's ModSeq of the message's latest change (its
	// arrival or its last flag change): what IMAP's CONDSTORE reports as
	// its MODSEQ (RFC 7162). It is 0 for a message last changed before
	// the stores kept it, which is older than every ModSeq either store
	// has given since.
	ModSeq uint64 `json:"modseq,omitempty"`
}

// AppendMessage is one message of Mail.AppendMany.
type AppendMessage struct {
	Body       []byte
	Flags      []string
	ReceivedAt time.Time
}

// Delivery is one inbound message for one or more local mailboxes. Body is
// the whole message as it is to be stored, trace headers included.
type Delivery struct {
	Body       []byte
	ReceivedAt time.Time
	// MailboxIDs are the local recipients; each gets the message in its
	// INBOX. A mailbox listed twice gets it once.
	MailboxIDs []int64
	// JunkMailboxIDs are those of MailboxIDs that get the message in their
	// Junk folder (the one with special use \Junk, RFC 6154) rather than
	// INBOX: the spam filter's verdict. One without such a folder (its
	// user deleted it) gets it in INBOX. Others are ignored.
	JunkMailboxIDs []int64
	// SenderDomainID, when not zero, is the hosted domain on whose behalf
	// the message is sent (SMTP submission): its outbound transfer counts
	// the message, and if its cap for the month of ReceivedAt is used
	// already (inbound and outbound bytes together reach
	// TransferMonthlyMB × MB; a cap of 0 admits nothing) Deliver stores
	// nothing and answers ErrTransferCapReached. An unknown domain is
	// ErrDomainNotFound, with nothing stored either.
	SenderDomainID int64
	// Relay queues the message for remote recipients in the same
	// transaction (see Queue and Relay). The body is stored once for all,
	// local copies and queue entries.
	Relay []Relay
	// From is the envelope sender ("" for the null one). It is the sender
	// of the KindLocal entries Deliver queues for recipients whose
	// mailbox was full (DeliveryResult.OverQuota), and so where their
	// bounce goes should they expire.
	From string
	// IgnoreQuota delivers to every local recipient whatever its quota:
	// for the queue's bounces, which tell a sender its own mail failed
	// (delivery.Agent.Bounce). Otherwise Deliver applies the rule of
	// concurrent deliveries (see Mail.Deliver).
	IgnoreQuota bool
	// Placements file the copies of some of MailboxIDs in another
	// folder than INBOX and JunkMailboxIDs say, or with flags: what a
	// Sieve script's fileinto and imap4flags ask. The first for a
	// mailbox counts; one for a mailbox not in MailboxIDs is ignored.
	Placements []Placement
}

// Placement is where one mailbox's copy of a Delivery goes.
type Placement struct {
	MailboxID int64
	// Folder is the name of the folder ("INBOX" is INBOX whatever its
	// case); "" leaves the copy where JunkMailboxIDs puts it. A folder
	// the mailbox does not have puts it in INBOX: delivery never fails
	// for a folder (RFC 5228 section 4.1), and the folder is created
	// beforehand when it should be (fileinto :create).
	Folder string
	// Flags are the copy's flags (system flags and keywords, as
	// Message.Flags); \Recent is not a stored flag and is dropped.
	Flags []string
}

// PlacementOf is d's placement of mailbox id's copy, the zero Placement
// when none.
func (d Delivery) PlacementOf(id int64) Placement {
	for _, p := range d.Placements {
		if p.MailboxID == id {
			return p
		}
	}
	return Placement{}
}

// DeliveryFlags are flags as Deliver stores them: \Recent dropped,
// each once.
func DeliveryFlags(flags []string) []string {
	var out []string
	for _, f := range flags {
		if f == "" || strings.EqualFold(f, `\Recent`) || slices.ContainsFunc(out, func(h string) bool { return strings.EqualFold(h, f) }) {
			continue
		}
		out = append(out, f)
	}
	return out
}

// Mail is the mail plane: address resolution, delivery, folders and
// messages. Its methods are addressed by mail address or mailbox id, not by
// partner: the protocol servers act for whoever owns the address.
type Mail interface {
	// MailboxByEmail finds a mailbox by address in the live claim of its
	// domain (LiveClaim), whoever owns it, with its domain, and sets
	// Mailbox.HasAutoReply and HasSieve. ErrMailboxNotFound if none: a
	// mailbox of a claim that is not live is not found.
	MailboxByEmail(ctx context.Context, email string) (Mailbox, Domain, error)
	// AliasBySource finds an alias by source address ("local@domain", or
	// "@domain" for the catch-all) in the live claim of its domain,
	// whoever owns it. ErrAliasNotFound.
	AliasBySource(ctx context.Context, source string) (Alias, error)
	// DomainByName finds the live claim of a hosted domain by name,
	// whoever owns it. ErrDomainNotFound.
	DomainByName(ctx context.Context, name string) (Domain, error)
	// DomainWithID finds a hosted domain by id, whoever owns it (the
	// queue's entries name their domain by id). ErrDomainNotFound.
	DomainWithID(ctx context.Context, id int64) (Domain, error)
	// Transfer is a domain's transfer counters for a month ("YYYY-MM"),
	// zero when nothing was counted. ErrDomainNotFound.
	Transfer(ctx context.Context, domainID int64, month string) (Transfer, error)
	// DKIMKeys are a domain's DKIM signing keys. ErrDomainNotFound.
	DKIMKeys(ctx context.Context, domainID int64) ([]DKIMKey, error)
	// EnsureDKIMKeys gives keys to a domain that has none (one created
	// before keys existed) and answers the domain's keys: the given ones,
	// or those it had. ErrDomainNotFound.
	EnsureDKIMKeys(ctx context.Context, domainID int64, keys []DKIMKey) ([]DKIMKey, error)

	// Deliver stores one inbound message for its local recipients in one
	// transaction: one stored body shared by all recipients, a message in
	// each recipient's INBOX, each mailbox's and domain's used bytes and
	// message count, and each recipient domain's inbound transfer for the
	// month of ReceivedAt (counted once per domain per message). It returns
	// only once that is committed and synced; concurrent deliveries share
	// commits. Unknown mailbox ids are skipped (the account was deleted
	// meanwhile) and reported in DeliveryResult.Skipped. A zero
	// ReceivedAt is ErrInvalidArgument.
	//
	// The quota is decided at RCPT (policy.AcceptAtRCPT, against the size
	// announced); a message accepted there is stored even if it takes the
	// mailbox past its quota by itself. What Deliver adds is the rule of
	// concurrent deliveries, decided per recipient on the mailbox's
	// counters as the transaction holds them (those of deliveries that
	// committed before, earlier ones of the same group commit included):
	// a mailbox that has reached its quota (Mailbox.Full) is not written
	// to, so that concurrent deliveries take a mailbox past its quota by
	// one message at most. When one was refused so and no local recipient
	// took the message, Deliver stores and queues nothing, the relays and
	// the other recipients included, and answers ErrOverQuota (the sender
	// retries it whole). When another local recipient took it, each
	// refused mailbox's copy is queued in the same transaction as a
	// KindLocal entry to its address, from Delivery.From
	// (DeliveryResult.OverQuota): the queue delivers it here later under
	// the same rule, or bounces it when it expires. Delivery.IgnoreQuota
	// turns the rule off.
	//
	// With Relay, the same transaction queues the message for its remote
	// recipients (DeliveryResult.Queued), and MailboxIDs may be empty: a
	// delivery that stores no local copy but queues is a success. Transfer
	// caps are decided on the month's figures as they stood before this
	// delivery: the sender's (SenderDomainID) refuses the whole delivery, a
	// relay domain's holds its entries. Outbound bytes are counted once per
	// message for each of the sender domain and the relay domains whose
	// entries are not held.
	Deliver(ctx context.Context, d Delivery) (DeliveryResult, error)

	// RecordLogin sets the mailbox's last login time.
	RecordLogin(ctx context.Context, mailboxID int64, now time.Time) error

	// Folders lists an account's folders by name.
	Folders(ctx context.Context, mailboxID int64) ([]Folder, error)
	// Folder finds an account's folder by name ("INBOX" is matched in any
	// case, other names exactly). ErrFolderNotFound.
	Folder(ctx context.Context, mailboxID int64, name string) (Folder, error)
	// CreateFolder adds a folder; it does not subscribe it (RFC 9051
	// section 6.3.4 leaves that to the client). ErrFolderExists;
	// ErrTooManyFolders when the account has MaxFolders already;
	// ErrInvalidArgument for a name IMAP cannot carry (empty, an empty
	// level "a//b", a leading or trailing "/", the wildcards * and %,
	// control characters, invalid UTF-8).
	CreateFolder(ctx context.Context, mailboxID int64, name string) (Folder, error)
	// DeleteFolder deletes a folder and its messages, freeing their storage.
	// INBOX is ErrFolderProtected. Its children ("name/...") stay, and so
	// does a subscription to its name (RFC 9051 section 6.3.7: a server
	// does not remove a name from the subscriptions unilaterally).
	DeleteFolder(ctx context.Context, mailboxID int64, name string) error
	// RenameFolder renames a folder (and its children "old/..."). Renaming
	// INBOX is ErrFolderProtected. ErrFolderExists if the new name is taken.
	// Subscriptions keep their names (RFC 9051 section 6.3.6: a client
	// that wants the subscription to follow subscribes the new name and
	// unsubscribes the old).
	RenameFolder(ctx context.Context, mailboxID int64, oldName, newName string) error

	// Subscriptions lists an account's subscribed names (IMAP SUBSCRIBE),
	// sorted bytewise. They are a set of names of their own, not a mark on
	// the folders: a name may be subscribed with no folder of that name,
	// and a folder need not be subscribed. A new account has its
	// DefaultFolders subscribed. ErrMailboxNotFound.
	Subscriptions(ctx context.Context, mailboxID int64) ([]string, error)
	// Subscribe adds a name to the account's subscriptions, whether or not
	// a folder has it (RFC 9051 section 6.3.7 lets a server check, and
	// this one does not: a subscription may be made before its folder, or
	// outlive it). "INBOX" is matched in any case. Subscribing a name
	// already subscribed does nothing. ErrInvalidArgument for a name
	// CreateFolder would refuse; ErrTooManySubscriptions when the account
	// has MaxSubscriptions already; ErrMailboxNotFound.
	Subscribe(ctx context.Context, mailboxID int64, name string) error
	// Unsubscribe removes a name from the account's subscriptions; a name
	// not subscribed is no error (RFC 9051 section 6.3.8). ErrMailboxNotFound.
	Unsubscribe(ctx context.Context, mailboxID int64, name string) error

	// Messages lists a folder's messages in UID order.
	Messages(ctx context.Context, mailboxID, folderID int64) ([]Message, error)
	// Body returns the stored body of a message of the account.
	Body(ctx context.Context, mailboxID, folderID int64, uid uint32) ([]byte, error)
	// Bodies calls fn with the stored body of each message of uids, in the
	// order of uids (a UID given twice is called twice); UIDs not in the
	// folder (expunged, or never there) are skipped. It is Body for many
	// messages at once (IMAP FETCH and SEARCH of a range), reading them in
	// bounded chunks, each a consistent snapshot of the folder: a message
	// expunged while Bodies runs may or may not be seen.
	//
	// body is valid only until fn returns (its memory is reused): fn must
	// copy what it keeps. fn runs outside any store transaction, so it may
	// block (write to a slow client) and may call the store.
	//
	// A folder that is not the account's is ErrFolderNotFound, as with
	// Body, and so is a folder deleted while Bodies runs, possibly after
	// fn has seen some bodies. An error from fn stops Bodies, which
	// returns it unwrapped. A done ctx stops Bodies between chunks with an
	// error matching ctx.Err(). An empty uids reads nothing and answers nil.
	Bodies(ctx context.Context, mailboxID, folderID int64, uids []uint32, fn func(uid uint32, body []byte) error) error
	// Summaries is Bodies for a message's summary (HeaderSummary: the
	// header fields of the IMAP ENVELOPE and of a folder's listing) in
	// place of its body, with the same order, skipping, errors and
	// validity of header. It reads no body for a message stored with its
	// summary (every Deliver and Append does; Copy and Move share it);
	// for one stored before summaries existed, it makes the summary from
	// the body and stores it for the next call.
	Summaries(ctx context.Context, mailboxID, folderID int64, uids []uint32, fn func(uid uint32, header []byte) error) error
	// Append adds a message to a folder (IMAP APPEND). ErrOverQuota when the
	// account is at or over quota, or would be with this message.
	Append(ctx context.Context, mailboxID, folderID int64, body []byte, flags []string, receivedAt time.Time) (Message, error)
	// AppendMany is Append of several messages in one transaction (IMAP
	// MULTIAPPEND, RFC 3502): all are added, under consecutive UIDs in
	// their order, or none. ErrOverQuota when the account would be over
	// quota with all of them.
	AppendMany(ctx context.Context, mailboxID, folderID int64, msgs []AppendMessage) ([]Message, error)
	// SetFlags changes the flags of the given messages: op is FlagsAdd,
	// FlagsRemove or FlagsReplace. It returns the changed messages.
	// Flags compare without case; system flags are stored in canonical
	// case and \Recent is never stored. UIDs not in the folder are
	// skipped, and so are messages whose flags the call does not change.
	SetFlags(ctx context.Context, mailboxID, folderID int64, uids []uint32, op FlagOp, flags []string) ([]Message, error)
	// SetFlagsIf is SetFlags for those of the messages whose ModSeq is at
	// most unchangedSince, compared in the transaction of the change (IMAP
	// STORE's UNCHANGEDSINCE, RFC 7162 section 3.1.3); modified are the
	// UIDs it left alone because they changed since, in the order of uids.
	SetFlagsIf(ctx context.Context, mailboxID, folderID int64, uids []uint32, op FlagOp, flags []string, unchangedSince uint64) (changed []Message, modified []uint32, err error)
	// Copy copies messages to another folder of the same account, sharing
	// their bodies, and returns the new UIDs in the order of uids.
	// ErrOverQuota if the copies would put the account over quota.
	// ErrMessageNotFound, and nothing copied, if a UID is not in the folder.
	Copy(ctx context.Context, mailboxID, fromFolderID int64, uids []uint32, toFolderID int64) ([]uint32, error)
	// Move is Copy then Expunge of the originals, in one transaction; it
	// does not change the account's used bytes.
	Move(ctx context.Context, mailboxID, fromFolderID int64, uids []uint32, toFolderID int64) ([]uint32, error)
	// Expunge deletes the given messages (or, for nil uids, every message
	// flagged \Deleted) and frees their storage. It returns the UIDs removed.
	// Given UIDs are removed whatever their flags; those not in the folder
	// are skipped; an empty, non-nil uids removes nothing.
	Expunge(ctx context.Context, mailboxID, folderID int64, uids []uint32) ([]uint32, error)

	// PurgeBefore is the retention pass: for every domain, it deletes the
	// messages received before now minus the domain's retention_days, from
	// every folder, in bounded batches (one transaction each) through an
	// index by received time, freeing quota counters in the same
	// transactions. Its cost does not depend on the messages it keeps.
	// A domain with retention_days 0 or less keeps its mail. It returns
	// one result per domain where it deleted something.
	PurgeBefore(ctx context.Context, now time.Time) ([]PurgeResult, error)

	// Changes answers the changes to the account's folder with a ModSeq above since, in ModSeq order,
	// and the folder as it stands after the last of them (its HighestModSeq is that change's ModSeq, or since's folder state when none).
	// Each folder has its own ModSeq sequence, which grows by one for each change, in the same transaction as the change.
	// The log keeps at least the last ChangeLogKeep changes of each folder; for an older since it answers ErrChangesGone and the caller re-reads the folder with Messages.
	// ErrFolderNotFound for a folder that is not the account's. Its cost is that of the changes it answers, not of the folder.
	//
	// A folder made before the log existed starts at HighestModSeq 0 with an empty log:
	// Changes(since 0) on it answers no changes, and its first change is ModSeq 1.
	// Several changes to one message may be answered as several Changes; a flag change that changes nothing logs nothing.
	Changes(ctx context.Context, mailboxID, folderID int64, since uint64) (Folder, []Change, error)

	// Watch returns a channel that receives (without blocking the writer;
	// several changes may coalesce into one signal) after every committed
	// change to the account's messages or folders, and a function that
	// stops the watch. IMAP IDLE uses it.
	Watch(mailboxID int64) (<-chan struct{}, func())
}

// FlagOp says how SetFlags combines flags.
type FlagOp int

// Flag operations (IMAP STORE FLAGS, +FLAGS, -FLAGS).
const (
	FlagsReplace FlagOp = iota
	FlagsAdd
	FlagsRemove
)

// DeliveryResult says what Deliver stored.
type DeliveryResult struct {
	Delivered []int64 // mailbox ids that got the message
	Skipped   []int64 // mailbox ids that no longer exist
	// OverQuota are the mailbox ids that had reached their quota when
	// the delivery was written (see Mail.Deliver): they did not get the
	// message, a KindLocal queue entry each holds it for them.
	OverQuota []int64
	// Queued are the ids of the queue entries made for Relay, held ones
	// included, in the order of Relay and of each one's destinations;
	// then the KindLocal entry of each of OverQuota, in its order.
	Queued []int64
}

// PurgeResult is what a retention pass deleted in one domain.
type PurgeResult struct {
	DomainID int64
	Domain   string
	Messages int64
	Bytes    int64
}
