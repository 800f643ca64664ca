package adminapi

import (
	"bytes"
	"context"
	"testing"

	"github.com/mailhost/mailhost/mailstore"
)

// messageOf is a message of exactly n bytes.
func messageOf(n int) []byte {
	head := []byte("Subject: usage\r\n\r\n")
	return append(head, bytes.Repeat([]byte("x"), n-len(head))...)
}

// TestDomainUsageTransfer: the usage shows the month's transfer in, out
// and total, in bytes and in MB of 1,048,576 bytes (docs/api.md).
func TestDomainUsageTransfer(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	must(t, "create domain", e.a("POST", "/domains/", `{"name":"example.com"}`), 201)
	must(t, "create mailbox", e.a("POST", "/users/", `{"domain_name":"example.com","email":"u@example.com","password":"password123"}`), 201)
	mbx, d, err := e.store.MailboxByEmail(ctx, "u@example.com")
	if err != nil {
		t.Fatal(err)
	}
	const in, out = 3 * mailstore.MB / 2, mailstore.MB / 2
	// Received for the domain.
	if _, err := e.store.Deliver(ctx, mailstore.Delivery{Body: messageOf(in), ReceivedAt: testNow, MailboxIDs: []int64{mbx.ID}}); err != nil {
		t.Fatalf("Deliver(in) = %v", err)
	}
	// Sent by its user to a remote address.
	if _, err := e.store.Deliver(ctx, mailstore.Delivery{Body: messageOf(out), ReceivedAt: testNow, SenderDomainID: d.ID,
		Relay: []mailstore.Relay{{Kind: mailstore.KindSubmission, DomainID: d.ID, From: "u@example.com", To: []string{"r@remote.example"}}}}); err != nil {
		t.Fatalf("Deliver(out) = %v", err)
	}
	o := must(t, "usage", e.a("GET", "/domains/example.com/usage", ""), 200).obj()
	for k, v := range map[string]any{
		"month":             "2026-11",
		"transfer_in_bytes": float64(in), "transfer_out_bytes": float64(out), "transfer_total_bytes": float64(in + out),
		"transfer_in_mb": 1.5, "transfer_out_mb": 0.5, "transfer_total_mb": 2.0,
		"transfer_monthly_mb": 5120.0,
	} {
		if o[k] != v {
			t.Errorf("usage %s = %v, want %v", k, o[k], v)
		}
	}
}
