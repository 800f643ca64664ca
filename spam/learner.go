package spam

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
)

// Bodies reads a stored message; *boltstore.Store and the PostgreSQL store
// satisfy it.
type Bodies interface {
	Body(ctx context.Context, mailboxID, folderID int64, uid uint32) ([]byte, error)
}

// Learning bounds.
const (
	// learnQueue is how many messages wait to be learnt at most; a user
	// who moves more at once has the rest skipped (and logged): learning
	// is a hint, and one mass move must not hold memory or rspamd.
	learnQueue = 1000
	// learnWorkers learn at once.
	learnWorkers = 2
	// maxLearnBytes: larger messages are not learnt (rspamd's own default
	// limit is 50 MiB; spam is small).
	maxLearnBytes = 10 << 20
)

// learnJob is one message to learn.
type learnJob struct {
	mailboxID, folderID int64
	uid                 uint32
	spam                bool
}

// Learner teaches rspamd, in the background, what users move into Junk
// (spam) and out of it (ham): Moved never blocks nor fails, so that an
// IMAP MOVE never waits for rspamd. Its methods may be called from any
// goroutine.
type Learner struct {
	c      *Client
	bodies Bodies
	log    *slog.Logger
	jobs   chan learnJob
	wg     sync.WaitGroup
	// OnLearnt, when set before the first Moved, is called after each
	// message is learnt or given up (err), for tests.
	OnLearnt func(err error)

	// mu guards closed (Moved after Shutdown drops the job).
	mu     sync.Mutex
	closed bool
	stop   context.CancelFunc
}

// NewLearner starts a Learner's workers; Shutdown stops them.
func NewLearner(c *Client, bodies Bodies, log *slog.Logger) *Learner {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &Learner{c: c, bodies: bodies, log: log.With("service", "spam_learn"), jobs: make(chan learnJob, learnQueue), stop: cancel}
	for range learnWorkers {
		l.wg.Add(1)
		go l.work(ctx)
	}
	return l
}

// Moved queues the messages now at uids of folderID in mailbox mailboxID,
// just moved into Junk (spam) or out of it (ham), to be learnt.
func (l *Learner) Moved(mailboxID, folderID int64, uids []uint32, spam bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	for i, uid := range uids {
		select {
		case l.jobs <- learnJob{mailboxID, folderID, uid, spam}:
		default:
			l.log.Warn("learning queue full: messages not learnt", "mailbox_id", mailboxID, "skipped", len(uids)-i)
			return
		}
	}
}

func (l *Learner) work(ctx context.Context) {
	defer l.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case j, ok := <-l.jobs:
			if !ok {
				return
			}
			err := l.learn(ctx, j)
			if err != nil {
				l.log.Warn("message not learnt", "mailbox_id", j.mailboxID, "folder_id", j.folderID, "uid", j.uid, "spam", j.spam, "err", err)
			} else {
				l.log.Info("message learnt", "mailbox_id", j.mailboxID, "uid", j.uid, "spam", j.spam)
			}
			if l.OnLearnt != nil {
				l.OnLearnt(err)
			}
		}
	}
}

func (l *Learner) learn(ctx context.Context, j learnJob) error {
	ctx, cancel := context.WithTimeout(ctx, 2*l.c.cfg.Timeout)
	defer cancel()
	body, err := l.bodies.Body(ctx, j.mailboxID, j.folderID, j.uid)
	if err != nil {
		return fmt.Errorf("read message: %w", err)
	}
	if len(body) > maxLearnBytes {
		return errors.New("message over 10 MiB, not learnt")
	}
	return l.c.Learn(ctx, j.spam, body)
}

// Shutdown stops taking messages, lets the workers finish what is queued
// until ctx ends, then stops them.
func (l *Learner) Shutdown(ctx context.Context) error {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.jobs)
	}
	l.mu.Unlock()
	done := make(chan struct{})
	go func() { l.wg.Wait(); close(done) }()
	select {
	case <-done:
		l.stop()
		return nil
	case <-ctx.Done():
		l.stop()
		<-done
		return ctx.Err()
	}
}
