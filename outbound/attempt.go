package outbound

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/mailhost/mailhost/mailstore"
)

// outcome is what one attempt learnt about the recipients it tried.
type outcome struct {
	delivered []string
	// failed recipients failed for good, each with the reply that said so.
	failed map[string]reply
	// deferred recipients are left pending, each with the temporary
	// answer about it in why; reason is the last of those answers, which
	// the queue records for them all.
	deferred []string
	why      map[string]reply
	reason   reply
	// host is the server the attempt ended at ("" for local delivery or
	// when none answered); tls says whether its session used TLS.
	host string
	tls  bool
}

func (o *outcome) fail(rcpt string, r reply) {
	if o.failed == nil {
		o.failed = map[string]reply{}
	}
	o.failed[rcpt] = r
}

func (o *outcome) deferAll(rcpts []string, r reply) {
	if o.why == nil {
		o.why = map[string]reply{}
	}
	for _, rcpt := range rcpts {
		if _, ok := o.why[rcpt]; !ok {
			o.deferred = append(o.deferred, rcpt)
		}
		o.why[rcpt] = r
	}
	o.reason = r
}

// settle gives every recipient in rcpts the answer r: failed when r is
// permanent, deferred otherwise.
func (o *outcome) settle(rcpts []string, r reply) {
	if !r.permanent() {
		o.deferAll(rcpts, r)
		return
	}
	for _, rcpt := range rcpts {
		o.fail(rcpt, r)
	}
}

// recordTimeout bounds the bounce and the RecordAttempt that end an
// attempt. They run even when Run is stopping, so that what the attempt
// learnt is not thrown away: Run waits for them.
const recordTimeout = 30 * time.Second

// attempt makes one delivery attempt of a claimed entry and records it;
// it answers whether it recorded it. ctx bounds the delivery (the lease,
// and Run's context); runCtx is Run's context alone, to tell a shutdown
// from a timeout. It calls release once it has sent (no connection open,
// the local delivery done), before it records the outcome.
func (s *Sender) attempt(ctx, runCtx context.Context, e mailstore.Outbound, release func()) (recorded bool) {
	start := time.Now()
	pending := e.Pending()
	log := s.log.With("id", e.ID, "destination", e.Destination)

	body, err := s.cfg.Store.OutboundBody(ctx, e.ID)
	if err != nil {
		// Nothing learnt: the lease runs out and the entry is claimed
		// again (or it is gone, deleted meanwhile).
		if ctx.Err() == nil && !errors.Is(err, mailstore.ErrOutboundNotFound) {
			log.Error("read queued message", "err", err)
		}
		return false
	}

	var out outcome
	switch held := s.suspended(ctx, e); {
	case len(pending) == 0:
		// Recording an attempt that changes nothing removes the entry.
	case held != nil:
		out.deferAll(pending, *held)
	default:
		// A destination hosted here is delivered here, unless another
		// partner hosts it unverified: then it goes out, as
		// to any domain not hosted here.
		here, err := s.delivery.RoutesHere(ctx, e)
		switch {
		case err != nil:
			out.deferAll(pending, localError("look up destination", err))
		case here:
			out = s.deliverLocal(ctx, e, body, pending)
		default:
			out = s.deliverRemote(ctx, e, body, pending)
		}
	}
	release()

	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	now := s.now()
	a := mailstore.Attempt{Now: now, Delivered: out.delivered, Failed: map[string]string{}}
	next := now.Add(backoff(e.Attempts+1, s.cfg.RetryMin, s.cfg.RetryMax))
	interrupted := runCtx.Err() != nil && len(out.deferred) > 0
	if interrupted {
		// Cut off by shutdown: not the destination's fault, so the entry
		// is due again at once for the next Run.
		out.reason = reply{Text: "interrupted by shutdown", Enhanced: smtp.EnhancedCode{4, 3, 2}}
		next = now
	}
	var bounced []failure
	for _, rcpt := range slices.Sorted(maps.Keys(out.failed)) {
		bounced = append(bounced, failure{rcpt: rcpt, reply: out.failed[rcpt]})
	}
	if expired := now.After(e.QueuedAt.Add(s.cfg.Lifetime)); expired && !interrupted && len(out.deferred) > 0 {
		for _, rcpt := range out.deferred {
			bounced = append(bounced, failure{rcpt: rcpt, reply: out.why[rcpt], expired: true})
		}
		out.deferred, out.why = nil, nil
	}

	// The bounce is queued before the failures are recorded: should the
	// process die between the two, the recipients are still pending, the
	// next attempt fails them again and a second bounce goes out. The
	// other order could lose the bounce for good (recipients failed, no
	// bounce), and a duplicate bounce is the lesser harm.
	bounceTo, bounceErr := s.bounce(rctx, e, body, bounced, now)
	if bounceErr != nil {
		// Without its bounce a failure is not recorded: those recipients
		// stay pending, and the next attempt fails and bounces them again.
		log.Error("queue bounce", "to", e.From, "err", bounceErr)
		for _, f := range bounced {
			out.deferAll([]string{f.rcpt}, localError("queue bounce", bounceErr))
		}
		bounced = nil
	}
	for _, f := range bounced {
		a.Failed[f.rcpt] = f.stored()
	}
	if len(bounced) > 0 && e.Kind == mailstore.KindSubmission && s.cfg.OnBounce != nil {
		failed := make(map[string]string, len(bounced))
		for _, f := range bounced {
			failed[f.rcpt] = f.stored()
		}
		s.cfg.OnBounce(rctx, e, failed)
	}
	if len(out.deferred) > 0 {
		a.Deferred = out.reason.describe()
		a.NextAttempt = next
		a.Warned = s.warn(rctx, e, body, out, now, interrupted)
	}

	_, err = s.cfg.Store.RecordAttempt(rctx, e.ID, a)
	if err != nil && !errors.Is(err, mailstore.ErrOutboundNotFound) {
		// The lease runs out and the entry is tried again; delivered
		// recipients may get the message twice, never zero times.
		log.Error("record attempt", "err", err)
	}
	recorded = err == nil
	if m := s.cfg.Metrics; m != nil {
		m.Attempt(metricsOutcome(result(out, bounced)), len(out.delivered), len(bounced), len(out.deferred), time.Since(start))
	}

	level := slog.LevelInfo
	if out.reason.local && len(out.deferred) > 0 && !interrupted {
		level = slog.LevelWarn
	}
	log.Log(ctx, level, "attempt",
		"kind", e.Kind, "rcpts", pending, "result", result(out, bounced),
		"delivered", len(out.delivered), "failed", len(bounced), "deferred", len(out.deferred),
		"reply", lastReply(out, bounced), "bounce_to", bounceTo, "host", out.host, "tls", out.tls,
		"attempts", e.Attempts+1, "size_bytes", len(body), "duration_ms", time.Since(start).Milliseconds())
	return recorded
}

// warn sends the sender a delay notice (RFC 3464, Action: delayed) for
// the recipients an attempt deferred, once per entry, when the entry was
// queued DelayWarning ago or more: a sender whose mail waits for hours
// learns it is late, and until when it will be tried, rather than
// assuming it arrived. None for a bounce or a null sender, nor when the
// attempt was cut off by a shutdown. It answers whether it sent one; a
// notice that could not be stored is tried at the next attempt.
func (s *Sender) warn(ctx context.Context, e mailstore.Outbound, body []byte, out outcome, now time.Time, interrupted bool) bool {
	if s.cfg.DelayWarning < 0 || e.Warned || interrupted || now.Sub(e.QueuedAt) < s.cfg.DelayWarning {
		return false
	}
	var delayed []failure
	for _, rcpt := range out.deferred {
		delayed = append(delayed, failure{rcpt: rcpt, reply: out.why[rcpt], delayed: true})
	}
	to, err := s.bounce(ctx, e, body, delayed, now)
	if err != nil {
		s.log.Error("queue delay notice", "id", e.ID, "to", e.From, "err", err)
		return false
	}
	if to != "" {
		s.log.Info("delay notice sent", "id", e.ID, "to", to, "rcpts", len(delayed))
	}
	// Also when none could go (a bounce, a null sender, nowhere to
	// send it): there is nothing to try again.
	return true
}

// suspended answers the reply that holds an entry back when the domain
// it is sent for (a user's submission, a forward through its alias, or a
// bounce relayed back through the SRS address that alias made) is
// suspended: a suspended domain sends nothing (docs/api.md), and an
// operator who suspends a domain for abuse expects the mail it queued to
// stop too. The entry is retried as if deferred, and goes once the domain
// is resumed (the resume makes it due at once: FlushOutboundDomain), or
// bounces when its lifetime ends. nil: the entry may go (the queue's own
// bounces, which no domain sends, and entries of a domain deleted since,
// which are mail in flight).
func (s *Sender) suspended(ctx context.Context, e mailstore.Outbound) *reply {
	if e.DomainID == 0 || e.Kind == mailstore.KindLocal {
		// A KindLocal entry's domain is its recipient's, which receives
		// mail while suspended as the MX does.
		return nil
	}
	d, err := s.cfg.Store.DomainWithID(ctx, e.DomainID)
	switch {
	case errors.Is(err, mailstore.ErrNotFound):
		return nil
	case err != nil:
		r := localError("look up sender domain", err)
		return &r
	case d.Suspended:
		return &reply{Text: fmt.Sprintf("domain %s is suspended: held until it is resumed", d.Name), Enhanced: smtp.EnhancedCode{4, 7, 1}}
	}
	return nil
}

// result sums up an attempt for the log.
func result(o outcome, failed []failure) string {
	parts := 0
	for _, n := range []int{len(o.delivered), len(failed), len(o.deferred)} {
		if n > 0 {
			parts++
		}
	}
	switch {
	case parts > 1:
		return "partial"
	case len(o.delivered) > 0:
		return "delivered"
	case len(failed) > 0:
		return "failed"
	case len(o.deferred) > 0:
		return "deferred"
	}
	return "nothing pending"
}

func lastReply(o outcome, failed []failure) string {
	if len(o.deferred) > 0 {
		return o.reason.describe()
	}
	if len(failed) > 0 {
		return failed[len(failed)-1].stored()
	}
	return ""
}

// failure is a recipient that failed for good, as a bounce reports it.
type failure struct {
	rcpt  string
	reply reply
	// expired: the recipient was still deferred at the end of the
	// entry's lifetime; reply is the last temporary answer.
	expired bool
	// delayed: not a failure yet; the recipient is deferred and a delay
	// notice tells the sender so (Config.DelayWarning).
	delayed bool
}

// stored is the failure as the queue records it.
func (f failure) stored() string {
	if f.expired {
		return "delivery time expired; last reply: " + f.reply.describe()
	}
	return f.reply.describe()
}

func isSRS(addr string) bool {
	at := strings.LastIndexByte(addr, '@')
	if at < 5 {
		return false
	}
	p := strings.ToUpper(addr[:5])
	return p == "SRS0=" || p == "SRS1="
}
