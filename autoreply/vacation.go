package autoreply

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/policy"
	"github.com/mailhost/mailhost/sieve"
)

// Vacation answers a Sieve script's vacation action (RFC 5230) for mb,
// which was just delivered msg: the same reply, signing, queueing and
// once-per-sender memory (mailstore.AutoReplies.TakeAutoReply) as the
// partner API's auto-reply, with the script's :days as the interval, so
// that a sender gets one reply from the mailbox whichever asked.
// sieve.ShouldRespond decides on the message and envelope, and the
// sender must be one RFC 3834 allows replying to. The reply is from the
// mailbox's own address (a :from is not used: it would need
// policy.MaySendAs), with the :subject or "Auto: " and the original's,
// and the reason as plain text (a :mime reason is sent as its text).
// It reports whether a reply was queued; failures are logged.
func (r *Responder) Vacation(ctx context.Context, mb mailstore.Mailbox, env sieve.Envelope, msg []byte, v sieve.Vacation) bool {
	if env.From == "" {
		return false
	}
	sender, err := policy.NormalizeAddress(env.From)
	if err != nil || sender == mb.Email || !replyableSender(sender) {
		return false
	}
	h := header(msg)
	if !replyableMessage(h) {
		return false
	}
	if ok, why := sieve.ShouldRespond(sieve.NewMessage(msg), env, v, r.cfg.Delimiter); !ok {
		r.log.Debug("sieve vacation not sent", "mailbox", mb.Email, "to", sender, "why", why)
		return false
	}
	days := max(v.Days, 1)
	now := r.now()
	ok, err := r.cfg.Store.TakeAutoReply(ctx, mb.ID, sender, now, time.Duration(days)*24*time.Hour)
	if err != nil {
		r.log.Error("sieve vacation not considered", "mailbox", mb.Email, "err", err)
		return false
	}
	if !ok {
		return false
	}
	subject := v.Subject
	if subject == "" {
		subject = "Auto: " + oneLine(h.Get("Subject"))
	}
	body := v.Reason
	if v.MIME {
		// The entity's header is dropped; its body goes as text.
		if _, b, found := strings.Cut(strings.ReplaceAll(body, "\r\n", "\n"), "\n\n"); found {
			body = b
		}
	}
	ar := mailstore.AutoReply{Subject: subject, Body: body}
	if err := r.send(ctx, mb, ar, sender, h, now); err != nil {
		if errors.Is(err, mailstore.ErrTransferCapReached) || errors.Is(err, policy.ErrSenderNotVerified) {
			r.log.Info("sieve vacation not sent", "mailbox", mb.Email, "to", sender, "err", err)
		} else {
			r.log.Error("sieve vacation not sent", "mailbox", mb.Email, "to", sender, "err", err)
		}
		return false
	}
	r.log.Info("sieve vacation queued", "mailbox", mb.Email, "to", sender)
	if r.cfg.OnQueued != nil {
		r.cfg.OnQueued()
	}
	return true
}
