package boltstore

import "syscall"

const (
	adviceNormal = syscall.MADV_NORMAL
	adviceRandom = syscall.MADV_RANDOM
)

// adviseMapping gives the kernel advice on size bytes of the file's
// mapping from data. An error changes only how pages are read ahead,
// never what is read, so it is not reported.
func adviseMapping(data, size uintptr, advice int) {
	syscall.Syscall(syscall.SYS_MADVISE, data, size, uintptr(advice))
}
