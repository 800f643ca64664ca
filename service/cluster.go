package service

import (
	"context"
	"log/slog"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/policy"
)

// Heartbeats: every node records itself every heartbeatEvery, and counts
// as live for heartbeatTTL after its last one, so that a node that died
// stops counting within half a minute and the others take back its share
// of the limits.
const (
	heartbeatEvery = 10 * time.Second
	heartbeatTTL   = 30 * time.Second
)

// beat records the node once and sets share to the live nodes; it
// answers how many.
func beat(ctx context.Context, st mailstore.Members, node string, share *policy.Share, now time.Time) (int, error) {
	n, err := st.Heartbeat(ctx, node, now, heartbeatTTL)
	if err != nil {
		return 0, err
	}
	share.SetNodes(n)
	return n, nil
}

// runHeartbeat beats every heartbeatEvery until ctx ends, logging when the
// number of live nodes changes. A failed beat keeps the last share: the
// limits stay as they were rather than grow.
func runHeartbeat(ctx context.Context, st mailstore.Members, node string, share *policy.Share, now func() time.Time, log *slog.Logger) {
	last := share.Nodes()
	t := time.NewTicker(heartbeatEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := beat(ctx, st, node, share, now())
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("heartbeat", "err", err)
			}
			continue
		}
		if n != last {
			log.Info("live nodes changed", "nodes", n, "was", last)
			last = n
		}
	}
}
