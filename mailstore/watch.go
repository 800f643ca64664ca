package mailstore

import "sync"

// hub fans out change signals to the watchers of each account (IMAP IDLE
// and the notifications of selected folders). Writers call notify only
// after their transaction has committed, so a watcher that wakes up and
// reads sees the change.
type hub struct {
	// mu guards watchers.
	mu       sync.Mutex
	watchers map[int64]map[chan struct{}]struct{} // mailboxID -> channels
}

// watch registers a channel (buffer 1) for the account.
func (h *hub) watch(mailboxID int64) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	if h.watchers == nil {
		h.watchers = make(map[int64]map[chan struct{}]struct{})
	}
	set := h.watchers[mailboxID]
	if set == nil {
		set = make(map[chan struct{}]struct{})
		h.watchers[mailboxID] = set
	}
	set[ch] = struct{}{}
	h.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			if set := h.watchers[mailboxID]; set != nil {
				delete(set, ch)
				if len(set) == 0 {
					delete(h.watchers, mailboxID)
				}
			}
		})
	}
}

// notify signals every watcher of the accounts without blocking: a
// watcher that has not consumed the previous signal keeps that one, so
// signals coalesce.
func (h *hub) notify(mailboxIDs ...int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, id := range mailboxIDs {
		for ch := range h.watchers[id] {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

// Watchers fans out change signals as Mail.Watch needs, for both stores
// (mailstore/boltstore, mailstore/pgstore): a writer calls Notify after
// commit. The zero value is ready to use.
type Watchers struct{ h hub }

// Watch registers a watcher of the account; see Mail.Watch.
func (w *Watchers) Watch(mailboxID int64) (<-chan struct{}, func()) { return w.h.watch(mailboxID) }

// Notify signals the accounts' watchers without blocking.
func (w *Watchers) Notify(mailboxIDs ...int64) { w.h.notify(mailboxIDs...) }

// NotifyAll signals every watcher: for when changes may have been missed
// (a lost connection to another node's notifications), so that each
// session looks for itself.
func (w *Watchers) NotifyAll() {
	w.h.mu.Lock()
	ids := make([]int64, 0, len(w.h.watchers))
	for id := range w.h.watchers {
		ids = append(ids, id)
	}
	w.h.mu.Unlock()
	w.h.notify(ids...)
}
