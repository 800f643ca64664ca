package smtpd

import (
	"context"
	"errors"
	"io"
	"time"

	"golang.org/x/sync/semaphore"
)

// MemoryBudget bounds the message data the SMTP servers sharing it hold
// in memory at once. A message is read whole before it is stored (it is
// signed, given trace fields, and written in one transaction), so without
// a bound, enough sessions sending messages of max_message_bytes at once
// could take all the machine's memory: the bound turns that into waiting,
// then a temporary refusal. Its methods may be called from any goroutine.
type MemoryBudget struct {
	sem  *semaphore.Weighted
	size int64
	// wait is how long a message waits for room before it is refused.
	wait time.Duration
}

// budgetStep is the unit a message takes room in: a small message takes
// one step, so the budget costs one acquire and one release per message.
const budgetStep = 64 << 10

// budgetWait is how long a message waits for room: long enough for the
// messages ahead of it to be stored, short of the client's own timeout
// (RFC 5321 section 4.5.3.2.6 gives the client 10 minutes after the data).
const budgetWait = 30 * time.Second

// NewMemoryBudget makes a budget of bytes (at least one step).
func NewMemoryBudget(bytes int64) *MemoryBudget {
	bytes = max(bytes, budgetStep)
	return &MemoryBudget{sem: semaphore.NewWeighted(bytes), size: bytes, wait: budgetWait}
}

// Reserve takes room for bytes (a message whose size is known, as an IMAP
// APPEND's) within the budget's wait, and answers how to give it back; an
// error when there was no room in time (errors.Is errNoMemory's text:
// "no room for the message in memory"). Other servers than SMTP's share
// the budget through it.
func (b *MemoryBudget) Reserve(ctx context.Context, bytes int64) (release func(), err error) {
	if bytes > b.size {
		return nil, errNoMemory
	}
	br := &budgetReader{b: b, ctx: ctx}
	if err := br.take(max(bytes, 1)); err != nil {
		return nil, err
	}
	return br.release, nil
}

// errNoMemory: the message did not get room in the budget in time.
var errNoMemory = errors.New("no room for the message in memory")

// budgetReader reads a message, taking room in the budget for what it
// has read, ahead, a step at a time; release gives it all back once the
// message is stored or refused.
type budgetReader struct {
	r      io.Reader
	b      *MemoryBudget
	ctx    context.Context
	held   int64 // taken from the budget
	read   int64
	failed error
}

// newBudgetReader reads r within b (nil: no bound). Room is taken only
// for bytes that have arrived, never for what a client announces
// (SIZE=, RFC 1870): taken at DATA, the announcement let a client
// without an account hold the whole budget with a few connections that
// announce 50 MB and send one byte, and every other message, inbound and
// submitted, waited and was refused. Holding room now costs the client
// the upload of that many bytes. An announced size larger than the whole
// budget is refused at once, as it could never fit.
func newBudgetReader(ctx context.Context, r io.Reader, b *MemoryBudget, announced int64) *budgetReader {
	br := &budgetReader{r: r, b: b, ctx: ctx}
	if b != nil && announced > b.size {
		br.failed = errNoMemory
	}
	return br
}

func (br *budgetReader) Read(p []byte) (int, error) {
	if br.failed != nil {
		return 0, br.failed
	}
	n, err := br.r.Read(p)
	br.read += int64(n)
	if br.b != nil && br.read > br.held {
		if terr := br.take(br.read - br.held); terr != nil {
			return n, terr
		}
	}
	return n, err
}

// take takes at least need more bytes of room, in whole steps.
func (br *budgetReader) take(need int64) error {
	steps := (need + budgetStep - 1) / budgetStep * budgetStep
	steps = min(steps, br.b.size-br.held)
	if steps <= 0 {
		// Over the whole budget: the message is larger than it.
		br.failed = errNoMemory
		return br.failed
	}
	ctx, cancel := context.WithTimeout(br.ctx, br.b.wait)
	defer cancel()
	if err := br.b.sem.Acquire(ctx, steps); err != nil {
		br.failed = errNoMemory
		return br.failed
	}
	br.held += steps
	return nil
}

// release gives back the room taken.
func (br *budgetReader) release() {
	if br.b != nil && br.held > 0 {
		br.b.sem.Release(br.held)
		br.held = 0
	}
}
