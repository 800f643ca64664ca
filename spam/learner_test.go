package spam_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/mailhost/mailhost/spam"
)

// bodies is a fixed message store for the learner.
type bodies map[uint32][]byte

func (b bodies) Body(_ context.Context, _, _ int64, uid uint32) ([]byte, error) {
	if m, ok := b[uid]; ok {
		return m, nil
	}
	return nil, errors.New("no such message")
}

// TestLearnerRspamdDown: with the controller down, Moved returns at once
// and each message is given up with an error; Shutdown returns.
func TestLearnerRspamdDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c, err := spam.New(spam.Config{ControllerURL: "http://" + addr, Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	l := spam.NewLearner(c, bodies{1: message("one"), 2: message("two")}, nil)
	done := make(chan error, 3)
	l.OnLearnt = func(err error) { done <- err }
	start := time.Now()
	l.Moved(1, 5, []uint32{1, 2, 3}, true)
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("Moved took %v, want no wait", d)
	}
	for range 3 {
		select {
		case err := <-done:
			if err == nil {
				t.Error("learn with rspamd down = nil error")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("learner gave no answer in 10 s")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown = %v", err)
	}
	l.Moved(1, 5, []uint32{1}, true) // after Shutdown: dropped, no panic
}
