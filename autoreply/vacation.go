package autoreply

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"mime"
	"net/mail"
	"slices"
	"strings"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/policy"
	"github.com/mailhost/mailhost/sieve"
)

// Vacation answers a Sieve script's vacation action (RFC 5230) for mb,
// which was just delivered msg, through the same reply, signing and
// queueing as the partner API's auto-reply (send: envelope sender <>,
// RFC 5230 section 5.1), and the same store memory
// (mailstore.AutoReplies.TakeAutoReply):
//
//   - sieve.ShouldRespond decides on the message and envelope (RFC 5230
//     sections 4.5 and 4.6), with the mailbox's own address among the
//     user's :addresses, and the sender must be one RFC 3834 allows
//     replying to;
//   - at most one reply per sender and :handle within :days (section
//     4.2; the handle is the script's, or package sieve's digest of the
//     other arguments), remembered under the sender and a digest of the
//     handle; a reply sent also counts as the API auto-reply's to that
//     sender, so that a sender gets one answer from the mailbox;
//   - :from is the reply's From: when the mailbox may send as that
//     address (policy.MaySendAs), else it is ignored, as section 4.3
//     suggests for an address that fails a check; the default is the
//     mailbox's address;
//   - :subject, or "Auto: " and the original subject decoded (section
//     4.3), "Automated reply" when it has none;
//   - the reason as plain text, or with :mime a MIME entity whose
//     Content-* fields are the reply's (section 4.4).
//
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
	v.Addresses = append(slices.Clone(v.Addresses), mb.Email)
	if ok, why := sieve.ShouldRespond(sieve.NewMessage(msg), env, v, r.cfg.Delimiter); !ok {
		r.log.Debug("sieve vacation not sent", "mailbox", mb.Email, "to", sender, "why", why)
		return false
	}
	days := max(v.Days, 1)
	now := r.now()
	ok, err := r.cfg.Store.TakeAutoReply(ctx, mb.ID, handleKey(sender, v.Handle), now, time.Duration(days)*24*time.Hour)
	if err != nil {
		r.log.Error("sieve vacation not considered", "mailbox", mb.Email, "err", err)
		return false
	}
	if !ok {
		return false
	}
	rp := reply{subject: v.Subject, text: v.Reason, mime: v.MIME}
	if rp.subject == "" {
		rp.subject = "Automated reply"
		if orig := decodeHeader(oneLine(h.Get("Subject"))); strings.TrimSpace(orig) != "" {
			rp.subject = "Auto: " + orig
		}
	}
	if v.From != "" {
		rp.from = r.vacationFrom(ctx, mb, v.From)
	}
	if err := r.send(ctx, mb, rp, sender, h, now); err != nil {
		if errors.Is(err, mailstore.ErrTransferCapReached) || errors.Is(err, policy.ErrSenderNotVerified) {
			r.log.Info("sieve vacation not sent", "mailbox", mb.Email, "to", sender, "err", err)
		} else {
			r.log.Error("sieve vacation not sent", "mailbox", mb.Email, "to", sender, "err", err)
		}
		return false
	}
	// The API auto-reply's turn for this sender is taken too: one answer
	// from the mailbox, whichever asked.
	if _, err := r.cfg.Store.TakeAutoReply(ctx, mb.ID, sender, now, r.cfg.Interval); err != nil {
		r.log.Warn("sieve vacation: auto-reply memory not updated", "mailbox", mb.Email, "err", err)
	}
	r.log.Info("sieve vacation queued", "mailbox", mb.Email, "to", sender)
	if r.cfg.OnQueued != nil {
		r.cfg.OnQueued()
	}
	return true
}

// handleKey is the memory's key of a vacation reply to sender with
// handle: the sender, a space (no normalised address has one) and a
// digest of the handle, which may be long and hold any character.
func handleKey(sender, handle string) string {
	sum := sha256.Sum256([]byte(handle))
	return sender + " " + hex.EncodeToString(sum[:16])
}

// vacationFrom is the From: of a reply with :from addr: the address, its
// display name kept, when mb may send as it; else the zero Address (the
// mailbox's own), logged.
func (r *Responder) vacationFrom(ctx context.Context, mb mailstore.Mailbox, addr string) mail.Address {
	a, err := (&mail.AddressParser{WordDecoder: &mime.WordDecoder{}}).Parse(addr)
	if err == nil {
		a.Address, err = policy.NormalizeAddress(a.Address)
	}
	if err == nil {
		err = policy.MaySendAs(ctx, r.cfg.Store, mb, a.Address)
	}
	if err != nil {
		r.log.Info("sieve vacation :from ignored", "mailbox", mb.Email, "from", addr, "err", err)
		return mail.Address{}
	}
	return *a
}

// decodeHeader decodes RFC 2047 words, or answers s as it is.
func decodeHeader(s string) string {
	if !strings.Contains(s, "=?") {
		return s
	}
	if d, err := (&mime.WordDecoder{}).DecodeHeader(s); err == nil {
		return d
	}
	return s
}
