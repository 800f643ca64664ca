package imapd

import (
	"errors"

	"github.com/mailhost/mailhost/credential"
)

// Metrics is told what the server does, for monitoring; the wiring gives
// a *metrics.IMAP. Calls come from the connections' goroutines and must
// not block.
type Metrics interface {
	// Session counts a connection greeted (open until SessionClosed), or
	// one refused with BYE (too many connections, shutting down).
	Session(refused bool)
	SessionClosed()
	// Login counts a LOGIN or AUTHENTICATE: success, invalid, throttled,
	// refused (TLS required, too many connections of the user) or error.
	Login(outcome string)
}

// noMetrics is Metrics when Config.Metrics is nil.
type noMetrics struct{}

func (noMetrics) Session(bool)   {}
func (noMetrics) SessionClosed() {}
func (noMetrics) Login(string)   {}

// loginOutcome names a failed authentication for the metrics.
func loginOutcome(err error) string {
	switch {
	case errors.Is(err, credential.ErrThrottled):
		return "throttled"
	case errors.Is(err, credential.ErrInvalidCredentials):
		return "invalid"
	}
	return "error"
}
