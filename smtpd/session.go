package smtpd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/policy"
)

// session is one SMTP session: from EHLO (or HELO) to the connection's
// end; STARTTLS starts a new one (RFC 3207 section 4.2). go-smtp calls its
// methods from the connection's goroutine, except Data during BDAT, which
// runs in its own goroutine while the connection's reads chunks; no
// other method runs meanwhile.
type session struct {
	srv      *Server
	conn     *smtp.Conn
	log      *slog.Logger
	remoteIP string
	helo     string
	tls      bool
	tracked  *trackedConn // nil if the connection is not from Serve

	// ctx is the session's context, cancelled by Logout, so that a store
	// call under way stops when the client is gone.
	ctx    context.Context
	cancel context.CancelFunc

	// mu guards tx, which Reset may clear while a BDAT Data runs.
	mu sync.Mutex
	tx transaction
}

// transaction is the state of one mail transaction, MAIL to the end of DATA.
type transaction struct {
	id        string
	from      string
	size      int64 // SIZE= of MAIL (RFC 1870), 0 when not given
	utf8      bool
	rcpts     []string // accepted recipients, normalised, each once
	mailboxes []mailstore.Mailbox
}

func (s *Server) newSession(c *smtp.Conn) (smtp.Session, error) {
	if s.shuttingDown() {
		return nil, reply(errShuttingDown)
	}
	ctx, cancel := context.WithCancel(context.Background())
	_, isTLS := c.TLSConnectionState()
	ip := ipOf(c.Conn().RemoteAddr())
	return &session{
		srv:      s,
		conn:     c,
		log:      s.log.With("remote_ip", ip),
		remoteIP: ip,
		helo:     c.Hostname(),
		tls:      isTLS,
		tracked:  trackedOf(c.Conn()),
		ctx:      ctx,
		cancel:   cancel,
	}, nil
}

// Mail starts a transaction. Any reverse path go-smtp parsed is accepted,
// the null one too (RFC 5321 section 4.5.5): this is an MX, and who may
// send as whom is a question for submission.
func (s *session) Mail(from string, opts *smtp.MailOptions) error {
	if s.srv.shuttingDown() {
		return reply(errShuttingDown)
	}
	s.setBusy(true)
	tx := transaction{id: newID(), from: from}
	if opts != nil {
		tx.size = opts.Size
		tx.utf8 = opts.UTF8
	}
	s.mu.Lock()
	s.tx = tx
	s.mu.Unlock()
	return nil
}

// Rcpt resolves a recipient (policy.Resolve: mailbox, alias, catch-all)
// and checks the quota of each mailbox it reaches against the size
// announced at MAIL (policy.AcceptAtRCPT).
func (s *session) Rcpt(to string, opts *smtp.RcptOptions) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	addr, err := policy.NormalizeAddress(to)
	if err != nil {
		return s.refuse(to, errBadRecipient)
	}
	res, err := policy.Resolve(s.ctx, s.srv.cfg.Store, addr)
	if err != nil {
		return s.refuse(addr, err)
	}
	if len(res.Remote) > 0 {
		return s.refuse(addr, fmt.Errorf("%s to %s: %w", addr, strings.Join(res.Remote, ", "), errNeedsRelay))
	}
	if len(res.Mailboxes) == 0 {
		return s.refuse(addr, fmt.Errorf("%s resolves to nothing: %w", addr, policy.ErrUnknownUser))
	}
	for _, m := range res.Mailboxes {
		if !policy.AcceptAtRCPT(m, s.tx.size) {
			return s.refuse(addr, fmt.Errorf("%s (%s, %d of %d bytes used, SIZE=%d): %w",
				addr, m.Email, m.UsedBytes, m.QuotaBytes(), s.tx.size, errMailboxFull))
		}
	}
	if !slices.Contains(s.tx.rcpts, addr) {
		s.tx.rcpts = append(s.tx.rcpts, addr)
	}
	for _, m := range res.Mailboxes {
		if !slices.ContainsFunc(s.tx.mailboxes, func(h mailstore.Mailbox) bool { return h.ID == m.ID }) {
			s.tx.mailboxes = append(s.tx.mailboxes, m)
		}
	}
	return nil
}

// refuse logs a refused recipient and returns its reply.
func (s *session) refuse(rcpt string, err error) error {
	r := reply(err)
	level := slog.LevelInfo
	if localFailure(err) {
		level = slog.LevelError
	}
	s.log.Log(s.ctx, level, "recipient refused", "id", s.tx.id, "rcpt", rcpt,
		"code", fmt.Sprintf("%d %d.%d.%d", r.Code, r.EnhancedCode[0], r.EnhancedCode[1], r.EnhancedCode[2]), "err", err)
	return r
}

// localFailure reports whether err is this server's fault (a store
// failure, say) rather than an answer about the mail.
func localFailure(err error) bool {
	r := reply(err)
	return r.Code == 451 && r.EnhancedCode == smtp.EnhancedCode{4, 3, 0} && !errors.Is(err, errNeedsRelay)
}

// Data reads the message, prepends the trace headers and stores it for
// every local recipient with one store.Deliver call. The 250 that follows
// a nil return is sent only after Deliver has committed and synced.
func (s *session) Data(r io.Reader) error {
	// During BDAT go-smtp runs Data in its own goroutine and may call
	// Reset meanwhile (an aborted transfer), so Data works on a copy.
	tx := s.transaction()
	if len(tx.mailboxes) == 0 {
		return reply(errNoTransaction)
	}
	start := time.Now()
	at := s.srv.now()
	t := traceInfo{
		id: tx.id, from: tx.from, helo: s.helo, remoteIP: s.remoteIP,
		hostname: s.srv.hostname, tls: s.tls, utf8: tx.utf8, at: at,
	}
	if len(tx.rcpts) == 1 {
		t.rcpt = tx.rcpts[0]
	}
	if len(tx.mailboxes) == 1 {
		t.deliveredTo = tx.mailboxes[0].Email
	}
	var buf bytes.Buffer
	buf.Write(traceHeaders(t))
	head := buf.Len()

	// go-smtp stops DATA and BDAT at MaxMessageBytes with 552 5.3.4; the
	// limit here is only a second guard.
	max := s.srv.cfg.MaxMessageBytes
	var rd io.Reader = &deadlineReader{r: r, conn: s.conn.Conn(), timeout: s.srv.cfg.ReadTimeout}
	if _, err := buf.ReadFrom(io.LimitReader(rd, max+1)); err != nil {
		s.log.Info("message not received", "id", tx.id, "err", err)
		return reply(err)
	}
	if int64(buf.Len()-head) > max {
		s.log.Info("message not received", "id", tx.id, "err", "over the size limit")
		return smtp.ErrDataTooLarge
	}

	ids := make([]int64, len(tx.mailboxes))
	for i, m := range tx.mailboxes {
		ids[i] = m.ID
	}
	res, err := s.srv.cfg.Store.Deliver(s.ctx, mailstore.Delivery{Body: buf.Bytes(), ReceivedAt: at, MailboxIDs: ids})
	if err == nil && len(res.Delivered) == 0 {
		err = errGone
	}
	if err != nil {
		level := slog.LevelInfo
		if localFailure(err) {
			level = slog.LevelError
		}
		s.log.Log(s.ctx, level, "delivery failed", "id", tx.id, "mailbox_ids", ids, "err", err)
		return reply(err)
	}
	s.log.Info("delivered", "id", tx.id, "from", tx.from, "rcpts", len(tx.rcpts),
		"mailbox_ids", res.Delivered, "skipped_ids", res.Skipped, "size_bytes", buf.Len(),
		"tls", s.tls, "duration_ms", time.Since(start).Milliseconds())
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
