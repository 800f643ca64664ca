package boltstore

import (
	"errors"
	"os"
	"syscall"
)

// allocate takes size bytes of blocks for f at once (fallocate, mode 0:
// blocks allocated, the file's size set), or writes zeros where the file
// system cannot (EOPNOTSUPP).
func allocate(f *os.File, size int64) error {
	err := syscall.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, syscall.EOPNOTSUPP) {
		return zeros(f, size)
	}
	return err
}
