package smtpd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

func TestMemoryBudget(t *testing.T) {
	ctx := context.Background()
	b := NewMemoryBudget(2 * budgetStep)
	b.wait = 50 * time.Millisecond
	read := func(br *budgetReader) error {
		_, err := io.Copy(io.Discard, br)
		return err
	}

	a := newBudgetReader(ctx, bytes.NewReader(make([]byte, budgetStep+1)), b, 0)
	if err := read(a); err != nil || a.held != 2*budgetStep {
		t.Fatalf("reading one step and a byte = %v, holding %d; want nil, two steps", err, a.held)
	}
	c := newBudgetReader(ctx, strings.NewReader("x"), b, 0)
	if err := read(c); !errors.Is(err, errNoMemory) {
		t.Errorf("reading while the budget is used = %v, want errNoMemory after the wait", err)
	}
	c.release()
	a.release()
	d := newBudgetReader(ctx, strings.NewReader("x"), b, 0)
	if err := read(d); err != nil {
		t.Errorf("reading once room was given back = %v", err)
	}
	d.release()

	// An announced size takes nothing before the bytes arrive; one
	// larger than the whole budget is refused at once.
	e := newBudgetReader(ctx, strings.NewReader("small"), b, 2*budgetStep)
	if e.held != 0 {
		t.Errorf("room taken for SIZE=%d before any byte: %d, want none", 2*budgetStep, e.held)
	}
	if err := read(e); err != nil || e.held != budgetStep {
		t.Errorf("reading 5 bytes announced as %d = %v, holding %d; want nil, one step", 2*budgetStep, err, e.held)
	}
	e.release()
	f := newBudgetReader(ctx, strings.NewReader("x"), b, 2*budgetStep+1)
	if err := read(f); !errors.Is(err, errNoMemory) || f.held != 0 {
		t.Errorf("SIZE= over the whole budget = %v, holding %d; want errNoMemory, nothing", err, f.held)
	}
	f.release()

	// A message larger than the whole budget never fits.
	g := newBudgetReader(ctx, bytes.NewReader(make([]byte, 3*budgetStep)), b, 0)
	if err := read(g); !errors.Is(err, errNoMemory) {
		t.Errorf("a message larger than the budget = %v, want errNoMemory", err)
	}
	g.release()
	if !b.sem.TryAcquire(2 * budgetStep) {
		t.Errorf("room was not all given back")
	}
}

// TestMXMemoryBudget: with the budget used by other messages, a message
// waits, then is answered 452 4.3.1; once there is room it is stored.
func TestMXMemoryBudget(t *testing.T) {
	budget := NewMemoryBudget(budgetStep)
	budget.wait = 100 * time.Millisecond
	e := newEnv(t, func(c *Config) { c.Memory = budget })
	hog := newBudgetReader(context.Background(), bytes.NewReader(make([]byte, budgetStep)), budget, 0)
	if _, err := io.Copy(io.Discard, hog); err != nil {
		t.Fatal(err)
	}
	err := e.send(t, "s@remote.test", []string{"bob@a.test"}, message("waits", "body"))
	if got := smtpCode(err); got != "452 4.3.1" {
		t.Errorf("delivery while the budget is used = %v, want 452 4.3.1", err)
	}
	hog.release()
	if err := e.send(t, "s@remote.test", []string{"bob@a.test"}, message("fits", "body")); err != nil {
		t.Errorf("delivery with room = %v", err)
	}
	if n := len(e.inbox(t, "bob@a.test")); n != 1 {
		t.Errorf("bob has %d messages, want 1", n)
	}
}

// TestAnnouncedSizeHoldsNothing: clients that announce SIZE= of the
// whole budget and then send a byte at a time hold no room, so other
// messages are stored at once (when the announcement was reserved at
// DATA, two such connections without an account refused everyone's mail).
func TestAnnouncedSizeHoldsNothing(t *testing.T) {
	budget := NewMemoryBudget(2 * budgetStep)
	budget.wait = 100 * time.Millisecond
	e := newEnv(t, func(c *Config) { c.Memory = budget })
	for range 2 {
		r := e.dialRaw(t)
		r.send("EHLO hog.test")
		r.expect("250")
		r.send(fmt.Sprintf("MAIL FROM:<s@remote.test> SIZE=%d", 2*budgetStep), "RCPT TO:<bob@a.test>", "DATA")
		r.expect("250")
		r.expect("250")
		r.expect("354")
		r.write("S")
	}
	if err := e.send(t, "s@remote.test", []string{"bob@a.test"}, message("not held back", "body")); err != nil {
		t.Errorf("delivery beside two connections announcing the budget = %v, want it stored", err)
	}
	if n := len(e.inbox(t, "bob@a.test")); n != 1 {
		t.Errorf("bob has %d messages, want 1", n)
	}
}

// TestMemoryBudgetReserve: Reserve takes room for a known size, waits
// for it up to the budget's wait, and gives it back.
func TestMemoryBudgetReserve(t *testing.T) {
	b := NewMemoryBudget(2 * budgetStep)
	b.wait = 50 * time.Millisecond
	ctx := context.Background()
	release, err := b.Reserve(ctx, budgetStep+1)
	if err != nil {
		t.Fatalf("Reserve(a step and a byte) = %v", err)
	}
	if _, err := b.Reserve(ctx, 1); !errors.Is(err, errNoMemory) {
		t.Errorf("Reserve(1) with the budget used = %v, want errNoMemory", err)
	}
	release()
	r2, err := b.Reserve(ctx, 1)
	if err != nil {
		t.Fatalf("Reserve(1) once given back = %v", err)
	}
	r2()
	if _, err := b.Reserve(ctx, 3*budgetStep); !errors.Is(err, errNoMemory) {
		t.Errorf("Reserve(more than the budget) = %v, want errNoMemory", err)
	}
}
