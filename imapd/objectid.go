package imapd

import (
	"strconv"
	"strings"
	"time"

	"github.com/emersion/go-imap/v2"
)

// OBJECTID (RFC 8474) and WITHIN (RFC 5032).
//
// A folder's MAILBOXID is "F" and its id in the store: the id stays with
// the folder through RENAME (both stores rename in place), and is never
// given to another folder, so a client that finds the same MAILBOXID
// under a new name knows the folder was renamed, not made anew (RFC 8474
// section 4). RENAME INBOX makes a new folder, which gets a new id, as
// the RFC asks.
//
// A message's EMAILID is "M" and the id of its stored body
// (mailstore.Message.BlobID). A body never changes and its id is never
// reused; COPY and MOVE share the body, so a message keeps its EMAILID
// across them, which RFC 8474 section 5.1 recommends for MOVE and allows
// for COPY. A message delivered to several mailboxes at once shares its
// body, and EMAILID, with the other recipients' copies; each user sees
// only their own. An APPEND of the same bytes twice makes two bodies and
// two EMAILIDs.
//
// THREADID is NIL: mailhost does not keep threads (THREAD REFERENCES
// computes them per request from the summaries), and RFC 8474 section
// 5.2 lets a server without them answer NIL. SEARCH THREADID matches no
// message.

func mailboxObjectID(folderID int64) string { return "F" + strconv.FormatInt(folderID, 10) }

func emailObjectID(blobID int64) string { return "M" + strconv.FormatInt(blobID, 10) }

// blobOfEmailID is the body id an EMAILID names, or -1 for one mailhost
// never gives.
func blobOfEmailID(id string) int64 {
	n, ok := strings.CutPrefix(id, "M")
	if !ok {
		return -1
	}
	v, err := strconv.ParseInt(n, 10, 64)
	if err != nil || v < 0 || strconv.FormatInt(v, 10) != n {
		return -1
	}
	return v
}

// MailboxID answers CREATE's MAILBOXID (imapserver.SessionMailboxID).
func (s *session) MailboxID(name string) (string, error) {
	if s.user == nil {
		return "", errNotLoggedIn
	}
	f, err := s.st.Folder(s.ctx, s.user.ID, strings.TrimSuffix(name, string(delim)))
	if err != nil {
		return "", err
	}
	return mailboxObjectID(f.ID), nil
}

// matchObjectWithin is the part of candidate.match for the keys of
// OBJECTID and WITHIN: EMAILID, THREADID, OLDER and YOUNGER. now is when
// the search started, the same for every message.
func (c *candidate) matchObjectWithin(cr *imap.SearchCriteria) bool {
	for _, id := range cr.EmailID {
		if blobOfEmailID(id) != c.msg.BlobID {
			return false
		}
	}
	if len(cr.ThreadID) > 0 {
		return false
	}
	// OLDER n: received at least n seconds ago; YOUNGER n: less than n
	// seconds ago (RFC 5032 section 3), as Dovecot counts them.
	if cr.Older > 0 && c.msg.ReceivedAt.After(c.now.Add(-time.Duration(cr.Older)*time.Second)) {
		return false
	}
	if cr.Younger > 0 && !c.msg.ReceivedAt.After(c.now.Add(-time.Duration(cr.Younger)*time.Second)) {
		return false
	}
	return true
}
