package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// RunAudit runs the conformance tests of mailstore.Audit against stores
// made by open, which must implement it.
func RunAudit(t *testing.T, open Open) {
	audit := func(t *testing.T) (*ctl, mailstore.Audit) {
		c := newCtl(t, open)
		a, ok := c.s.(mailstore.Audit)
		if !ok {
			t.Fatalf("%T does not implement mailstore.Audit", c.s)
		}
		return c, a
	}
	t.Run("list_newest_first", func(t *testing.T) {
		c, a := audit(t)
		p1, p2 := c.partner("one"), c.partner("two")
		for i := range 5 {
			for _, p := range []int64{p1.ID, p2.ID} {
				e := mailstore.AuditEntry{
					Time: ctlNow.Add(time.Duration(i)*time.Minute + 300*time.Millisecond), PartnerID: p,
					KeyPrefix: "mhk_abc", Method: "PUT", Route: "/users/{email}/quota",
					Object: fmt.Sprintf("u%d@a.example", i), Status: 200,
				}
				got, err := a.AddAudit(c.ctx, e)
				if err != nil {
					t.Fatalf("AddAudit = %v", err)
				}
				if got.ID == 0 || !got.Time.Equal(e.Time.Truncate(time.Second)) {
					t.Fatalf("AddAudit = %+v, want an id and the time to the second", got)
				}
			}
		}
		all, total, err := a.AuditEntries(c.ctx, p1.ID, mailstore.Page{})
		if err != nil || total != 5 || len(all) != 5 {
			t.Fatalf("AuditEntries(p1) = %d entries, total %d, %v; want 5, 5", len(all), total, err)
		}
		for i, e := range all {
			want := fmt.Sprintf("u%d@a.example", 4-i)
			if e.PartnerID != p1.ID || e.Object != want || e.Method != "PUT" || e.Route != "/users/{email}/quota" || e.Status != 200 || e.KeyPrefix != "mhk_abc" {
				t.Errorf("entry %d = %+v, want p1's %s", i, e, want)
			}
			checkUTC(t, "audit time", e.Time, ctlNow.Add(time.Duration(4-i)*time.Minute).Truncate(time.Second))
		}
		pg, total, err := a.AuditEntries(c.ctx, p1.ID, mailstore.Page{Limit: 2, Offset: 1})
		if err != nil || total != 5 || len(pg) != 2 || pg[0].Object != "u3@a.example" || pg[1].Object != "u2@a.example" {
			t.Errorf("AuditEntries(limit 2, offset 1) = %+v, %d, %v; want u3, u2 of 5", pg, total, err)
		}
		none, total, err := a.AuditEntries(c.ctx, 999, mailstore.Page{})
		if err != nil || total != 0 || len(none) != 0 {
			t.Errorf("AuditEntries(unknown) = %v, %d, %v; want none", none, total, err)
		}
		if _, err := a.AddAudit(c.ctx, mailstore.AuditEntry{Time: ctlNow}); !errors.Is(err, mailstore.ErrInvalidArgument) {
			t.Errorf("AddAudit(no partner) = %v, want ErrInvalidArgument", err)
		}
	})
	t.Run("prune", func(t *testing.T) {
		c, a := audit(t)
		p := c.partner("one")
		for i := range 4 {
			if _, err := a.AddAudit(c.ctx, mailstore.AuditEntry{Time: mailNow.AddDate(0, 0, i), PartnerID: p.ID, Method: "POST", Route: "/domains/", Status: 201}); err != nil {
				t.Fatal(err)
			}
		}
		n, err := a.PruneAudit(c.ctx, mailNow.AddDate(0, 0, 2))
		if err != nil || n != 2 {
			t.Fatalf("PruneAudit = %d, %v; want 2", n, err)
		}
		left, total, _ := a.AuditEntries(c.ctx, p.ID, mailstore.Page{})
		if total != 2 || len(left) != 2 || !left[1].Time.Equal(mailNow.AddDate(0, 0, 2)) {
			t.Errorf("after prune: %+v (total %d), want the last two days", left, total)
		}
		if n, err := a.PruneAudit(c.ctx, mailNow.AddDate(0, 0, 2)); err != nil || n != 0 {
			t.Errorf("PruneAudit again = %d, %v; want 0", n, err)
		}
	})
}

// RunWebhooks runs the conformance tests of mailstore.Webhooks against
// stores made by open, which must implement it.
func RunWebhooks(t *testing.T, open Open) {
	t.Run("crud", func(t *testing.T) { hooksCRUD(t, open) })
	t.Run("quota_warning_once", func(t *testing.T) { hooksQuotaWarning(t, open) })
	t.Run("quota_warning_concurrent", func(t *testing.T) { hooksQuotaWarningConcurrent(t, open) })
	t.Run("quota_full", func(t *testing.T) { hooksQuotaFull(t, open) })
	t.Run("transfer", func(t *testing.T) { hooksTransfer(t, open) })
	t.Run("domain_states", func(t *testing.T) { hooksDomainStates(t, open) })
	t.Run("claim_and_retry", func(t *testing.T) { hooksClaim(t, open) })
	t.Run("prune", func(t *testing.T) { hooksPrune(t, open) })
}

type hooksTest struct {
	*ctl
	w        mailstore.Webhooks
	pid, oth int64
}

func newHooks(t *testing.T, open Open) *hooksTest {
	t.Helper()
	c := newCtl(t, open)
	w, ok := c.s.(mailstore.Webhooks)
	if !ok {
		t.Fatalf("%T does not implement mailstore.Webhooks", c.s)
	}
	p, o := c.partner("p"), c.partner("other")
	c.domain(p.ID, "a.example", mailPlan, 0, 0)
	c.domain(o.ID, "b.example", mailPlan, 0, 0)
	return &hooksTest{ctl: c, w: w, pid: p.ID, oth: o.ID}
}

func (h *hooksTest) hook(pid int64, events ...string) mailstore.Webhook {
	h.t.Helper()
	w, err := h.w.CreateWebhook(h.ctx, pid, mailstore.Webhook{URL: "https://hooks.example/x", Events: events, Secret: "s3cret"}, ctlNow)
	if err != nil {
		h.t.Fatalf("CreateWebhook = %v", err)
	}
	return w
}

// claim takes every delivery due at at, and answers them by webhook id
// and event type ("3:mailbox.quota_warning"), sorted.
func (h *hooksTest) claim(at time.Time) ([]string, []mailstore.WebhookDelivery) {
	h.t.Helper()
	ds, err := h.w.ClaimWebhookDeliveries(h.ctx, at, time.Minute, 100)
	if err != nil {
		h.t.Fatalf("ClaimWebhookDeliveries = %v", err)
	}
	var out []string
	for _, d := range ds {
		out = append(out, fmt.Sprintf("%d:%s", d.Webhook.ID, d.Event.Type))
	}
	slices.Sort(out)
	return out, ds
}

func (h *hooksTest) deliver(at time.Time, size int, ids ...int64) {
	h.t.Helper()
	if _, err := h.s.Deliver(h.ctx, mailstore.Delivery{Body: []byte(strings.Repeat("x", size)), ReceivedAt: at, MailboxIDs: ids}); err != nil {
		h.t.Fatalf("Deliver = %v", err)
	}
}

func hooksCRUD(t *testing.T, open Open) {
	h := newHooks(t, open)
	w := h.hook(h.pid, mailstore.EventQuotaWarning, mailstore.EventDomainSuspended)
	if w.ID == 0 || w.PartnerID != h.pid || w.Secret != "s3cret" || len(w.Events) != 2 {
		t.Fatalf("CreateWebhook = %+v", w)
	}
	checkUTC(t, "webhook created_at", w.CreatedAt, ctlNow.Truncate(time.Second))
	h.hook(h.pid, mailstore.EventQuotaFull)
	h.hook(h.oth, mailstore.EventQuotaFull)
	ws, total, err := h.w.Webhooks(h.ctx, h.pid, mailstore.Page{})
	if err != nil || total != 2 || len(ws) != 2 || ws[0].ID != w.ID || ws[0].URL != w.URL || ws[0].Secret != "s3cret" {
		t.Fatalf("Webhooks = %+v, %d, %v; want 2, the first as made", ws, total, err)
	}
	if ws, total, _ := h.w.Webhooks(h.ctx, h.pid, mailstore.Page{Limit: 1, Offset: 1}); total != 2 || len(ws) != 1 || ws[0].ID == w.ID {
		t.Errorf("Webhooks(page 2) = %+v, %d; want the second", ws, total)
	}
	if err := h.w.DeleteWebhook(h.ctx, h.oth, w.ID); !errors.Is(err, mailstore.ErrWebhookNotFound) {
		t.Errorf("DeleteWebhook(another partner's) = %v, want ErrWebhookNotFound", err)
	}
	if err := h.w.DeleteWebhook(h.ctx, h.pid, w.ID); err != nil {
		t.Errorf("DeleteWebhook = %v", err)
	}
	if err := h.w.DeleteWebhook(h.ctx, h.pid, w.ID); !errors.Is(err, mailstore.ErrWebhookNotFound) {
		t.Errorf("DeleteWebhook again = %v, want ErrWebhookNotFound", err)
	}
	if _, total, _ := h.w.Webhooks(h.ctx, h.pid, mailstore.Page{}); total != 1 {
		t.Errorf("Webhooks after delete: total %d, want 1", total)
	}
	if _, err := h.w.CreateWebhook(h.ctx, h.pid, mailstore.Webhook{URL: "https://x.example"}, ctlNow); !errors.Is(err, mailstore.ErrInvalidArgument) {
		t.Errorf("CreateWebhook(no events, no secret) = %v, want ErrInvalidArgument", err)
	}
	if _, err := h.w.CreateWebhook(h.ctx, 999, mailstore.Webhook{URL: "https://x.example", Secret: "s", Events: []string{"x"}}, ctlNow); !errors.Is(err, mailstore.ErrPartnerNotFound) {
		t.Errorf("CreateWebhook(unknown partner) = %v, want ErrPartnerNotFound", err)
	}
}

// hooksQuotaWarning fills a 1 MB mailbox in 300 KB steps: the warning
// comes once, with the delivery that crosses 80 %, to the subscribed
// webhook of the mailbox's partner only; after an expunge below 80 %,
// the next crossing warns again.
func hooksQuotaWarning(t *testing.T, open Open) {
	h := newHooks(t, open)
	w := h.hook(h.pid, mailstore.EventQuotaWarning)
	h.hook(h.pid, mailstore.EventQuotaFull) // not subscribed to warnings
	h.hook(h.oth, mailstore.EventQuotaWarning)
	mb := h.mailbox(h.pid, "a.example", "u@a.example")
	other := h.mailbox(h.oth, "b.example", "v@b.example")
	h.deliver(mailNow, 300<<10, mb.ID, other.ID)
	h.deliver(mailNow, 300<<10, mb.ID)
	if got, _ := h.claim(mailNow.Add(time.Hour)); len(got) != 0 {
		t.Fatalf("after 600 KB of 1 MB: deliveries %v, want none", got)
	}
	h.deliver(mailNow, 300<<10, mb.ID) // 900 KB: crosses 80 %
	h.deliver(mailNow, 300<<10, mb.ID) // over the quota: no new crossing
	got, ds := h.claim(mailNow.Add(time.Hour))
	if want := []string{fmt.Sprintf("%d:%s", w.ID, mailstore.EventQuotaWarning)}; !slices.Equal(got, want) {
		t.Fatalf("deliveries = %v, want %v", got, want)
	}
	e := ds[0].Event
	var data map[string]any
	if err := json.Unmarshal(e.Data, &data); err != nil {
		t.Fatalf("event data %s: %v", e.Data, err)
	}
	if e.ID == 0 || e.PartnerID != h.pid || data["email"] != "u@a.example" || data["domain"] != "a.example" ||
		data["used_bytes"] != float64(900<<10) || data["quota_mb"] != float64(1) {
		t.Errorf("event = %+v, data %v", e, data)
	}
	checkUTC(t, "event created_at", e.CreatedAt, mailNow)
	if ds[0].Webhook.Secret != "s3cret" || ds[0].Webhook.URL != "https://hooks.example/x" {
		t.Errorf("delivery's webhook = %+v", ds[0].Webhook)
	}

	// Down below 80 % and up again: a new crossing.
	f, err := h.s.Folder(h.ctx, mb.ID, "INBOX")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.s.Expunge(h.ctx, mb.ID, f.ID, []uint32{1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	h.deliver(mailNow, 500<<10, mb.ID)
	h.deliver(mailNow, 400<<10, mb.ID)
	if got, _ := h.claim(mailNow.Add(time.Hour)); len(got) != 1 {
		t.Errorf("after a second crossing: deliveries %v, want one", got)
	}
}

// hooksQuotaWarningConcurrent delivers concurrently (the deliveries share
// batches) past 80 %: exactly one warning.
func hooksQuotaWarningConcurrent(t *testing.T, open Open) {
	h := newHooks(t, open)
	h.hook(h.pid, mailstore.EventQuotaWarning)
	mb := h.mailbox(h.pid, "a.example", "u@a.example")
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Those that find the mailbox full are refused (Mail.Deliver).
			_, err := h.s.Deliver(h.ctx, mailstore.Delivery{Body: make([]byte, 100<<10), ReceivedAt: mailNow, MailboxIDs: []int64{mb.ID}})
			if err != nil && !errors.Is(err, mailstore.ErrOverQuota) {
				t.Errorf("Deliver = %v", err)
			}
		}()
	}
	wg.Wait()
	if got, _ := h.claim(mailNow.Add(time.Hour)); len(got) != 1 {
		t.Errorf("20 concurrent deliveries of 100 KB into 1 MB: deliveries %v, want one warning", got)
	}
}

func hooksQuotaFull(t *testing.T, open Open) {
	h := newHooks(t, open)
	w := h.hook(h.pid, mailstore.EventQuotaFull)
	mb := h.mailbox(h.pid, "a.example", "u@a.example")
	for i, want := range []bool{true, false, false} {
		got, err := h.w.QuotaFull(h.ctx, mb.ID, mailNow)
		if err != nil || got != want {
			t.Fatalf("QuotaFull #%d = %v, %v; want %v", i+1, got, err, want)
		}
	}
	h.deliver(mailNow, 10, mb.ID) // accepted: re-armed
	if got, err := h.w.QuotaFull(h.ctx, mb.ID, mailNow); err != nil || !got {
		t.Errorf("QuotaFull after an accepted delivery = %v, %v; want true", got, err)
	}
	got, ds := h.claim(mailNow.Add(time.Hour))
	if want := fmt.Sprintf("%d:%s", w.ID, mailstore.EventQuotaFull); len(got) != 2 || got[0] != want || got[1] != want {
		t.Errorf("deliveries = %v, want two %s", got, want)
	} else if !strings.Contains(string(ds[0].Event.Data), "u@a.example") {
		t.Errorf("event data = %s, want the address", ds[0].Event.Data)
	}
	if _, err := h.w.QuotaFull(h.ctx, 999, mailNow); !errors.Is(err, mailstore.ErrMailboxNotFound) {
		t.Errorf("QuotaFull(unknown) = %v, want ErrMailboxNotFound", err)
	}
}

// hooksTransfer delivers into a domain with a 1 MB cap: the warning at
// 80 %, the cap at 100 %, each once; a new month starts again.
func hooksTransfer(t *testing.T, open Open) {
	h := newHooks(t, open)
	w := h.hook(h.pid, mailstore.EventTransferCapWarning, mailstore.EventTransferCapReached)
	if _, err := h.s.SetTransferCap(h.ctx, h.pid, "a.example", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := h.s.SetQuota(h.ctx, h.pid, h.mailbox(h.pid, "a.example", "u@a.example").Email, 100); err != nil {
		t.Fatal(err)
	}
	mb, _ := h.s.Mailbox(h.ctx, h.pid, "u@a.example")
	step := func(size int, at time.Time, want ...string) {
		t.Helper()
		h.deliver(at, size, mb.ID)
		got, ds := h.claim(at.Add(time.Hour))
		for _, d := range ds {
			if err := h.w.RecordWebhookAttempt(h.ctx, d.ID, true, time.Time{}, ""); err != nil {
				t.Fatal(err)
			}
		}
		var exp []string
		for _, typ := range want {
			exp = append(exp, fmt.Sprintf("%d:%s", w.ID, typ))
		}
		slices.Sort(exp)
		if !slices.Equal(got, exp) {
			t.Errorf("after %d bytes at %s: deliveries %v, want %v", size, at.Format("2006-01"), got, exp)
		}
	}
	step(500<<10, mailNow)
	step(400<<10, mailNow, mailstore.EventTransferCapWarning)
	step(100<<10, mailNow)
	step(100<<10, mailNow, mailstore.EventTransferCapReached)
	step(100<<10, mailNow)
	next := mailNow.AddDate(0, 1, 0)
	step(2<<20, next, mailstore.EventTransferCapWarning, mailstore.EventTransferCapReached)
}

func hooksDomainStates(t *testing.T, open Open) {
	h := newHooks(t, open)
	w := h.hook(h.pid, mailstore.EventDomainSuspended, mailstore.EventDomainResumed, mailstore.EventDomainVerified)
	h.hook(h.oth, mailstore.EventDomainSuspended)
	for _, s := range []bool{true, true, false, false} {
		if _, err := h.s.SetSuspended(h.ctx, h.pid, "a.example", s); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []bool{true, true, false, true} {
		if _, err := h.s.SetVerified(h.ctx, h.pid, "a.example", v, mailNow); err != nil {
			t.Fatal(err)
		}
	}
	_, ds := h.claim(time.Now().Add(time.Hour))
	slices.SortFunc(ds, func(a, b mailstore.WebhookDelivery) int { return int(a.Event.ID - b.Event.ID) })
	var got []string
	for _, d := range ds {
		got = append(got, d.Event.Type)
		if d.Webhook.ID != w.ID || d.Event.PartnerID != h.pid || !strings.Contains(string(d.Event.Data), "a.example") {
			t.Errorf("delivery %+v, want partner p's webhook %d", d, w.ID)
		}
	}
	want := []string{mailstore.EventDomainSuspended, mailstore.EventDomainResumed, mailstore.EventDomainVerified, mailstore.EventDomainVerified}
	if !slices.Equal(got, want) {
		t.Errorf("events = %v, want %v (a repeat records nothing)", got, want)
	}
}

func hooksClaim(t *testing.T, open Open) {
	h := newHooks(t, open)
	w1 := h.hook(h.pid, mailstore.EventMessageBounced)
	w2 := h.hook(h.pid, mailstore.EventMessageBounced)
	e, err := h.w.AddEvent(h.ctx, mailstore.Event{Type: mailstore.EventMessageBounced, PartnerID: h.pid, CreatedAt: mailNow, Data: json.RawMessage(`{"email":"u@a.example"}`)})
	if err != nil || e.ID == 0 {
		t.Fatalf("AddEvent = %+v, %v", e, err)
	}
	if _, err := h.w.AddEvent(h.ctx, mailstore.Event{Type: "x"}); !errors.Is(err, mailstore.ErrInvalidArgument) {
		t.Errorf("AddEvent(no partner) = %v, want ErrInvalidArgument", err)
	}
	if got, _ := h.claim(mailNow.Add(-time.Second)); len(got) != 0 {
		t.Errorf("claim before the event = %v, want none", got)
	}
	got, ds := h.claim(mailNow)
	if len(got) != 2 {
		t.Fatalf("claim = %v, want one for each webhook", got)
	}
	if got, _ := h.claim(mailNow.Add(30 * time.Second)); len(got) != 0 {
		t.Errorf("claim under the lease = %v, want none", got)
	}
	// w1's succeeds; w2's fails and is due again in 10 minutes.
	for _, d := range ds {
		done := d.Webhook.ID == w1.ID
		if err := h.w.RecordWebhookAttempt(h.ctx, d.ID, done, mailNow.Add(10*time.Minute), "HTTP 500"); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := h.claim(mailNow.Add(5 * time.Minute)); len(got) != 0 {
		t.Errorf("claim before the retry = %v, want none", got)
	}
	got, ds = h.claim(mailNow.Add(10 * time.Minute))
	if len(got) != 1 || ds[0].Webhook.ID != w2.ID || ds[0].Attempts != 1 || ds[0].LastError != "HTTP 500" || ds[0].Event.ID != e.ID {
		t.Fatalf("retry = %+v, want w2's, one attempt, its error", ds)
	}
	// A lease that runs out makes it due again (a crashed node).
	if got, _ := h.claim(mailNow.Add(20 * time.Minute)); len(got) != 1 {
		t.Errorf("claim after the lease = %v, want it again", got)
	}
	// Deleting the webhook drops its deliveries.
	if err := h.w.DeleteWebhook(h.ctx, h.pid, w2.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.claim(mailNow.Add(time.Hour)); len(got) != 0 {
		t.Errorf("claim after the webhook's deletion = %v, want none", got)
	}
	if err := h.w.RecordWebhookAttempt(h.ctx, ds[0].ID, true, time.Time{}, ""); err != nil {
		t.Errorf("RecordWebhookAttempt(gone) = %v, want nil", err)
	}
	if _, err := h.w.ClaimWebhookDeliveries(h.ctx, mailNow, 0, 1); !errors.Is(err, mailstore.ErrInvalidArgument) {
		t.Errorf("ClaimWebhookDeliveries(lease 0) = %v, want ErrInvalidArgument", err)
	}
}

func hooksPrune(t *testing.T, open Open) {
	h := newHooks(t, open)
	h.hook(h.pid, mailstore.EventDomainSuspended)
	add := func(typ string, at time.Time) {
		if _, err := h.w.AddEvent(h.ctx, mailstore.Event{Type: typ, PartnerID: h.pid, CreatedAt: at, Data: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	add(mailstore.EventDomainResumed, mailNow)                   // no webhook: prunable
	add(mailstore.EventDomainSuspended, mailNow)                 // waits for its delivery
	add(mailstore.EventDomainResumed, mailNow.AddDate(0, 0, 10)) // too new
	n, err := h.w.PruneEvents(h.ctx, mailNow.AddDate(0, 0, 1))
	if err != nil || n != 1 {
		t.Errorf("PruneEvents = %d, %v; want 1", n, err)
	}
	_, ds := h.claim(mailNow)
	for _, d := range ds {
		h.w.RecordWebhookAttempt(h.ctx, d.ID, true, time.Time{}, "")
	}
	if n, err := h.w.PruneEvents(h.ctx, mailNow.AddDate(0, 0, 1)); err != nil || n != 1 {
		t.Errorf("PruneEvents after the delivery = %d, %v; want 1", n, err)
	}
}
