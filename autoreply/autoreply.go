// Package autoreply answers mail for mailboxes that have an auto-reply
// (vacation notice) set, as RFC 3834 asks of personal responders.
//
// A message delivered by the MX is answered, per mailbox it reached, only
// when all of these hold:
//
//   - the mailbox's auto-reply is enabled and now is within its start and
//     end (mailstore.AutoReply.Active);
//   - the envelope sender is not null and is not the mailbox itself
//     (RFC 3834 section 2), nor MAILER-DAEMON, owner-* or *-request
//     (lists and daemons, section 3.1.1);
//   - the message has no Auto-Submitted field other than "no" (RFC 3834
//     section 5), no Precedence of bulk, list or junk, no List-Id or
//     List-Unsubscribe (RFC 2369, 2919), and was not quarantined by the
//     DMARC policy (X-Mailhost-Quarantine): a reply to spam is
//     backscatter;
//   - an address of its To: or Cc: is the mailbox or leads to it (an alias
//     or the catch-all, policy.Resolve) (RFC 3834 section 2: not to Bcc
//     or list copies);
//   - the mailbox has not replied to this sender within Config.Interval,
//     as the store remembers (mailstore.AutoReplies.TakeAutoReply), so
//     that nodes and restarts agree.
//
// The reply (RFC 3834 section 3) is from the mailbox's address (From:;
// the envelope sender is null, section 3.3), to the envelope sender,
// with Auto-Submitted: auto-replied,
// In-Reply-To and References, DKIM-signed for the mailbox's domain, and
// queued with one Store.Deliver charged to that domain as a submission
// is: counted in its transfer, and not sent at all once the domain has
// used its cap (mailstore.ErrTransferCapReached).
//
// Failures are logged and never affect the delivery that triggered them:
// the message is stored before a reply is considered.
package autoreply

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"slices"
	"strings"
	"time"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/policy"
)

// Store is what a Responder reads and writes; *boltstore.Store and
// *pgstore.Store satisfy it.
type Store interface {
	policy.Directory
	DomainWithID(ctx context.Context, id int64) (mailstore.Domain, error)
	AutoReply(ctx context.Context, mailboxID int64) (mailstore.AutoReply, error)
	TakeAutoReply(ctx context.Context, mailboxID int64, sender string, now time.Time, interval time.Duration) (bool, error)
	Deliver(ctx context.Context, d mailstore.Delivery) (mailstore.DeliveryResult, error)
}

// Signer DKIM-signs a message for a hosted domain; mailauth.StoreSigner
// satisfies it. A domain without keys gets msg back unchanged.
type Signer interface {
	Sign(ctx context.Context, d mailstore.Domain, msg []byte) ([]byte, error)
}

// Config configures a Responder.
type Config struct {
	// Store is required.
	Store Store
	// Signer signs the replies. nil: they go unsigned.
	Signer Signer
	// Interval is the least time between two replies of a mailbox to one
	// sender. 0 means DefaultInterval.
	Interval time.Duration
	// Hostname is the right side of the replies' Message-IDs. "":
	// "localhost".
	Hostname string
	// OnQueued, when not nil, is called after a reply was queued, to wake
	// the outbound workers; it must not block.
	OnQueued func()
	// Logger: one line per reply sent or failed. nil: discard.
	Logger *slog.Logger
	// Now is the clock. nil: time.Now.
	Now func() time.Time
	// Delimiter is the recipient delimiter of subaddresses (RFC 5233,
	// policy.ResolveOptions): To: alice+news@ is addressed to alice.
	// "": none.
	Delimiter string
}

// DefaultInterval is RFC 3834 section 2's suggestion: 7 days.
const DefaultInterval = 7 * 24 * time.Hour

// maxAddressed bounds the To: and Cc: addresses looked at, each possibly
// a store lookup.
const maxAddressed = 50

// Responder sends auto-replies. Its methods may be called from any
// goroutine.
type Responder struct {
	cfg Config
	log *slog.Logger
	now func() time.Time
}

// New makes a Responder; nothing can fail.
func New(cfg Config) *Responder {
	r := &Responder{cfg: cfg, log: cfg.Logger, now: cfg.Now}
	if r.cfg.Interval <= 0 {
		r.cfg.Interval = DefaultInterval
	}
	if r.cfg.Hostname == "" {
		r.cfg.Hostname = "localhost"
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.now == nil {
		r.now = time.Now
	}
	return r
}

// Delivered considers an auto-reply from each of mailboxes, which were
// just delivered msg (as stored, header first) whose envelope sender was
// from ("" for the null sender), as MailboxByEmail read them: only those
// with HasAutoReply are looked at. It returns how many replies were queued.
func (r *Responder) Delivered(ctx context.Context, from string, msg []byte, mailboxes []mailstore.Mailbox) int {
	if from == "" || len(mailboxes) == 0 {
		return 0
	}
	sender, err := policy.NormalizeAddress(from)
	if err != nil || !replyableSender(sender) {
		return 0
	}
	var h textproto.MIMEHeader
	sent := 0
	for _, mb := range mailboxes {
		// HasAutoReply came with the recipient's look-up: most mailboxes
		// have none, and asking the store for each would be one more
		// round trip per delivered message.
		if mb.Email == sender || !mb.HasAutoReply {
			continue
		}
		ar, err := r.cfg.Store.AutoReply(ctx, mb.ID)
		if errors.Is(err, mailstore.ErrNotFound) {
			continue
		}
		if err != nil {
			r.log.Error("auto-reply not considered", "mailbox", mb.Email, "err", err)
			continue
		}
		now := r.now()
		if !ar.Active(now) {
			continue
		}
		if h == nil {
			// Read once, only for a mailbox that has one.
			if h = header(msg); !replyableMessage(h) {
				return sent
			}
		}
		ok, err := r.addressed(ctx, h, mb)
		if err != nil {
			r.log.Error("auto-reply not considered", "mailbox", mb.Email, "err", err)
			continue
		}
		if !ok {
			continue
		}
		if ok, err = r.cfg.Store.TakeAutoReply(ctx, mb.ID, sender, now, r.cfg.Interval); err != nil {
			r.log.Error("auto-reply not considered", "mailbox", mb.Email, "err", err)
			continue
		}
		if !ok {
			continue
		}
		if err := r.send(ctx, mb, reply{subject: ar.Subject, text: ar.Body}, sender, h, now); err != nil {
			level := slog.LevelError
			if errors.Is(err, mailstore.ErrTransferCapReached) || errors.Is(err, policy.ErrSenderNotVerified) {
				level = slog.LevelInfo
			}
			r.log.Log(ctx, level, "auto-reply not sent", "mailbox", mb.Email, "to", sender, "err", err)
			continue
		}
		r.log.Info("auto-reply queued", "mailbox", mb.Email, "to", sender)
		sent++
	}
	if sent > 0 && r.cfg.OnQueued != nil {
		r.cfg.OnQueued()
	}
	return sent
}

// replyableSender refuses the addresses of daemons and lists (RFC 3834
// section 3.1.1; RFC 5321's MAILER-DAEMON convention).
func replyableSender(addr string) bool {
	local, _, _ := strings.Cut(addr, "@")
	return local != "mailer-daemon" && !strings.HasPrefix(local, "owner-") && !strings.HasSuffix(local, "-request") &&
		!policy.IsSRS(addr)
}

// header reads the message's header; a malformed one reads as far as it
// goes.
func header(msg []byte) textproto.MIMEHeader {
	h, _ := textproto.NewReader(bufio.NewReader(bytes.NewReader(msg))).ReadMIMEHeader()
	if h == nil {
		h = textproto.MIMEHeader{}
	}
	return h
}

// replyableMessage applies RFC 3834 section 2's rules on the header.
func replyableMessage(h textproto.MIMEHeader) bool {
	for _, v := range h.Values("Auto-Submitted") {
		// The value may carry comments and parameters: "no (manual)".
		if v, _, _ := strings.Cut(strings.TrimSpace(v), ";"); !strings.EqualFold(strings.Fields(v + " x")[0], "no") {
			return false
		}
	}
	for _, v := range h.Values("Precedence") {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "bulk", "list", "junk":
			return false
		}
	}
	return len(h.Values("List-Id")) == 0 && len(h.Values("List-Unsubscribe")) == 0 &&
		len(h.Values("X-Mailhost-Quarantine")) == 0
}

// addressed reports whether To: or Cc: names mb or an address that leads
// to it.
func (r *Responder) addressed(ctx context.Context, h textproto.MIMEHeader, mb mailstore.Mailbox) (bool, error) {
	var addrs []string
	for _, f := range []string{"To", "Cc"} {
		for _, v := range h.Values(f) {
			list, err := (&mail.AddressParser{WordDecoder: &mime.WordDecoder{}}).ParseList(v)
			if err != nil {
				continue
			}
			for _, a := range list {
				if n, err := policy.NormalizeAddress(a.Address); err == nil && !slices.Contains(addrs, n) {
					addrs = append(addrs, n)
				}
			}
		}
	}
	if slices.Contains(addrs, mb.Email) {
		return true, nil
	}
	domain := policy.DomainOf(mb.Email)
	for i, a := range addrs {
		if i == maxAddressed {
			break
		}
		if policy.DomainOf(a) != domain {
			// An alias of another hosted domain could lead here too, but
			// the common case (the mailbox's own aliases and catch-all)
			// is in its domain, and every other address would cost a
			// lookup.
			continue
		}
		// As the MX resolved it: mail from outside (partner 0).
		res, err := policy.ResolveWith(ctx, r.cfg.Store, a, 0, policy.ResolveOptions{Delimiter: r.cfg.Delimiter})
		if err != nil {
			if errors.Is(err, policy.ErrUnknownUser) || errors.Is(err, policy.ErrNotHosted) ||
				errors.Is(err, policy.ErrAliasLoop) || errors.Is(err, policy.ErrAliasTooDeep) || errors.Is(err, policy.ErrBadAddress) {
				continue
			}
			return false, fmt.Errorf("resolve %s: %w", a, err)
		}
		if slices.ContainsFunc(res.Mailboxes, func(m mailstore.Mailbox) bool { return m.ID == mb.ID }) {
			return true, nil
		}
	}
	return false, nil
}

// reply is what an answer says.
type reply struct {
	// from is the From: field; zero: the mailbox's address.
	from mail.Address
	// subject, in UTF-8 (encoded as RFC 2047 asks).
	subject string
	// text is the body as plain text; or, with mime, a MIME entity
	// (header and body) that is the reply's content (RFC 5230 section
	// 4.4).
	text string
	mime bool
}

// send composes, signs and queues one reply. Its envelope sender is null
// (RFC 3834 section 3.3, RFC 5230 section 5.1): a reply must not be
// answered, by a responder or with a bounce.
func (r *Responder) send(ctx context.Context, mb mailstore.Mailbox, rp reply, to string, orig textproto.MIMEHeader, now time.Time) error {
	d, err := r.cfg.Store.DomainWithID(ctx, mb.DomainID)
	if err != nil {
		return fmt.Errorf("domain of %s: %w", mb.Email, err)
	}
	if d.Suspended {
		return fmt.Errorf("domain %s suspended", d.Name)
	}
	// A reply is the mailbox's domain sending as itself, to the sender
	// (outside, as for the MX): a domain its partner has not verified
	// may not (policy.MayReach), or naming bigbank.example would have
	// this server answer anyone as bigbank.example, DKIM-signed.
	if err := policy.MayReach(d, mb.PartnerID, nil, []string{to}); err != nil {
		return err
	}
	if rp.from.Address == "" {
		rp.from.Address = mb.Email
	}
	msg := r.compose(rp, to, orig, now)
	if r.cfg.Signer != nil {
		if msg, err = r.cfg.Signer.Sign(ctx, d, msg); err != nil {
			return fmt.Errorf("DKIM signing for %s: %w", d.Name, err)
		}
	}
	// Charged to the mailbox's domain as its submissions are.
	_, err = r.cfg.Store.Deliver(ctx, mailstore.Delivery{
		Body: msg, ReceivedAt: now, SenderDomainID: d.ID,
		Relay: []mailstore.Relay{{Kind: mailstore.KindSubmission, DomainID: d.ID, From: "", To: []string{to}}},
	})
	if err != nil {
		return fmt.Errorf("queue: %w", err)
	}
	return nil
}

// compose writes the reply (RFC 3834 section 3.1): a plain text message
// in UTF-8, quoted-printable so that it needs no 8BITMIME on the way, or
// the MIME entity rp.text with rp.mime.
func (r *Responder) compose(rp reply, to string, orig textproto.MIMEHeader, now time.Time) []byte {
	var b bytes.Buffer
	field := func(name, value string) { fmt.Fprintf(&b, "%s: %s\r\n", name, value) }
	field("From", rp.from.String())
	field("To", (&mail.Address{Address: to}).String())
	field("Subject", mime.QEncoding.Encode("utf-8", oneLine(rp.subject)))
	field("Date", now.Format(time.RFC1123Z))
	field("Message-ID", "<"+randomID()+"@"+r.cfg.Hostname+">")
	if id := msgID(orig.Get("Message-Id")); id != "" {
		field("In-Reply-To", id)
		// RFC 3834 section 3.1.5, RFC 5322 section 3.6.4: the original's
		// References (or its In-Reply-To) and its Message-ID.
		refs := strings.Fields(oneLine(orig.Get("References")))
		if len(refs) == 0 {
			if irt := msgID(orig.Get("In-Reply-To")); irt != "" {
				refs = []string{irt}
			}
		}
		if len(refs) > 20 {
			refs = refs[len(refs)-20:]
		}
		field("References", strings.Join(append(refs, id), "\r\n "))
	}
	field("Auto-Submitted", "auto-replied")
	field("MIME-Version", "1.0")
	text := strings.ReplaceAll(strings.ReplaceAll(rp.text, "\r\n", "\n"), "\n", "\r\n")
	if rp.mime {
		if h, body, ok := mimeEntity(text); ok {
			// The entity's own Content-* fields are the reply's, and
			// its body.
			for _, f := range h {
				b.WriteString(f)
			}
			b.WriteString("\r\n")
			b.WriteString(body)
			if !strings.HasSuffix(body, "\r\n") {
				b.WriteString("\r\n")
			}
			return b.Bytes()
		}
		// Not an entity this can send as it is: its body, as text.
		if _, body, found := strings.Cut(text, "\r\n\r\n"); found {
			text = body
		}
	}
	field("Content-Type", "text/plain; charset=utf-8")
	field("Content-Transfer-Encoding", "quoted-printable")
	b.WriteString("\r\n")
	qp := quotedprintable.NewWriter(&b)
	qp.Write([]byte(text))
	qp.Close()
	if !bytes.HasSuffix(b.Bytes(), []byte("\r\n")) {
		b.WriteString("\r\n")
	}
	return b.Bytes()
}

// mimeEntity splits a :mime reason (CRLF line ends) into its Content-*
// header fields, each with its continuation lines and CRLF, and its body.
// A single part with 8-bit octets and no Content-Transfer-Encoding is
// made quoted-printable, so that it needs no 8BITMIME on the way. ok is
// false when it has no Content-Type, a field that is not a Content-*
// one (a From: or Subject: there would override the reply's), or it is
// a multipart one with 8-bit octets and no Content-Transfer-Encoding.
func mimeEntity(text string) (fields []string, body string, ok bool) {
	head, body, found := strings.Cut(text, "\r\n\r\n")
	if !found {
		return nil, "", false
	}
	var hasType, hasCTE, multipart bool
	for _, l := range strings.SplitAfter(head+"\r\n", "\r\n") {
		if l == "" {
			continue
		}
		if l[0] == ' ' || l[0] == '\t' {
			if len(fields) == 0 {
				return nil, "", false
			}
			fields[len(fields)-1] += l
			continue
		}
		name, value, colon := strings.Cut(l, ":")
		name = strings.ToLower(strings.TrimSpace(name))
		if !colon || !strings.HasPrefix(name, "content-") {
			return nil, "", false
		}
		if name == "content-type" {
			hasType = true
			multipart = strings.HasPrefix(strings.ToLower(strings.TrimSpace(value)), "multipart/")
		}
		hasCTE = hasCTE || name == "content-transfer-encoding"
		fields = append(fields, l)
	}
	if !hasType {
		return nil, "", false
	}
	if !hasCTE && !isASCII(body) {
		if multipart {
			return nil, "", false
		}
		var qp strings.Builder
		w := quotedprintable.NewWriter(&qp)
		w.Write([]byte(body))
		w.Close()
		fields = append(fields, "Content-Transfer-Encoding: quoted-printable\r\n")
		body = qp.String()
	}
	return fields, body, true
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// msgID is the first <...> of a Message-ID or In-Reply-To field, "" if
// none.
func msgID(v string) string {
	i := strings.IndexByte(v, '<')
	j := strings.IndexByte(v[max(i, 0):], '>')
	if i < 0 || j < 0 {
		return ""
	}
	id := v[i : i+j+1]
	if strings.ContainsAny(id, " \t\r\n") {
		return ""
	}
	return id
}

func oneLine(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == '\r' || r == '\n' }), " ")
}

func randomID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
