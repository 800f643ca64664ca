//go:build !linux

package boltstore

const (
	adviceNormal = 0
	adviceRandom = 0
)

// adviseMapping does nothing here: readAround is for Linux's page cache.
func adviseMapping(data, size uintptr, advice int) {}
