package service

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/mailhost/mailhost/internal/dnstest"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
	"github.com/mailhost/mailhost/webhook"
)

// receiver is a webhook endpoint on loopback that answers 500 to its
// first failFirst POSTs, and keeps every POST.
type receiver struct {
	*httptest.Server
	failFirst int
	mu        sync.Mutex
	posts     []received
	got       chan struct{} // a token per 2xx answer
}

type received struct {
	body      []byte
	event     string
	signature string
	status    int
}

func newReceiver(t *testing.T, failFirst int) *receiver {
	r := &receiver{failFirst: failFirst, got: make(chan struct{}, 100)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		status := http.StatusOK
		if len(r.posts) < r.failFirst {
			status = http.StatusInternalServerError
		}
		r.posts = append(r.posts, received{body, req.Header.Get("X-Mailhost-Event"), req.Header.Get("X-Mailhost-Signature"), status})
		r.mu.Unlock()
		w.WriteHeader(status)
		if status == http.StatusOK {
			r.got <- struct{}{}
		}
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) all() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.posts...)
}

// wait waits for the receiver's nth successful POST.
func (r *receiver) wait(t *testing.T, what string) {
	t.Helper()
	select {
	case <-r.got:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: no webhook POST within 20 s (got %d)", what, len(r.all()))
	}
}

// TestWebhooksEndToEnd runs the service with a loopback receiver per
// webhook: a mailbox filled past 80 % by SMTP deliveries gives exactly
// one signed quota_warning, delivered on the third attempt by a receiver
// that fails twice; suspend, resume and verify reach the partner's other
// webhook; another partner's webhook, subscribed to everything, gets
// nothing.
func TestWebhooksEndToEnd(t *testing.T) {
	dir := t.TempDir()
	dns := dnstest.Start(t)
	cfg, err := testConfig(dir, "MAILHOST_WEBHOOK_ALLOW_PRIVATE", "true", "MAILHOST_DNS", dns.Addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := &bytes.Buffer{}
	ready := make(chan Addrs, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, cfg, Options{
			Stdout: out, ShowKey: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Ready: func(a Addrs) { ready <- a }, WebhookRetry: 100 * time.Millisecond,
		})
	}()
	var addrs Addrs
	select {
	case addrs = <-ready:
	case err := <-done:
		t.Fatalf("Run = %v before ready", err)
	case <-time.After(10 * time.Second):
		t.Fatal("server not ready after 10s")
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	}()
	key := keyRE.FindString(out.String())
	api := "http://" + addrs.HTTP
	mustCall := func(method, path, key, body string, want int) string {
		t.Helper()
		code, resp := call(t, method, api+path, key, body)
		if code != want {
			t.Fatalf("%s %s = %d %s, want %d", method, path, code, resp, want)
		}
		return resp
	}
	var other NewKey
	err = WithOperator(ctx, cfg, func(op Operator) (err error) {
		other, err = op.CreatePartner(ctx, "other")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	quota, domain, others := newReceiver(t, 2), newReceiver(t, 0), newReceiver(t, 0)
	hook := func(key, url string, events ...string) (id float64, secret string) {
		t.Helper()
		evs, _ := json.Marshal(events)
		var w struct {
			ID     float64 `json:"id"`
			Secret string  `json:"secret"`
		}
		json.Unmarshal([]byte(mustCall("POST", "/webhooks/", key, fmt.Sprintf(`{"url":%q,"events":%s}`, url, evs), 201)), &w)
		return w.ID, w.Secret
	}
	_, quotaSecret := hook(key, quota.URL+"/quota", mailstore.EventQuotaWarning)
	hook(key, domain.URL, mailstore.EventDomainSuspended, mailstore.EventDomainResumed, mailstore.EventDomainVerified)
	hook(other.APIKey, others.URL, mailstore.EventTypes...)

	mustCall("POST", "/domains/", key, `{"name":"example.com"}`, 201)
	mustCall("POST", "/domains/", other.APIKey, `{"name":"other.example"}`, 201)
	mustCall("POST", "/users/", key, `{"domain_name":"example.com","email":"a@example.com","password":"password123"}`, 201)
	mustCall("PUT", "/users/a@example.com/quota", key, `{"quota_mb":1}`, 200)

	// Four messages of 300 KB: the third crosses 80 % of 1 MB, the
	// fourth is accepted at RCPT (the mailbox is not full yet) and takes
	// it over; the fifth is refused for quota.
	msg := "From: b@elsewhere.test\r\nTo: a@example.com\r\nSubject: fill\r\n\r\n" + strings.Repeat(strings.Repeat("x", 98)+"\r\n", 3000)
	for i := range 4 {
		if err := deliverPlain(addrs.SMTP, msg); err != nil {
			t.Fatalf("SMTP delivery %d: %v", i+1, err)
		}
	}
	err = deliverPlain(addrs.SMTP, msg)
	if se, ok := err.(*smtp.SMTPError); !ok || se.Code != 452 {
		t.Fatalf("fifth delivery = %v, want 452 (mailbox full)", err)
	}

	quota.wait(t, "quota_warning")
	posts := quota.all()
	if len(posts) != 3 || posts[0].status != 500 || posts[1].status != 500 || posts[2].status != 200 {
		t.Fatalf("quota receiver got %d POSTs %+v, want 500, 500, 200", len(posts), posts)
	}
	for _, p := range posts {
		if !bytes.Equal(p.body, posts[0].body) {
			t.Errorf("retry body %s differs from the first %s", p.body, posts[0].body)
		}
	}
	p := posts[2]
	if p.event != mailstore.EventQuotaWarning || p.signature != webhook.Sign(quotaSecret, p.body) {
		t.Errorf("POST headers: event %q, signature %q; want %s and the body's HMAC", p.event, p.signature, mailstore.EventQuotaWarning)
	}
	var ev struct {
		ID        int64          `json:"id"`
		Type      string         `json:"type"`
		CreatedAt string         `json:"created_at"`
		PartnerID int64          `json:"partner_id"`
		Data      map[string]any `json:"data"`
	}
	if err := json.Unmarshal(p.body, &ev); err != nil {
		t.Fatalf("body %s: %v", p.body, err)
	}
	if ev.ID == 0 || ev.Type != mailstore.EventQuotaWarning || ev.PartnerID != 1 || len(ev.CreatedAt) != 19 ||
		ev.Data["email"] != "a@example.com" || ev.Data["quota_mb"] != float64(1) {
		t.Errorf("event = %s", p.body)
	}

	// Suspend (twice: one event), resume, verify (the MX points here).
	mustCall("POST", "/domains/example.com/suspend", key, "", 200)
	mustCall("POST", "/domains/example.com/suspend", key, "", 200)
	mustCall("POST", "/domains/example.com/resume", key, "", 200)
	dns.SetMX("example.com", "mx.test")
	mustCall("POST", "/domains/example.com/verify", key, "", 200)
	for range 3 {
		domain.wait(t, "domain events")
	}
	// Deliveries go concurrently, in no set order: the ids order them.
	byID := map[int64]string{}
	var ids []int64
	for _, p := range domain.all() {
		var e struct {
			ID   int64          `json:"id"`
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		json.Unmarshal(p.body, &e)
		byID[e.ID] = e.Type
		ids = append(ids, e.ID)
		if e.Data["domain"] != "example.com" {
			t.Errorf("domain event %s, want example.com", p.body)
		}
	}
	slices.Sort(ids)
	var types []string
	for _, id := range ids {
		types = append(types, byID[id])
	}
	if got := strings.Join(types, ","); got != "domain.suspended,domain.resumed,domain.verified" {
		t.Errorf("domain events = %s, want suspended, resumed, verified", got)
	}

	// Past every event above: one warning only, and nothing for the
	// other partner (whose webhook takes every type).
	if n := len(quota.all()); n != 3 {
		t.Errorf("quota receiver got %d POSTs, want 3 (one event)", n)
	}
	if n := len(others.all()); n != 0 {
		t.Errorf("the other partner's webhook got %d POSTs, want none: %s", n, others.all()[0].body)
	}
	// The other partner's own suspension reaches it.
	mustCall("POST", "/domains/other.example/suspend", other.APIKey, "", 200)
	others.wait(t, "other partner's suspension")
	if got := others.all(); len(got) != 1 || got[0].event != mailstore.EventDomainSuspended || !strings.Contains(string(got[0].body), "other.example") {
		t.Errorf("other partner's webhook got %+v, want its suspension only", got)
	}

	// The audit log has the writes, the CLI's too for the other partner.
	var entries []map[string]any
	json.Unmarshal([]byte(mustCall("GET", "/audit/?limit=3", key, "", 200)), &entries)
	if len(entries) != 3 || entries[0]["route"] != "/domains/{domain_name}/verify" || entries[0]["object"] != "example.com" {
		t.Errorf("GET /audit/?limit=3 = %v, want the verify first", entries)
	}
	json.Unmarshal([]byte(mustCall("GET", "/audit/", other.APIKey, "", 200)), &entries)
	if len(entries) == 0 || entries[len(entries)-1]["method"] != "CLI" || entries[len(entries)-1]["route"] != "partner create" {
		t.Errorf("other partner's audit = %v, want its creation by the CLI first", entries)
	}
}

// TestAuditRetention: the daily pass's pruning keeps audit_retention_days
// of entries.
func TestAuditRetention(t *testing.T) {
	ctx := context.Background()
	st, err := boltstore.Open(ctx, t.TempDir(), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	p, err := st.CreatePartner(ctx, "p", now)
	if err != nil {
		t.Fatal(err)
	}
	for _, age := range []int{500, 401, 399, 1} {
		if _, err := st.AddAudit(ctx, mailstore.AuditEntry{Time: now.AddDate(0, 0, -age), PartnerID: p.ID, Method: "POST", Route: "/domains/", Object: fmt.Sprint(age), Status: 201}); err != nil {
			t.Fatal(err)
		}
	}
	pruneRecords(ctx, st, now, 400, slog.New(slog.DiscardHandler))
	es, total, err := st.AuditEntries(ctx, p.ID, mailstore.Page{})
	if err != nil || total != 2 || es[0].Object != "1" || es[1].Object != "399" {
		t.Errorf("after the pass: %+v (total %d, %v), want the entries of 1 and 399 days", es, total, err)
	}
}
