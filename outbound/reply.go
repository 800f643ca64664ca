package outbound

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/emersion/go-smtp"
)

// reply is an answer about a recipient: a remote server's SMTP reply, or
// one made here for what has none (a lookup or connection failure, a local
// delivery). Code says whether it is permanent (5xx) or not.
type reply struct {
	Code     int               // 0: no SMTP code, a temporary failure
	Enhanced smtp.EnhancedCode // RFC 3463 status; zero when not known
	Text     string
	// Host is the server that gave the reply; "" when it was made here.
	Host string
	// local: the failure is this server's (its store), not the
	// destination's.
	local bool
	// everywhere: every server of the route would answer the same (the
	// relay refused our login), so the attempt tries no other.
	everywhere bool
}

func (r reply) permanent() bool { return r.Code >= 500 && r.Code <= 599 }

// String is the reply as an SMTP server would say it, "550 5.1.1 text",
// or the text alone when it is not an SMTP reply.
func (r reply) String() string {
	if r.Code == 0 {
		return oneLine(r.Text)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d ", r.Code)
	if r.hasEnhanced() {
		fmt.Fprintf(&b, "%d.%d.%d ", r.Enhanced[0], r.Enhanced[1], r.Enhanced[2])
	}
	b.WriteString(oneLine(r.Text))
	return strings.TrimSpace(b.String())
}

// describe is the reply with who gave it, as the queue records it.
func (r reply) describe() string {
	switch {
	case r.Host == "":
		return r.String()
	case r.Code == 0:
		return r.Host + ": " + r.String()
	}
	return r.Host + " said: " + r.String()
}

func (r reply) hasEnhanced() bool {
	return r.Enhanced[0] >= 2 && r.Enhanced[0] <= 5 && r.Enhanced[1] >= 0 && r.Enhanced[2] >= 0
}

// status is the RFC 3463 status code of the reply for a DSN: its enhanced
// code with the class made to agree with the reply code (the reply code
// decides permanence, RFC 5321 section 4.2.1), or X.0.0 when there is
// none (RFC 3463 section 3.1: "other undefined status").
func (r reply) status() string {
	class := 4
	if r.permanent() {
		class = 5
	}
	if !r.hasEnhanced() {
		return fmt.Sprintf("%d.0.0", class)
	}
	return fmt.Sprintf("%d.%d.%d", class, r.Enhanced[1], r.Enhanced[2])
}

// classify turns what an SMTP client call answered into a reply. host is
// the server talked to.
func classify(err error, host string) reply {
	var se *smtp.SMTPError
	switch {
	case errors.As(err, &se):
		r := reply{Code: se.Code, Enhanced: se.EnhancedCode, Text: se.Message, Host: host}
		if r.Code < 400 || r.Code > 599 {
			// A reply that fits no command (go-smtp reports an
			// unexpected 2xx or 3xx as an error too): a broken server,
			// which may yet be fixed.
			r.Text = fmt.Sprintf("unexpected reply %d %s", r.Code, oneLine(r.Text))
			r.Code, r.Enhanced = 0, smtp.EnhancedCode{}
		}
		return r
	case errors.Is(err, context.DeadlineExceeded):
		return reply{Text: "timed out: " + err.Error(), Enhanced: smtp.EnhancedCode{4, 4, 2}, Host: host}
	case errors.Is(err, context.Canceled):
		return reply{Text: "interrupted", Enhanced: smtp.EnhancedCode{4, 3, 2}, Host: host}
	case errors.Is(err, errSTSRequired):
		// X.7.5, cryptographic failure (RFC 3463): the MX host has no
		// TLS, or no certificate valid for its name. Not local: the
		// destination's server (or an attacker in the path) is at
		// fault; RFC 8461 section 5 says the mail waits.
		return reply{Text: err.Error(), Enhanced: smtp.EnhancedCode{4, 7, 5}, Host: host}
	case errors.Is(err, errTLSRequired):
		// X.7.10, encryption needed (RFC 5248's registry); local: the
		// operator's relay settings or the relay's certificate need
		// looking at, and the attempt's log line is a warning.
		return reply{Text: err.Error(), Enhanced: smtp.EnhancedCode{4, 7, 10}, Host: host, local: true}
	}
	// Connection failures, timeouts and protocol errors: the attempt says
	// nothing about the recipients, so they are tried again (RFC 5321
	// section 4.5.4.1). X.4.2 is "bad connection" (RFC 3463).
	return reply{Text: err.Error(), Enhanced: smtp.EnhancedCode{4, 4, 2}, Host: host}
}

// localError is a temporary failure of this server (its store).
func localError(doing string, err error) reply {
	return reply{Code: 451, Enhanced: smtp.EnhancedCode{4, 3, 0}, Text: doing + ": " + err.Error(), local: true}
}

// oneLine folds a multi-line reply, and drops control characters, so that
// it fits a log line, a queue record and a DSN field.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return ' '
		case r < 0x20 || r == 0x7f:
			return -1
		}
		return r
	}, s)
}
