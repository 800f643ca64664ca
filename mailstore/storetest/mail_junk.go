package storetest

import (
	"errors"
	"testing"

	"github.com/mailhost/mailhost/mailstore"
)

// mailDeliverJunk: Delivery.JunkMailboxIDs puts the message in those
// mailboxes' \Junk folder, found by special use (renamed, it is still
// found), INBOX for the others and for one whose Junk was deleted.
func mailDeliverJunk(t *testing.T, open Open) {
	m := newMT(t, open)
	one := m.mailbox(m.pid, "a.example", "one@a.example")
	two := m.mailbox(m.pid, "a.example", "two@a.example")
	three := m.mailbox(m.pid, "a.example", "three@a.example")
	four := m.mailbox(m.pid, "a.example", "four@a.example")
	if err := m.s.RenameFolder(m.ctx, three.ID, "Junk", "Spam"); err != nil {
		t.Fatal(err)
	}
	if err := m.s.DeleteFolder(m.ctx, four.ID, "Junk"); err != nil {
		t.Fatal(err)
	}
	body := "Subject: cheap\r\n\r\nbuy\r\n"
	res, err := m.s.Deliver(m.ctx, mailstore.Delivery{
		Body: []byte(body), ReceivedAt: mailNow,
		MailboxIDs: []int64{one.ID, two.ID, three.ID, four.ID}, JunkMailboxIDs: []int64{one.ID, three.ID, four.ID, 9999},
	})
	if err != nil {
		t.Fatalf("Deliver = %v", err)
	}
	if len(res.Delivered) != 4 {
		t.Fatalf("Deliver().Delivered = %v, want all four", res.Delivered)
	}
	for _, tc := range []struct {
		name   string
		mb     int64
		folder string
		other  string
	}{
		{"junk", one.ID, "Junk", "INBOX"},
		{"not junk", two.ID, "INBOX", "Junk"},
		{"junk renamed", three.ID, "Spam", "INBOX"},
		{"junk deleted", four.ID, "INBOX", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := m.folder(tc.mb, tc.folder)
			if ms := m.messages(tc.mb, f.ID); len(ms) != 1 {
				t.Errorf("%s has %d messages, want 1", tc.folder, len(ms))
			} else if got := m.body(tc.mb, f.ID, ms[0].UID); got != body {
				t.Errorf("body in %s = %q, want %q", tc.folder, got, body)
			}
			if tc.other != "" {
				if ms := m.messages(tc.mb, m.folder(tc.mb, tc.other).ID); len(ms) != 0 {
					t.Errorf("%s has %d messages, want 0", tc.other, len(ms))
				}
			}
		})
	}
	m.invariants("a.example")
}

// controlSpamFilter: SetSpamFilter sets and clears Domain.SpamFilter,
// which the domain's readers return; a bad value or another partner's
// domain is refused.
func controlSpamFilter(t *testing.T, open Open) {
	m := newMT(t, open)
	if d, err := m.s.DomainByName(m.ctx, "a.example"); err != nil || d.SpamFilter != "" {
		t.Fatalf("new domain SpamFilter = %q, %v; want \"\"", d.SpamFilter, err)
	}
	for _, f := range []string{mailstore.SpamFilterReject, mailstore.SpamFilterOff, mailstore.SpamFilterJunk, ""} {
		d, err := m.s.SetSpamFilter(m.ctx, m.pid, "a.example", f)
		if err != nil || d.SpamFilter != f {
			t.Fatalf("SetSpamFilter(%q) = %q, %v", f, d.SpamFilter, err)
		}
		if d, err := m.s.DomainByName(m.ctx, "a.example"); err != nil || d.SpamFilter != f {
			t.Errorf("DomainByName after SetSpamFilter(%q) = %q, %v", f, d.SpamFilter, err)
		}
		if d, err := m.s.Domain(m.ctx, m.pid, "a.example"); err != nil || d.SpamFilter != f {
			t.Errorf("Domain after SetSpamFilter(%q) = %q, %v", f, d.SpamFilter, err)
		}
	}
	if _, err := m.s.SetSpamFilter(m.ctx, m.pid, "a.example", "maybe"); !errors.Is(err, mailstore.ErrInvalidArgument) {
		t.Errorf("SetSpamFilter(maybe) = %v, want ErrInvalidArgument", err)
	}
	other := m.partner("q")
	if _, err := m.s.SetSpamFilter(m.ctx, other.ID, "a.example", "off"); !errors.Is(err, mailstore.ErrDomainNotFound) {
		t.Errorf("SetSpamFilter by another partner = %v, want ErrDomainNotFound", err)
	}
}
