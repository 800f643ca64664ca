package storetest

import (
	"slices"
	"testing"

	"github.com/mailhost/mailhost/mailstore"
)

// mailDeliverPlacement: Delivery.Placements file a mailbox's copy in a
// folder by name (INBOX in any case), with flags (\Recent dropped); a
// folder the mailbox does not have puts the copy in INBOX; a placement
// without a folder leaves the copy where JunkMailboxIDs puts it.
func mailDeliverPlacement(t *testing.T, open Open) {
	m := newMT(t, open)
	one := m.mailbox(m.pid, "a.example", "one@a.example")
	two := m.mailbox(m.pid, "a.example", "two@a.example")
	three := m.mailbox(m.pid, "a.example", "three@a.example")
	four := m.mailbox(m.pid, "a.example", "four@a.example")
	five := m.mailbox(m.pid, "a.example", "five@a.example")
	if _, err := m.s.CreateFolder(m.ctx, one.ID, "Lists/Go"); err != nil {
		t.Fatal(err)
	}
	body := "Subject: filed\r\n\r\nhello\r\n"
	res, err := m.s.Deliver(m.ctx, mailstore.Delivery{
		Body: []byte(body), ReceivedAt: mailNow,
		MailboxIDs:     []int64{one.ID, two.ID, three.ID, four.ID, five.ID},
		JunkMailboxIDs: []int64{two.ID, three.ID, four.ID},
		Placements: []mailstore.Placement{
			{MailboxID: one.ID, Folder: "Lists/Go", Flags: []string{`\Seen`, "$label1", `\Seen`}},
			{MailboxID: one.ID, Folder: "INBOX"}, // the first counts
			{MailboxID: two.ID, Folder: "Missing"},
			{MailboxID: three.ID, Flags: []string{`\Flagged`, `\Recent`}},
			{MailboxID: four.ID, Folder: "inbox"},
			{MailboxID: 9999, Folder: "Lists/Go"},
		},
	})
	if err != nil {
		t.Fatalf("Deliver = %v", err)
	}
	if len(res.Delivered) != 5 {
		t.Fatalf("Deliver().Delivered = %v, want all five", res.Delivered)
	}
	for _, tc := range []struct {
		name   string
		mb     int64
		folder string
		flags  []string
	}{
		{"named folder with flags", one.ID, "Lists/Go", []string{`\Seen`, "$label1"}},
		{"missing folder", two.ID, "INBOX", nil},
		{"flags only, junk", three.ID, "Junk", []string{`\Flagged`}},
		{"inbox in lower case over junk", four.ID, "INBOX", nil},
		{"no placement", five.ID, "INBOX", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := m.folder(tc.mb, tc.folder)
			ms := m.messages(tc.mb, f.ID)
			if len(ms) != 1 {
				t.Fatalf("%s has %d messages, want 1", tc.folder, len(ms))
			}
			if got := m.body(tc.mb, f.ID, ms[0].UID); got != body {
				t.Errorf("body in %s = %q, want %q", tc.folder, got, body)
			}
			got := slices.Clone(ms[0].Flags)
			slices.Sort(got)
			want := slices.Clone(tc.flags)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("flags %q, want %q", ms[0].Flags, tc.flags)
			}
		})
	}
	// The unseen count knows the copy filed \Seen.
	if f := m.folder(one.ID, "Lists/Go"); f.Unseen != 0 || f.Messages != 1 {
		t.Errorf("Lists/Go: %d messages, %d unseen; want 1, 0", f.Messages, f.Unseen)
	}
}
