package mailstore

import (
	"context"
	"errors"
	"time"
)

// errTodo marks mail-plane methods not built yet; bolt_mail.go replaces
// this file.
var errTodo = errors.New("not implemented yet")

func (s *Bolt) Deliver(ctx context.Context, d Delivery) (DeliveryResult, error) {
	return DeliveryResult{}, errTodo
}
func (s *Bolt) RecordLogin(ctx context.Context, mailboxID int64, now time.Time) error { return errTodo }
func (s *Bolt) Folders(ctx context.Context, mailboxID int64) ([]Folder, error)        { return nil, errTodo }
func (s *Bolt) Folder(ctx context.Context, mailboxID int64, name string) (Folder, error) {
	return Folder{}, errTodo
}
func (s *Bolt) CreateFolder(ctx context.Context, mailboxID int64, name string) (Folder, error) {
	return Folder{}, errTodo
}
func (s *Bolt) DeleteFolder(ctx context.Context, mailboxID int64, name string) error { return errTodo }
func (s *Bolt) RenameFolder(ctx context.Context, mailboxID int64, oldName, newName string) error {
	return errTodo
}
func (s *Bolt) SetSubscribed(ctx context.Context, mailboxID int64, name string, subscribed bool) error {
	return errTodo
}
func (s *Bolt) Messages(ctx context.Context, mailboxID, folderID int64) ([]Message, error) {
	return nil, errTodo
}
func (s *Bolt) Body(ctx context.Context, mailboxID, folderID int64, uid uint32) ([]byte, error) {
	return nil, errTodo
}
func (s *Bolt) Append(ctx context.Context, mailboxID, folderID int64, body []byte, flags []string, receivedAt time.Time) (Message, error) {
	return Message{}, errTodo
}
func (s *Bolt) SetFlags(ctx context.Context, mailboxID, folderID int64, uids []uint32, op FlagOp, flags []string) ([]Message, error) {
	return nil, errTodo
}
func (s *Bolt) Copy(ctx context.Context, mailboxID, fromFolderID int64, uids []uint32, toFolderID int64) ([]uint32, error) {
	return nil, errTodo
}
func (s *Bolt) Move(ctx context.Context, mailboxID, fromFolderID int64, uids []uint32, toFolderID int64) ([]uint32, error) {
	return nil, errTodo
}
func (s *Bolt) Expunge(ctx context.Context, mailboxID, folderID int64, uids []uint32) ([]uint32, error) {
	return nil, errTodo
}
func (s *Bolt) PurgeBefore(ctx context.Context, now time.Time) ([]PurgeResult, error) {
	return nil, errTodo
}
func (s *Bolt) Watch(mailboxID int64) (<-chan struct{}, func()) { return nil, func() {} }
