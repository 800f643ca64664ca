package mailstore

import (
	"context"
	"errors"
	"time"
)

// Mail-plane errors.
var (
	ErrFolderNotFound  = notFound("folder not found")
	ErrMessageNotFound = notFound("message not found")
	ErrFolderExists    = errors.New("folder already exists")
	ErrOverQuota       = errors.New("mailbox is over quota")
	ErrFolderProtected = errors.New("folder cannot be deleted or renamed")
)

// Folder is an IMAP mailbox ("folder", to avoid a clash with Mailbox, the
// account) of one account. INBOX and the special-use folders exist from the
// account's creation.
type Folder struct {
	ID          int64  `json:"id"`
	MailboxID   int64  `json:"mailbox_id"`
	Name        string `json:"name"`
	SpecialUse  string `json:"special_use,omitempty"` // RFC 6154 attribute, e.g. `\Sent`
	Subscribed  bool   `json:"subscribed"`
	UIDValidity uint32 `json:"uid_validity"`
	UIDNext     uint32 `json:"uid_next"`
	// Counters, kept in the same transactions as the messages.
	Messages int64 `json:"messages"`
	Unseen   int64 `json:"unseen"`
	Size     int64 `json:"size"`
}

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
}

// Delivery is one inbound message for one or more local mailboxes. Body is
// the whole message as it is to be stored, trace headers included.
type Delivery struct {
	Body       []byte
	ReceivedAt time.Time
	// MailboxIDs are the local recipients; each gets the message in its
	// INBOX. A mailbox listed twice gets it once.
	MailboxIDs []int64
}

// Mail is the mail plane: address resolution, delivery, folders and
// messages. Its methods are addressed by mail address or mailbox id, not by
// partner: the protocol servers act for whoever owns the address.
type Mail interface {
	// MailboxByEmail finds a mailbox by address, whoever owns it, with its
	// domain. ErrMailboxNotFound if none.
	MailboxByEmail(ctx context.Context, email string) (Mailbox, Domain, error)
	// AliasBySource finds an alias by source address ("local@domain", or
	// "@domain" for the catch-all), whoever owns it. ErrAliasNotFound.
	AliasBySource(ctx context.Context, source string) (Alias, error)
	// DomainByName finds a hosted domain by name, whoever owns it.
	// ErrDomainNotFound.
	DomainByName(ctx context.Context, name string) (Domain, error)
}
