package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// verify is a receiver's check of a delivery, as the README tells one
// to write it, without this package's code: the signed timestamp is the
// X-Mailhost-Timestamp header and within 5 minutes of now, and v1 is the
// HMAC-SHA256 of the timestamp, ".", and the body.
func verify(secret string, h http.Header, body []byte, now time.Time) error {
	var ts, v1 string
	for _, p := range strings.Split(h.Get("X-Mailhost-Signature-256"), ",") {
		k, v, _ := strings.Cut(p, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			v1 = v
		}
	}
	if ts == "" || v1 == "" || ts != h.Get("X-Mailhost-Timestamp") {
		return fmt.Errorf("signature %q, timestamp %q: malformed", h.Get("X-Mailhost-Signature-256"), h.Get("X-Mailhost-Timestamp"))
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "."))
	m.Write(body)
	if !hmac.Equal([]byte(v1), []byte(hex.EncodeToString(m.Sum(nil)))) {
		return errors.New("signature does not match")
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("timestamp %q: %w", ts, err)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return fmt.Errorf("timestamp %s is %v from now: a replay", ts, d)
	}
	return nil
}

// TestSignatureWithTimestamp: a receiver on loopback verifies both
// signatures of each POST; the timestamp is the time of the attempt, so
// a retry is signed anew; a captured POST fails once 5 minutes have
// passed, and changing its timestamp breaks its signature.
func TestSignatureWithTimestamp(t *testing.T) {
	type post struct {
		h    http.Header
		body []byte
	}
	var (
		mu    sync.Mutex
		posts []post
		clock = now
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		posts = append(posts, post{r.Header.Clone(), body})
		m := hmac.New(sha256.New, []byte("k"))
		m.Write(body)
		if got, want := r.Header.Get("X-Mailhost-Signature"), "sha256="+hex.EncodeToString(m.Sum(nil)); got != want {
			t.Errorf("X-Mailhost-Signature = %q, want %q (unchanged, over the body alone)", got, want)
		}
		if err := verify("k", r.Header, body, clock); err != nil {
			t.Errorf("POST %d: %v", len(posts), err)
		}
		if len(posts) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable) // so that it is retried
		}
	}))
	defer srv.Close()
	st, d := setup(t, srv.URL, now)
	ctx := context.Background()
	w := New(Config{Store: st, AllowPrivate: true, Logger: slog.New(slog.DiscardHandler), Retry: time.Minute,
		Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }})

	w.attempt(ctx, d)
	mu.Lock()
	clock = now.Add(time.Minute)
	mu.Unlock()
	ds, err := st.ClaimWebhookDeliveries(ctx, now.Add(time.Minute), time.Minute, 10)
	if err != nil || len(ds) != 1 {
		t.Fatalf("claim the retry = %v, %v", ds, err)
	}
	w.attempt(ctx, ds[0])

	mu.Lock()
	defer mu.Unlock()
	if len(posts) != 2 {
		t.Fatalf("%d POSTs, want 2", len(posts))
	}
	for i, want := range []time.Time{now, now.Add(time.Minute)} {
		if got := posts[i].h.Get("X-Mailhost-Timestamp"); got != strconv.FormatInt(want.Unix(), 10) {
			t.Errorf("POST %d: X-Mailhost-Timestamp %s, want %d (when it was sent)", i+1, got, want.Unix())
		}
	}
	if posts[0].h.Get("X-Mailhost-Signature-256") == posts[1].h.Get("X-Mailhost-Signature-256") {
		t.Errorf("the retry has the first attempt's signature %s, want one of its own time", posts[1].h.Get("X-Mailhost-Signature-256"))
	}

	// The first POST, captured and played again later.
	first := posts[0]
	if err := verify("k", first.h, first.body, now.Add(6*time.Minute)); err == nil {
		t.Error("a POST 6 minutes old verifies, want it refused as a replay")
	}
	// With its timestamp moved to the time of the replay.
	later := Timestamp(now.Add(6 * time.Minute))
	h := first.h.Clone()
	h.Set("X-Mailhost-Timestamp", later)
	_, v1, _ := strings.Cut(h.Get("X-Mailhost-Signature-256"), ",")
	h.Set("X-Mailhost-Signature-256", "t="+later+","+v1)
	if err := verify("k", h, first.body, now.Add(6*time.Minute)); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Errorf("a POST with a changed timestamp: verify = %v, want the signature not to match", err)
	}
}

func TestSignAt(t *testing.T) {
	body := []byte(`{"id":1}`)
	m := hmac.New(sha256.New, []byte("secret"))
	m.Write([]byte("1795426200." + string(body)))
	at := time.Unix(1795426200, 0)
	if got, want := SignAt("secret", at, body), "t=1795426200,v1="+hex.EncodeToString(m.Sum(nil)); got != want {
		t.Errorf("SignAt = %s, want %s", got, want)
	}
	if got := Timestamp(at); got != "1795426200" {
		t.Errorf("Timestamp = %s, want 1795426200", got)
	}
}
