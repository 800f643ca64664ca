package smtpd

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/emersion/go-smtp"

	"github.com/mailhost/mailhost/credential"
	"github.com/mailhost/mailhost/delivery"
	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/policy"
)

// Conditions found by the session itself, mapped to replies by reply.
// Those of senders, recipients and delivery are package delivery's
// outcomes (delivery.Refusal).
var (
	errShuttingDown   = errors.New("server shutting down")
	errBadRecipient   = errors.New("bad recipient address")
	errNoTransaction  = errors.New("no mail transaction")
	errTooManyRefused = errors.New("too many refused recipients")
	errNULSender      = errors.New("NUL in the sender address")
	errNULRecipient   = errors.New("NUL in the recipient address")

	errAuthRequired       = errors.New("not authenticated")
	errEncryptionRequired = errors.New("AUTH without TLS")
	errAuthUnavailable    = errors.New("authentication unavailable")
	errFromNotOwned       = errors.New("From: header address not owned by the user")
	errBadHeader          = errors.New("no valid From: header")
	errMalformedHeader    = errors.New("malformed header section")
	errSendLimit          = errors.New("hourly sending limit reached")
)

// reply maps an error of a session to the SMTP reply sent for it; it is
// the one place that decides codes (RFC 5321 section 4.2, enhanced codes
// RFC 3463, AUTH codes RFC 4954 section 6). The error's details stay in
// the log, not in the reply. Anything not recognised is a temporary local
// problem: the sender keeps the message and retries, so nothing is lost on
// a store failure.
func reply(err error) *smtp.SMTPError {
	var se *smtp.SMTPError
	var listed *listedError
	var dmarcRej *dmarcRejected
	var notVerified *delivery.NotVerifiedError
	var sieveRej *delivery.SieveRejectError
	switch {
	case errors.As(err, &se):
		return se // go-smtp's own, e.g. smtp.ErrDataTooLarge
	case errors.As(err, &dmarcRej):
		// RFC 7489 section 6.7 leaves the reply to the receiver; 550
		// 5.7.1 naming DMARC is what large receivers answer.
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1},
			Message: fmt.Sprintf("Message rejected: it fails DMARC and %s publishes p=reject", sanitizeDomain(dmarcRej.domain))}
	case errors.As(err, &notVerified):
		// docs/security.md: until its domain is
		// verified a mailbox sends only to its own partner's mailboxes.
		// The reply says why, so that the partner knows what to do.
		what := "<" + clean(notVerified.Recipient) + ">: sender domain"
		if notVerified.Recipient == "" {
			what = "From: domain"
		}
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1},
			Message: fmt.Sprintf("%s %s is not verified; it may send only to its own partner's mailboxes", what, sanitizeDomain(notVerified.Domain))}
	case errors.As(err, &sieveRej):
		// RFC 5429 section 2.1: ereject refuses in the protocol, with
		// the script's reason (one line of printable ASCII here, as the
		// reply is not SMTPUTF8's).
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: asciiReason(sieveRej.Reason)}
	case errors.As(err, &listed):
		// RFC 5782 has no code; 554 5.7.1 naming the list is what
		// Postfix answers (reject_rbl_client), so the sender's operator
		// knows where to ask for delisting.
		return &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 7, 1},
			Message: fmt.Sprintf("Client host [%s] blocked using %s", listed.ip, listed.list)}
	case errors.Is(err, delivery.ErrSenderNotOwned), errors.Is(err, policy.ErrNotOwner), errors.Is(err, errFromNotOwned):
		// First: MaySendAs wraps resolution errors.
		msg := "Sender address is not yours"
		if errors.Is(err, errFromNotOwned) {
			msg = "From: header address is not yours"
		}
		return &smtp.SMTPError{Code: 553, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: msg}

	// Recipients (both modes) and delivery: package delivery's outcomes.
	case errors.Is(err, delivery.ErrNotHosted):
		// Never an open relay: only authenticated submission may send to
		// other domains, and this is the MX.
		return &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: "Relay access denied"}
	case errors.Is(err, delivery.ErrSRSNotBounce):
		// Policy, not an unknown user: the address may well be valid.
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: "SRS addresses take only bounces (MAIL FROM:<>)"}
	case errors.Is(err, delivery.ErrBadSRS), errors.Is(err, delivery.ErrUnknownRecipient), errors.Is(err, delivery.ErrGone):
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "No such user here"}
	case errors.Is(err, delivery.ErrAliasLoop):
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 4, 6}, Message: "Alias loop or chain too long"}
	case errors.Is(err, errNULRecipient):
		return &smtp.SMTPError{Code: 501, EnhancedCode: smtp.EnhancedCode{5, 1, 3}, Message: "Bad recipient address syntax: NUL character"}
	case errors.Is(err, errNULSender):
		return &smtp.SMTPError{Code: 501, EnhancedCode: smtp.EnhancedCode{5, 1, 7}, Message: "Bad sender address syntax: NUL character"}
	case errors.Is(err, errBadRecipient), errors.Is(err, delivery.ErrBadAddress):
		return &smtp.SMTPError{Code: 501, EnhancedCode: smtp.EnhancedCode{5, 1, 3}, Message: "Bad recipient address syntax"}
	case errors.Is(err, delivery.ErrOverQuota):
		// Temporary, so that the sender retries (the quota rule, docs/mail.md).
		return &smtp.SMTPError{Code: 452, EnhancedCode: smtp.EnhancedCode{4, 2, 2}, Message: "Mailbox full, try again later"}
	case errors.Is(err, delivery.ErrTransferCapReached):
		// Temporary: the client keeps the message and the cap frees at
		// the month's turn or when raised (the transfer cap, docs/mail.md).
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 7, 1}, Message: "Monthly transfer limit reached, try again later"}
	case errors.Is(err, delivery.ErrSpam):
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: "Message refused as spam"}
	case errors.Is(err, delivery.ErrSpamLater):
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 7, 1}, Message: "Message deferred by the spam filter, try again later"}
	case errors.Is(err, delivery.ErrFilterUnavailable):
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Spam filter unavailable, try again later"}
	case errors.Is(err, delivery.ErrNeedsRelay):
		// Accepting would lose the message, refusing for good would
		// bounce mail that will be deliverable once forwarding is
		// configured; a temporary error keeps it with the sender.
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Forwarding is not available now, try again later"}

	// Submission: AUTH and senders.
	case errors.Is(err, errAuthRequired):
		return &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0}, Message: "Authentication required"}
	case errors.Is(err, errEncryptionRequired):
		return &smtp.SMTPError{Code: 538, EnhancedCode: smtp.EnhancedCode{5, 7, 11}, Message: "Encryption required for requested authentication mechanism"}
	case errors.Is(err, credential.ErrThrottled):
		// 454 rather than 421: RFC 4954 section 6 gives 454 4.7.0 for a
		// temporary authentication failure, which clients report as
		// "try later" without asking for a new password (535 would) and
		// without taking the server for broken (421, which go-smtp would
		// also not follow by closing). Further attempts on the connection
		// cost nothing: credential.Logins refuses them before any
		// password check.
		return &smtp.SMTPError{Code: 454, EnhancedCode: smtp.EnhancedCode{4, 7, 0}, Message: "Too many failed logins, try again later"}
	case errors.Is(err, policy.ErrTooManyUserConns):
		return &smtp.SMTPError{Code: 454, EnhancedCode: smtp.EnhancedCode{4, 7, 0}, Message: "Too many connections of this user from your address, try again later"}
	case errors.Is(err, credential.ErrInvalidCredentials):
		return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "Authentication credentials invalid"}
	case errors.Is(err, errAuthUnavailable):
		return &smtp.SMTPError{Code: 454, EnhancedCode: smtp.EnhancedCode{4, 7, 0}, Message: "Temporary authentication failure"}
	case errors.Is(err, delivery.ErrAccountGone):
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: "Account no longer exists"}
	case errors.Is(err, delivery.ErrDomainSuspended):
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: "Domain suspended, sending refused"}
	case errors.Is(err, delivery.ErrBadSender):
		return &smtp.SMTPError{Code: 501, EnhancedCode: smtp.EnhancedCode{5, 1, 7}, Message: "Bad sender address syntax"}
	case errors.Is(err, errNoMemory), errors.Is(err, mailstore.ErrNoSpace):
		// RFC 5321's 452 "insufficient system storage", X.3.1 "mail
		// system full" (RFC 3463): the client keeps the message and
		// tries again. Out of memory budget here, or out of disk in the
		// store (which then stored nothing).
		return &smtp.SMTPError{Code: 452, EnhancedCode: smtp.EnhancedCode{4, 3, 1}, Message: "Insufficient system storage, try again later"}
	case errors.Is(err, errSendLimit):
		// Temporary: the client keeps the message and sends it once the
		// allowance has refilled.
		return &smtp.SMTPError{Code: 450, EnhancedCode: smtp.EnhancedCode{4, 7, 1}, Message: "Hourly sending limit reached, try again later"}
	case errors.Is(err, errBadHeader):
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: "Message needs a From: header with valid addresses"}
	case errors.Is(err, errMalformedHeader):
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: "Malformed header: a line that is neither a field nor a continuation, or a bare CR, before the empty line"}

	// Connection and protocol.
	case errors.Is(err, smtp.ErrTooLongLine):
		return &smtp.SMTPError{Code: 500, EnhancedCode: smtp.EnhancedCode{5, 5, 2}, Message: "Line too long"}
	case errors.Is(err, errShuttingDown):
		return &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 3, 2}, Message: "Server shutting down, try again later"}
	case errors.Is(err, errTooManyRefused):
		// Like Postfix's smtpd_hard_error_limit; the session closes the
		// connection after it (see session.hangUp).
		return &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 7, 0}, Message: "Too many refused recipients, closing connection"}
	case errors.Is(err, errNoTransaction):
		return &smtp.SMTPError{Code: 503, EnhancedCode: smtp.EnhancedCode{5, 5, 1}, Message: "Bad sequence of commands"}
	case isTimeout(err):
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 4, 2}, Message: "Timeout, try again later"}
	default:
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Local error, try again later"}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// asciiReason is a Sieve reject reason as one line of printable ASCII,
// at most 200 bytes; "" becomes a generic text.
func asciiReason(r string) string {
	r = strings.Map(func(c rune) rune {
		switch {
		case c == '\r' || c == '\n' || c == '\t':
			return ' '
		case c < ' ' || c > '~':
			return '?'
		}
		return c
	}, r)
	r = strings.Join(strings.Fields(r), " ")
	if len(r) > 200 {
		r = r[:200]
	}
	if r == "" {
		r = "Message rejected by the recipient's filter"
	}
	return r
}
