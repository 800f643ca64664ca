package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/emersion/go-smtp"
)

// sink is the loopback SMTP server the outbound queue relays to (mailhost
// started with MAILHOST_RELAY=<its address>). It accepts every message,
// reads it whole and records when each of the load's messages, known by
// its Message-ID, first arrived. No STARTTLS, no AUTH: mailhost's sender
// then speaks plain SMTP, as it does to an MX that offers no TLS.
type sink struct {
	srv *smtp.Server
	ln  net.Listener

	// mu guards the fields below it, written by the sessions.
	mu      sync.Mutex
	arrived map[string]time.Time // Message-ID local part -> first arrival
	dups    int                  // messages whose Message-ID had come already
	unknown int                  // messages without a load Message-ID
	rcpts   int                  // RCPT commands accepted
	conns   int                  // SMTP sessions opened
	first   time.Time            // first message's end of data
	last    time.Time            // last new message's end of data
}

// startSink listens on addr and serves until close.
func startSink(addr string) (*sink, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("sink: %w", err)
	}
	k := &sink{ln: ln, arrived: map[string]time.Time{}}
	k.srv = smtp.NewServer(k)
	k.srv.Domain = "sink.test"
	k.srv.MaxMessageBytes = 64 << 20
	k.srv.MaxRecipients = 1000
	k.srv.ReadTimeout = time.Minute
	k.srv.WriteTimeout = time.Minute
	go k.srv.Serve(ln)
	return k, nil
}

func (k *sink) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if k.srv.Shutdown(ctx) != nil {
		k.srv.Close()
	}
}

// NewSession implements smtp.Backend.
func (k *sink) NewSession(*smtp.Conn) (smtp.Session, error) {
	k.mu.Lock()
	k.conns++
	k.mu.Unlock()
	return &sinkSession{k: k}, nil
}

// sessions is the number of SMTP sessions opened so far: with sessions
// reused, far fewer than the messages.
func (k *sink) sessions() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.conns
}

type sinkSession struct {
	k   *sink
	buf bytes.Buffer
}

func (s *sinkSession) Reset()        {}
func (s *sinkSession) Logout() error { return nil }
func (s *sinkSession) Mail(string, *smtp.MailOptions) error {
	return nil
}

func (s *sinkSession) Rcpt(string, *smtp.RcptOptions) error {
	s.k.mu.Lock()
	s.k.rcpts++
	s.k.mu.Unlock()
	return nil
}

var loadIDPrefix = []byte("Message-ID: <load-")

func (s *sinkSession) Data(r io.Reader) error {
	s.buf.Reset()
	if _, err := s.buf.ReadFrom(r); err != nil {
		return err
	}
	now := time.Now()
	id := ""
	if b := s.buf.Bytes(); bytes.Contains(b, loadIDPrefix) {
		rest := b[bytes.Index(b, loadIDPrefix)+len(loadIDPrefix):]
		if j := bytes.IndexByte(rest, '@'); j > 0 && j < 64 {
			id = string(rest[:j])
		}
	}
	k := s.k
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.first.IsZero() {
		k.first = now
	}
	switch _, seen := k.arrived[id]; {
	case id == "":
		k.unknown++
	case seen:
		k.dups++
	default:
		k.arrived[id] = now
		k.last = now
	}
	return nil
}

// odd answers the messages that arrived again, the messages without a
// load Message-ID, and the RCPT commands accepted.
func (k *sink) odd() (dups, unknown, rcpts int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.dups, k.unknown, k.rcpts
}

// has reports whether message id has arrived.
func (k *sink) has(id int) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.arrived[fmt.Sprintf("%09d", id)]
	return ok
}

// count is the number of distinct load messages arrived.
func (k *sink) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.arrived)
}

// waitFor polls every 5 ms until want distinct messages have arrived or
// ctx ends; the arrival times are taken in Data, so the poll interval
// does not change the figures.
func (k *sink) waitFor(ctx context.Context, want int) error {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for k.count() < want {
		select {
		case <-t.C:
		case <-ctx.Done():
			return fmt.Errorf("sink: %d of %d messages arrived: %w", k.count(), want, ctx.Err())
		}
	}
	return nil
}

// arrivals answers the arrival times of messages ids from..to-1, and
// when the last of them came; missing ones are skipped.
func (k *sink) arrivals(from, to int) (times []time.Time, first, last time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for i := from; i < to; i++ {
		t, ok := k.arrived[fmt.Sprintf("%09d", i)]
		if !ok {
			continue
		}
		times = append(times, t)
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if t.After(last) {
			last = t
		}
	}
	return times, first, last
}
