package imapd

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
)

func crlf(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }

var (
	msgPlain = crlf(`From: Bob Sender <bob@example.org>
To: Alice <alice@example.com>
Subject: Hello Alice
Date: Mon, 02 Nov 2026 10:00:00 +0000
Message-ID: <m1@example.org>
Content-Type: text/plain; charset=utf-8

The quick brown fox.
`)
	msgMultipart = crlf(`From: Carol <carol@example.net>
To: alice@example.com
Subject: Quarterly report
Date: Thu, 05 Nov 2026 10:00:00 +0000
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="b1"

--b1
Content-Type: text/plain; charset=utf-8

See the attached numbers.
--b1
Content-Type: application/octet-stream; name="report.bin"
Content-Transfer-Encoding: base64

AAECAw==
--b1--
`)
	msgLarge = crlf(`From: Dave <dave@example.org>
To: alice@example.com
Subject: Logs
Date: Tue, 10 Nov 2026 10:00:00 +0000

`) + strings.Repeat("a line of log output\r\n", 250)

	t1 = time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	t2 = time.Date(2026, 11, 5, 10, 0, 0, 0, time.UTC)
	t3 = time.Date(2026, 11, 10, 10, 0, 0, 0, time.UTC)
)

// mailEnv is an env whose INBOX holds msgPlain, msgMultipart and msgLarge
// (sequence numbers 1, 2, 3).
func mailEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t, envOptions{})
	e.deliver(msgPlain, t1)
	e.deliver(msgMultipart, t2)
	e.deliver(msgLarge, t3)
	return e
}

func selectInbox(t *testing.T, c *imapclient.Client) *imap.SelectData {
	t.Helper()
	d, err := c.Select("INBOX", nil).Wait()
	if err != nil {
		t.Fatalf("SELECT INBOX: %v", err)
	}
	return d
}

func TestListSpecialUse(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.login(nil)
	list, err := c.List("", "*", nil).Collect()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]imap.MailboxAttr{}
	for _, l := range list {
		got[l.Mailbox] = l.Attrs
		if l.Delim != '/' {
			t.Errorf("LIST %s delimiter = %q, want /", l.Mailbox, l.Delim)
		}
	}
	want := map[string]imap.MailboxAttr{
		"INBOX": "", "Sent": imap.MailboxAttrSent, "Drafts": imap.MailboxAttrDrafts,
		"Trash": imap.MailboxAttrTrash, "Junk": imap.MailboxAttrJunk, "Archive": imap.MailboxAttrArchive,
	}
	for name, attr := range want {
		attrs, ok := got[name]
		if !ok {
			t.Errorf("LIST lacks %s; got %v", name, got)
			continue
		}
		if attr != "" && !slices.Contains(attrs, attr) {
			t.Errorf("LIST %s attributes = %v, want %s", name, attrs, attr)
		}
	}

	special, err := c.List("", "*", &imap.ListOptions{SelectSpecialUse: true}).Collect()
	if err != nil {
		t.Fatal(err)
	}
	if len(special) != 5 {
		t.Errorf("LIST (SPECIAL-USE) returned %d folders, want 5", len(special))
	}

	ns, err := c.Namespace().Wait()
	if err != nil {
		t.Fatal(err)
	}
	if len(ns.Personal) != 1 || ns.Personal[0].Delim != '/' || ns.Personal[0].Prefix != "" {
		t.Errorf("NAMESPACE personal = %+v, want one with prefix \"\" and delimiter /", ns.Personal)
	}
}

func TestFetch(t *testing.T) {
	e := mailEnv(t)
	c := e.login(nil)
	if d := selectInbox(t, c); d.NumMessages != 3 || d.UIDValidity == 0 {
		t.Fatalf("SELECT INBOX = %+v, want 3 messages and a UIDVALIDITY", d)
	}

	subject := &imap.FetchItemBodySection{Peek: true, Specifier: imap.PartSpecifierHeader, HeaderFields: []string{"Subject"}}
	msgs, err := c.Fetch(imap.SeqSetNum(1, 2), &imap.FetchOptions{
		UID: true, Flags: true, InternalDate: true, RFC822Size: true, Envelope: true,
		BodyStructure: &imap.FetchItemBodyStructure{Extended: true},
		BodySection:   []*imap.FetchItemBodySection{{Peek: true}, subject},
	}).Collect()
	if err != nil {
		t.Fatalf("FETCH: %v", err)
	}
	if len(msgs) != 2 {
		t.Fatalf("FETCH 1:2 returned %d messages, want 2", len(msgs))
	}
	m1, m2 := msgs[0], msgs[1]
	if m1.UID == 0 || m2.UID <= m1.UID {
		t.Errorf("UIDs = %d, %d, want ascending", m1.UID, m2.UID)
	}
	if got := m1.FindBodySection(&imap.FetchItemBodySection{}); string(got) != msgPlain {
		t.Errorf("BODY[] of 1 = %q, want the delivered message", got)
	}
	if got := string(m2.FindBodySection(subject)); !strings.Contains(got, "Subject: Quarterly report") || strings.Contains(got, "From:") {
		t.Errorf("BODY[HEADER.FIELDS (Subject)] of 2 = %q", got)
	}
	if m1.RFC822Size != int64(len(msgPlain)) {
		t.Errorf("RFC822.SIZE of 1 = %d, want %d", m1.RFC822Size, len(msgPlain))
	}
	if !m1.InternalDate.Equal(t1) {
		t.Errorf("INTERNALDATE of 1 = %v, want %v", m1.InternalDate, t1)
	}
	if len(m1.Flags) != 0 {
		t.Errorf("FLAGS of 1 after BODY.PEEK = %v, want none", m1.Flags)
	}
	env := m1.Envelope
	if env == nil || env.Subject != "Hello Alice" || len(env.From) != 1 || env.From[0].Name != "Bob Sender" ||
		env.From[0].Addr() != "bob@example.org" || env.MessageID != "m1@example.org" || !env.Date.Equal(t1) {
		t.Errorf("ENVELOPE of 1 = %+v", env)
	}
	if bs, ok := m1.BodyStructure.(*imap.BodyStructureSinglePart); !ok || bs.Type != "text" || bs.Subtype != "plain" {
		t.Errorf("BODYSTRUCTURE of 1 = %#v, want text/plain", m1.BodyStructure)
	}
	mp, ok := m2.BodyStructure.(*imap.BodyStructureMultiPart)
	if !ok || mp.Subtype != "mixed" || len(mp.Children) != 2 {
		t.Fatalf("BODYSTRUCTURE of 2 = %#v, want multipart/mixed with 2 parts", m2.BodyStructure)
	}
	if att, ok := mp.Children[1].(*imap.BodyStructureSinglePart); !ok || att.Type != "application" || att.Encoding != "base64" {
		t.Errorf("BODYSTRUCTURE of 2, part 2 = %#v, want application base64", mp.Children[1])
	}

	// BODY[1] without PEEK reads the first part and sets \Seen.
	part1 := &imap.FetchItemBodySection{Part: []int{1}}
	msgs, err = c.Fetch(imap.SeqSetNum(2), &imap.FetchOptions{BodySection: []*imap.FetchItemBodySection{part1}}).Collect()
	if err != nil {
		t.Fatal(err)
	}
	if got := string(msgs[0].FindBodySection(part1)); strings.TrimSpace(got) != "See the attached numbers." {
		t.Errorf("BODY[1] of 2 = %q", got)
	}
	if !slices.Contains(msgs[0].Flags, imap.FlagSeen) {
		t.Errorf("FLAGS sent with BODY[1] = %v, want \\Seen", msgs[0].Flags)
	}

	// UID FETCH by UID range, "*" included.
	msgs, err = c.Fetch(imap.UIDSetNum(m2.UID), &imap.FetchOptions{Flags: true}).Collect()
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].UID != m2.UID || !slices.Contains(msgs[0].Flags, imap.FlagSeen) {
		t.Errorf("UID FETCH %d FLAGS = %+v, want \\Seen", m2.UID, msgs)
	}
	var all imap.UIDSet
	all.AddRange(1, 0)
	msgs, err = c.Fetch(all, &imap.FetchOptions{}).Collect()
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 3 {
		t.Errorf("UID FETCH 1:* returned %d messages, want 3", len(msgs))
	}

	// EXAMINE is read-only: BODY[] sets nothing.
	if _, err := c.Select("INBOX", &imap.SelectOptions{ReadOnly: true}).Wait(); err != nil {
		t.Fatal(err)
	}
	msgs, err = c.Fetch(imap.SeqSetNum(1), &imap.FetchOptions{Flags: true, BodySection: []*imap.FetchItemBodySection{{}}}).Collect()
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(msgs[0].Flags, imap.FlagSeen) {
		t.Errorf("FLAGS after BODY[] in EXAMINE = %v, want no \\Seen", msgs[0].Flags)
	}
	err = c.Store(imap.SeqSetNum(1), &imap.StoreFlags{Op: imap.StoreFlagsAdd, Flags: []imap.Flag{imap.FlagFlagged}}, nil).Close()
	if err == nil {
		t.Error("STORE in EXAMINE succeeded, want NO")
	}
}

func TestStoreAndSearch(t *testing.T) {
	e := mailEnv(t)
	c := e.login(nil)
	selectInbox(t, c)

	msgs, err := c.Store(imap.SeqSetNum(1), &imap.StoreFlags{Op: imap.StoreFlagsAdd, Flags: []imap.Flag{imap.FlagFlagged, "$Important"}}, nil).Collect()
	if err != nil {
		t.Fatalf("STORE +FLAGS: %v", err)
	}
	if len(msgs) != 1 || !slices.Contains(msgs[0].Flags, imap.FlagFlagged) || !slices.Contains(msgs[0].Flags, "$Important") {
		t.Errorf("STORE +FLAGS (\\Flagged $Important) answered %+v", msgs)
	}
	msgs, err = c.Store(imap.SeqSetNum(2), &imap.StoreFlags{Op: imap.StoreFlagsAdd, Silent: true, Flags: []imap.Flag{`\seen`}}, nil).Collect()
	if err != nil || len(msgs) != 0 {
		t.Errorf("STORE +FLAGS.SILENT = %+v, %v, want no FETCH", msgs, err)
	}
	msgs, err = c.Store(imap.SeqSetNum(1), &imap.StoreFlags{Op: imap.StoreFlagsDel, Flags: []imap.Flag{"$Important"}}, nil).Collect()
	if err != nil || len(msgs) != 1 || slices.Contains(msgs[0].Flags, "$Important") {
		t.Errorf("STORE -FLAGS $Important = %+v, %v", msgs, err)
	}

	day := func(d int) time.Time { return time.Date(2026, 11, d, 0, 0, 0, 0, time.UTC) }
	tests := []struct {
		name     string
		criteria imap.SearchCriteria
		want     []uint32
	}{
		{"all", imap.SearchCriteria{}, []uint32{1, 2, 3}},
		{"flagged", imap.SearchCriteria{Flag: []imap.Flag{imap.FlagFlagged}}, []uint32{1}},
		{"seen", imap.SearchCriteria{Flag: []imap.Flag{imap.FlagSeen}}, []uint32{2}},
		{"unseen", imap.SearchCriteria{NotFlag: []imap.Flag{imap.FlagSeen}}, []uint32{1, 3}},
		{"deleted", imap.SearchCriteria{Flag: []imap.Flag{imap.FlagDeleted}}, nil},
		{"since", imap.SearchCriteria{Since: day(5)}, []uint32{2, 3}},
		{"before", imap.SearchCriteria{Before: day(5)}, []uint32{1}},
		{"sent since", imap.SearchCriteria{SentSince: day(6)}, []uint32{3}},
		{"larger", imap.SearchCriteria{Larger: 4000}, []uint32{3}},
		{"smaller", imap.SearchCriteria{Smaller: 4000}, []uint32{1, 2}},
		{"subject", imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: "Subject", Value: "QUARTERLY"}}}, []uint32{2}},
		{"from", imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: "From", Value: "bob@"}}}, []uint32{1}},
		{"to", imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: "To", Value: "alice@example.com"}}}, []uint32{1, 2, 3}},
		{"body", imap.SearchCriteria{Body: []string{"quick BROWN"}}, []uint32{1}},
		{"body in a part", imap.SearchCriteria{Body: []string{"attached numbers"}}, []uint32{2}},
		{"body not header", imap.SearchCriteria{Body: []string{"carol"}}, nil},
		{"text in header", imap.SearchCriteria{Text: []string{"carol"}}, []uint32{2}},
		{"not flagged", imap.SearchCriteria{Not: []imap.SearchCriteria{{Flag: []imap.Flag{imap.FlagFlagged}}}}, []uint32{2, 3}},
		{"or", imap.SearchCriteria{Or: [][2]imap.SearchCriteria{{{Flag: []imap.Flag{imap.FlagFlagged}}, {Flag: []imap.Flag{imap.FlagSeen}}}}}, []uint32{1, 2}},
		{"sequence set", imap.SearchCriteria{SeqNum: []imap.SeqSet{{{Start: 2, Stop: 0}}}}, []uint32{2, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := c.Search(&tt.criteria, nil).Wait()
			if err != nil {
				t.Fatalf("SEARCH: %v", err)
			}
			if got := d.AllSeqNums(); !slices.Equal(got, tt.want) {
				t.Errorf("SEARCH %+v = %v, want %v", tt.criteria, got, tt.want)
			}
		})
	}

	// UID SEARCH answers UIDs, and takes a UID set.
	fetched, err := c.Fetch(imap.SeqSetNum(2, 3), &imap.FetchOptions{UID: true}).Collect()
	if err != nil {
		t.Fatal(err)
	}
	var uids imap.UIDSet
	uids.AddNum(fetched[0].UID, fetched[1].UID)
	d, err := c.UIDSearch(&imap.SearchCriteria{UID: []imap.UIDSet{uids}, NotFlag: []imap.Flag{imap.FlagSeen}}, nil).Wait()
	if err != nil {
		t.Fatal(err)
	}
	if got := d.AllUIDs(); !slices.Equal(got, []imap.UID{fetched[1].UID}) {
		t.Errorf("UID SEARCH UID %v UNSEEN = %v, want [%d]", uids, got, fetched[1].UID)
	}
}

func TestCopyMoveExpunge(t *testing.T) {
	e := mailEnv(t)
	c := e.login(nil)
	selectInbox(t, c)
	uidsOf := func() []imap.UID {
		t.Helper()
		msgs, err := c.Fetch(imap.SeqSet{{Start: 1, Stop: 0}}, &imap.FetchOptions{UID: true}).Collect()
		if err != nil {
			t.Fatal(err)
		}
		var uids []imap.UID
		for _, m := range msgs {
			uids = append(uids, m.UID)
		}
		return uids
	}
	before := uidsOf()
	if len(before) != 3 {
		t.Fatalf("INBOX UIDs = %v, want 3", before)
	}

	cd, err := c.Copy(imap.SeqSetNum(1), "Archive").Wait()
	if err != nil {
		t.Fatalf("COPY: %v", err)
	}
	if cd.UIDValidity == 0 || !cd.SourceUIDs.Contains(before[0]) || len(cd.DestUIDs) == 0 {
		t.Errorf("COPYUID = %+v", cd)
	}
	if _, err := c.Copy(imap.SeqSetNum(1), "Nowhere").Wait(); imapCode(err) != imap.ResponseCodeTryCreate {
		t.Errorf("COPY to a missing folder = %v, want NO [TRYCREATE]", err)
	}

	md, err := c.Move(imap.SeqSetNum(2), "Trash").Wait()
	if err != nil {
		t.Fatalf("MOVE: %v", err)
	}
	if md.UIDValidity == 0 {
		t.Errorf("MOVE COPYUID = %+v", md)
	}
	if got, want := uidsOf(), []imap.UID{before[0], before[2]}; !slices.Equal(got, want) {
		t.Errorf("INBOX UIDs after MOVE = %v, want %v", got, want)
	}

	if err := c.Store(imap.SeqSetNum(1), &imap.StoreFlags{Op: imap.StoreFlagsAdd, Silent: true, Flags: []imap.Flag{imap.FlagDeleted}}, nil).Close(); err != nil {
		t.Fatal(err)
	}
	seqs, err := c.Expunge().Collect()
	if err != nil {
		t.Fatalf("EXPUNGE: %v", err)
	}
	if !slices.Equal(seqs, []uint32{1}) {
		t.Errorf("EXPUNGE sent %v, want [1]", seqs)
	}
	if got, want := uidsOf(), []imap.UID{before[2]}; !slices.Equal(got, want) {
		t.Errorf("INBOX UIDs after EXPUNGE = %v, want %v", got, want)
	}

	// UID EXPUNGE removes only the named messages flagged \Deleted.
	e.deliver(msgPlain, t1)
	if err := c.Noop().Wait(); err != nil {
		t.Fatal(err)
	}
	if err := c.Store(imap.SeqSet{{Start: 1, Stop: 0}}, &imap.StoreFlags{Op: imap.StoreFlagsAdd, Silent: true, Flags: []imap.Flag{imap.FlagDeleted}}, nil).Close(); err != nil {
		t.Fatal(err)
	}
	seqs, err = c.UIDExpunge(imap.UIDSetNum(before[2])).Collect()
	if err != nil {
		t.Fatalf("UID EXPUNGE: %v", err)
	}
	if !slices.Equal(seqs, []uint32{1}) {
		t.Errorf("UID EXPUNGE sent %v, want [1]", seqs)
	}

	for name, want := range map[string]uint32{"INBOX": 1, "Archive": 1, "Trash": 1} {
		st, err := c.Status(name, &imap.StatusOptions{NumMessages: true, Size: true, UIDNext: true}).Wait()
		if err != nil {
			t.Fatalf("STATUS %s: %v", name, err)
		}
		if *st.NumMessages != want || *st.Size <= 0 || st.UIDNext == 0 {
			t.Errorf("STATUS %s = %d messages, size %d, uidnext %d; want %d messages", name, *st.NumMessages, *st.Size, st.UIDNext, want)
		}
	}
}

func TestAppendAndQuota(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.login(nil)
	ctx := context.Background()

	at := time.Date(2026, 10, 1, 12, 30, 0, 0, time.UTC)
	ad, err := appendMsg(c, "Drafts", msgPlain, &imap.AppendOptions{Flags: []imap.Flag{imap.FlagDraft, imap.FlagSeen}, Time: at})
	if err != nil {
		t.Fatalf("APPEND: %v", err)
	}
	if ad.UID == 0 || ad.UIDValidity == 0 {
		t.Errorf("APPENDUID = %+v", ad)
	}
	if _, err := c.Select("Drafts", nil).Wait(); err != nil {
		t.Fatal(err)
	}
	msgs, err := c.Fetch(imap.UIDSetNum(ad.UID), &imap.FetchOptions{Flags: true, InternalDate: true, BodySection: []*imap.FetchItemBodySection{{Peek: true}}}).Collect()
	if err != nil || len(msgs) != 1 {
		t.Fatalf("UID FETCH of the appended message = %v, %v", msgs, err)
	}
	m := msgs[0]
	if !m.InternalDate.Equal(at) || !slices.Contains(m.Flags, imap.FlagDraft) || !slices.Contains(m.Flags, imap.FlagSeen) ||
		string(m.FindBodySection(&imap.FetchItemBodySection{})) != msgPlain {
		t.Errorf("appended message = date %v flags %v, want %v, \\Draft \\Seen and the body", m.InternalDate, m.Flags, at)
	}
	if _, err := appendMsg(c, "Nowhere", msgPlain, nil); imapCode(err) != imap.ResponseCodeTryCreate {
		t.Errorf("APPEND to a missing folder = %v, want NO [TRYCREATE]", err)
	}

	// Quota 1 MB; INBOX holds 600 KB delivered regardless of quota.
	if _, err := e.st.SetQuota(ctx, e.partnerID, alice, 1); err != nil {
		t.Fatal(err)
	}
	big := crlf("Subject: big\n\n") + strings.Repeat("x", 600<<10)
	e.deliver(big, t1)
	if _, err := appendMsg(c, "Drafts", big, nil); imapCode(err) != imap.ResponseCodeOverQuota {
		t.Errorf("APPEND over quota = %v, want NO [OVERQUOTA]", err)
	}
	selectInbox(t, c)
	if _, err := c.Copy(imap.SeqSetNum(1), "Archive").Wait(); imapCode(err) != imap.ResponseCodeOverQuota {
		t.Errorf("COPY over quota = %v, want NO [OVERQUOTA]", err)
	}
	// The session still works afterwards.
	if _, err := appendMsg(c, "Drafts", msgPlain, nil); err != nil {
		t.Errorf("small APPEND under quota: %v", err)
	}
}

func appendMsg(c *imapclient.Client, folder, body string, o *imap.AppendOptions) (*imap.AppendData, error) {
	cmd := c.Append(folder, int64(len(body)), o)
	if _, err := cmd.Write([]byte(body)); err != nil {
		return nil, err
	}
	if err := cmd.Close(); err != nil {
		return nil, err
	}
	return cmd.Wait()
}

func TestFolders(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.login(nil)
	names := func(pattern string, o *imap.ListOptions) map[string][]imap.MailboxAttr {
		t.Helper()
		list, err := c.List("", pattern, o).Collect()
		if err != nil {
			t.Fatalf("LIST %q: %v", pattern, err)
		}
		m := map[string][]imap.MailboxAttr{}
		for _, l := range list {
			m[l.Mailbox] = l.Attrs
		}
		return m
	}

	if err := c.Create("Projects/2026", nil).Wait(); err != nil {
		t.Fatalf("CREATE Projects/2026: %v", err)
	}
	got := names("Projects*", nil)
	if _, ok := got["Projects/2026"]; !ok || !slices.Contains(got["Projects"], imap.MailboxAttrHasChildren) {
		t.Errorf("LIST Projects* = %v, want Projects (\\HasChildren) and Projects/2026", got)
	}
	if got := names("%", nil); len(got) != 7 {
		t.Errorf("LIST %% = %v, want the 6 default folders and Projects", got)
	}
	if err := c.Create("Projects", nil).Wait(); imapCode(err) != imap.ResponseCodeAlreadyExists {
		t.Errorf("CREATE Projects again = %v, want NO [ALREADYEXISTS]", err)
	}
	if err := c.Create("inbox", nil).Wait(); imapCode(err) != imap.ResponseCodeAlreadyExists {
		t.Errorf("CREATE inbox = %v, want NO [ALREADYEXISTS]", err)
	}

	if err := c.Rename("Projects", "Work", nil).Wait(); err != nil {
		t.Fatalf("RENAME: %v", err)
	}
	got = names("*", nil)
	if _, ok := got["Work/2026"]; !ok {
		t.Errorf("LIST after RENAME = %v, want Work/2026", got)
	}
	if _, ok := got["Projects"]; ok {
		t.Errorf("LIST after RENAME = %v, still has Projects", got)
	}
	if err := c.Rename("INBOX", "Old", nil).Wait(); err == nil {
		t.Error("RENAME INBOX succeeded, want NO")
	}
	if err := c.Rename("Nowhere", "Somewhere", nil).Wait(); imapCode(err) != imap.ResponseCodeNonExistent {
		t.Errorf("RENAME of a missing folder = %v, want NO [NONEXISTENT]", err)
	}

	// DELETE of a parent leaves its children; LIST "%" still shows the
	// level, \Noselect, so that a client walking the tree finds them
	// (RFC 9051 sections 6.3.4 and 6.3.9). "*" lists the child itself.
	if err := c.Create("Work/2027/Q1", nil).Wait(); err != nil {
		t.Fatalf("CREATE Work/2027/Q1: %v", err)
	}
	for _, name := range []string{"Work/2027", "Work"} {
		if err := c.Delete(name).Wait(); err != nil {
			t.Fatalf("DELETE %s: %v", name, err)
		}
	}
	if got := names("%", nil)["Work"]; !slices.Contains(got, imap.MailboxAttrNoSelect) || !slices.Contains(got, imap.MailboxAttrHasChildren) {
		t.Errorf("LIST %% after DELETE Work: Work has %v, want \\Noselect \\HasChildren", got)
	}
	if got := names("Work/%", nil)["Work/2027"]; !slices.Contains(got, imap.MailboxAttrNoSelect) {
		t.Errorf("LIST Work/%% after DELETE Work/2027: Work/2027 has %v, want \\Noselect", got)
	}
	got = names("*", nil)
	if _, ok := got["Work"]; ok {
		t.Errorf("LIST * = %v lists Work, which is no folder and has its children listed", got)
	}
	if _, ok := got["Work/2026"]; !ok {
		t.Errorf("LIST * = %v, want Work/2026", got)
	}
	if got := names("Work/2027/%", nil); len(got) != 1 || got["Work/2027/Q1"] == nil {
		t.Errorf("LIST Work/2027/%% = %v, want Work/2027/Q1 alone", got)
	}
	if err := c.Create("Work", nil).Wait(); err != nil {
		t.Fatalf("CREATE Work again: %v", err)
	}
	if got := names("%", nil)["Work"]; slices.Contains(got, imap.MailboxAttrNoSelect) {
		t.Errorf("LIST %% after CREATE Work: Work has %v, want no \\Noselect", got)
	}
	if err := c.Delete("Work/2027/Q1").Wait(); err != nil {
		t.Fatalf("DELETE Work/2027/Q1: %v", err)
	}

	if err := c.Subscribe("Work").Wait(); err != nil {
		t.Fatalf("SUBSCRIBE: %v", err)
	}
	if _, ok := names("*", &imap.ListOptions{SelectSubscribed: true})["Work"]; !ok {
		t.Error("LIST (SUBSCRIBED) lacks Work after SUBSCRIBE")
	}
	if err := c.Unsubscribe("Work").Wait(); err != nil {
		t.Fatalf("UNSUBSCRIBE: %v", err)
	}
	if _, ok := names("*", &imap.ListOptions{SelectSubscribed: true})["Work"]; ok {
		t.Error("LIST (SUBSCRIBED) has Work after UNSUBSCRIBE")
	}

	for _, name := range []string{"Work/2026", "Work"} {
		if err := c.Delete(name).Wait(); err != nil {
			t.Fatalf("DELETE %s: %v", name, err)
		}
	}
	if got := names("Work*", nil); len(got) != 0 {
		t.Errorf("LIST Work* after DELETE = %v, want nothing", got)
	}
	if err := c.Delete("INBOX").Wait(); imapCode(err) != imap.ResponseCodeCannot {
		t.Errorf("DELETE INBOX = %v, want NO [CANNOT]", err)
	}
	if err := c.Delete("Nowhere").Wait(); imapCode(err) != imap.ResponseCodeNonExistent {
		t.Errorf("DELETE of a missing folder = %v, want NO [NONEXISTENT]", err)
	}
}

func TestStatusSize(t *testing.T) {
	e := mailEnv(t)
	c := e.login(nil)
	st, err := c.Status("INBOX", &imap.StatusOptions{NumMessages: true, NumUnseen: true, Size: true, UIDValidity: true, UIDNext: true}).Wait()
	if err != nil {
		t.Fatal(err)
	}
	size := int64(len(msgPlain) + len(msgMultipart) + len(msgLarge))
	if *st.NumMessages != 3 || *st.NumUnseen != 3 || *st.Size != size || st.UIDValidity == 0 || st.UIDNext < 4 {
		t.Errorf("STATUS INBOX = messages %d unseen %d size %d (want 3, 3, %d), uidvalidity %d, uidnext %d",
			*st.NumMessages, *st.NumUnseen, *st.Size, size, st.UIDValidity, st.UIDNext)
	}
}

// TestUpdates checks that a session learns of changes made elsewhere: new
// mail at NOOP, and new mail and expunges during IDLE within a second.
func TestUpdates(t *testing.T) {
	e := newEnv(t, envOptions{})
	exists := make(chan uint32, 16)
	expunged := make(chan uint32, 16)
	c := e.login(&imapclient.Options{UnilateralDataHandler: &imapclient.UnilateralDataHandler{
		Mailbox: func(d *imapclient.UnilateralDataMailbox) {
			if d.NumMessages != nil {
				exists <- *d.NumMessages
			}
		},
		Expunge: func(seq uint32) { expunged <- seq },
	}})
	selectInbox(t, c)

	e.deliver(msgPlain, t1)
	if err := c.Noop().Wait(); err != nil {
		t.Fatal(err)
	}
	if n := c.Mailbox().NumMessages; n != 1 {
		t.Errorf("messages after delivery and NOOP = %d, want 1", n)
	}
	drain(exists)

	idle, err := c.Idle()
	if err != nil {
		t.Fatalf("IDLE: %v", err)
	}
	start := time.Now()
	e.deliver(msgMultipart, t2)
	select {
	case n := <-exists:
		if n != 2 {
			t.Errorf("EXISTS during IDLE = %d, want 2", n)
		}
		t.Logf("EXISTS after %v", time.Since(start))
	case <-time.After(time.Second):
		t.Fatal("no EXISTS within 1s of a delivery during IDLE")
	}

	// Another session expunges message 1.
	other := e.login(nil)
	selectInbox(t, other)
	if err := other.Store(imap.SeqSetNum(1), &imap.StoreFlags{Op: imap.StoreFlagsAdd, Silent: true, Flags: []imap.Flag{imap.FlagDeleted}}, nil).Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Expunge().Collect(); err != nil {
		t.Fatal(err)
	}
	select {
	case seq := <-expunged:
		if seq != 1 {
			t.Errorf("EXPUNGE during IDLE = %d, want 1", seq)
		}
	case <-time.After(time.Second):
		t.Fatal("no EXPUNGE within 1s of another session's EXPUNGE during IDLE")
	}
	if err := idle.Close(); err != nil {
		t.Fatal(err)
	}
	if err := idle.Wait(); err != nil {
		t.Fatalf("IDLE: %v", err)
	}
	msgs, err := c.Fetch(imap.SeqSetNum(1), &imap.FetchOptions{BodySection: []*imap.FetchItemBodySection{{Peek: true}}}).Collect()
	if err != nil || len(msgs) != 1 || !bytes.Equal(msgs[0].FindBodySection(&imap.FetchItemBodySection{}), []byte(msgMultipart)) {
		t.Errorf("FETCH 1 after the expunge = %v, %v, want the second message", msgs, err)
	}
}

func drain(ch chan uint32) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// TestAppendMemoryBudget: an APPEND takes room for its size from the
// shared memory budget (Config.Reserve), a step at a time as the bytes
// arrive, and gives it back; without room it is answered NO
// [UNAVAILABLE] and the session goes on.
func TestAppendMemoryBudget(t *testing.T) {
	var mu sync.Mutex
	var reserved, released int64
	var steps []int64
	full := false
	e := newEnv(t, envOptions{reserve: func(_ context.Context, n int64) (func(), error) {
		mu.Lock()
		defer mu.Unlock()
		if full {
			return nil, errors.New("no room")
		}
		reserved += n
		steps = append(steps, n)
		return func() { mu.Lock(); released += n; mu.Unlock() }, nil
	}})
	c := e.login(nil)
	if _, err := appendMsg(c, "Drafts", msgPlain, nil); err != nil {
		t.Fatalf("APPEND with room: %v", err)
	}
	mu.Lock()
	if reserved != int64(len(msgPlain)) || released != reserved {
		t.Errorf("reserved %d, released %d; want %d both", reserved, released, len(msgPlain))
	}
	full = true
	mu.Unlock()
	if _, err := appendMsg(c, "Drafts", msgPlain, nil); imapCode(err) != imap.ResponseCodeUnavailable {
		t.Errorf("APPEND without room = %v, want NO [UNAVAILABLE]", err)
	}
	if _, err := c.Select("Drafts", nil).Wait(); err != nil {
		t.Errorf("SELECT after the refused APPEND: %v", err)
	}

	// A message of two steps and a byte: three reservations, none
	// larger than a step, all given back.
	mu.Lock()
	full, reserved, released, steps = false, 0, 0, nil
	mu.Unlock()
	big := msgPlain + strings.Repeat("x", 2*appendStep+1-len(msgPlain)-2) + "\r\n"
	if _, err := appendMsg(c, "Drafts", big, nil); err != nil {
		t.Fatalf("APPEND of %d bytes: %v", len(big), err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(steps, []int64{appendStep, appendStep, int64(len(big) - 2*appendStep)}) || released != int64(len(big)) {
		t.Errorf("reservations %v, released %d; want two steps and the rest, %d released", steps, released, len(big))
	}
}
