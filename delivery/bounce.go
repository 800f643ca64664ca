package delivery

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/policy"
)

// ErrBounceUndeliverable: a bounce's recipient leads nowhere (a hosted
// address that no longer exists, an alias loop, a bad address). The
// queue drops the bounce: nothing may bounce a bounce (RFC 5321 section
// 4.5.5), and a retry would find the same.
var ErrBounceUndeliverable = errors.New("bounce recipient leads nowhere")

// Bounce delivers a delivery status notification that the queue made
// (body, with the null sender) to to, the failed entry's sender, resolved
// as mail from partner (Agent.EntryPartner: the partner the entry was
// sent for), in one Store.Deliver: into the mailboxes it leads to, and
// as KindBounce entries to its remote addresses, or to to itself when its
// domain is not hosted here (or is another partner's, not verified).
//
// It is the fourth way mail reaches a mailbox, besides the modes of the
// package comment, and differs from them so: no quota check (a bounce
// tells the sender its own mail failed; refusing it would only lose
// that), no transfer cap (no domain is charged for it), and a recipient
// that leads nowhere is ErrBounceUndeliverable (dropped) instead of a
// refusal, since there is no one to refuse it to.
func (a *Agent) Bounce(ctx context.Context, to string, partner int64, body []byte, now time.Time) error {
	d := mailstore.Delivery{Body: body, ReceivedAt: now, IgnoreQuota: true}
	res, err := policy.ResolveWith(ctx, a.dir, to, partner, a.resolveOpts())
	switch {
	case err == nil:
		for _, m := range res.Mailboxes {
			d.MailboxIDs = append(d.MailboxIDs, m.ID)
		}
		if len(res.Remote) > 0 {
			d.Relay = []mailstore.Relay{{Kind: mailstore.KindBounce, To: res.Remote}}
		}
	case errors.Is(err, policy.ErrNotHosted): // also ErrNotVerified
		d.Relay = []mailstore.Relay{{Kind: mailstore.KindBounce, To: []string{to}}}
	case errors.Is(err, policy.ErrUnknownUser), errors.Is(err, policy.ErrAliasLoop),
		errors.Is(err, policy.ErrAliasTooDeep), errors.Is(err, policy.ErrBadAddress):
		return fmt.Errorf("bounce to %s: %w: %w", to, ErrBounceUndeliverable, err)
	default:
		return fmt.Errorf("bounce to %s: %w", to, err)
	}
	if _, err := a.cfg.Store.Deliver(ctx, d); err != nil {
		return fmt.Errorf("bounce to %s: %w", to, err)
	}
	return nil
}
