package mailstore

import "sync"

// Watchers fans out change signals to the watchers of each account (IMAP
// IDLE and the notifications of selected folders), as Mail.Watch needs,
// for both stores: a writer calls Notify only after its transaction has
// committed, so that a watcher that wakes up and reads sees the change.
// The zero value is ready to use.
type Watchers struct {
	// mu guards watchers.
	mu       sync.Mutex
	watchers map[int64]map[chan struct{}]struct{} // mailboxID -> channels
}

// Watch registers a watcher (a channel of buffer 1) of the account; see
// Mail.Watch.
func (w *Watchers) Watch(mailboxID int64) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	if w.watchers == nil {
		w.watchers = make(map[int64]map[chan struct{}]struct{})
	}
	set := w.watchers[mailboxID]
	if set == nil {
		set = make(map[chan struct{}]struct{})
		w.watchers[mailboxID] = set
	}
	set[ch] = struct{}{}
	w.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			if set := w.watchers[mailboxID]; set != nil {
				delete(set, ch)
				if len(set) == 0 {
					delete(w.watchers, mailboxID)
				}
			}
		})
	}
}

// Notify signals every watcher of the accounts without blocking: a
// watcher that has not consumed the previous signal keeps that one, so
// signals coalesce.
func (w *Watchers) Notify(mailboxIDs ...int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range mailboxIDs {
		for ch := range w.watchers[id] {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

// NotifyAll signals every watcher: for when changes may have been missed
// (a lost connection to another node's notifications), so that each
// session looks for itself.
func (w *Watchers) NotifyAll() {
	w.mu.Lock()
	ids := make([]int64, 0, len(w.watchers))
	for id := range w.watchers {
		ids = append(ids, id)
	}
	w.mu.Unlock()
	w.Notify(ids...)
}
