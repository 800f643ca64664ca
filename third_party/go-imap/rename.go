package imap

// RenameOptions contains options for the RENAME command.
type RenameOptions struct{}
