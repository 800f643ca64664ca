package imapd

import (
	"time"

	"github.com/emersion/go-imap/v2/imapserver"
)

// Idle waits for changes to the account (RFC 2177) and reports those of
// the selected folder as they happen: the store's Watch wakes it as soon
// as a change is committed; a slow poll covers anything Watch may miss.
func (s *session) Idle(w *imapserver.UpdateWriter, stop <-chan struct{}) error {
	s.idling.Lock()
	defer s.idling.Unlock()
	if s.user == nil {
		select {
		case <-stop:
		case <-s.ctx.Done():
		}
		return nil
	}
	tick := time.NewTicker(s.srv.cfg.PollInterval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return nil
		case <-s.ctx.Done():
			return nil
		case <-s.watch:
			s.changed = true
		case <-tick.C:
			if err := s.stillOpen(); err != nil {
				return err
			}
			s.changed = true
		}
		if s.sel == nil {
			s.changed = false
			continue
		}
		if err := s.refresh(w, true); err != nil {
			return err
		}
	}
}
