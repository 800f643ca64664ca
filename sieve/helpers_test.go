package sieve

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// describe writes a Result as one line, so tables can compare it:
// actions in order, then "implicit" when the implicit keep applies.
func describe(res Result) string {
	var parts []string
	flags := func(f []string) string {
		if len(f) == 0 {
			return ""
		}
		return "[" + strings.Join(f, " ") + "]"
	}
	for _, a := range res.Actions {
		switch a := a.(type) {
		case Keep:
			parts = append(parts, "keep"+flags(a.Flags))
		case FileInto:
			s := "fileinto:" + a.Folder + flags(a.Flags)
			if a.Create {
				s += ":create"
			}
			if a.Copy {
				s += ":copy"
			}
			parts = append(parts, s)
		case Redirect:
			s := "redirect:" + a.Address
			if a.Copy {
				s += ":copy"
			}
			parts = append(parts, s)
		case Reject:
			s := "reject:"
			if a.Extended {
				s = "ereject:"
			}
			parts = append(parts, s+a.Reason)
		case Discard:
			parts = append(parts, "discard")
		case Vacation:
			parts = append(parts, fmt.Sprintf("vacation:%d:%s", a.Days, a.Reason))
		}
	}
	if res.ImplicitKeep {
		parts = append(parts, "implicit"+flags(res.Flags))
	}
	return strings.Join(parts, ", ")
}

type mailboxSet map[string]bool

func (m mailboxSet) MailboxExists(_ context.Context, name string) (bool, error) {
	return m[name], nil
}

// fixedNow is the clock of the tests: Tuesday 2007-07-03 10:20:30 UTC.
var fixedNow = time.Date(2007, 7, 3, 10, 20, 30, 0, time.UTC)

func testOpts() RunOptions {
	return RunOptions{
		Now:       func() time.Time { return fixedNow },
		Mailboxes: mailboxSet{"Partners": true, "INBOX": true},
	}
}

// crlf turns the LF line ends of a Go literal into CRLF.
func crlf(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }

func mustParse(t *testing.T, script string) *Script {
	t.Helper()
	s, err := Parse([]byte(script), ParseOptions{})
	if err != nil {
		t.Fatalf("Parse: %v\n%.300s", err, script)
	}
	return s
}

func runOn(t *testing.T, script, msg string, env Envelope, opts RunOptions) (Result, error) {
	t.Helper()
	s := mustParse(t, script)
	return s.Run(context.Background(), NewMessage([]byte(crlf(msg))), env, opts)
}

type runCase struct {
	name   string
	script string
	msg    string
	env    Envelope
	want   string // describe(Result), or "error: substring"
}

func runCases(t *testing.T, cases []runCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := runOn(t, c.script, c.msg, c.env, testOpts())
			got := describe(res)
			if err != nil {
				got = "error: " + err.Error()
				if strings.HasPrefix(c.want, "error: ") && strings.Contains(got, strings.TrimPrefix(c.want, "error: ")) {
					if !res.ImplicitKeep || len(res.Actions) != 0 {
						t.Errorf("on error, Result = %s, want only the implicit keep", describe(res))
					}
					return
				}
			}
			if got != c.want {
				t.Errorf("Run = %q, want %q", got, c.want)
			}
		})
	}
}
