package service

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/mailhost/mailhost/mailauth"
	"github.com/mailhost/mailhost/mailstore"
)

// The daily re-check of verified domains: a domain stays
// verified only while its ownership proof stands in DNS. It runs at
// retention_time, the operator's time for daily work, and with several
// nodes on one store on one node a day (mailstore.Cluster.RunOnce).

// recheckJob is the re-check's name in mailstore.Cluster.RunOnce.
const recheckJob = "verify-domains"

// Defaults of rechecker.
const (
	// recheckBatch is how many verified domains one store read answers.
	recheckBatch = 100
	// recheckParallel bounds the domains checked at once: each costs one
	// or two DNS queries of up to 5 s, and 10,000 domains one after the
	// other could take hours on a slow resolver.
	recheckParallel = 8
	// recheckTimeout bounds the DNS queries of one domain.
	recheckTimeout = 20 * time.Second
)

// verifyStore is what the re-check uses of the store.
type verifyStore interface {
	VerifiedDomains(ctx context.Context, after string, limit int) ([]mailstore.Domain, error)
	SetVerified(ctx context.Context, partnerID int64, name string, verified bool, now time.Time) (mailstore.Domain, error)
}

// rechecker runs the re-check.
type rechecker struct {
	store verifyStore
	// cluster picks the node that runs a day's pass; nil: this one.
	cluster  mailstore.Cluster
	dns      mailauth.OwnershipResolver
	hostname string
	now      func() time.Time
	log      *slog.Logger
	// batch and parallel: 0 means recheckBatch and recheckParallel.
	batch, parallel int
}

// recheckResult counts one pass.
type recheckResult struct {
	Checked    int // domains whose proof was asked for
	Lost       int // unverified by this pass
	Unanswered int // kept verified because DNS gave no answer
}

// run does the pass once a day at hhmm UTC until ctx ends.
func (r *rechecker) run(ctx context.Context, hhmm string) {
	for {
		next := nextRun(r.now(), hhmm)
		select {
		case <-ctx.Done():
			return
		case <-time.After(next.Sub(r.now())):
		}
		r.daily(ctx, next)
	}
}

// daily runs the pass of the day whose scheduled time is slot, unless
// another node sharing the store has (the slot is the same on every
// node: the day's hh:mm).
func (r *rechecker) daily(ctx context.Context, slot time.Time) (recheckResult, bool) {
	if r.cluster != nil {
		run, err := r.cluster.RunOnce(ctx, recheckJob, slot)
		if err != nil {
			r.log.Error("domain verification re-check: claim the day's pass", "err", err)
			return recheckResult{}, false
		}
		if !run {
			r.log.Info("domain verification re-check run by another node", "slot", slot.Format(time.RFC3339))
			return recheckResult{}, false
		}
	}
	return r.pass(ctx), true
}

// pass checks every verified domain once, in batches, and unverifies
// those whose proof is gone. A domain DNS gives no answer for keeps its
// state (an outage of the customer's DNS or of ours must not move its
// mail); a store error ends the pass, to be tried again the next day.
func (r *rechecker) pass(ctx context.Context) recheckResult {
	start := time.Now()
	batch, parallel := r.batch, r.parallel
	if batch <= 0 {
		batch = recheckBatch
	}
	if parallel <= 0 {
		parallel = recheckParallel
	}
	var (
		// mu guards res.
		mu  sync.Mutex
		res recheckResult
	)
	after := ""
	for {
		ds, err := r.store.VerifiedDomains(ctx, after, batch)
		if err != nil {
			r.log.Error("domain verification re-check", "err", err)
			break
		}
		var g errgroup.Group
		g.SetLimit(parallel)
		for _, d := range ds {
			g.Go(func() error {
				lost, unanswered := r.check(ctx, d)
				mu.Lock()
				defer mu.Unlock()
				res.Checked++
				if lost {
					res.Lost++
				}
				if unanswered {
					res.Unanswered++
				}
				return nil
			})
		}
		g.Wait()
		if len(ds) < batch || ctx.Err() != nil {
			break
		}
		// Domains unverified in this batch leave the index; the next
		// batch starts after the last one read either way.
		after = mailstore.ReversedName(ds[len(ds)-1].Name)
	}
	r.log.Info("domain verification re-check done", "checked", res.Checked, "lost", res.Lost,
		"unanswered", res.Unanswered, "duration_ms", time.Since(start).Milliseconds())
	return res
}

// check asks DNS for one domain's proof and unverifies it when the proof
// is gone; it logs what it finds.
func (r *rechecker) check(ctx context.Context, d mailstore.Domain) (lost, unanswered bool) {
	dctx, cancel := context.WithTimeout(ctx, recheckTimeout)
	o, err := mailauth.CheckOwnership(dctx, r.dns, d.Name, d.VerifyToken, r.hostname)
	cancel()
	switch {
	case errors.Is(err, mailauth.ErrDNSUnanswered):
		r.log.Warn("domain verification re-check: no DNS answer, kept verified", "domain", d.Name, "partner_id", d.PartnerID, "err", err)
		return false, true
	case err != nil:
		r.log.Error("domain verification re-check", "domain", d.Name, "err", err)
		return false, false
	case o.Verified:
		return false, false
	}
	if _, err := r.store.SetVerified(ctx, d.PartnerID, d.Name, false, r.now()); err != nil {
		if !errors.Is(err, mailstore.ErrDomainNotFound) { // deleted since the batch was read
			r.log.Error("domain verification re-check: unverify", "domain", d.Name, "err", err)
		}
		return false, false
	}
	r.log.Warn("domain verification lost", "domain", d.Name, "partner_id", d.PartnerID,
		"expected", o.Expected, "found", o.Found)
	return true, false
}
