package smtpd

import (
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/mailhost/mailhost/delivery"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/policy"
)

// submission is a session of the submission server (RFC 6409): the MX's
// session with AUTH, and its own Mail, Rcpt and Data.
type submission struct {
	*session
	// user is the authenticated mailbox, nil before AUTH. Auth sets it;
	// go-smtp does not run AUTH during a transaction (it answers 503
	// after a first success), so Data may read it without a lock.
	user *mailstore.Mailbox
	// counted is the mailbox whose per-user-and-address count the
	// session holds (MaxConnsPerUserIP), nil if none.
	counted *int64
}

// Logout gives back the session's per-user-and-address count.
func (s *submission) Logout() error {
	if s.counted != nil {
		s.srv.conns.count.ReleaseUser(*s.counted, policy.AddrKey(s.ip))
		s.counted = nil
	}
	return s.session.Logout()
}

// Mail starts a transaction of the authenticated user (530 5.7.0 before
// AUTH, RFC 4954 section 6) as package delivery decides for submission
// (delivery.StartSubmission): the mailbox and its domain are read again,
// so that a mailbox deleted (550 5.7.1) or a domain suspended (550 5.7.1)
// since AUTH sends nothing more; a domain that has used its transfer cap
// for the month is refused here (451 4.7.1), before the client sends the
// message; the reverse path must be the user's to use (see
// policy.MaySendAs), else 553 5.7.1. The null reverse path is accepted: a
// client sends read receipts (RFC 8098 section 3) and other
// notifications with it; the From: check after DATA still applies.
func (s *submission) Mail(from string, opts *smtp.MailOptions) error {
	if s.srv.shuttingDown() {
		return reply(errShuttingDown)
	}
	if s.user == nil {
		return s.refuseSender(from, errAuthRequired)
	}
	if err := checkSender(from); err != nil {
		return s.refuseSender(from, err)
	}
	var size int64
	if opts != nil {
		size = opts.Size
	}
	del, err := s.srv.delivery.StartSubmission(s.ctx, *s.user, from, size)
	if err != nil {
		return s.refuseSender(from, err)
	}
	tx := transaction{id: newID(), from: del.From(), size: size, del: del}
	if opts != nil {
		tx.utf8 = opts.UTF8
	}
	s.setBusy(true)
	s.mu.Lock()
	s.tx = tx
	s.mu.Unlock()
	return nil
}

// refuseSender logs a refused MAIL and returns its reply.
func (s *submission) refuseSender(from string, err error) error {
	return s.refusal("sender refused", err, "from", clean(from))
}

// Rcpt accepts any recipient (see delivery's Submission mode). A hosted
// address is resolved as on the MX (550 5.1.1 for an unknown user, 452
// 4.2.2 for a full mailbox); the remote destinations of its aliases and
// every address of a domain not hosted here are queued, as the user's
// submission: the user's domain is charged and the envelope sender is
// the user's own (no SRS). A sender whose domain is not verified reaches
// only its own partner's mailboxes: 550 5.7.1 naming the domain for any
// other recipient (policy.MayReach).
func (s *submission) Rcpt(to string, opts *smtp.RcptOptions) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tx.del == nil {
		return reply(errNoTransaction)
	}
	addr, err := recipientAddress(to)
	if err != nil {
		return s.refuse(clean(to), err)
	}
	if l := s.srv.sendLimit; l != nil {
		// Taken before the recipient is resolved, and not given back if
		// it is refused: probing addresses counts too.
		user := s.tx.del.User()
		if ok, wait := l.Take(user.ID, s.srv.now()); !ok {
			return s.refuse(addr, fmt.Errorf("%s: %d recipients an hour, next in %v: %w",
				user.Email, s.srv.cfg.MaxRecipientsPerHour, wait.Round(time.Second), errSendLimit))
		}
	}
	if err := s.tx.del.AddRecipient(s.ctx, addr, to); err != nil {
		return s.refuse(addr, err)
	}
	s.srv.metrics.Recipient(s.listener(), "accepted")
	return nil
}

// Data reads the message and checks that every address of its From:
// field(s) is the user's to use (553 5.7.1 otherwise, 550 5.6.0 without
// one), and that the first one's domain, which signs it, may reach the
// recipients (550 5.7.1 when it is not verified and they are not all
// the user's partner's mailboxes). It removes Authentication-Results fields that claim this server
// (the local copies would otherwise carry a forged verdict), adds Date:
// and Message-ID: when missing, prepends a Received field, has the message
// DKIM-signed for the From: address's domain, then stores and queues it
// with one store.Deliver call charged to the user's domain: 451 4.7.1 when
// its transfer cap for the month is used, and nothing stored. A message
// that reaches another partner's mailbox gets the MX's checks first
// (checkInbound).
func (s *submission) Data(r io.Reader) error {
	tx := s.transaction()
	if tx.empty() {
		return reply(errNoTransaction)
	}
	start := time.Now()
	at := s.srv.now()
	msg, release, err := s.readMessage(r, tx.id, tx.size)
	defer release()
	if err != nil {
		return err
	}
	signing, err := s.checkFrom(tx, msg)
	if err != nil {
		return s.refuseMessage(tx, err)
	}
	if err := tx.del.MaySignAs(signing); err != nil {
		return s.refuseMessage(tx, err)
	}
	// After checkFrom, which refuses a bare CR in the header, and before
	// signing: the header's lines are those checked, and bare line ends
	// in the body become CRLF (delivery.NormalizeLineEnds), so that the
	// signature covers the lines every next hop reads.
	msg = delivery.NormalizeLineEnds(msg)
	msg = stripAuthResults(msg, s.srv.hostname)
	fields, end := headerFields(msg)
	msg = addMissing(msg, fields, end, at, tx.id, s.srv.hostname)

	t := traceInfo{id: tx.id, hostname: s.srv.hostname, tls: s.tls, utf8: tx.utf8, auth: true, at: at}
	body := prepend(submissionTrace(t), msg)
	// Before signing: the filter adds nothing to a submission, it only
	// refuses (a stolen password sending spam).
	if body, err = s.filter(tx, body); err != nil {
		return err
	}
	if s.srv.cfg.Signer != nil {
		if body, err = s.srv.cfg.Signer.Sign(s.ctx, signing, body); err != nil {
			return s.refuseMessage(tx, fmt.Errorf("DKIM signing for %s: %w", signing.Name, err))
		}
	}
	if tx.del.InboundChecks() {
		if body, err = s.checkInbound(tx, body); err != nil {
			return err
		}
	}
	return s.deliver(tx, body, at, start)
}

// checkInbound gives a submission that reaches another partner's
// mailbox (delivery's InboundChecks) the MX's checks: body, signed as it
// leaves, is checked as this server would send it, from the address the
// client reached (this server's) with the host name as HELO, so that SPF
// and DKIM answer what a receiver elsewhere would find. The
// Authentication-Results field is prepended to the body every recipient
// gets; a DMARC p=reject failure refuses the message (550 5.7.1), a
// p=quarantine one sends the other partners' copies to Junk
// (delivery's Quarantine) without a field, since the user's own
// recipients share the body.
func (s *submission) checkInbound(tx transaction, body []byte) ([]byte, error) {
	var ip net.IP
	if ta, ok := s.conn.Conn().LocalAddr().(*net.TCPAddr); ok {
		ip = ta.IP
	}
	ar, quarantine, err := s.authenticate(tx, ip, s.srv.hostname, body)
	if err != nil {
		return nil, s.refuseMessage(tx, err)
	}
	if quarantine != "" {
		tx.del.Quarantine()
	}
	return prepend([]byte(ar), body), nil
}

// checkFrom applies policy.MaySendAs to every From: address and returns
// the domain of the first, which signs the message. A header section
// with a line that is neither a field nor a continuation before the
// empty line is refused (550 5.6.0): the fields past it, a From: among
// them, would escape the check here yet be signed (see headerEnd).
func (s *submission) checkFrom(tx transaction, msg []byte) (mailstore.Domain, error) {
	fields, end := headerFields(msg)
	if err := headerEnd(msg, end); err != nil {
		return mailstore.Domain{}, fmt.Errorf("%w: %w", errMalformedHeader, err)
	}
	addrs, err := fromAddresses(fields)
	if err != nil {
		return mailstore.Domain{}, fmt.Errorf("%w: %w", errBadHeader, err)
	}
	st := s.srv.cfg.Store
	var first string
	for _, a := range addrs {
		n, err := policy.NormalizeAddress(a)
		if err != nil {
			return mailstore.Domain{}, fmt.Errorf("From: %q: %w: %w", clean(a), errFromNotOwned, err)
		}
		if err := policy.MaySendAs(s.ctx, st, tx.del.User(), n); err != nil {
			if errors.Is(err, policy.ErrNotOwner) {
				err = fmt.Errorf("From: %w: %w", errFromNotOwned, err)
			}
			return mailstore.Domain{}, err
		}
		if first == "" {
			first = n
		}
	}
	d, err := st.DomainByName(s.ctx, policy.DomainOf(first))
	if err != nil {
		return mailstore.Domain{}, fmt.Errorf("domain of From: %s: %w", first, err)
	}
	return d, nil
}

// refuseMessage logs a message refused after DATA and returns its reply.
func (s *submission) refuseMessage(tx transaction, err error) error {
	s.srv.metrics.Message(s.listener(), outcome(err), 0)
	return s.refusal("message refused", err, "id", tx.id, "from", tx.from)
}
