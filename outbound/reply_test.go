package outbound

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		name    string
		n       int
		lo, hi  time.Duration
		want    time.Duration
		comment string
	}{
		{"first", 1, time.Minute, time.Hour, time.Minute, ""},
		{"second doubles", 2, time.Minute, time.Hour, 2 * time.Minute, ""},
		{"sixth", 6, time.Minute, time.Hour, 32 * time.Minute, ""},
		{"seventh capped", 7, time.Minute, time.Hour, time.Hour, ""},
		{"far past the cap", 1000, time.Minute, time.Hour, time.Hour, ""},
		{"no overflow", 100, time.Second, math.MaxInt64, math.MaxInt64, ""},
		{"zero attempts", 0, time.Minute, time.Hour, time.Minute, ""},
		{"min equals max", 5, time.Hour, time.Hour, time.Hour, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := backoff(tc.n, tc.lo, tc.hi); got != tc.want {
				t.Errorf("backoff(%d, %v, %v) = %v, want %v", tc.n, tc.lo, tc.hi, got, tc.want)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		permanent bool
		status    string
		str       string
	}{
		{"550 with enhanced code", &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user"},
			true, "5.1.1", "550 5.1.1 no such user"},
		{"451 with enhanced code", &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 7, 1}, Message: "greylisted"},
			false, "4.7.1", "451 4.7.1 greylisted"},
		{"552 without enhanced code", &smtp.SMTPError{Code: 552, Message: "too big"},
			true, "5.0.0", "552 too big"},
		{"421 without enhanced code", &smtp.SMTPError{Code: 421, Message: "closing"},
			false, "4.0.0", "421 closing"},
		{"class disagrees: the code decides", &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{4, 2, 2}, Message: "odd"},
			true, "5.2.2", "550 4.2.2 odd"},
		{"go-smtp's no enhanced code", &smtp.SMTPError{Code: 554, EnhancedCode: smtp.NoEnhancedCode, Message: "no"},
			true, "5.0.0", "554 no"},
		{"multi-line reply folded", &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: "line one\nline two"},
			true, "5.7.1", "550 5.7.1 line one line two"},
		{"unexpected 250 is temporary", &smtp.SMTPError{Code: 250, Message: "ok?"},
			false, "4.0.0", "unexpected reply 250 ok?"},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")},
			false, "4.4.2", "dial tcp: connection refused"},
		{"connection lost", io.ErrUnexpectedEOF, false, "4.4.2", "unexpected EOF"},
		{"timeout", fmt.Errorf("%w (read: i/o timeout)", context.DeadlineExceeded), false, "4.4.2", "timed out: context deadline exceeded (read: i/o timeout)"},
		{"cancelled", context.Canceled, false, "4.3.2", "interrupted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := classify(tc.err, "mx.test")
			if r.permanent() != tc.permanent || r.status() != tc.status || r.String() != tc.str {
				t.Errorf("classify(%v) = permanent %v, status %s, %q; want %v, %s, %q",
					tc.err, r.permanent(), r.status(), r.String(), tc.permanent, tc.status, tc.str)
			}
			sep := " said: "
			if _, ok := tc.err.(*smtp.SMTPError); !ok || r.Code == 0 {
				sep = ": "
			}
			if got, want := r.describe(), "mx.test"+sep+tc.str; got != want {
				t.Errorf("describe = %q, want %q", got, want)
			}
		})
	}
}

func TestHeadersOf(t *testing.T) {
	long := strings.Repeat("X-Long: "+strings.Repeat("a", 90)+"\r\n", maxReturnedHeaders/100+10)
	for _, tc := range []struct {
		name, body, want string
	}{
		{"CRLF", "A: 1\r\nB: 2\r\n\r\nbody\r\n", "A: 1\r\nB: 2\r\n"},
		{"LF", "A: 1\nB: 2\n\nbody\n", "A: 1\r\nB: 2\r\n"},
		{"folded header kept", "A: 1\r\n 2\r\n\r\nbody", "A: 1\r\n 2\r\n"},
		{"no body", "A: 1\r\n", "A: 1\r\n"},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(headersOf([]byte(tc.body))); got != tc.want {
				t.Errorf("headersOf(%q) = %q, want %q", tc.body, got, tc.want)
			}
		})
	}
	t.Run("bounded at a line end", func(t *testing.T) {
		got := headersOf([]byte(long + "\r\nbody"))
		if len(got) > maxReturnedHeaders || !strings.HasSuffix(string(got), "a\r\n") {
			t.Errorf("headersOf(long) = %d bytes ending %q, want at most %d ending with a whole line", len(got), got[len(got)-5:], maxReturnedHeaders)
		}
	})
}

func TestIsSRS(t *testing.T) {
	for addr, want := range map[string]bool{
		"SRS0=hash=tt=orig.test=alice@fwd.test":    true,
		"srs0=hash=tt=orig.test=alice@fwd.test":    true,
		"SRS1=hash=fwd.test==hash=tt=x=y@fwd.test": true,
		"alice@fwd.test":                           false,
		"SRS0@fwd.test":                            false,
		"SRS2=x@fwd.test":                          false,
		"":                                         false,
	} {
		if got := isSRS(addr); got != want {
			t.Errorf("isSRS(%q) = %v, want %v", addr, got, want)
		}
	}
}

func TestOneLine(t *testing.T) {
	if got, want := oneLine(" a\nb\tc\r\x00d "), "a b cd"; got != want {
		t.Errorf("oneLine = %q, want %q", got, want)
	}
}
