package mailstore

import "time"

// QueueStats is what Queue.QueueStats answers.
type QueueStats struct {
	// Entries is every entry in the queue, held ones included.
	Entries int
	// Held is the entries waiting for their domain's transfer cap.
	Held int
	// Oldest is the QueuedAt of the entry queued first; zero when the
	// queue is empty.
	Oldest time.Time
}

// StoreSize is what a store answers about its own size, for monitoring.
type StoreSize struct {
	// Bytes is the size of the store's data: the bbolt file, or the
	// PostgreSQL schema's tables with their indexes and TOAST.
	Bytes int64
	// FreePages and FreeBytes are the pages inside the bbolt file that
	// are free for reuse (the file never shrinks by itself); -1 for a
	// store that has no such figure (PostgreSQL).
	FreePages int
	FreeBytes int64
}
