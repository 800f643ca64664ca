package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailhost/mailhost/internal/publicip"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/mailstore/boltstore"
)

var now = time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)

// setup makes a bbolt store with a partner, a webhook to url and one
// event due, and answers the store and the claimed delivery.
func setup(t *testing.T, url string, created time.Time) (*boltstore.Store, mailstore.WebhookDelivery) {
	t.Helper()
	ctx := context.Background()
	st, err := boltstore.Open(ctx, t.TempDir(), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	p, err := st.CreatePartner(ctx, "p", now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateWebhook(ctx, p.ID, mailstore.Webhook{URL: url, Events: []string{mailstore.EventDomainSuspended}, Secret: "k"}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AddEvent(ctx, mailstore.Event{Type: mailstore.EventDomainSuspended, PartnerID: p.ID, CreatedAt: created, Data: json.RawMessage(`{"domain":"a.example"}`)}); err != nil {
		t.Fatal(err)
	}
	ds, err := st.ClaimWebhookDeliveries(ctx, now, time.Minute, 10)
	if err != nil || len(ds) != 1 {
		t.Fatalf("claim = %v, %v", ds, err)
	}
	return st, ds[0]
}

func TestSign(t *testing.T) {
	body := []byte(`{"id":1}`)
	m := hmac.New(sha256.New, []byte("secret"))
	m.Write(body)
	if got, want := Sign("secret", body), "sha256="+hex.EncodeToString(m.Sum(nil)); got != want {
		t.Errorf("Sign = %s, want %s", got, want)
	}
}

// TestRefusesPrivate: without AllowPrivate, a name that resolves to
// loopback is refused when the connection is made: nothing is sent.
func TestRefusesPrivate(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	url := "http://localhost:" + srv.URL[len("http://127.0.0.1:"):] + "/"
	_, d := setup(t, url, now)
	w := New(Config{Store: nil, Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return now }})
	err := w.post(context.Background(), d)
	if !errors.Is(err, publicip.ErrNotPublic) || hits.Load() != 0 {
		t.Errorf("post to %s = %v (%d hits), want publicip.ErrNotPublic and no request", url, err, hits.Load())
	}
	w = New(Config{AllowPrivate: true, Logger: slog.New(slog.DiscardHandler)})
	if err := w.post(context.Background(), d); err != nil || hits.Load() != 1 {
		t.Errorf("post with AllowPrivate = %v (%d hits), want it sent", err, hits.Load())
	}
}

// TestAttempt: the body and headers of a POST; a failure is retried
// after Retry, doubling; past Lifetime the delivery is given up.
func TestAttempt(t *testing.T) {
	var status atomic.Int32
	status.Store(503)
	got := make(chan *http.Request, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("X-Mailhost-Signature") != Sign("k", body) || r.Header.Get("X-Mailhost-Event") != mailstore.EventDomainSuspended {
			t.Errorf("headers %v for body %s", r.Header, body)
		}
		var p Payload
		if err := json.Unmarshal(body, &p); err != nil || p.Type != mailstore.EventDomainSuspended || p.CreatedAt != "2026-11-22T09:30:00" || string(p.Data) != `{"domain":"a.example"}` {
			t.Errorf("body %s", body)
		}
		w.WriteHeader(int(status.Load()))
		got <- r
	}))
	defer srv.Close()
	st, d := setup(t, srv.URL, now)
	ctx := context.Background()
	clock := now
	w := New(Config{Store: st, AllowPrivate: true, Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return clock }, Retry: time.Minute})
	w.attempt(ctx, d)
	<-got
	// Due again a minute later, not before.
	if ds, _ := st.ClaimWebhookDeliveries(ctx, now.Add(59*time.Second), time.Minute, 10); len(ds) != 0 {
		t.Fatalf("claim before the retry = %v", ds)
	}
	ds, _ := st.ClaimWebhookDeliveries(ctx, now.Add(time.Minute), time.Minute, 10)
	if len(ds) != 1 || ds[0].Attempts != 1 || ds[0].LastError == "" {
		t.Fatalf("retry = %+v", ds)
	}
	if b := w.backoff(1); b != 2*time.Minute {
		t.Errorf("backoff(1) = %v, want 2m", b)
	}
	if b := w.backoff(30); b != time.Hour {
		t.Errorf("backoff(30) = %v, want 1h", b)
	}
	// A day later it fails again: given up.
	clock = now.Add(Lifetime)
	w.attempt(ctx, ds[0])
	<-got
	if ds, _ := st.ClaimWebhookDeliveries(ctx, now.Add(48*time.Hour), time.Minute, 10); len(ds) != 0 {
		t.Errorf("after giving up: %v, want no delivery", ds)
	}
}

// TestErrorKeepsURLPrivate: a failed POST's error, which is logged and
// kept as the delivery's last error, names the receiver's host but not
// the URL's path and query, where a receiver may keep a token (net/http's
// error quotes the whole URL).
func TestErrorKeepsURLPrivate(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close() // no answer: the client's Do fails
		}
	}()
	url := "http://" + ln.Addr().String() + "/hook/SECRETPATH?access_token=SECRETQUERY"
	_, d := setup(t, url, now)
	w := New(Config{AllowPrivate: true, Logger: slog.New(slog.DiscardHandler)})
	err = w.post(context.Background(), d)
	if err == nil {
		t.Fatal("post to a listener that closes every connection: no error")
	}
	if msg := err.Error(); strings.Contains(msg, "SECRET") || !strings.Contains(msg, ln.Addr().String()) {
		t.Errorf("error %q: want the host, and neither the path nor the query", msg)
	}
	// Refused as private: still publicip.ErrNotPublic, and still without the query.
	w = New(Config{Logger: slog.New(slog.DiscardHandler)})
	err = w.post(context.Background(), d)
	if !errors.Is(err, publicip.ErrNotPublic) || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("post without AllowPrivate = %v, want publicip.ErrNotPublic without the URL's path or query", err)
	}
}
