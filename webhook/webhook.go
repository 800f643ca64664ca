// Package webhook delivers the events the store records (see
// mailstore.Webhooks) to the partners' webhooks: each delivery is a POST
// of the event as JSON, signed with the webhook's secret together with
// the time it is sent (SignAt), so that a receiver can refuse a captured
// POST played again later, retried with backoff until it is answered 2xx
// or a day has passed.
//
// Events are durable before the worker sees them: the store writes them
// (and one delivery row per subscribed webhook) in the transaction of
// what caused them. The worker claims due deliveries with a lease, as
// the outbound queue claims its entries, so that several nodes sharing
// a store never send one at the same time, and a node that dies leaves
// its claims to the others once the lease runs out: a delivery may be
// sent twice, never lost (at least once; receivers dedupe by the event's
// id).
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/mailhost/mailhost/internal/publicip"
	"github.com/mailhost/mailhost/mailstore"
)

// Store is what the worker needs of the store.
type Store interface {
	ClaimWebhookDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]mailstore.WebhookDelivery, error)
	RecordWebhookAttempt(ctx context.Context, id int64, done bool, next time.Time, lastErr string) error
}

// Defaults of Config.
const (
	// Timeout bounds one POST, connection and answer.
	Timeout = 10 * time.Second
	// Lifetime is how long a delivery is retried after its event.
	Lifetime = 24 * time.Hour
	// maxRetry caps the backoff between attempts.
	maxRetry = time.Hour
	// lease is how long a claim keeps a delivery from other nodes: more
	// than an attempt takes.
	lease = 2 * Timeout
	// maxResponse is the most of an answer's body read (and ignored),
	// so that the connection can be reused.
	maxResponse = 64 << 10
)

// Config is what New needs. Store is required; the rest have the
// documented defaults for their zero values.
type Config struct {
	Store Store
	// Logger: nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// AllowPrivate lets deliveries go to loopback, private, link-local
	// and other non-public addresses (publicip.Is); false refuses them
	// when the connection is made, whatever the name resolved to (SSRF,
	// DNS rebinding).
	AllowPrivate bool
	// Workers is the most POSTs at once; 0 means 4.
	Workers int
	// Poll is how often the worker looks for due deliveries when Wake
	// is not called; 0 means 1 s.
	Poll time.Duration
	// Retry is the wait after a first failure, doubled after each
	// further one up to an hour; 0 means 30 s.
	Retry time.Duration
	// Transport, when set, replaces the HTTP transport (tests); the
	// address check of AllowPrivate is then the transport's business.
	Transport http.RoundTripper
}

// Worker delivers webhook events until its Run's context ends.
type Worker struct {
	cfg    Config
	log    *slog.Logger
	now    func() time.Time
	client *http.Client
	wake   chan struct{}
}

// New returns a worker for cfg.
func New(cfg Config) *Worker {
	w := &Worker{cfg: cfg, log: cfg.Logger, now: cfg.Now, wake: make(chan struct{}, 1)}
	if w.log == nil {
		w.log = slog.Default()
	}
	if w.now == nil {
		w.now = time.Now
	}
	if w.cfg.Workers <= 0 {
		w.cfg.Workers = 4
	}
	if w.cfg.Poll <= 0 {
		w.cfg.Poll = time.Second
	}
	if w.cfg.Retry <= 0 {
		w.cfg.Retry = 30 * time.Second
	}
	rt := cfg.Transport
	if rt == nil {
		dialer := &net.Dialer{Timeout: Timeout}
		if !cfg.AllowPrivate {
			dialer.Control = refusePrivate
		}
		rt = &http.Transport{
			// No proxy from the environment: it would dial for us, past
			// the address check.
			Proxy:               nil,
			DialContext:         dialer.DialContext,
			TLSHandshakeTimeout: Timeout,
			MaxIdleConnsPerHost: 2,
			IdleConnTimeout:     time.Minute,
		}
	}
	w.client = &http.Client{
		Transport: rt,
		Timeout:   Timeout,
		// A redirect is not followed: it could lead anywhere, and the
		// receiver is told its URL once, at creation.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return w
}

// refusePrivate is the dialer's check of the address it is about to
// connect to, after name resolution (publicip.Control).
func refusePrivate(network, address string, c syscall.RawConn) error {
	if err := publicip.Control(network, address, c); err != nil {
		return fmt.Errorf("webhook %w (webhook_allow_private is off)", err)
	}
	return nil
}

// Wake makes the worker look for due deliveries now.
func (w *Worker) Wake() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Run delivers until ctx ends; attempts under way finish first (each is
// bounded by Timeout). It answers ctx's error.
func (w *Worker) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, w.cfg.Workers)
	for {
		n := 0
		free := w.cfg.Workers - len(slots)
		if free > 0 {
			ds, err := w.cfg.Store.ClaimWebhookDeliveries(ctx, w.now(), lease, free)
			if err != nil && ctx.Err() == nil {
				w.log.Error("claim webhook deliveries", "err", err)
			}
			n = len(ds)
			for _, d := range ds {
				slots <- struct{}{}
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer func() { <-slots }()
					w.attempt(ctx, d)
				}()
			}
		}
		if n > 0 && n == free {
			// A full claim: there may be more due; go on as slots free.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case slots <- struct{}{}:
				<-slots
			}
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-w.wake:
		case <-time.After(w.cfg.Poll):
		}
	}
}

// Payload is the JSON body of a delivery.
type Payload struct {
	ID        int64           `json:"id"`
	Type      string          `json:"type"`
	CreatedAt string          `json:"created_at"`
	PartnerID int64           `json:"partner_id"`
	Data      json.RawMessage `json:"data"`
}

// Body is the JSON body of an event's deliveries.
func Body(e mailstore.Event) ([]byte, error) {
	data := e.Data
	if len(data) == 0 {
		data = json.RawMessage("{}")
	}
	return json.Marshal(Payload{
		ID: e.ID, Type: e.Type, CreatedAt: e.CreatedAt.UTC().Format("2006-01-02T15:04:05"),
		PartnerID: e.PartnerID, Data: data,
	})
}

// Sign is the X-Mailhost-Signature of body under secret: the body
// alone, so that a delivery captured once verifies forever. Kept for the
// receivers that check it; SignAt is the one to check.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Timestamp is the X-Mailhost-Timestamp of a POST sent at t: Unix
// seconds, in decimal.
func Timestamp(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

// SignAt is the X-Mailhost-Signature-256 of body sent at t under secret:
// "t=<Timestamp(t)>,v1=<hex HMAC-SHA256 of Timestamp(t) + "." + body>".
// The time is signed with the body, so that a receiver that refuses a
// timestamp far from its clock refuses a captured delivery played again
// later: the attacker cannot change the time without the secret. "v1"
// names the scheme, so that another can be sent beside it one day.
func SignAt(secret string, t time.Time, body []byte) string {
	ts := Timestamp(t)
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(m.Sum(nil))
}

// attempt POSTs one delivery and records the outcome.
func (w *Worker) attempt(ctx context.Context, d mailstore.WebhookDelivery) {
	log := w.log.With("webhook_id", d.Webhook.ID, "event_id", d.Event.ID, "type", d.Event.Type, "partner_id", d.Event.PartnerID)
	err := w.post(ctx, d)
	now := w.now()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err == nil {
		log.Info("webhook delivered", "attempts", d.Attempts+1)
		if err := w.cfg.Store.RecordWebhookAttempt(rctx, d.ID, true, now, ""); err != nil {
			log.Error("record webhook delivery", "err", err)
		}
		return
	}
	if ctx.Err() != nil {
		// Stopping: the lease runs out and the delivery is tried again,
		// here after a restart or on another node.
		return
	}
	next := now.Add(w.backoff(d.Attempts))
	if next.Sub(d.Event.CreatedAt) > Lifetime {
		log.Warn("webhook given up", "attempts", d.Attempts+1, "err", err)
		if err := w.cfg.Store.RecordWebhookAttempt(rctx, d.ID, true, now, err.Error()); err != nil {
			log.Error("record webhook delivery", "err", err)
		}
		return
	}
	log.Warn("webhook attempt failed", "attempts", d.Attempts+1, "next_attempt", next.UTC().Format(time.RFC3339), "err", err)
	if err := w.cfg.Store.RecordWebhookAttempt(rctx, d.ID, false, next, err.Error()); err != nil {
		log.Error("record webhook attempt", "err", err)
	}
}

// backoff is the wait after a delivery's attempts+1-th failure.
func (w *Worker) backoff(attempts int) time.Duration {
	d := w.cfg.Retry
	for range min(attempts, 20) {
		d *= 2
		if d >= maxRetry {
			return maxRetry
		}
	}
	return d
}

// post sends one delivery; an answer other than 2xx is an error. The
// error names the URL's host, never the secret, nor the URL's path and
// query, where receivers often keep a token of their own (net/http's
// *url.Error quotes the whole URL: its cause is kept, not it).
func (w *Worker) post(ctx context.Context, d mailstore.WebhookDelivery) error {
	body, err := Body(d.Event)
	if err != nil {
		return fmt.Errorf("encode event %d: %w", d.Event.ID, err)
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.Webhook.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("webhook request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "mailhost-webhook/1")
	req.Header.Set("X-Mailhost-Event", d.Event.Type)
	req.Header.Set("X-Mailhost-Delivery", strconv.FormatInt(d.ID, 10))
	req.Header.Set("X-Mailhost-Signature", Sign(d.Webhook.Secret, body))
	// Signed when sent, at each attempt: a retry is a new POST, whose
	// time a receiver checks against its clock.
	sent := w.now()
	req.Header.Set("X-Mailhost-Timestamp", Timestamp(sent))
	req.Header.Set("X-Mailhost-Signature-256", SignAt(d.Webhook.Secret, sent, body))
	resp, err := w.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("post to %s: %w", req.URL.Host, err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponse))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("post to %s: HTTP %d", req.URL.Host, resp.StatusCode)
	}
	return nil
}
