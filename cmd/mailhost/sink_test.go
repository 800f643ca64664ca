package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

// lockedBuffer is the sink's output, read while sessions write it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestSink(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var out lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveSink(ctx, ln, &out) }()

	msg := "From: alice@example.com\r\nSubject: out\r\n\r\nHi Bob!\r\n"
	c, err := smtp.Dial(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SendMail("alice@example.com", []string{"bob@remote.test", "carol@remote.test"}, strings.NewReader(msg)); err != nil {
		t.Fatalf("SendMail to the sink = %v", err)
	}
	c.Quit()
	want := "MAIL FROM:<alice@example.com> RCPT TO:<bob@remote.test>,<carol@remote.test>\nFrom: alice@example.com\nSubject: out\n\nHi Bob!\n"
	if got := out.String(); !strings.Contains(got, want) {
		t.Errorf("sink printed %q, want it to contain %q", got, want)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serveSink after cancel = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("serveSink did not stop after its context ended")
	}
}

func TestSinkRefusesPublicAddress(t *testing.T) {
	code, _, errs := mh(t, "sink", "-listen", "0.0.0.0:0")
	if code != 2 || !strings.Contains(errs, "not a loopback address") {
		t.Errorf("mailhost sink -listen 0.0.0.0:0 = %d %q, want 2 and 'not a loopback address'", code, errs)
	}
}
