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

// runRetention runs the purge once a day at hhmm UTC until ctx ends.
func runRetention(ctx context.Context, st mailstore.Store, hhmm string, now func() time.Time, log *slog.Logger) {
	for {
		wait := nextRun(now(), hhmm).Sub(now())
		log.Info("retention scheduled", "in", wait.Round(time.Second).String())
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		purge(ctx, st, now(), log)
	}
}

// purge runs one retention pass and logs what it deleted.
func purge(ctx context.Context, st mailstore.Store, now time.Time, log *slog.Logger) []mailstore.PurgeResult {
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
