package smtpd

import (
	"context"
	"slices"

	"github.com/mailhost/mailhost/mailstore"
)

// AutoResponder answers delivered mail for mailboxes with an auto-reply
// (vacation); *autoreply.Responder is one. MX only.
type AutoResponder interface {
	// Delivered is called once the message is stored (after the commit,
	// before the 250) with the envelope sender ("" for <>), the message
	// as stored and the mailboxes that took it. It queues what replies
	// it decides on itself and never fails the delivery.
	Delivered(ctx context.Context, from string, msg []byte, mailboxes []mailstore.Mailbox) int
}

// autoReply hands a delivered message to Config.AutoReply.
func (s *session) autoReply(tx transaction, body []byte, delivered []int64) {
	ar := s.srv.cfg.AutoReply
	if ar == nil || s.srv.submission || len(delivered) == 0 {
		return
	}
	var mbs []mailstore.Mailbox
	for _, m := range tx.del.Mailboxes() {
		if slices.Contains(delivered, m.ID) {
			mbs = append(mbs, m)
		}
	}
	ar.Delivered(s.ctx, tx.from, body, mbs)
}
