package smtpd

import (
	"errors"
	"net"

	"github.com/emersion/go-smtp"

	"github.com/mailhost/mailhost/mailstore"
	"github.com/mailhost/mailhost/policy"
)

// Conditions found by the session itself, mapped to replies by reply.
var (
	errMailboxFull   = errors.New("mailbox full")
	errNeedsRelay    = errors.New("destination needs relaying")
	errGone          = errors.New("every recipient mailbox was deleted")
	errShuttingDown  = errors.New("server shutting down")
	errBadRecipient  = errors.New("bad recipient address")
	errNoTransaction = errors.New("no mail transaction")
)

// reply maps an error of a session to the SMTP reply sent for it; it is
// the one place that decides codes (RFC 5321 section 4.2, enhanced codes
// RFC 3463). The error's details stay in the log, not in the reply.
// Anything not recognised is a temporary local problem: the sender keeps
// the message and retries, so nothing is lost on a store failure.
func reply(err error) *smtp.SMTPError {
	var se *smtp.SMTPError
	switch {
	case errors.As(err, &se):
		return se // go-smtp's own, e.g. smtp.ErrDataTooLarge
	case errors.Is(err, policy.ErrNotHosted):
		// Never an open relay: only authenticated submission may send to
		// other domains, and this is the MX.
		return &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: "Relay access denied"}
	case errors.Is(err, policy.ErrUnknownUser), errors.Is(err, errGone):
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "No such user here"}
	case errors.Is(err, policy.ErrAliasLoop), errors.Is(err, policy.ErrAliasTooDeep):
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 4, 6}, Message: "Alias loop or chain too long"}
	case errors.Is(err, errBadRecipient), errors.Is(err, policy.ErrBadAddress):
		return &smtp.SMTPError{Code: 501, EnhancedCode: smtp.EnhancedCode{5, 1, 3}, Message: "Bad recipient address syntax"}
	case errors.Is(err, errMailboxFull), errors.Is(err, mailstore.ErrOverQuota):
		// Temporary, so that the sender retries (decisions.md, "Quota").
		return &smtp.SMTPError{Code: 452, EnhancedCode: smtp.EnhancedCode{4, 2, 2}, Message: "Mailbox full, try again later"}
	case errors.Is(err, errNeedsRelay):
		// The outbound queue is not built yet: accepting would lose the
		// message, refusing for good would bounce mail that will be
		// deliverable; a temporary error keeps it with the sender.
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Forwarding is not available now, try again later"}
	case errors.Is(err, smtp.ErrTooLongLine):
		return &smtp.SMTPError{Code: 500, EnhancedCode: smtp.EnhancedCode{5, 5, 2}, Message: "Line too long"}
	case errors.Is(err, errShuttingDown):
		return &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 3, 2}, Message: "Server shutting down, try again later"}
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
