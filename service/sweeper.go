package service

import "context"

// newRetention schedules the daily retention pass (runRetention).
func newRetention(p *parts) component {
	return &worker{name: "retention", run: func(ctx context.Context) {
		runRetention(ctx, countedPurge{p.st, p.mset.RetentionDeleted}, p.cfg.RetentionTime, p.cfg.AuditRetentionDays, p.o.Now, p.log)
	}}
}

// newRecheck schedules the daily re-check of the verified domains'
// ownership. It asks DNS without the mail checks' cache, as the API's
// verify does: a record removed a minute ago is gone.
func newRecheck(p *parts) component {
	return &worker{name: "domain recheck", run: func(ctx context.Context) {
		r := &rechecker{store: p.st, cluster: p.st, dns: p.dns, hostname: p.hostname, now: p.o.Now, log: p.log}
		r.run(ctx, p.cfg.RetentionTime)
	}}
}
