package pgstore

// Stubs of the mail plane not written yet.

import (
	"context"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// Bodies implements mailstore.Store.
func (s *Store) Bodies(ctx context.Context, mailboxID, folderID int64, uids []uint32, fn func(uid uint32, body []byte) error) error {
	return errNotImplemented
}

// Append implements mailstore.Store.
func (s *Store) Append(ctx context.Context, mailboxID, folderID int64, body []byte, flags []string, receivedAt time.Time) (mailstore.Message, error) {
	return mailstore.Message{}, errNotImplemented
}

// Folders implements mailstore.Store.
func (s *Store) Folders(ctx context.Context, mailboxID int64) ([]mailstore.Folder, error) {
	return nil, errNotImplemented
}

// Folder implements mailstore.Store.
func (s *Store) Folder(ctx context.Context, mailboxID int64, name string) (mailstore.Folder, error) {
	return mailstore.Folder{}, errNotImplemented
}

// CreateFolder implements mailstore.Store.
func (s *Store) CreateFolder(ctx context.Context, mailboxID int64, name string) (mailstore.Folder, error) {
	return mailstore.Folder{}, errNotImplemented
}

// DeleteFolder implements mailstore.Store.
func (s *Store) DeleteFolder(ctx context.Context, mailboxID int64, name string) error {
	return errNotImplemented
}

// RenameFolder implements mailstore.Store.
func (s *Store) RenameFolder(ctx context.Context, mailboxID int64, oldName, newName string) error {
	return errNotImplemented
}

// SetSubscribed implements mailstore.Store.
func (s *Store) SetSubscribed(ctx context.Context, mailboxID int64, name string, subscribed bool) error {
	return errNotImplemented
}

// Messages implements mailstore.Store.
func (s *Store) Messages(ctx context.Context, mailboxID, folderID int64) ([]mailstore.Message, error) {
	return nil, errNotImplemented
}

// Body implements mailstore.Store.
func (s *Store) Body(ctx context.Context, mailboxID, folderID int64, uid uint32) ([]byte, error) {
	return nil, errNotImplemented
}

// SetFlags implements mailstore.Store.
func (s *Store) SetFlags(ctx context.Context, mailboxID, folderID int64, uids []uint32, op mailstore.FlagOp, flags []string) ([]mailstore.Message, error) {
	return nil, errNotImplemented
}

// Copy implements mailstore.Store.
func (s *Store) Copy(ctx context.Context, mailboxID, fromFolderID int64, uids []uint32, toFolderID int64) ([]uint32, error) {
	return nil, errNotImplemented
}

// Move implements mailstore.Store.
func (s *Store) Move(ctx context.Context, mailboxID, fromFolderID int64, uids []uint32, toFolderID int64) ([]uint32, error) {
	return nil, errNotImplemented
}

// Expunge implements mailstore.Store.
func (s *Store) Expunge(ctx context.Context, mailboxID, folderID int64, uids []uint32) ([]uint32, error) {
	return nil, errNotImplemented
}

// PurgeBefore implements mailstore.Store.
func (s *Store) PurgeBefore(ctx context.Context, now time.Time) ([]mailstore.PurgeResult, error) {
	return nil, errNotImplemented
}
