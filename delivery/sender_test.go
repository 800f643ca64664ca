package delivery

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestUnverifiedSender: a submission whose sender's domain is not
// verified reaches its own partner's mailboxes only (the partner contract,
// "Domain ownership"); anything else is ErrSenderNotVerified at RCPT,
// permanent, and naming the domain.
func TestUnverifiedSender(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// bob (a.test, verified) may send as bob@b.test, an alias of the
	// unverified b.test.
	if _, err := f.st.CreateAlias(ctx, f.partner, "b.test", "bob@b.test", "bob@a.test", testNow); err != nil {
		t.Fatal(err)
	}
	a := New(Config{Store: f.st, SRS: testSRS, Postmaster: "bob@a.test", Now: func() time.Time { return testNow }})
	for _, tc := range []struct {
		name, user, from, rcpt string
		refused                bool
	}{
		{"own partner's mailbox", "dave@b.test", "dave@b.test", "bob@a.test", false},
		{"own partner's alias to its mailbox", "dave@b.test", "dave@b.test", "info@a.test", false},
		{"postmaster, the operator's in the own partner", "dave@b.test", "dave@b.test", "postmaster", false},
		{"another partner's verified domain", "dave@b.test", "dave@b.test", "vic@verified.test", true},
		{"another partner's unverified domain", "dave@b.test", "dave@b.test", "eve@other.test", true},
		{"a remote address", "dave@b.test", "dave@b.test", "joe@remote.test", true},
		{"an alias that forwards out", "dave@b.test", "dave@b.test", "fwd@a.test", true},
		{"an alias to another partner's mailbox", "dave@b.test", "dave@b.test", "toeve@a.test", true},
		{"null sender, to a remote address", "dave@b.test", "", "joe@remote.test", true},
		{"verified user as an unverified alias", "bob@a.test", "bob@b.test", "joe@remote.test", true},
		{"verified user as itself", "bob@a.test", "bob@a.test", "joe@remote.test", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tx, err := a.StartSubmission(ctx, f.boxes[tc.user], tc.from, 0)
			if err != nil {
				t.Fatalf("StartSubmission(%s as %q) = %v", tc.user, tc.from, err)
			}
			err = tx.AddRecipient(ctx, tc.rcpt, tc.rcpt)
			if !tc.refused {
				if err != nil {
					t.Fatalf("AddRecipient(%s) = %v, want accepted", tc.rcpt, err)
				}
				return
			}
			var nv *NotVerifiedError
			if !errors.Is(err, ErrSenderNotVerified) || !errors.As(err, &nv) {
				t.Fatalf("AddRecipient(%s) = %v, want ErrSenderNotVerified", tc.rcpt, err)
			}
			if nv.Recipient != tc.rcpt || nv.Domain != "b.test" || Temporary(err) {
				t.Errorf("refusal names %q, %q, temporary %v; want %s, b.test, permanent", nv.Recipient, nv.Domain, Temporary(err), tc.rcpt)
			}
			if !tx.Empty() {
				t.Errorf("the refused recipient was added")
			}
		})
	}
}

// TestMaySignAs: the domain of a submission's From: address, checked
// after DATA, is held to the same rule as the envelope's.
func TestMaySignAs(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := f.agent(false, false)
	for _, tc := range []struct {
		name    string
		rcpt    string
		refused bool
	}{
		{"own partner's mailbox", "dave@b.test", false},
		{"a remote address", "joe@remote.test", true},
		{"another partner's mailbox", "vic@verified.test", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tx := f.start(a, Submission, "bob@a.test", 0)
			if err := tx.AddRecipient(ctx, tc.rcpt, tc.rcpt); err != nil {
				t.Fatal(err)
			}
			if err := tx.MaySignAs(f.domains["a.test"]); err != nil {
				t.Errorf("MaySignAs(a.test, verified) = %v, want nil", err)
			}
			err := tx.MaySignAs(f.domains["b.test"])
			if got := errors.Is(err, ErrSenderNotVerified); got != tc.refused {
				t.Errorf("MaySignAs(b.test, unverified) = %v, want refused %v", err, tc.refused)
			}
		})
	}
}

// TestInboundChecks: a submission gets the MX's checks when it reaches
// another partner's mailbox, not for its own partner's.
func TestInboundChecks(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := f.agent(false, false)
	for _, tc := range []struct {
		rcpts []string
		want  bool
	}{
		{[]string{"dave@b.test"}, false},
		{[]string{"joe@remote.test"}, false},
		{[]string{"vic@verified.test"}, true},
		{[]string{"dave@b.test", "vic@verified.test", "joe@remote.test"}, true},
	} {
		tx := f.start(a, Submission, "bob@a.test", 0)
		for _, r := range tc.rcpts {
			if err := tx.AddRecipient(ctx, r, r); err != nil {
				t.Fatal(err)
			}
		}
		if got := tx.InboundChecks(); got != tc.want {
			t.Errorf("InboundChecks() to %v = %v, want %v", tc.rcpts, got, tc.want)
		}
		tx.Quarantine()
		if want := tc.want; (len(tx.junk) == 1) != want || want && tx.junk[0] != f.boxes["vic@verified.test"].ID {
			t.Errorf("Quarantine() to %v junks %v, want only vic@verified.test's when checked", tc.rcpts, tx.junk)
		}
	}
	if !a.StartMX("x@remote.test", 0).InboundChecks() {
		t.Errorf("InboundChecks() of the MX = false")
	}
}
