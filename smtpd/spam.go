package smtpd

import (
	"errors"
	"sync/atomic"

	"github.com/mailhost/mailhost/delivery"
)

// spamCounters count what the spam filter did, for the operator.
type spamCounters struct {
	refused    atomic.Int64 // messages refused as spam (550 5.7.1)
	deferred   atomic.Int64 // soft reject, greylist (451 4.7.1)
	junk       atomic.Int64 // messages delivered to Junk
	unscanned  atomic.Int64 // filter unavailable, delivered anyway
	unfiltered atomic.Int64 // filter unavailable, 451 4.3.0
}

// SpamStats are the counts of the spam filter's outcomes since New.
type SpamStats struct {
	Refused, Deferred, Junk, Unscanned, Unavailable int64
}

// SpamStats reads the server's spam filter counters.
func (s *Server) SpamStats() SpamStats {
	c := &s.spam
	return SpamStats{c.refused.Load(), c.deferred.Load(), c.junk.Load(), c.unscanned.Load(), c.unfiltered.Load()}
}

// filter has package delivery check body with the spam filter
// (Transaction.Filter) and logs and counts what it did. The error is the
// refusal, logged, to be returned as it is.
func (s *session) filter(tx transaction, body []byte) ([]byte, error) {
	body, v, err := tx.del.Filter(s.ctx, delivery.FilterInput{IP: s.ip, Helo: s.helo, QueueID: tx.id}, body)
	c := &s.srv.spam
	switch {
	case errors.Is(err, delivery.ErrSpam):
		c.refused.Add(1)
		user := tx.del.User().Email
		return nil, s.refusal("message refused as spam", err, "id", tx.id, "from", tx.from, "user", user, "score", v.Score)
	case errors.Is(err, delivery.ErrSpamLater):
		c.deferred.Add(1)
		return nil, s.refusal("message deferred by the spam filter", err, "id", tx.id, "from", tx.from, "score", v.Score)
	case errors.Is(err, delivery.ErrFilterUnavailable):
		c.unfiltered.Add(1)
		return nil, s.refusal("message deferred: spam filter unavailable", err, "id", tx.id, "from", tx.from)
	case err != nil:
		return nil, s.refusal("spam filter failed", err, "id", tx.id)
	}
	if v.Unscanned != nil {
		c.unscanned.Add(1)
		s.log.Warn("message not scanned: spam filter unavailable, delivered anyway", "id", tx.id, "err", v.Unscanned)
	}
	if len(v.Junk) > 0 {
		c.junk.Add(1)
		s.log.Info("message to Junk", "id", tx.id, "action", string(v.Action), "score", v.Score, "mailbox_ids", v.Junk)
	}
	return body, nil
}
