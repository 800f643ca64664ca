package outbound

import (
	"context"
	"errors"
	"fmt"
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
// forwards in the same Deliver, as the MX queues them: on behalf of the
// domain whose alias names them, with an SRS sender.
func (s *Sender) deliverLocal(ctx context.Context, e mailstore.Outbound, body []byte, pending []string) outcome {
	var out outcome
	var ids []int64
	var remote []forward
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
		for i, r := range res.Remote {
			fw := forward{to: r, via: res.RemoteVia[i]}
			if !slices.ContainsFunc(remote, func(f forward) bool { return f.to == r }) {
				remote = append(remote, fw)
			}
		}
		accepted = append(accepted, t)
	}
	if len(accepted) == 0 {
		return out
	}

	d := mailstore.Delivery{Body: body, ReceivedAt: s.now(), MailboxIDs: ids}
	relays, err := s.forwards(e, remote)
	if err != nil {
		for _, t := range accepted {
			out.deferAll([]string{t.rcpt}, localError("forward", err))
		}
		return out
	}
	d.Relay = relays
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

// forward is a remote alias destination and the hosted domain whose alias
// names it.
type forward struct {
	to  string
	via mailstore.Domain
}

// forwards are the relay parts for an entry's remote alias destinations:
// one per domain whose alias names them, counted against that domain's
// transfer cap, with the envelope sender SRS-rewritten under it so that
// the destination's SPF check passes (smtpd's MX does the same). A bounce
// stays a bounce, with the null sender, counted against no one. Without
// Config.SRS the sender stays as it is.
func (s *Sender) forwards(e mailstore.Outbound, remote []forward) ([]mailstore.Relay, error) {
	var relays []mailstore.Relay
	if e.Kind == mailstore.KindBounce || e.From == "" {
		r := mailstore.Relay{Kind: mailstore.KindBounce}
		for _, f := range remote {
			r.To = append(r.To, f.to)
		}
		if len(r.To) > 0 {
			relays = append(relays, r)
		}
		return relays, nil
	}
	for _, f := range remote {
		i := slices.IndexFunc(relays, func(r mailstore.Relay) bool { return r.DomainID == f.via.ID })
		if i >= 0 {
			relays[i].To = append(relays[i].To, f.to)
			continue
		}
		from := e.From
		if s.cfg.SRS != nil {
			var err error
			if from, err = s.cfg.SRS.Forward(e.From, f.via.Name); err != nil {
				return nil, fmt.Errorf("SRS forward of %s via %s: %w", e.From, f.via.Name, err)
			}
		}
		relays = append(relays, mailstore.Relay{Kind: mailstore.KindForward, DomainID: f.via.ID, From: from, To: []string{f.to}})
	}
	return relays, nil
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
