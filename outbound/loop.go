package outbound

import (
	"context"
	"sync"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// loop is the state of one Run: what it has claimed and what runs. Only
// the goroutine of run touches it; attempts and claims run in goroutines
// of their own and report back on events and claims, so that dispatch
// never waits for a commit.
type loop struct {
	s *Sender
	// waiting are claimed entries not started yet, waiting for a worker
	// or for room at their destination, in claim order.
	waiting []job
	// waitingPerKey counts waiting by key.
	waitingPerKey map[string]int
	// running counts the attempts sending (a connection open, or a local
	// delivery), perKey those per destination; settling counts those
	// that have sent and are recording their outcome (and bounces).
	running  int
	perKey   map[string]int
	settling int
	// inflight are the entries waiting, running or settling: their
	// Attempts when claimed, by id. A claim may return one of them again:
	// its lease ran out during a long attempt, or the attempt recorded it
	// as due at once (or the clock jumped). See reclaimed.
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
	// claiming: a claim is under way; it answers on claims.
	claiming bool
	claims   chan claim
	events   chan event
}

// claim is what one ClaimOutbound answered.
type claim struct {
	entries []mailstore.Outbound
	asked   int
	err     error
	// deadline, on the real clock, is when the attempts of these entries
	// must have ended: before their lease runs out, less a margin for
	// recording the outcome.
	deadline time.Time
}

// event is what an attempt reports to the loop: first that it has sent
// (its worker is free and its destination has room again), then that it
// has recorded its outcome. Recording waits for a commit, which the store
// shares among concurrent ones; a worker that waited for it would bound
// the queue's rate by Workers over the commit time.
type event struct {
	j     job
	ended bool
}

// job is one claimed entry.
type job struct {
	entry    mailstore.Outbound
	key      string // destination domain, or the relay
	deadline time.Time
	// recorded is set when the attempt has ended and recorded its outcome.
	recorded bool
}

// maxWaitingPerWorker bounds the claimed entries waiting for a worker or
// for room at their destination: at most that many per worker, and per
// session a destination may have at once. Claiming many at once spares
// commits (each claim is one); claiming while idle workers wait behind a
// busy destination lets the other destinations through. A claim passes
// over the destinations that have their share waiting already and takes
// at most a share of each other one (mailstore.ClaimOptions), so that a
// backlog to one slow destination cannot fill the waiting list and hold
// the others back: a full list then means every worker is busy.
const maxWaitingPerWorker = 4

// maxHeldPerWorker bounds every entry claimed and not yet recorded, per
// worker: claims stop while the store is slow to record.
const maxHeldPerWorker = 8

func newLoop(s *Sender) *loop {
	return &loop{s: s, perKey: map[string]int{}, waitingPerKey: map[string]int{}, inflight: map[int64]int{}, reclaimed: map[int64]job{},
		claims: make(chan claim), events: make(chan event)}
}

func (l *loop) run(ctx context.Context) {
	tick := time.NewTicker(l.s.cfg.PollInterval)
	defer tick.Stop()
	l.releaseHeld(ctx)
	l.more = true
	for {
		l.startWaiting(ctx)
		l.claim(ctx)
		select {
		case <-ctx.Done():
			// Attempts under way are cut off by ctx and record what they
			// learnt; a claim under way fails. Entries claimed and not
			// started are claimed again once their lease runs out.
			for l.running+l.settling > 0 || l.claiming {
				select {
				case ev := <-l.events:
					l.handle(ev)
				case <-l.claims:
					l.claiming = false
				}
			}
			return
		case ev := <-l.events:
			l.handle(ev)
		case c := <-l.claims:
			l.claimed(ctx, c)
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

// claim starts a claim of due entries, unless one is under way: when
// fewer than Workers entries wait, or when workers are idle while those
// waiting cannot start, within the bounds above.
func (l *loop) claim(ctx context.Context) {
	cfg := &l.s.cfg
	capacity, maxHeld := cfg.Workers*maxWaitingPerWorker, cfg.Workers*maxHeldPerWorker
	if l.claiming || !l.more || ctx.Err() != nil || len(l.waiting) >= capacity || len(l.inflight) >= maxHeld ||
		(len(l.waiting) >= cfg.Workers && l.running >= cfg.Workers) {
		return
	}
	n := min(capacity-len(l.waiting), maxHeld-len(l.inflight))
	now := l.s.now()
	l.claiming = true
	// Cleared here, so that a Wake during the claim asks for another.
	l.more = false
	opt := l.claimOptions()
	go func() {
		entries, err := cfg.Store.ClaimOutbound(ctx, now, cfg.Lease, n, opt)
		l.claims <- claim{entries: entries, asked: n, err: err, deadline: time.Now().Add(cfg.Lease - cfg.Lease/10)}
	}()
}

// claimOptions spread a claim over destinations: see maxWaitingPerWorker.
// Through a relay every entry counts against the relay, whose share is
// the whole waiting list: nothing to spread.
func (l *loop) claimOptions() mailstore.ClaimOptions {
	if l.s.cfg.Relay != "" {
		return mailstore.ClaimOptions{}
	}
	share := l.s.cfg.PerDestination * maxWaitingPerWorker
	opt := mailstore.ClaimOptions{PerDestination: share}
	for key, n := range l.waitingPerKey {
		if n >= share {
			opt.Skip = append(opt.Skip, key)
		}
	}
	return opt
}

// claimed takes in what a claim answered.
func (l *loop) claimed(ctx context.Context, c claim) {
	l.claiming = false
	if c.err != nil {
		// Tried again at the next poll, or Wake.
		if ctx.Err() == nil {
			l.s.log.Error("claim entries", "err", c.err)
		}
		return
	}
	if len(c.entries) == c.asked {
		l.more = true
	}
	for _, e := range c.entries {
		j := job{entry: e, key: l.s.key(e), deadline: c.deadline}
		if _, ok := l.inflight[e.ID]; ok {
			l.reclaimed[e.ID] = j
			continue
		}
		l.wait(j)
	}
}

// wait adds a job to the waiting list.
func (l *loop) wait(j job) {
	l.waiting = append(l.waiting, j)
	l.waitingPerKey[j.key]++
	l.inflight[j.entry.ID] = j.entry.Attempts
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
		case l.running < cfg.Workers && l.perKey[j.key] < l.s.limit(j.key) && ctx.Err() == nil:
			l.running++
			l.perKey[j.key]++
			go func() {
				actx, cancel := context.WithDeadline(ctx, j.deadline)
				defer cancel()
				var once sync.Once
				release := func() { once.Do(func() { l.events <- event{j: j} }) }
				j.recorded = l.s.attempt(actx, ctx, j.entry, release)
				release()
				l.events <- event{j: j, ended: true}
			}()
		default:
			keep = append(keep, j)
			continue
		}
		if l.waitingPerKey[j.key]--; l.waitingPerKey[j.key] <= 0 {
			delete(l.waitingPerKey, j.key)
		}
	}
	clear(l.waiting[len(keep):])
	l.waiting = keep
}

// handle takes in what an attempt reports.
func (l *loop) handle(ev event) {
	j := ev.j
	if !ev.ended {
		l.running--
		l.settling++
		if l.perKey[j.key]--; l.perKey[j.key] == 0 {
			delete(l.perKey, j.key)
		}
		return
	}
	l.settling--
	id := j.entry.ID
	delete(l.inflight, id)
	if r, ok := l.reclaimed[id]; ok {
		delete(l.reclaimed, id)
		if r.entry.Attempts > j.entry.Attempts || !j.recorded {
			l.wait(r)
		}
	}
}

// limit is the most sessions at once to a key.
func (s *Sender) limit(key string) int {
	if s.cfg.Relay != "" {
		return s.cfg.PerRelay
	}
	return s.cfg.PerDestination
}

// key is what PerDestination (PerRelay) counts an entry against.
func (s *Sender) key(e mailstore.Outbound) string {
	if s.cfg.Relay != "" {
		// A hosted destination is delivered locally, not through the
		// relay, but counting it there too is harmless and cheaper than a
		// lookup here.
		return "relay " + s.cfg.Relay
	}
	return e.Destination
}
