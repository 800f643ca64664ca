package smtpd

import (
	"context"
	"testing"

	"github.com/mailhost/mailhost/mailstore"
)

// TestMXClaimedDomain: a squatter claims victimcorp.example before its
// owner's provider, with the same address and a catch-all. Once the
// owner's provider verifies the name, mail the MX receives for it lands
// in the owner's mailbox, and none in the squatter's (whose catch-all no
// longer takes the rest).
func TestMXClaimedDomain(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	const name = "victimcorp.example"
	plan := mailstore.Plan{Name: "starter", QuotaMB: 1024, RetentionDays: 30, TransferMonthlyMB: 5120}
	claim := func(partner string) (mailstore.Partner, mailstore.Mailbox) {
		t.Helper()
		p, err := e.st.CreatePartner(ctx, partner, testNow)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.st.CreateDomain(ctx, p.ID, mailstore.NewDomain{Name: name, Plan: plan}, testNow); err != nil {
			t.Fatalf("CreateDomain(%s, %s) = %v", partner, name, err)
		}
		m, err := e.st.CreateMailbox(ctx, p.ID, name, "info@"+name, passwordHash(t), testNow)
		if err != nil {
			t.Fatalf("CreateMailbox(%s, info@%s) = %v", partner, name, err)
		}
		return p, m
	}
	squatter, sm := claim("squatter")
	if _, err := e.st.CreateAlias(ctx, squatter.ID, name, "@"+name, "info@"+name, testNow); err != nil {
		t.Fatal(err)
	}
	owner, om := claim("owner")
	inbox := func(m mailstore.Mailbox) int {
		t.Helper()
		f, err := e.st.Folder(ctx, m.ID, "INBOX")
		if err != nil {
			t.Fatal(err)
		}
		msgs, err := e.st.Messages(ctx, m.ID, f.ID)
		if err != nil {
			t.Fatal(err)
		}
		return len(msgs)
	}

	// The owner's TXT record proves it (adminapi checks DNS; here the
	// store records the outcome).
	if _, err := e.st.SetVerified(ctx, owner.ID, name, true, testNow); err != nil {
		t.Fatalf("SetVerified(owner) = %v", err)
	}
	if err := e.send(t, "someone@remote.test", []string{"info@" + name}, message("invoice", "pay here")); err != nil {
		t.Fatalf("send to info@%s = %v", name, err)
	}
	if got := inbox(om); got != 1 {
		t.Errorf("owner's info@%s INBOX = %d messages, want 1", name, got)
	}
	if got := inbox(sm); got != 0 {
		t.Errorf("squatter's info@%s INBOX = %d messages, want 0", name, got)
	}
	err := e.send(t, "someone@remote.test", []string{"other@" + name}, message("hello", "hi"))
	if code := smtpCode(err); code != "550 5.1.1" {
		t.Errorf("send to other@%s (only the squatter's catch-all) = %v, want 550 5.1.1", name, err)
	}
	if got := inbox(sm); got != 0 {
		t.Errorf("squatter's INBOX after mail to its catch-all = %d messages, want 0", got)
	}
}
