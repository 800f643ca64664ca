package imapd

import (
	"slices"
	"sync"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"

	"github.com/mailhost/mailhost/mailstore"
)

// \Recent (RFC 3501 section 2.3.2) for IMAP4rev1 sessions; IMAP4rev2
// dropped it (RFC 9051 appendix E), so a session that enabled IMAP4rev2
// sees none, as imapserver already omits RECENT there.
//
// A message is recent to the first session that selects its folder (or
// has it selected) after it arrived; that session claims it, and later
// sessions do not see it as recent. EXAMINE sees what is unclaimed and
// claims nothing. The server keeps, per folder, a floor: the highest UID
// claimed. UIDs only grow (RFC 3501 section 2.3.1.1), so every message
// above the floor is unclaimed.
//
// The floors live in memory, per process, not in the store: \Recent is a
// hint that no client may rely on for correctness (RFC 3501 section
// 2.3.2 lets a server that cannot tell report messages as recent or not),
// and keeping it in the store would add a write to every SELECT that
// finds new mail. A folder the process has not seen yet gets its floor
// when it is first seen:
//
//   - by SELECT, EXAMINE or STATUS: at the highest UID of the messages
//     received before the process started, so that mail delivered since
//     is recent to the first session that looks (Dovecot's imaptest
//     "select": CREATE, two APPENDs, SELECT answers 2 RECENT);
//   - by APPEND, COPY or MOVE into it from this process: just below the
//     first message added, which is recent.
//
// What that costs: mail that arrived while the process was down is not
// recent after a restart (never wrongly recent, which is what a client
// would act on by showing "new mail"), nor is mail added to a folder,
// before the process saw it, with a received time from before the start
// (an APPEND with an old INTERNALDATE, a COPY, by another node); and
// nodes sharing a PostgreSQL store each keep their own floors, so two
// sessions on two nodes may both see a message as recent.

// flagRecent is the \Recent flag, which go-imap v2 no longer names.
const flagRecent = imap.Flag(`\Recent`)

// recentFloors holds the floor of every folder seen since start.
type recentFloors struct {
	// start is when the process started: a folder first seen after it
	// has its floor at the last message received before it.
	start time.Time
	// mu guards floor.
	mu    sync.Mutex
	floor map[int64]uint32
}

// newRecentFloors starts the floors at start, taken to the second below
// as the stores keep received times to the second (mail received in the
// second the process started counts as after it).
func newRecentFloors(start time.Time) *recentFloors {
	return &recentFloors{start: start.Truncate(time.Second), floor: map[int64]uint32{}}
}

// floorLocked is the floor of folder folderID, whose messages are msgs,
// setting it for a folder not seen yet. r.mu is held.
func (r *recentFloors) floorLocked(folderID int64, msgs []mailstore.Message) uint32 {
	if floor, ok := r.floor[folderID]; ok {
		return floor
	}
	var floor uint32
	for _, m := range msgs {
		if m.ReceivedAt.Before(r.start) {
			floor = max(floor, m.UID)
		}
	}
	r.floor[folderID] = floor
	return floor
}

// claim answers the UIDs of msgs, a folder's messages at SELECT or
// EXAMINE, above its floor: the recent ones. Unless readOnly it raises
// the floor to the highest of them.
func (r *recentFloors) claim(folderID int64, msgs []mailstore.Message, readOnly bool) []uint32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	floor := r.floorLocked(folderID, msgs)
	var out []uint32
	for _, m := range msgs {
		if m.UID > floor {
			out = append(out, m.UID)
		}
	}
	if !readOnly && len(out) > 0 {
		r.floor[folderID] = max(floor, slices.Max(out))
	}
	return out
}

// claimNew is claim for new messages of a folder a session has selected,
// whose floor is set.
func (r *recentFloors) claimNew(folderID int64, uids []uint32, readOnly bool) []uint32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	floor := r.floor[folderID]
	var out []uint32
	top := floor
	for _, u := range uids {
		if u > floor {
			out = append(out, u)
			top = max(top, u)
		}
	}
	if !readOnly {
		r.floor[folderID] = top
	}
	return out
}

// added notes messages this process added to a folder (APPEND, COPY,
// MOVE): a folder not seen yet gets its floor just below the first, so
// that they are recent to the next session that selects it.
func (r *recentFloors) added(folderID int64, uids ...uint32) {
	if len(uids) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.floor[folderID]; !ok {
		r.floor[folderID] = slices.Min(uids) - 1
	}
}

// unclaimed counts the messages of f above its floor, for STATUS RECENT.
func (r *recentFloors) unclaimed(f mailstore.Folder, msgs []mailstore.Message) uint32 {
	r.mu.Lock()
	floor := r.floorLocked(f.ID, msgs)
	r.mu.Unlock()
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

// markRecent claims, for v, the recent ones among msgs, the folder's
// messages at SELECT or EXAMINE, and notes them.
func (s *session) markRecent(v *view, msgs []mailstore.Message) {
	if !s.rev1() {
		return
	}
	v.noteRecent(s.srv.recent.claim(v.folder.ID, msgs, v.readOnly))
}

// markNewRecent is markRecent for messages new to v.
func (s *session) markNewRecent(v *view, uids []uint32) {
	if !s.rev1() {
		return
	}
	v.noteRecent(s.srv.recent.claimNew(v.folder.ID, uids, v.readOnly))
}

func (v *view) noteRecent(uids []uint32) {
	for _, u := range uids {
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

// dropRecent forgets uid, expunged, as recent, and notes the count
// changed if it was.
func (v *view) dropRecent(uid uint32) {
	if _, ok := v.recent[uid]; ok {
		delete(v.recent, uid)
		v.recentDropped = true
	}
}

// tellRecent sends RECENT to an IMAP4rev1 session when expunges took
// recent messages away: RFC 3501 section 7.3.2 has RECENT sent when the
// mailbox's size changes, and Dovecot sends it after EXPUNGE.
func (v *view) tellRecent(w *imapserver.UpdateWriter) error {
	if !v.recentDropped {
		return nil
	}
	v.recentDropped = false
	if !v.rev1 {
		return nil
	}
	return w.WriteNumRecent(v.numRecent())
}
