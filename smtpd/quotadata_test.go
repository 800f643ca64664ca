package smtpd

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/mailhost/mailhost/mailstore"
)

// TestQuotaAtDATA: a mailbox that filled up between a session's RCPT and
// the end of its DATA (another session's message committed first) takes
// no more (docs/security.md, "Quota under concurrent deliveries"). A
// message with no other local recipient is 452 4.2.2 after DATA, stored
// nowhere; one with another recipient is 250, delivered to it, and the
// full mailbox's copy waits in the queue (a KindLocal entry from the
// session's sender) rather than being lost or refused to everyone.
func TestQuotaAtDATA(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	if _, err := e.st.SetQuota(ctx, e.partner.ID, "carol@a.test", 1); err != nil {
		t.Fatal(err)
	}
	start := func(from string, rcpts ...string) *raw {
		r := e.dialRaw(t)
		r.cmd("EHLO client.test", "250 ")
		r.cmd("MAIL FROM:<"+from+">", "250 ")
		for _, rc := range rcpts {
			r.cmd("RCPT TO:<"+rc+">", "250 ")
		}
		return r
	}
	data := func(r *raw, msg, want string) {
		t.Helper()
		r.cmd("DATA", "354 ")
		r.write(msg + ".\r\n")
		r.expect(want)
	}
	// All pass RCPT while carol is empty.
	alone := start("s1@remote.test", "carol@a.test")
	both := start("s2@remote.test", "carol@a.test", "bob@a.test")
	filler := start("s3@remote.test", "carol@a.test")

	data(filler, message("filler", strings.Repeat(strings.Repeat("x", 78)+"\r\n", 14000)), "250 ")
	data(alone, message("alone", "to carol only"), "452 4.2.2 ")
	data(both, message("both", "to carol and bob"), "250 ")

	if got := e.inbox(t, "carol@a.test"); len(got) != 1 {
		t.Errorf("carol has %d messages, want 1 (the one that filled her mailbox)", len(got))
	}
	if got := e.inbox(t, "bob@a.test"); len(got) != 1 || !strings.Contains(string(got[0]), "to carol and bob") {
		t.Errorf("bob has %d messages, want the one to both", len(got))
	}
	es, _, err := e.st.OutboundEntries(ctx, mailstore.Page{})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].Kind != mailstore.KindLocal || es[0].From != "s2@remote.test" ||
		!slices.Equal(es[0].Pending(), []string{"carol@a.test"}) {
		t.Fatalf("queue = %+v, want carol's copy of the message to both, from s2@remote.test", es)
	}
	body, err := e.st.OutboundBody(ctx, es[0].ID)
	if err != nil || !strings.Contains(string(body), "to carol and bob") {
		t.Errorf("queued body = %.60q, %v; want the message to both", body, err)
	}
	if !strings.Contains(e.logs.String(), `"over_quota_ids":[`) {
		t.Errorf("log has no over_quota_ids:\n%s", e.logs.String())
	}
}
