package outbound

import (
	"context"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// loop is the state of one Run: what it has claimed and what runs. Only
// the goroutine of run touches it; attempts report back on done.
type loop struct {
	s *Sender
	// waiting are claimed entries whose destination has PerDestination
	// attempts under way already, in claim order.
	waiting []job
	// running counts the attempts under way, perKey those per destination.
	running int
	perKey  map[string]int
	// inflight are the entries waiting or running: their Attempts when
	// claimed, by id. A claim may return one of them again: its lease ran
	// out during a long attempt, or the attempt recorded it as due at once
	// (or the clock jumped). See reclaimed.
	inflight map[int64]int
	// reclaimed are entries claimed again while their attempt ran; each
	// waits for that attempt to end. The claim is current if it saw the
	// attempt's record (more Attempts), or if the attempt recorded
	// nothing; otherwise it is stale (it could send again to recipients
	// the attempt delivered) and is dropped: its lease runs out and it is
	// claimed afresh.
	reclaimed map[int64]job
	// more: the last claim may have left due entries behind (it returned
	// as many as asked, or something was queued since).
	more bool
	done chan job
}

// job is one claimed entry.
type job struct {
	entry mailstore.Outbound
	key   string // destination domain, or the relay
	// deadline, on the real clock, is when the attempt must have ended:
	// a little before its lease runs out and another worker may take it.
	deadline time.Time
	// recorded is set when the attempt has ended and recorded its outcome.
	recorded bool
}

// maxWaitingPerWorker bounds the claimed entries that wait for a busy
// destination: claims go on while they are fewer than that many per
// worker, so that a backlog to one domain does not keep idle workers from
// the rest, within a bound on what sits claimed in memory.
const maxWaitingPerWorker = 4

func newLoop(s *Sender) *loop {
	return &loop{s: s, perKey: map[string]int{}, inflight: map[int64]int{}, reclaimed: map[int64]job{}, done: make(chan job)}
}

func (l *loop) run(ctx context.Context) {
	tick := time.NewTicker(l.s.cfg.PollInterval)
	defer tick.Stop()
	l.releaseHeld(ctx)
	l.more = true
	for {
		l.fill(ctx)
		select {
		case <-ctx.Done():
			for l.running > 0 {
				l.finish(<-l.done)
			}
			return
		case j := <-l.done:
			l.finish(j)
		case <-l.s.wake:
			l.more = true
		case <-tick.C:
			l.releaseHeld(ctx)
			l.more = true
		}
	}
}

// releaseHeld lets entries that waited for their domain's transfer cap go.
// It runs at each poll, not at each Wake: held entries are released by the
// month turning or the cap being raised, not by new mail.
func (l *loop) releaseHeld(ctx context.Context) {
	n, err := l.s.cfg.Store.ReleaseHeld(ctx, l.s.now())
	if err != nil {
		if ctx.Err() == nil {
			l.s.log.Error("release held entries", "err", err)
		}
		return
	}
	if n > 0 {
		l.s.log.Info("released held entries", "count", n)
	}
}

// fill claims due entries while workers are free and starts what it can.
func (l *loop) fill(ctx context.Context) {
	cfg := &l.s.cfg
	l.startWaiting(ctx)
	for l.more && ctx.Err() == nil && l.running < cfg.Workers && len(l.waiting) < cfg.Workers*maxWaitingPerWorker {
		n := cfg.Workers - l.running
		entries, err := cfg.Store.ClaimOutbound(ctx, l.s.now(), cfg.Lease, n)
		if err != nil {
			if ctx.Err() == nil {
				l.s.log.Error("claim entries", "err", err)
			}
			l.more = false // tried again at the next poll
			return
		}
		l.more = len(entries) == n
		// The attempt must end before the lease does, less a margin for
		// recording its outcome.
		deadline := time.Now().Add(cfg.Lease - cfg.Lease/10)
		for _, e := range entries {
			j := job{entry: e, key: l.s.key(e), deadline: deadline}
			if _, ok := l.inflight[e.ID]; ok {
				l.reclaimed[e.ID] = j
				continue
			}
			l.waiting = append(l.waiting, j)
			l.inflight[e.ID] = e.Attempts
		}
		l.startWaiting(ctx)
	}
}

// startWaiting starts the waiting jobs whose destination has room, in
// claim order, while workers are free. A job that waited so long that
// little of its lease is left is dropped: it is claimed again once the
// lease runs out.
func (l *loop) startWaiting(ctx context.Context) {
	cfg := &l.s.cfg
	keep := l.waiting[:0]
	for _, j := range l.waiting {
		switch {
		case time.Until(j.deadline) < cfg.Lease/4:
			// Not started, so not reclaimed either.
			delete(l.inflight, j.entry.ID)
		case l.running < cfg.Workers && l.perKey[j.key] < cfg.PerDestination && ctx.Err() == nil:
			l.running++
			l.perKey[j.key]++
			go func() {
				actx, cancel := context.WithDeadline(ctx, j.deadline)
				defer cancel()
				j.recorded = l.s.attempt(actx, ctx, j.entry)
				l.done <- j
			}()
		default:
			keep = append(keep, j)
		}
	}
	clear(l.waiting[len(keep):])
	l.waiting = keep
}

func (l *loop) finish(j job) {
	l.running--
	if l.perKey[j.key]--; l.perKey[j.key] == 0 {
		delete(l.perKey, j.key)
	}
	id := j.entry.ID
	delete(l.inflight, id)
	if r, ok := l.reclaimed[id]; ok {
		delete(l.reclaimed, id)
		if r.entry.Attempts > j.entry.Attempts || !j.recorded {
			l.waiting = append(l.waiting, r)
			l.inflight[id] = r.entry.Attempts
		}
	}
}

// key is what PerDestination counts an entry against.
func (s *Sender) key(e mailstore.Outbound) string {
	if s.cfg.Relay != "" {
		// A hosted destination is delivered locally, not through the
		// relay, but counting it there too is harmless and cheaper than a
		// lookup here.
		return "relay " + s.cfg.Relay
	}
	return e.Destination
}
