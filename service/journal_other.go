//go:build !unix

package service

import "os"

// IsJournal reports whether f is systemd's journal, which exists only on
// Linux.
func IsJournal(f *os.File) bool { return false }
