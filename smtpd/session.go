package smtpd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/mailhost/mailhost/delivery"
	"github.com/mailhost/mailhost/policy"
)

// session is one SMTP session: from EHLO (or HELO) to the connection's
// end; STARTTLS starts a new one (RFC 3207 section 4.2). go-smtp calls its
// methods from the connection's goroutine, except Data during BDAT, which
// runs in its own goroutine while the connection's reads chunks; no
// other method runs meanwhile. Its Mail, Rcpt and Data are the MX's;
// submission wraps it.
type session struct {
	srv      *Server
	conn     *smtp.Conn
	log      *slog.Logger
	remoteIP string
	ip       netip.Addr
	helo     string
	tls      bool
	tracked  *trackedConn // nil if the connection is not from Serve
	// dnsbl is the connection's blocklist check; nil without one
	// (dnsbl.go).
	dnsbl *dnsblCheck

	// ctx is the session's context, cancelled by Logout, so that a store
	// call under way stops when the client is gone.
	ctx    context.Context
	cancel context.CancelFunc

	// mu guards tx, which Reset may clear while a BDAT Data runs, and
	// refused.
	mu sync.Mutex
	tx transaction
	// refused counts the recipients the MX refused in this session, over
	// all its transactions (see maxRefusedRcpts).
	refused int
}

// maxRefusedRcpts is how many recipients the MX refuses in one session
// before it answers 421 and closes the connection, as Postfix does with
// smtpd_hard_error_limit (20): a legitimate sender rarely gets that many
// wrong, while an address harvester or an SRS hash guesser needs
// hundreds of thousands. It also bounds the log lines of one session.
const maxRefusedRcpts = 20

// transaction is the state of one mail transaction, MAIL to the end of DATA.
type transaction struct {
	id   string
	from string // reverse path, normalised on submission; "" for <>
	size int64  // SIZE= of MAIL (RFC 1870), 0 when not given
	utf8 bool
	// del accepts the recipients and delivers; nil before MAIL.
	del *delivery.Transaction
}

// empty reports whether the transaction has nowhere to send a message.
func (tx *transaction) empty() bool { return tx.del == nil || tx.del.Empty() }

func (s *Server) newSession(c *smtp.Conn) (smtp.Session, error) {
	if s.shuttingDown() {
		return nil, reply(errShuttingDown)
	}
	ctx, cancel := context.WithCancel(context.Background())
	_, isTLS := c.TLSConnectionState()
	var ip netip.Addr
	if ta, ok := c.Conn().RemoteAddr().(*net.TCPAddr); ok {
		ip = ta.AddrPort().Addr().Unmap()
	}
	remoteIP := policy.RemoteIP(c.Conn().RemoteAddr())
	sess := &session{
		srv:      s,
		conn:     c,
		log:      s.log.With("remote_ip", remoteIP),
		remoteIP: remoteIP,
		ip:       ip,
		helo:     c.Hostname(),
		tls:      isTLS,
		tracked:  trackedOf(c.Conn()),
		ctx:      ctx,
		cancel:   cancel,
	}
	if s.submission {
		return &submission{session: sess}, nil
	}
	sess.startDNSBL()
	return sess, nil
}

// Mail starts a transaction. Any reverse path go-smtp parsed is accepted,
// the null one too (RFC 5321 section 4.5.5): this is an MX, and who may
// send as whom is a question for submission.
func (s *session) Mail(from string, opts *smtp.MailOptions) error {
	if s.srv.shuttingDown() {
		return reply(errShuttingDown)
	}
	if err := checkSender(from); err != nil {
		return s.refusal("sender refused", err, "from", clean(from))
	}
	s.setBusy(true)
	tx := transaction{id: newID(), from: from}
	if opts != nil {
		tx.size = opts.Size
		tx.utf8 = opts.UTF8
	}
	tx.del = s.srv.delivery.StartMX(tx.from, tx.size)
	s.mu.Lock()
	s.tx = tx
	s.mu.Unlock()
	return nil
}

// Rcpt accepts a recipient at a hosted domain, as package delivery
// decides for the MX (delivery.StartMX): a mailbox, alias or catch-all
// with room, an SRS address for a bounce. Once
// maxRefusedRcpts recipients were refused in the session, the next RCPT
// is answered 421 4.7.0 and the connection closed (RFC 5321 section 3.8).
func (s *session) Rcpt(to string, opts *smtp.RcptOptions) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused >= maxRefusedRcpts {
		return s.hangUp(fmt.Errorf("%d recipients refused: %w", s.refused, errTooManyRefused))
	}
	if s.tx.del == nil {
		return reply(errNoTransaction)
	}
	addr, err := recipientAddress(to)
	if err != nil {
		s.refused++
		return s.refuse(clean(to), err)
	}
	if err := s.checkDNSBL(addr); err != nil {
		s.refused++
		return s.refuse(addr, err)
	}
	if err := s.tx.del.AddRecipient(s.ctx, addr, to); err != nil {
		s.refused++
		return s.refuse(addr, err)
	}
	s.srv.metrics.Recipient(s.listener(), "accepted")
	return nil
}

// checkSender refuses a reverse path with a NUL: go-smtp
// takes it, and it would fail later, at the next hop or as an SRS
// address, as a temporary error its sender retries for days. RFC 5321
// section 4.1.2 allows no control characters in a path.
func checkSender(from string) error {
	if strings.IndexByte(from, 0) >= 0 {
		return fmt.Errorf("%q: %w", from, errNULSender)
	}
	return nil
}

// recipientAddress is the recipient of RCPT TO:<to> as package delivery
// takes it: normalised (policy.NormalizeAddress), or "postmaster" for
// the domainless postmaster in any case (RFC 5321 section 4.5.1, which
// every server must accept). A NUL is refused on its own (501 5.1.3),
// with a reply that says so.
func recipientAddress(to string) (string, error) {
	if strings.IndexByte(to, 0) >= 0 {
		return "", fmt.Errorf("%q: %w", to, errNULRecipient)
	}
	if strings.EqualFold(to, policy.Postmaster) {
		return policy.Postmaster, nil
	}
	addr, err := policy.NormalizeAddress(to)
	if err != nil {
		return "", fmt.Errorf("%w: %w", errBadRecipient, err)
	}
	return addr, nil
}

// hangUp logs err, writes its reply and closes the connection. go-smtp
// v0.25 does not close a connection after a 421 a session returns, so
// the reply is written here, ahead of go-smtp, whose own write of the
// returned reply then fails on the closed connection and whose next read
// ends the session. Every earlier reply has been flushed: go-smtp writes
// each one whole before it reads the next command.
func (s *session) hangUp(err error) error {
	s.refusal("connection closed", err, "id", s.tx.id)
	r := reply(err)
	c := s.conn.Conn()
	c.SetWriteDeadline(time.Now().Add(s.srv.cfg.WriteTimeout))
	fmt.Fprintf(c, "%s %s\r\n", code(r), r.Message)
	c.Close()
	return r
}

// refuse logs a refused recipient and returns its reply.
func (s *session) refuse(rcpt string, err error) error {
	s.srv.metrics.Recipient(s.listener(), outcome(err))
	return s.refusal("recipient refused", err, "id", s.tx.id, "rcpt", rcpt)
}

// refusal logs one refusal as msg with args, at error level when it is
// this server's fault (localFailure), and returns the reply for err.
func (s *session) refusal(msg string, err error, args ...any) error {
	r := reply(err)
	level := slog.LevelInfo
	if localFailure(err) {
		level = slog.LevelError
	}
	s.log.Log(s.ctx, level, msg, append(args, "code", code(r), "err", err)...)
	return r
}

func code(r *smtp.SMTPError) string {
	return fmt.Sprintf("%d %d.%d.%d", r.Code, r.EnhancedCode[0], r.EnhancedCode[1], r.EnhancedCode[2])
}

// localFailure reports whether err is this server's fault (a store
// failure, say) rather than an answer about the mail.
func localFailure(err error) bool {
	r := reply(err)
	return r.Code == 451 && r.EnhancedCode == smtp.EnhancedCode{4, 3, 0} && !errors.Is(err, delivery.ErrNeedsRelay) ||
		errors.Is(err, errAuthUnavailable)
}

// Data reads the message, prepends the Authentication-Results field and
// the trace fields, and stores it for every local recipient and queues it
// for every remote one with one store.Deliver call. The 250 that follows a
// nil return is sent only after Deliver has committed and synced.
func (s *session) Data(r io.Reader) error {
	// During BDAT go-smtp runs Data in its own goroutine and may call
	// Reset meanwhile (an aborted transfer), so Data works on a copy.
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
	// Bare CR and LF become CRLF before anything reads the message (see
	// delivery.NormalizeLineEnds): the checks, the stored copies and the
	// next hop all see the same lines.
	msg = delivery.NormalizeLineEnds(msg)
	// The checks, and the DMARC policy with Config.DMARCEnforce
	// (dmarc.go).
	ar, quarantine, err := s.authenticate(tx, net.IP(s.ip.AsSlice()), s.helo, msg)
	if err != nil {
		return s.refusal("message refused", err, "id", tx.id, "from", tx.from)
	}
	// RFC 8601 section 5: fields that claim to come from this ADMD were
	// forged upstream.
	msg = stripAuthResults(msg, authservID(ar), s.srv.hostname)
	if quarantine != "" {
		msg = append([]byte(quarantine), msg...)
		tx.del.Quarantine()
	}

	t := traceInfo{
		id: tx.id, from: tx.from, helo: s.helo, remoteIP: s.remoteIP,
		hostname: s.srv.hostname, tls: s.tls, utf8: tx.utf8, at: at,
		relayed: tx.del.Remote() > 0, authResults: ar,
	}
	if rcpts := tx.del.Recipients(); len(rcpts) == 1 {
		t.rcpt = rcpts[0].Address
	}
	if mbs := tx.del.Mailboxes(); len(mbs) == 1 {
		t.deliveredTo = mbs[0].Email
	}
	body := prepend(traceHeaders(t), msg)
	if body, err = s.filter(tx, body); err != nil {
		return err
	}
	return s.deliver(tx, body, at, start)
}

// readMessage reads the message data, with a read deadline per read,
// within Config.Memory; release gives its room back once the message is
// stored or refused (the caller defers it, also on error), and msg's
// memory with it: the callers copy msg into the body they store (behind
// its trace fields) and must not keep msg itself. announced is the size
// MAIL announced (0: none).
func (s *session) readMessage(r io.Reader, id string, announced int64) (msg []byte, release func(), err error) {
	// go-smtp stops DATA and BDAT at MaxMessageBytes with 552 5.3.4; the
	// limit here is only a second guard.
	max := s.srv.cfg.MaxMessageBytes
	buf := messageBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	br := newBudgetReader(s.ctx, &deadlineReader{r: r, conn: s.conn.Conn(), timeout: s.srv.cfg.ReadTimeout}, s.srv.cfg.Memory, min(announced, max))
	release = func() {
		br.release()
		if buf.Cap() <= maxPooledMessage {
			messageBuffers.Put(buf)
		}
	}
	if _, err := buf.ReadFrom(io.LimitReader(br, max+1)); err != nil {
		if errors.Is(err, errNoMemory) {
			s.log.Warn("message not received: the memory budget is used", "id", id, "read_bytes", br.read, "announced_bytes", announced)
		} else {
			s.log.Info("message not received", "id", id, "err", err)
		}
		s.srv.metrics.Message(s.listener(), outcome(err), 0)
		return nil, release, reply(err)
	}
	if int64(buf.Len()) > max {
		s.log.Info("message not received", "id", id, "err", "over the size limit")
		s.srv.metrics.Message(s.listener(), outcome(smtp.ErrDataTooLarge), 0)
		return nil, release, smtp.ErrDataTooLarge
	}
	return buf.Bytes(), release, nil
}

// messageBuffers are readMessage's buffers, kept between messages: read
// into a new bytes.Buffer, a 4 KB message cost five allocations of 512 B
// to 8 KB, each cleared and copied into the next (3-4% of a node's CPU
// under load, 2026-11-27). A buffer grown past maxPooledMessage is left
// to the collector, so that one large message does not stay in memory.
var messageBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledMessage = 1 << 20

// deliver makes the one store.Deliver call of a message (through package
// delivery) and logs it.
func (s *session) deliver(tx transaction, body []byte, at, start time.Time) error {
	committing := time.Now()
	res, err := tx.del.Commit(s.ctx, body, at)
	if err != nil {
		s.srv.metrics.Message(s.listener(), outcome(err), 0)
		return s.refusal("delivery failed", err, "id", tx.id, "mailbox_ids", tx.del.MailboxIDs(), "remote", tx.del.Remote())
	}
	s.srv.metrics.Message(s.listener(), "delivered", time.Since(committing))
	if len(res.Queued) > 0 && s.srv.cfg.OnQueued != nil {
		s.srv.cfg.OnQueued()
	}
	s.autoReply(tx, body, res.Delivered)
	s.log.Info("delivered", "id", tx.id, "from", tx.from, "rcpts", len(tx.del.Recipients()),
		"mailbox_ids", res.Delivered, "skipped_ids", res.Skipped, "over_quota_ids", res.OverQuota, "queued_ids", res.Queued,
		"size_bytes", len(body), "tls", s.tls, "duration_ms", time.Since(start).Milliseconds())
	return nil
}

// Reset ends the transaction; go-smtp calls it for RSET, a new EHLO, and
// after the reply to DATA or the last BDAT has been written.
func (s *session) Reset() {
	s.mu.Lock()
	s.tx = transaction{}
	s.mu.Unlock()
	s.setBusy(false)
}

// Logout ends the session when the connection closes or STARTTLS starts.
func (s *session) Logout() error {
	s.cancel()
	s.setBusy(false)
	return nil
}

func (s *session) setBusy(b bool) {
	if s.tracked != nil {
		s.tracked.busy.Store(b)
	}
}

func (s *session) transaction() transaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tx
}
