package boltstore

import (
	"sync"

	bolt "go.etcd.io/bbolt"
)

// bbolt advises the kernel that its file's mapping is read at random
// (MADV_RANDOM), so that a page fault reads that one page: right for the
// lookups of a B-tree, not for a folder's bodies read in order (SEARCH
// BODY, FETCH 1:* BODY[]), which a fresh or compacted file lays out
// mostly in order too. Read cold, one 4 KiB read per fault was most of a
// SEARCH BODY's time (5,000 major faults for 10,000 messages). While a
// bulk read's transaction is open, readAround has the mapping advised
// normal (the kernel's read-around), and random again when the last one
// ends; within a read transaction the mapping cannot move, as bbolt
// remaps only when no read transaction is open.
type readAround struct {
	mu   sync.Mutex
	n    int     // bulk reads in a transaction
	size uintptr // the bytes of the mapping advised normal
}

// begin is called in tx before a bulk read, end in tx after it.
func (r *readAround) begin(tx *bolt.Tx) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	if r.n == 1 {
		r.size = uintptr(tx.Size())
		adviseMapping(tx.DB().Info().Data, r.size, adviceNormal)
	}
}

func (r *readAround) end(tx *bolt.Tx) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n--
	if r.n == 0 {
		adviseMapping(tx.DB().Info().Data, r.size, adviceRandom)
	}
}
