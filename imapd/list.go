package imapd

import (
	"slices"
	"sort"
	"strings"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"

	"github.com/mailhost/mailhost/mailstore"
)

// List answers LIST, with LIST-EXTENDED's SUBSCRIBED, RECURSIVEMATCH and
// SPECIAL-USE selection options and SUBSCRIBED, CHILDREN and STATUS
// return options (RFC 9051 section 6.3.9, RFC 5258, 6154, 5819), and LSUB
// (RFC 3501 section 6.3.9), which imapserver hands over as LIST
// (SUBSCRIBED).
//
// Subscriptions are names apart from the folders (mailstore.Mail.Subscribe):
// a subscribed name with no folder is listed \NonExistent by LIST
// (SUBSCRIBED) and \Noselect by LSUB.
func (s *session) List(w *imapserver.ListWriter, ref string, patterns []string, options *imap.ListOptions) error {
	if s.user == nil {
		return errNotLoggedIn
	}
	if len(patterns) == 0 {
		// LIST "" "": the hierarchy delimiter and root (RFC 9051 section
		// 6.3.9); imapserver drops empty patterns.
		return w.WriteList(&imap.ListData{Attrs: []imap.MailboxAttr{imap.MailboxAttrNoSelect}, Delim: delim})
	}
	folders, err := s.st.Folders(s.ctx, s.user.ID)
	if err != nil {
		return s.fail("list", err)
	}
	l := &listing{ref: ref, patterns: patterns, folders: folders, byName: make(map[string]*mailstore.Folder, len(folders))}
	for i := range folders {
		l.byName[folders[i].Name] = &folders[i]
	}
	lsub := s.inLSUB()
	if options.SelectSubscribed || options.ReturnSubscribed || lsub {
		if l.subs, err = s.st.Subscriptions(s.ctx, s.user.ID); err != nil {
			return s.fail("list", err)
		}
	}
	switch {
	case lsub:
		return s.listLSUB(w, l)
	case options.SelectSubscribed:
		return s.listSubscribed(w, l, options)
	}
	for _, f := range folders {
		if !l.match(f.Name) || options.SelectSpecialUse && f.SpecialUse == "" {
			continue
		}
		data := l.data(f.Name)
		if options.ReturnSubscribed && l.subscribed(f.Name) {
			data.Attrs = append(data.Attrs, imap.MailboxAttrSubscribed)
		}
		if err := s.writeList(w, data, &f, options); err != nil {
			return err
		}
	}
	if options.SelectSpecialUse {
		return nil
	}
	return s.listLevels(w, l, options)
}

// listLevels answers the levels of the hierarchy that are no folder but
// have folders below them (left by DELETE of a parent, RFC 9051 section
// 6.3.4), when one matches and a folder below it does not: "If the '%'
// wildcard is the last character of a mailbox name argument, matching
// levels of hierarchy are also returned", \Noselect (section 6.3.9), so
// that a client that walks the tree level by level finds "a/b" after
// "a" went.
func (s *session) listLevels(w *imapserver.ListWriter, l *listing, options *imap.ListOptions) error {
	names := make([]string, len(l.folders))
	for i, f := range l.folders {
		names[i] = f.Name
	}
	slices.Sort(names)
	for _, name := range withAncestors(names) {
		if l.byName[name] != nil || !l.match(name) {
			continue
		}
		hidden := false
		for _, d := range descendants(names, name) {
			hidden = hidden || !l.match(d)
		}
		if !hidden {
			continue
		}
		data := &imap.ListData{Mailbox: name, Delim: delim, Attrs: []imap.MailboxAttr{imap.MailboxAttrNoSelect, imap.MailboxAttrHasChildren}}
		if options.ReturnSubscribed && l.subscribed(name) {
			data.Attrs = append(data.Attrs, imap.MailboxAttrSubscribed)
		}
		if err := w.WriteList(data); err != nil {
			return err
		}
	}
	return nil
}

// listSubscribed answers LIST (SUBSCRIBED ...): the subscribed names that
// match, folders or not (RFC 9051 section 6.3.9.1). With RECURSIVEMATCH,
// a name that does not meet the selection but has a descendant that does
// is listed too, with CHILDINFO ("SUBSCRIBED") (section 6.3.9.6), unless
// every such descendant is listed itself (section 6.3.9.6 asks servers to
// suppress the redundant response); a name that meets it gets CHILDINFO
// when a descendant does too (Table 3 there).
func (s *session) listSubscribed(w *imapserver.ListWriter, l *listing, options *imap.ListOptions) error {
	meets := func(name string) bool {
		if !l.subscribed(name) {
			return false
		}
		f := l.byName[name]
		return !options.SelectSpecialUse || f != nil && f.SpecialUse != ""
	}
	names := l.subs
	if options.SelectRecursiveMatch {
		names = withAncestors(l.subs)
	}
	for _, name := range names {
		if !l.match(name) {
			continue
		}
		var childInfo, unlisted bool
		if options.SelectRecursiveMatch {
			for _, d := range descendants(l.subs, name) {
				if meets(d) {
					childInfo = true
					unlisted = unlisted || !l.match(d)
				}
			}
		}
		ok := meets(name)
		if !ok && !unlisted {
			continue
		}
		data := l.data(name)
		if l.subscribed(name) {
			data.Attrs = append(data.Attrs, imap.MailboxAttrSubscribed)
		}
		if childInfo {
			data.ChildInfo = &imap.ListDataChildInfo{Subscribed: true}
		}
		// STATUS only for what meets the selection (RFC 9051 section
		// 6.3.9.8, example 11).
		f := l.byName[name]
		if !ok {
			f = nil
		}
		if err := s.writeList(w, data, f, options); err != nil {
			return err
		}
	}
	return nil
}

// listLSUB answers LSUB (RFC 3501 section 6.3.9): the subscribed names
// that match, a name with no folder flagged \Noselect; and a level above
// subscribed names that is not subscribed itself, flagged \Noselect, when
// it matches and some of those names do not (the section's "%" case: LSUB
// "" "%" with foo/bar subscribed and foo not answers foo, \Noselect).
func (s *session) listLSUB(w *imapserver.ListWriter, l *listing) error {
	for _, name := range withAncestors(l.subs) {
		if !l.match(name) {
			continue
		}
		if l.subscribed(name) {
			data := l.data(name)
			if l.byName[name] == nil {
				// LSUB has no \NonExistent (RFC 5258 brought it to LIST).
				data.Attrs[0] = imap.MailboxAttrNoSelect
			}
			if err := w.WriteList(data); err != nil {
				return err
			}
			continue
		}
		hidden := false
		for _, d := range descendants(l.subs, name) {
			hidden = hidden || !l.match(d)
		}
		if !hidden {
			continue
		}
		data := &imap.ListData{Mailbox: name, Delim: delim, Attrs: []imap.MailboxAttr{imap.MailboxAttrNoSelect}}
		if err := w.WriteList(data); err != nil {
			return err
		}
	}
	return nil
}

// writeList writes one LIST response, with its STATUS when asked and f,
// the folder that meets the selection, is given.
func (s *session) writeList(w *imapserver.ListWriter, data *imap.ListData, f *mailstore.Folder, options *imap.ListOptions) error {
	if options.ReturnStatus != nil && f != nil {
		st, err := s.status(*f, options.ReturnStatus)
		if err != nil {
			return err
		}
		data.Status = st
	}
	return w.WriteList(data)
}

// inLSUB reports whether the List call under way answers LSUB:
// imapserver hands LSUB to List as LIST (SUBSCRIBED), which differs from
// it (RFC 9051 section 6.3.9.8, example 2; RFC 3501 section 6.3.9), and
// Conn.CommandName (a hook of mailhost's copy of go-imap) tells which
// command it was.
func (s *session) inLSUB() bool {
	return s.conn.CommandName() == "LSUB"
}

// listing is what one LIST looks at: the patterns, the account's folders
// and its subscriptions (both sorted by name).
type listing struct {
	ref      string
	patterns []string
	folders  []mailstore.Folder
	byName   map[string]*mailstore.Folder
	subs     []string
}

func (l *listing) match(name string) bool { return matchAny(name, l.ref, l.patterns) }

func (l *listing) subscribed(name string) bool {
	_, ok := slices.BinarySearch(l.subs, name)
	return ok
}

// data is a LIST response for name with the attributes that do not
// depend on the selection: \NonExistent, first, for a name with no
// folder (RFC 9051 section 6.3.9.3),
// \HasChildren or \HasNoChildren (RFC 9051 section 6.3.9.5, given
// whether or not asked, as the section allows), the special use.
func (l *listing) data(name string) *imap.ListData {
	data := &imap.ListData{Mailbox: name, Delim: delim}
	f := l.byName[name]
	if f == nil {
		data.Attrs = append(data.Attrs, imap.MailboxAttrNonExistent)
	}
	if hasChildren(l.folders, name) {
		data.Attrs = append(data.Attrs, imap.MailboxAttrHasChildren)
	} else {
		data.Attrs = append(data.Attrs, imap.MailboxAttrHasNoChildren)
	}
	if f != nil && f.SpecialUse != "" {
		data.Attrs = append(data.Attrs, imap.MailboxAttr(f.SpecialUse))
	}
	return data
}

func matchAny(name, ref string, patterns []string) bool {
	for _, p := range patterns {
		if imapserver.MatchList(name, delim, ref, p) {
			return true
		}
		// INBOX in any case.
		if name == "INBOX" && ref == "" && imapserver.MatchList(name, delim, ref, strings.ToUpper(p)) {
			return true
		}
	}
	return false
}

func hasChildren(folders []mailstore.Folder, name string) bool {
	prefix := name + string(delim)
	for _, f := range folders {
		if strings.HasPrefix(f.Name, prefix) {
			return true
		}
	}
	return false
}

// descendants are the names of sorted below name ("name/..."): one run
// of it, since names with a common prefix sort together.
func descendants(sorted []string, name string) []string {
	prefix := name + string(delim)
	i := sort.SearchStrings(sorted, prefix)
	j := i
	for j < len(sorted) && strings.HasPrefix(sorted[j], prefix) {
		j++
	}
	return sorted[i:j]
}

// withAncestors is names and every level above each ("a/b/c" gives
// "a" and "a/b"), sorted, once each.
func withAncestors(names []string) []string {
	out := slices.Clone(names)
	for _, n := range names {
		for i := strings.IndexByte(n, byte(delim)); i > 0; i = indexFrom(n, byte(delim), i+1) {
			out = append(out, n[:i])
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// indexFrom is the index of c in s at or after from, or -1.
func indexFrom(s string, c byte, from int) int {
	if i := strings.IndexByte(s[from:], c); i >= 0 {
		return from + i
	}
	return -1
}
