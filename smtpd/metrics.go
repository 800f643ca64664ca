package smtpd

import (
	"errors"
	"time"

	"github.com/mailhost/mailhost/credential"
	"github.com/mailhost/mailhost/delivery"
	"github.com/mailhost/mailhost/policy"
)

// Metrics is told what the server does, for monitoring; the wiring gives
// a *metrics.SMTP. listener is "smtp" (the MX), "submission" (STARTTLS)
// or "submissions" (implicit TLS); outcomes are those of outcome and
// loginOutcome. Calls come from the connections' goroutines and must not
// block.
type Metrics interface {
	// Session counts an accepted connection (open until SessionClosed),
	// or one refused over the connection limits.
	Session(listener string, refused bool)
	SessionClosed(listener string)
	// Recipient counts a RCPT: "accepted" or an outcome.
	Recipient(listener, outcome string)
	// Message counts a message at the end of its data: "delivered" with
	// the time its delivery took, or an outcome.
	Message(listener, outcome string, d time.Duration)
	// Login counts a submission AUTH.
	Login(outcome string)
}

// noMetrics is Metrics when Config.Metrics is nil.
type noMetrics struct{}

func (noMetrics) Session(string, bool)                  {}
func (noMetrics) SessionClosed(string)                  {}
func (noMetrics) Recipient(string, string)              {}
func (noMetrics) Message(string, string, time.Duration) {}
func (noMetrics) Login(string)                          {}

// listenerName is the metrics' name of a listener of s.
func (s *Server) listenerName(implicitTLS bool) string {
	switch {
	case !s.submission:
		return "smtp"
	case implicitTLS:
		return "submissions"
	}
	return "submission"
}

// listener is the metrics' name of the session's listener.
func (s *session) listener() string {
	if s.tracked != nil {
		return s.tracked.listener
	}
	return s.srv.listenerName(false)
}

// outcome names a refusal for the metrics: over_quota and over_cap (the
// transfer cap) apart, the others by their reply's class, refused_4xx
// (the sender retries) or refused_5xx.
func outcome(err error) string {
	switch {
	case errors.Is(err, delivery.ErrOverQuota):
		return "over_quota"
	case errors.Is(err, delivery.ErrTransferCapReached):
		return "over_cap"
	case reply(err).Code >= 500:
		return "refused_5xx"
	}
	return "refused_4xx"
}

// loginOutcome names an AUTH's result for the metrics.
func loginOutcome(err error) string {
	switch {
	case err == nil:
		return "success"
	case errors.Is(err, credential.ErrThrottled):
		return "throttled"
	case errors.Is(err, credential.ErrInvalidCredentials):
		return "invalid"
	case errors.Is(err, policy.ErrTooManyUserConns), errors.Is(err, errEncryptionRequired):
		return "refused"
	}
	return "error"
}
