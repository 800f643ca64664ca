package outbound

import (
	"context"
	"errors"
	"slices"

	"github.com/emersion/go-smtp"

	"github.com/mailhost/mailhost/delivery"
	"github.com/mailhost/mailhost/mailstore"
)

// deliverLocal delivers an entry whose destination is delivered here
// (delivery's RoutesHere: it was queued before the domain was added or
// verified, or submission queued it whole) the way package delivery's Forward mode decides: each recipient
// accepted as the MX would accept it, against the entry's size, and one
// Store.Deliver for all. Alias destinations outside are queued again as
// forwards in the same Deliver. This function only turns the outcomes
// into the replies the queue records (localReply).
func (s *Sender) deliverLocal(ctx context.Context, e mailstore.Outbound, body []byte, pending []string) outcome {
	var out outcome
	tx, err := s.delivery.StartForward(ctx, e)
	if err != nil {
		out.deferAll(pending, localError("local delivery", err))
		return out
	}
	for _, rcpt := range pending {
		if err := tx.AddRecipient(ctx, rcpt, ""); err != nil {
			out.settle([]string{rcpt}, localReply(err))
		}
	}
	accepted := tx.Recipients()
	if len(accepted) == 0 {
		return out
	}
	res, err := tx.Commit(ctx, body, s.now())
	if err != nil && !errors.Is(err, delivery.ErrGone) {
		why := localError("local delivery", err)
		if errors.Is(err, delivery.ErrOverQuota) {
			// Every mailbox filled up since its recipient was accepted
			// (concurrent deliveries): stored nowhere, the entry waits.
			why = localReply(err)
		}
		for _, r := range accepted {
			out.deferAll([]string{r.Address}, why)
		}
		return out
	}
	// A recipient whose mailbox had filled up meanwhile
	// (res.OverQuota) is done with here too: its copy waits in a
	// KindLocal entry of its own, which the store queued with the others.
	for _, r := range accepted {
		if slices.Contains(res.Gone, r.Address) {
			// All of its mailboxes were deleted since it was accepted:
			// tried again, the next attempt resolves it afresh.
			out.deferAll([]string{r.Address}, localReply(delivery.ErrGone))
			continue
		}
		out.delivered = append(out.delivered, r.Address)
	}
	return out
}

// localReply is the reply the queue records for a recipient of a local
// delivery that package delivery refused, the way an MX would answer it
// at RCPT: permanent when the address leads nowhere, temporary when it
// may yet be taken (a full mailbox, a domain at its transfer cap, a
// domain no longer hosted whose next attempt goes out, a mailbox deleted
// meanwhile, a failed lookup).
func localReply(err error) reply {
	switch {
	case errors.Is(err, delivery.ErrUnknownRecipient):
		return reply{Code: 550, Enhanced: smtp.EnhancedCode{5, 1, 1}, Text: "no such user"}
	case errors.Is(err, delivery.ErrAliasLoop):
		// RFC 3463 X.4.6: routing loop detected.
		return reply{Code: 550, Enhanced: smtp.EnhancedCode{5, 4, 6}, Text: err.Error()}
	case errors.Is(err, delivery.ErrBadAddress):
		return reply{Code: 553, Enhanced: smtp.EnhancedCode{5, 1, 3}, Text: err.Error()}
	case errors.Is(err, delivery.ErrNoLongerHosted):
		return reply{Code: 451, Enhanced: smtp.EnhancedCode{4, 4, 0}, Text: "domain no longer hosted here"}
	case errors.Is(err, delivery.ErrOverQuota):
		// As the MX answers at RCPT: temporary, the
		// mailbox may shrink before the entry expires.
		return reply{Code: 452, Enhanced: smtp.EnhancedCode{4, 2, 2}, Text: "mailbox full"}
	case errors.Is(err, delivery.ErrTransferCapReached):
		// Config.RefuseInboundOverCap: the entry waits for the month's
		// turn or a higher cap, as the MX's 451 4.7.1 has its sender wait.
		return reply{Code: 451, Enhanced: smtp.EnhancedCode{4, 7, 1}, Text: "monthly transfer limit of the recipient's domain reached"}
	case errors.Is(err, delivery.ErrGone):
		return reply{Code: 450, Enhanced: smtp.EnhancedCode{4, 2, 1}, Text: "mailbox deleted during delivery"}
	}
	return localError("resolve", err)
}
