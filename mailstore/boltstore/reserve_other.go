//go:build !linux

package boltstore

import "os"

// allocate takes size bytes of blocks for f by writing zeros.
func allocate(f *os.File, size int64) error { return zeros(f, size) }
