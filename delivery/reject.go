package delivery

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// rejection is a mailbox whose script rejected a message that could not
// be refused in the SMTP conversation: it stores nothing and the sender
// gets a rejection DSN.
type rejection struct {
	mailbox string // the mailbox's address
	rcpt    string // the recipient as the sender wrote it
	reason  string
}

// maxDSNHeaders bounds the original header a rejection DSN returns.
const maxDSNHeaders = 64 << 10

// sendRejections sends one rejection DSN (RFC 5429 section 2.1.2, RFC
// 3464) for the scripts that rejected body, to the envelope sender, with
// the null sender, as the queue's bounces go (Agent.Bounce: into the
// sender's mailbox when it is hosted here, else queued as a KindBounce
// entry). There is none for the null sender. A DSN that cannot be stored
// is logged: the message was taken, and the rejecting mailboxes stored
// nothing, as their scripts asked.
func (t *Transaction) sendRejections(ctx context.Context, rejs []rejection, body []byte, at time.Time) {
	s := t.a.cfg.Sieve
	if len(rejs) == 0 || t.from == "" {
		return
	}
	to := t.from
	if t.a.cfg.SRS != nil && isSRS(to) {
		// Mail forwarded from here: the DSN goes to whoever sent it on.
		if orig, err := t.a.cfg.SRS.Reverse(to); err == nil {
			to = orig
		}
	}
	dsn := rejectionDSN(s.cfg.Hostname, to, t.from, rejs, body, at)
	err := t.a.Bounce(ctx, to, t.partner, dsn, at)
	if errors.Is(err, ErrBounceUndeliverable) {
		s.log.Info("sieve reject: sender leads nowhere, no DSN", "to", to, "err", err)
		return
	}
	if err != nil {
		s.log.Error("sieve reject: DSN not stored", "to", to, "err", err)
		return
	}
	for _, r := range rejs {
		s.log.Info("sieve reject: DSN sent", "mailbox", r.mailbox, "to", to, "reason", r.reason)
	}
	if s.cfg.OnQueued != nil {
		s.cfg.OnQueued()
	}
}

// rejectionDSN is the rejection notice: multipart/report (RFC 6522) with
// the reasons in a human-readable part, a message/delivery-status part
// (RFC 3464) with Action failed and Status 5.7.1 for each recipient
// (RFC 5429 section 2.1.2), and the original header
// (text/rfc822-headers), from MAILER-DAEMON at hostname.
func rejectionDSN(hostname, to, envFrom string, rejs []rejection, body []byte, at time.Time) []byte {
	if hostname == "" {
		hostname = "localhost"
	}
	var rnd [12]byte
	rand.Read(rnd[:])
	boundary := "=_mailhost_" + hex.EncodeToString(rnd[:])
	date := at.Format(time.RFC1123Z)
	global := !isASCII(to)
	for _, r := range rejs {
		global = global || !isASCII(r.rcpt)
	}
	var b bytes.Buffer
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\r\n", args...) }
	w("From: Mail Delivery System <MAILER-DAEMON@%s>", hostname)
	w("To: <%s>", to)
	w("Subject: Message rejected by its recipient's filter")
	w("Date: %s", date)
	w("Message-ID: <%d.%s@%s>", at.Unix(), hex.EncodeToString(rnd[:6]), hostname)
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
	w("This is the mail system at %s.", hostname)
	w("")
	w("Your message was rejected by a filter its recipient set:")
	w("")
	for _, r := range rejs {
		// The reason is the script's, one line (package sieve's
		// limits); cut at RFC 5322's 998 octets all the same.
		line := "<" + r.rcpt + ">: " + oneLine(r.reason)
		w("%s", clipOctets(line, 998))
	}
	w("")
	statusType, addrType := "message/delivery-status", "rfc822"
	if global {
		// RFC 6533: addresses in UTF-8.
		statusType, addrType = "message/global-delivery-status", "utf-8"
	}
	w("--%s", boundary)
	w("Content-Description: Delivery report")
	w("Content-Type: %s", statusType)
	w("")
	w("Reporting-MTA: dns; %s", hostname)
	w("Arrival-Date: %s", date)
	for _, r := range rejs {
		w("")
		// No Original-Recipient: RFC 3464 section 2.3.1 keeps it for
		// an ORCPT the sender gave, which this server does not keep.
		w("Final-Recipient: %s; %s", addrType, r.mailbox)
		w("Action: failed")
		w("Status: 5.7.1")
		w("Diagnostic-Code: smtp; %s", clipOctets("550 5.7.1 "+oneLine(r.reason), 900))
	}
	w("")
	w("--%s", boundary)
	w("Content-Description: Rejected message headers")
	w("Content-Type: text/rfc822-headers")
	w("")
	b.Write(headerOf(body))
	w("--%s--", boundary)
	return b.Bytes()
}

// headerOf is the header section of a message, up to the empty line, at
// most maxDSNHeaders of it cut at a line end, with CRLF line ends and no
// other CR (a bare CR could be read as a line end on the way).
func headerOf(body []byte) []byte {
	h := body
	if i := bytes.Index(h, []byte("\n\r\n")); i >= 0 {
		h = h[:i+1]
	}
	if i := bytes.Index(h, []byte("\n\n")); i >= 0 {
		h = h[:i+1]
	}
	if len(h) > maxDSNHeaders {
		h = h[:bytes.LastIndexByte(h[:maxDSNHeaders], '\n')+1]
	}
	var out bytes.Buffer
	for _, l := range strings.SplitAfter(string(h), "\n") {
		l = strings.TrimRight(l, "\r\n")
		if l == "" {
			continue
		}
		out.WriteString(strings.ReplaceAll(l, "\r", " "))
		out.WriteString("\r\n")
	}
	return out.Bytes()
}

func oneLine(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == '\r' || r == '\n' }), " ")
}

func clipOctets(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
