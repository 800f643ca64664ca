//go:build unix

package service

import (
	"fmt"
	"os"
	"syscall"
)

// IsJournal reports whether f is systemd's journal: systemd names the
// stream it connects a service's stdout to in JOURNAL_STREAM, as
// "device:inode" (systemd.exec(5)), and f is that stream when its own
// device and inode match. A terminal, a pipe or a file is not.
func IsJournal(f *os.File) bool {
	v := os.Getenv("JOURNAL_STREAM")
	if v == "" {
		return false
	}
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	var dev, ino uint64
	if _, err := fmt.Sscanf(v, "%d:%d", &dev, &ino); err != nil {
		return false
	}
	return uint64(st.Dev) == dev && uint64(st.Ino) == ino
}
