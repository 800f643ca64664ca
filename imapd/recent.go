package imapd

import (
	"slices"
	"sync"

	"github.com/emersion/go-imap/v2"

	"github.com/mailhost/mailhost/mailstore"
)

// \Recent (RFC 3501 section 2.3.2) for IMAP4rev1 sessions; IMAP4rev2
// dropped it (RFC 9051 appendix E), so a session that enabled IMAP4rev2
// sees none, as imapserver already omits RECENT there.
//
// A message is recent to the first session that selects its folder (or
// has it selected) after it arrived; that session claims it, and later
// sessions do not see it as recent. EXAMINE sees what is unclaimed and
// claims nothing. The server keeps, per folder, the highest UID claimed:
// UIDs only grow (RFC 3501 section 2.3.1.1), so every message above the
// floor is unclaimed.
//
// The floors live in memory, per process, not in the store: \Recent is a
// hint that no client may rely on for correctness (RFC 3501 section
// 2.3.2 lets a server that cannot tell report messages as recent or not),
// and keeping it in the store would add a write to every SELECT. What
// that costs: after a restart, a folder's floor starts at its highest
// UID when a session first selects it, so mail that arrived while the
// process was down, or before any session looked at the folder since
// the start, is not recent (never wrongly recent, which is what a client
// would act on by showing "new mail"); and nodes sharing a PostgreSQL
// store each keep their own floors, so two sessions on two nodes may
// both see a message as recent.

// flagRecent is the \Recent flag, which go-imap v2 no longer names.
const flagRecent = imap.Flag(`\Recent`)

// recentFloors holds the highest UID claimed per folder.
type recentFloors struct {
	// mu guards floor.
	mu    sync.Mutex
	floor map[int64]uint32
}

func newRecentFloors() *recentFloors { return &recentFloors{floor: map[int64]uint32{}} }

// claim answers the UIDs in uids above the folder's floor: the recent
// ones. Unless readOnly it raises the floor to the highest of them. A
// folder not seen since the process started gets its floor at the
// highest UID of uids (atSelect) and none is recent.
func (r *recentFloors) claim(folderID int64, uids []uint32, readOnly, atSelect bool) []uint32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	floor, known := r.floor[folderID]
	if !known && atSelect {
		for _, u := range uids {
			floor = max(floor, u)
		}
		r.floor[folderID] = floor
		return nil
	}
	var out []uint32
	top := floor
	for _, u := range uids {
		if u > floor {
			out = append(out, u)
			top = max(top, u)
		}
	}
	if !readOnly && top > floor {
		r.floor[folderID] = top
	}
	return out
}

// unclaimed counts the messages of f above its floor, for STATUS RECENT.
func (r *recentFloors) unclaimed(f mailstore.Folder, msgs []mailstore.Message) uint32 {
	r.mu.Lock()
	floor, known := r.floor[f.ID]
	r.mu.Unlock()
	if !known {
		return 0
	}
	var n uint32
	for _, m := range msgs {
		if m.UID > floor {
			n++
		}
	}
	return n
}

// rev1 reports whether the session speaks IMAP4rev1: it has not enabled
// IMAP4rev2.
func (s *session) rev1() bool {
	return !s.conn.EnabledCaps().Has(imap.CapIMAP4rev2)
}

// markRecent claims, for v, the recent ones among uids and notes them.
func (s *session) markRecent(v *view, uids []uint32, atSelect bool) {
	if !s.rev1() {
		return
	}
	for _, u := range s.srv.recent.claim(v.folder.ID, uids, v.readOnly, atSelect) {
		if v.recent == nil {
			v.recent = map[uint32]struct{}{}
		}
		v.recent[u] = struct{}{}
	}
}

// withRecent is m with \Recent among its flags if it is recent in v.
func (v *view) withRecent(m mailstore.Message) mailstore.Message {
	if _, ok := v.recent[m.UID]; ok {
		m.Flags = append(slices.Clip(m.Flags), string(flagRecent))
	}
	return m
}

// numRecent counts the recent messages the view holds.
func (v *view) numRecent() uint32 {
	var n uint32
	for _, m := range v.msgs {
		if _, ok := v.recent[m.UID]; ok && !m.gone {
			n++
		}
	}
	return n
}
