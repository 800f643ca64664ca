package imapd

import (
	"context"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// Store is what the IMAP server needs of the mail store: the account of a
// session, its folders and messages, and the change log and Watch that
// keep a selected folder up to date. boltstore.Store (any mailstore.Mail)
// satisfies it; the methods' contracts are those of mailstore.Mail.
type Store interface {
	MailboxByEmail(ctx context.Context, email string) (mailstore.Mailbox, mailstore.Domain, error)
	RecordLogin(ctx context.Context, mailboxID int64, now time.Time) error

	Folders(ctx context.Context, mailboxID int64) ([]mailstore.Folder, error)
	Folder(ctx context.Context, mailboxID int64, name string) (mailstore.Folder, error)
	CreateFolder(ctx context.Context, mailboxID int64, name string) (mailstore.Folder, error)
	DeleteFolder(ctx context.Context, mailboxID int64, name string) error
	RenameFolder(ctx context.Context, mailboxID int64, oldName, newName string) error
	Subscriptions(ctx context.Context, mailboxID int64) ([]string, error)
	Subscribe(ctx context.Context, mailboxID int64, name string) error
	Unsubscribe(ctx context.Context, mailboxID int64, name string) error

	Messages(ctx context.Context, mailboxID, folderID int64) ([]mailstore.Message, error)
	Bodies(ctx context.Context, mailboxID, folderID int64, uids []uint32, fn func(uid uint32, body []byte) error) error
	Summaries(ctx context.Context, mailboxID, folderID int64, uids []uint32, fn func(uid uint32, header []byte) error) error
	AppendMany(ctx context.Context, mailboxID, folderID int64, msgs []mailstore.AppendMessage) ([]mailstore.Message, error)
	SetFlags(ctx context.Context, mailboxID, folderID int64, uids []uint32, op mailstore.FlagOp, flags []string) ([]mailstore.Message, error)
	SetFlagsIf(ctx context.Context, mailboxID, folderID int64, uids []uint32, op mailstore.FlagOp, flags []string, unchangedSince uint64) ([]mailstore.Message, []uint32, error)
	Copy(ctx context.Context, mailboxID, fromFolderID int64, uids []uint32, toFolderID int64) ([]uint32, error)
	Move(ctx context.Context, mailboxID, fromFolderID int64, uids []uint32, toFolderID int64) ([]uint32, error)
	Expunge(ctx context.Context, mailboxID, folderID int64, uids []uint32) ([]uint32, error)

	Changes(ctx context.Context, mailboxID, folderID int64, since uint64) (mailstore.Folder, []mailstore.Change, error)
	Watch(mailboxID int64) (<-chan struct{}, func())
}

var _ Store = mailstore.Mail(nil)
