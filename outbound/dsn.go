package outbound

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mailhost/mailhost/delivery"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/policy"
)

// maxReturnedHeaders bounds the original headers a bounce carries.
const maxReturnedHeaders = 64 << 10

// bounce queues a delivery status notification (RFC 3464) for the failed
// recipients of an entry (or, when they are marked delayed, a delay
// notice for deferred ones: see warn), to its envelope sender, with an empty envelope
// sender of its own (RFC 5321 section 4.5.5) so that nothing bounces it.
// There is none for a bounce, nor for a message with an empty sender. It
// is delivered with delivery.Agent.Bounce: into the sender's mailboxes
// when the sender is hosted here, else queued as a KindBounce entry. It answers the
// address the bounce went to ("" when none did), and an error only when
// the bounce could not be stored and should be tried again.
func (s *Sender) bounce(ctx context.Context, e mailstore.Outbound, body []byte, failed []failure, now time.Time) (string, error) {
	if len(failed) == 0 || e.Kind == mailstore.KindBounce || e.From == "" {
		return "", nil
	}
	log := s.log.With("id", e.ID, "from", e.From)
	to := e.From
	if s.cfg.SRS != nil && isSRS(to) {
		// Forwarded mail: the bounce goes to whoever sent it to the alias.
		// An address that does not reverse was not made here, or is too
		// old; a bounce to it would come back to this server and go
		// nowhere, so none is sent.
		orig, err := s.cfg.SRS.Reverse(to)
		if err == nil {
			orig, err = policy.NormalizeAddress(orig)
		}
		if err != nil {
			log.Warn("bounce dropped", "reason", "SRS address does not reverse", "err", err)
			return "", nil
		}
		to = orig
	}

	// The bounce goes back for the partner the entry was sent for: into a
	// domain another partner named and has not verified it goes out, as
	// the entry's own mail to it would (policy.DeliverLocally).
	partner, err := s.delivery.EntryPartner(ctx, e)
	if err != nil {
		return "", fmt.Errorf("bounce to %s: %w", to, err)
	}
	err = s.delivery.Bounce(ctx, to, partner, s.dsn(e, to, body, failed, now), now)
	if errors.Is(err, delivery.ErrBounceUndeliverable) {
		log.Warn("bounce dropped", "reason", "sender address leads nowhere", "to", to, "err", err)
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return to, nil
}

// dsn makes the bounce message: multipart/report (RFC 6522) with a
// human-readable part, a message/delivery-status part (RFC 3464 section
// 2) and the original message's headers (text/rfc822-headers).
func (s *Sender) dsn(e mailstore.Outbound, to string, body []byte, failed []failure, now time.Time) []byte {
	boundary := "=_mailhost_" + randomHex(12)
	date := now.Format(time.RFC1123Z)
	global := !isASCII(to)
	for _, f := range failed {
		global = global || !isASCII(f.rcpt)
	}

	var b bytes.Buffer
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\r\n", args...) }
	w("From: Mail Delivery System <MAILER-DAEMON@%s>", s.hostname)
	w("To: <%s>", to)
	delayed := len(failed) > 0 && failed[0].delayed
	until := e.QueuedAt.Add(s.cfg.Lifetime).UTC().Format(time.RFC1123Z)
	if delayed {
		w("Subject: Delayed Mail (still being retried)")
	} else {
		w("Subject: Undelivered Mail Returned to Sender")
	}
	w("Date: %s", date)
	w("Message-ID: <%d.%s@%s>", now.Unix(), randomHex(8), s.hostname)
	// RFC 3834 section 5: made automatically, in answer to a message.
	w("Auto-Submitted: auto-replied")
	w("MIME-Version: 1.0")
	w(`Content-Type: multipart/report; report-type=delivery-status; boundary="%s"`, boundary)
	w("")
	w("This is a MIME-encapsulated message.")
	w("")

	w("--%s", boundary)
	w("Content-Description: Notification")
	w("Content-Type: text/plain; charset=utf-8")
	w("Content-Transfer-Encoding: 8bit")
	w("")
	w("This is the mail system at %s.", s.hostname)
	w("")
	if delayed {
		w("Your message has not been delivered yet to one or more recipients.")
		w("It was queued at %s; it will be tried again until %s.", e.QueuedAt.UTC().Format(time.RFC1123Z), until)
		w("There is nothing to do: you will hear again only if it fails for good.")
	} else {
		w("Your message could not be delivered to one or more recipients.")
		w("It was queued at %s.", e.QueuedAt.UTC().Format(time.RFC1123Z))
	}
	w("")
	for _, f := range failed {
		// The reply is the remote server's, of any length: the line is
		// cut at RFC 5322's 998 octets.
		prefix := "<" + f.rcpt + ">: "
		if f.expired {
			prefix += "delivery time expired; the last attempt said: "
		} else if f.delayed {
			prefix += "delayed; the last attempt said: "
		}
		w("%s%s", prefix, clipTo(f.reply.describe(), 998-len(prefix)))
	}
	w("")

	// RFC 6533: addresses in UTF-8 need the "global" report and the
	// utf-8 address type.
	statusType, addrType := "message/delivery-status", "rfc822"
	if global {
		statusType, addrType = "message/global-delivery-status", "utf-8"
	}
	w("--%s", boundary)
	w("Content-Description: Delivery report")
	w("Content-Type: %s", statusType)
	w("")
	w("Reporting-MTA: dns; %s", s.hostname)
	w("X-Mailhost-Queue-ID: %d", e.ID)
	w("Arrival-Date: %s", e.QueuedAt.UTC().Format(time.RFC1123Z))
	for _, f := range failed {
		r := f.reply
		w("")
		w("Final-Recipient: %s; %s", addrType, f.rcpt)
		if f.delayed {
			w("Action: delayed")
		} else {
			w("Action: failed")
		}
		if f.expired {
			// RFC 3463 X.4.7, "delivery time expired": a persistent
			// transient failure.
			w("Status: 4.4.7")
		} else {
			w("Status: %s", r.status())
		}
		if r.Host != "" {
			w("Remote-MTA: dns; %s", r.Host)
		}
		if r.Code != 0 {
			w("Diagnostic-Code: smtp; %s", clip(r.String()))
		} else {
			w("Diagnostic-Code: X-Mailhost; %s", clip(r.String()))
		}
		w("Last-Attempt-Date: %s", date)
		if f.delayed {
			w("Will-Retry-Until: %s", until)
		}
	}
	w("")

	w("--%s", boundary)
	if delayed {
		w("Content-Description: Delayed message headers")
	} else {
		w("Content-Description: Undelivered message headers")
	}
	w("Content-Type: text/rfc822-headers")
	w("")
	b.Write(headersOf(body))
	w("--%s--", boundary)
	return b.Bytes()
}

// headersOf is the header section of a message, up to the empty line, at
// most maxReturnedHeaders of it cut at a line end, with CRLF line ends
// and no other CR.
func headersOf(body []byte) []byte {
	h := body
	if i := bytes.Index(h, []byte("\n\r\n")); i >= 0 {
		h = h[:i+1]
	}
	if i := bytes.Index(h, []byte("\n\n")); i >= 0 {
		h = h[:i+1]
	}
	if len(h) > maxReturnedHeaders {
		h = h[:maxReturnedHeaders]
		h = h[:bytes.LastIndexByte(h, '\n')+1]
	}
	lines := strings.SplitAfter(string(h), "\n")
	var out bytes.Buffer
	for _, l := range lines {
		l = strings.TrimRight(l, "\r\n")
		if l == "" {
			continue
		}
		// A CR inside a line would leave as a bare CR, which a next hop
		// may read as a line end ("<CR>.<CR>" smuggling).
		l = strings.ReplaceAll(l, "\r", " ")
		out.WriteString(l)
		out.WriteString("\r\n")
	}
	return out.Bytes()
}

// clip keeps a DSN field within a line (RFC 5322 section 2.1.1).
func clip(s string) string {
	const max = 900
	if len(s) > max {
		return s[:max]
	}
	return s
}

// clipTo keeps at most n octets of s.
func clipTo(s string, n int) string {
	if len(s) > n {
		return s[:max(n, 0)]
	}
	return s
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
