package service

import (
	"context"
	"log/slog"
	"time"

	"github.com/mailhost/mailhost/mailstore"
)

// nextRun returns the first time after now at hh:mm UTC.
func nextRun(now time.Time, hhmm string) time.Time {
	t, _ := time.Parse("15:04", hhmm)
	now = now.UTC()
	next := time.Date(now.Year(), now.Month(), now.Day(), t.Hour(), t.Minute(), 0, 0, time.UTC)
	if !next.After(now) {
		next = next.AddDate(0, 0, 1)
	}
	return next
}

// retentionStore is what the daily pass needs: the purge, and the
// cluster's agreement on which node runs each day's pass.
type retentionStore interface {
	PurgeBefore(ctx context.Context, now time.Time) ([]mailstore.PurgeResult, error)
	mailstore.Cluster
	mailstore.Audit
	mailstore.Webhooks
}

// runRetention runs the purge once a day at hhmm UTC until ctx ends. With
// several nodes each schedules the pass, and the one that takes the day's
// slot (Cluster.RunOnce) runs it: once across the cluster, and a node
// restarted after the pass does not run it again.
//
// The same pass prunes the audit log (entries older than auditDays) and
// the events delivered (pruneRecords).
func runRetention(ctx context.Context, st retentionStore, hhmm string, auditDays int64, now func() time.Time, log *slog.Logger) {
	for {
		at := nextRun(now(), hhmm)
		wait := at.Sub(now())
		log.Info("retention scheduled", "in", wait.Round(time.Second).String())
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		mine, err := st.RunOnce(ctx, "retention", at)
		if err != nil {
			log.Error("retention pass: take the day's slot", "err", err)
			continue
		}
		if !mine {
			log.Info("retention pass run by another node", "slot", at.Format(time.RFC3339))
			continue
		}
		purge(ctx, st, now(), log)
		pruneRecords(ctx, st, now(), auditDays, log)
	}
}

// purge runs one retention pass and logs what it deleted.
func purge(ctx context.Context, st interface {
	PurgeBefore(context.Context, time.Time) ([]mailstore.PurgeResult, error)
}, now time.Time, log *slog.Logger) []mailstore.PurgeResult {
	start := time.Now()
	res, err := st.PurgeBefore(ctx, now)
	if err != nil {
		log.Error("retention pass", "err", err)
		return res
	}
	var msgs, bytes int64
	for _, r := range res {
		msgs += r.Messages
		bytes += r.Bytes
		log.Info("retention purged", "domain", r.Domain, "messages", r.Messages, "bytes", r.Bytes)
	}
	log.Info("retention pass done", "messages", msgs, "bytes", bytes, "duration_ms", time.Since(start).Milliseconds())
	return res
}
