package outbound

import (
	"context"
	"errors"
	"slices"

	"github.com/emersion/go-smtp"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/policy"
)

// deliverLocal delivers an entry whose destination domain is hosted here
// (it was queued before the domain was added, or submission queued it
// whole) the way the MX would: each recipient resolved with
// policy.Resolve, its mailboxes checked against their quota, and one
// Store.Deliver for all. Alias destinations outside are queued again as
// forwards in the same Deliver.
func (s *Sender) deliverLocal(ctx context.Context, e mailstore.Outbound, dom mailstore.Domain, body []byte, pending []string) outcome {
	var out outcome
	var ids []int64
	var remote []string
	var accepted []target
	for _, rcpt := range pending {
		res, err := policy.Resolve(ctx, s.cfg.Store, rcpt)
		if err != nil {
			out.settle([]string{rcpt}, resolveReply(err))
			continue
		}
		if slices.ContainsFunc(res.Mailboxes, func(m mailstore.Mailbox) bool { return !policy.AcceptAtRCPT(m, e.Size) }) {
			// As the MX answers at RCPT (decisions.md): temporary, the
			// mailbox may shrink before the entry expires.
			out.settle([]string{rcpt}, reply{Code: 452, Enhanced: smtp.EnhancedCode{4, 2, 2}, Text: "mailbox full"})
			continue
		}
		if len(res.Mailboxes) == 0 && len(res.Remote) == 0 {
			out.settle([]string{rcpt}, reply{Code: 550, Enhanced: smtp.EnhancedCode{5, 1, 1}, Text: "no such user"})
			continue
		}
		t := target{rcpt: rcpt, remote: len(res.Remote) > 0}
		for _, m := range res.Mailboxes {
			t.mailboxes = append(t.mailboxes, m.ID)
			if !slices.Contains(ids, m.ID) {
				ids = append(ids, m.ID)
			}
		}
		for _, r := range res.Remote {
			if !slices.Contains(remote, r) {
				remote = append(remote, r)
			}
		}
		accepted = append(accepted, t)
	}
	if len(accepted) == 0 {
		return out
	}

	d := mailstore.Delivery{Body: body, ReceivedAt: s.now(), MailboxIDs: ids}
	if len(remote) > 0 {
		// Forwarded on behalf of the alias's domain, counted against its
		// transfer cap; a bounce stays a bounce, counted against no one.
		// The envelope sender stays as it is: this package has no SRS
		// forward rewriting (see SRS).
		r := mailstore.Relay{Kind: mailstore.KindForward, DomainID: dom.ID, From: e.From, To: remote}
		if e.Kind == mailstore.KindBounce || e.From == "" {
			r.Kind, r.DomainID = mailstore.KindBounce, 0
		}
		d.Relay = []mailstore.Relay{r}
	}
	res, err := s.cfg.Store.Deliver(ctx, d)
	if err != nil {
		for _, t := range accepted {
			out.deferAll([]string{t.rcpt}, localError("deliver", err))
		}
		return out
	}
	for _, t := range accepted {
		// A recipient all of whose mailboxes were deleted since Resolve
		// is tried again: the next attempt resolves it afresh.
		gone := !t.remote && !slices.ContainsFunc(t.mailboxes, func(id int64) bool { return !slices.Contains(res.Skipped, id) })
		if gone {
			out.deferAll([]string{t.rcpt}, reply{Code: 450, Enhanced: smtp.EnhancedCode{4, 2, 1}, Text: "mailbox deleted during delivery"})
			continue
		}
		out.delivered = append(out.delivered, t.rcpt)
	}
	return out
}

// target is a recipient resolved for local delivery.
type target struct {
	rcpt      string
	mailboxes []int64
	remote    bool // it also reaches remote addresses
}

// resolveReply is the answer for a recipient that policy.Resolve could not
// resolve: permanent when the address leads nowhere, temporary when the
// lookup failed or the domain is no longer hosted (the next attempt sends
// it out).
func resolveReply(err error) reply {
	switch {
	case errors.Is(err, policy.ErrUnknownUser):
		return reply{Code: 550, Enhanced: smtp.EnhancedCode{5, 1, 1}, Text: "no such user"}
	case errors.Is(err, policy.ErrAliasLoop), errors.Is(err, policy.ErrAliasTooDeep):
		// RFC 3463 X.4.6: routing loop detected.
		return reply{Code: 550, Enhanced: smtp.EnhancedCode{5, 4, 6}, Text: err.Error()}
	case errors.Is(err, policy.ErrBadAddress):
		return reply{Code: 553, Enhanced: smtp.EnhancedCode{5, 1, 3}, Text: err.Error()}
	case errors.Is(err, policy.ErrNotHosted):
		return reply{Code: 451, Enhanced: smtp.EnhancedCode{4, 4, 0}, Text: "domain no longer hosted here"}
	}
	return localError("resolve", err)
}
