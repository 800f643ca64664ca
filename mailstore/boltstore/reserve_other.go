//go:build !linux

package mailstore

import "os"

// allocate takes size bytes of blocks for f by writing zeros.
func allocate(f *os.File, size int64) error { return zeros(f, size) }
